"""Strategies compared row by row (agents/memory/compare.py)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.compare import (
    ABSENT,
    CONTEXT,
    DROPPED,
    EDITED,
    FOLD_AT,
    INSERTED,
    KEPT,
    Fold,
    Row,
    compare_aligned,
)
from agents.memory.schema import FunctionCall, Message, ToolCall
from agents.memory.tokens import count_messages
from agents.memory.trimming import strategy_spec, trim
from tests.strategies_messages import conversations, strategy_and_params


def S(text: str = "You are a travel assistant.") -> Message:
    return Message(role="system", content=text)


def U(text: str = "question") -> Message:
    return Message(role="user", content=text)


def A(text: str | None = "answer", *calls: str) -> Message:
    return Message(role="assistant", content=text, tool_calls=[
        ToolCall(id=c, function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}')) for c in calls
    ])


def T(call_id: str, text: str = "18°C") -> Message:
    return Message(role="tool", tool_call_id=call_id, content=text)


# reference/trimming.md's canonical conversation: system, user, two parallel calls, their results, the answer.
CANONICAL = [S(), U(), A(None, "call_1", "call_2"), T("call_1"), T("call_2"), A("Paris 18°C, Tokyo 24°C.")]


def kinds(row: Row | Fold) -> list[str]:
    return [m.kind for m in row.marks]


def test_it_marks_each_message_in_every_column_and_places_a_placeholder_where_its_column_sent_it() -> None:
    results = [
        trim(CANONICAL, strategy_spec("unbounded"), counter="messages"),
        trim(CANONICAL, strategy_spec("buffered", {"buffer_size": 2}), counter="messages"),
        trim(CANONICAL, strategy_spec("head_and_tail", {"head_size": 1, "tail_size": 1}), counter="messages"),
    ]
    compared = compare_aligned(CANONICAL, results)
    rows = [(x.index, kinds(x), x.disagree) for x in compared.items]

    # head_and_tail (pinned system) keeps the user message and the answer, with "Skipped 2 messages." between.
    assert rows == [
        (0, [KEPT, KEPT, KEPT], False),
        (1, [KEPT, DROPPED, KEPT], True),
        (2, [KEPT, DROPPED, DROPPED], True),
        (3, [KEPT, DROPPED, DROPPED], True),
        (4, [KEPT, DROPPED, DROPPED], True),
        (None, [ABSENT, ABSENT, INSERTED], True),
        (5, [KEPT, KEPT, KEPT], False),
    ]
    placeholder = compared.items[5]
    assert isinstance(placeholder, Row) and placeholder.inserted[2].content == "Skipped 2 messages."
    assert compared.items[1].marks[1].reason == "outside the last 2 messages of AutoGen's buffer"
    assert compared.rows == 7 and compared.disagreeing == 5 and compared.first_disagreement == 1
    assert [(s.messages, s.tokens, s.errors, s.question_kept) for s in compared.summaries] == [
        (6, 6, 0, True), (2, 2, 0, False), (4, 4, 0, True),
    ]


def test_it_marks_a_message_a_strategy_changed_as_edited_with_what_changed() -> None:
    thinking = [S(), U(), Message(role="assistant", content="Sunny.", reasoning="The user wants weather.")]
    compared = compare_aligned(
        thinking, [trim(thinking, strategy_spec("unbounded")), trim(thinking, strategy_spec("strip_thoughts"))]
    )

    last = compared.items[-1]
    assert kinds(last) == [KEPT, EDITED] and last.disagree
    assert last.marks[1].reason == "kept; removed reasoning"
    assert compared.summaries[1].edited == 1 and compared.summaries[1].kept == 2


def test_it_does_not_flag_a_placeholder_every_column_inserted_alike() -> None:
    same = [trim(CANONICAL, strategy_spec("head_and_tail", {"head_size": 1, "tail_size": 1})) for _ in range(2)]
    compared = compare_aligned(CANONICAL, same)
    assert compared.disagreeing == 0
    assert [kinds(x) for x in compared.items if x.index is None] == [[INSERTED, INSERTED]]


def long_run(turns: int) -> list[Message]:
    out = [S()]
    for k in range(turns):
        out += [U(f"q{k}"), A(None, f"c{k}"), T(f"c{k}"), A(f"a{k}")]
    return out


def test_it_folds_long_runs_so_a_long_session_is_a_short_page() -> None:
    messages = long_run(2_500)  # 10,001 messages
    results = [
        trim(messages, strategy_spec("unbounded"), counter="messages"),
        trim(messages, strategy_spec("buffered", {"buffer_size": 40}), counter="messages"),
        trim(messages, strategy_spec("safe_window", {"max_messages": 100}), counter="messages"),
        trim(messages, strategy_spec("last_turns", {"max_turns": 8}), counter="messages"),
    ]
    compared = compare_aligned(messages, results)

    assert compared.total_items < 60 and compared.next_offset is None
    folds = [x for x in compared.items if isinstance(x, Fold)]
    assert folds[0].first == 1 + CONTEXT and folds[0].count > 9_000 and folds[0].disagree
    assert kinds(folds[0]) == [KEPT, DROPPED, DROPPED, DROPPED]
    covered = sorted(
        i for x in compared.items for i in ([x.index] if isinstance(x, Row) else range(x.first, x.last + 1))
    )
    assert covered == list(range(len(messages)))


def test_it_shows_only_the_rows_the_columns_disagree_on_when_asked() -> None:
    messages = long_run(30)
    results = [
        trim(messages, strategy_spec("unbounded")),
        trim(messages, strategy_spec("last_turns", {"max_turns": 2})),
    ]
    compared = compare_aligned(messages, results, only_disagreements=True)

    agreeing = [x for x in compared.items if not x.disagree]
    assert agreeing and all(isinstance(x, Fold) for x in agreeing)  # every agreeing run is one fold
    shown = [x for x in compared.items if isinstance(x, Row)]
    assert shown and all(x.disagree for x in shown)
    assert compared.disagreeing == len(messages) - 1 - 8  # all but the system prompt and the last two turns


def test_it_pages_what_is_left_after_folding() -> None:
    messages = long_run(40)
    results = [
        trim(messages, strategy_spec("unbounded")),
        trim(messages, strategy_spec("strip_thoughts")),
    ]  # they agree everywhere
    first = compare_aligned(messages, results, page_size=3)
    assert first.total_items == CONTEXT + 1 + CONTEXT and first.next_offset == 3
    second = compare_aligned(messages, results, page_size=3, offset=first.next_offset)
    assert second.next_offset is None and len(second.items) == 2
    assert not any(x.disagree for x in first.items + second.items)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.data(), st.booleans())
def test_every_message_and_every_inserted_message_has_its_row_in_order(
    messages: list[Message], data: st.DataObject, only_disagreements: bool
) -> None:
    counts = count_messages(messages, "messages")
    columns = [data.draw(strategy_and_params(sum(counts))) for _ in range(data.draw(st.integers(1, 4)))]
    results = [trim(messages, strategy_spec(name, params), counter="messages") for name, params in columns]
    compared = compare_aligned(messages, results, only_disagreements=only_disagreements)

    indices: list[int] = []
    inserted_rows = 0
    for item in compared.items:
        if isinstance(item, Fold):
            assert only_disagreements and not item.disagree or item.count > FOLD_AT - 2 * CONTEXT
            indices += range(item.first, item.last + 1)
        elif item.index is None:
            inserted_rows += 1
        else:
            indices.append(item.index)
            for mark, result in zip(item.marks, results, strict=False):
                assert mark.kind in (KEPT, EDITED) if item.index in result.kept else mark.kind == DROPPED
            assert item.disagree == (len({m.kind for m in item.marks}) > 1)
    assert indices == list(range(len(messages)))
    assert inserted_rows >= max((len(r.inserted) for r in results), default=0)
    assert compared.rows == len(messages) + inserted_rows
    for summary, result in zip(compared.summaries, results, strict=False):
        assert summary.messages == len(result.messages) and summary.tokens == result.tokens_after
        assert summary.kept + summary.edited == len(result.kept) and summary.dropped == len(result.dropped)
