"""Invariants of every trimming strategy, on random conversations (valid, pending, and broken)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.tokens import count_messages
from agents.memory.trimming import LlamaIndexContentCount, strategy_spec, trim
from tests.strategies_messages import conversations, messy_conversations, strategy_and_params, valid_conversations

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNTERS = st.sampled_from(["approx", "messages", "cl100k"])


def _pinned(messages: list[Message], pin: bool) -> int:
    n = 0
    while pin and n < len(messages) and messages[n].role in SYSTEM_ROLES:
        n += 1
    return n


@SETTINGS
@given(conversations, st.data(), COUNTERS)
def test_it_keeps_a_subsequence_and_explains_every_message(messages: list[Message], data: st.DataObject,
                                                            counter: str) -> None:
    counts = count_messages(messages, counter)
    name, params = data.draw(strategy_and_params(sum(counts) + 3))
    before = [m.model_copy(deep=True) for m in messages]
    result = trim(messages, strategy_spec(name, params), counter=counter, token_counts=counts)

    assert messages == before  # a view: the input never changes
    assert result.kept == sorted(set(result.kept))
    dropped = [d.index for d in result.dropped]
    assert sorted(result.kept + dropped) == list(range(len(messages)))
    assert all(d.reason for d in result.dropped)
    assert all(row["reason"] for row in result.explanation())

    inserted_at = {x.position for x in result.inserted}
    originals = [m for pos, m in enumerate(result.messages) if pos not in inserted_at]
    assert len(originals) == len(result.kept)
    edited = {e.index for e in result.edited}
    assert edited <= set(result.kept)
    for i, m in zip(result.kept, originals, strict=True):
        if i in edited:  # sent changed (stripped reasoning, cleared or trimmed text, a call cut off): the same message
            assert m != messages[i] and m.role == messages[i].role and m.tool_call_id == messages[i].tool_call_id
            assert {c.id for c in m.tool_calls} <= {c.id for c in messages[i].tool_calls}  # some may be gone
            assert result.kept_reasons[i] and result.explanation()[i]["status"] == "edited"
        else:
            assert m == messages[i]
    dropped_reasons = {d.index: d.reason for d in result.dropped}
    for x in result.inserted:  # a summary stands for dropped messages, each marked summarized
        assert all(dropped_reasons[i].startswith("summarized") for i in x.summarizes)
    assert result.tokens_before == sum(counts) + (3 if counter != "messages" else 0)
    if not result.edited and not result.inserted:
        assert result.tokens_after == sum(counts[i] for i in result.kept) + (3 if counter != "messages" else 0)


@SETTINGS
@given(valid_conversations(system=None, pending=False, max_turns=5, max_calls=4), st.integers(1, 20))
def test_it_never_breaks_a_valid_list_with_safe_window(messages: list[Message], size: int) -> None:
    result = trim(messages, strategy_spec("safe_window", {"max_messages": size}))
    assert result.violations == []
    assert len(result.kept) <= size or all(messages[i].role in SYSTEM_ROLES for i in result.kept)


@SETTINGS
@given(st.one_of(conversations, messy_conversations()), st.floats(0.0, 1.2), st.booleans(), COUNTERS)
def test_it_never_produces_a_violation_with_safe_token_budget(
    messages: list[Message], fraction: float, pin: bool, counter: str
) -> None:
    counts = count_messages(messages, counter)
    budget = max(1, int((sum(counts) + 3) * fraction))
    result = trim(messages, strategy_spec("safe_token_budget", {"max_tokens": budget, "pin_system": pin}),
                  counter=counter,
                  token_counts=counts)
    assert result.violations == []
    body = [i for i in result.kept if i >= _pinned(messages, pin)]
    assert not body or messages[body[0]].role != "tool"
    n = _pinned(messages, pin)
    assert result.kept[:n] == list(range(n))
    users = [i for i in range(n, len(messages)) if messages[i].role == "user"]
    newest_user = users[-1] if users else None
    if newest_user is not None:
        assert newest_user in result.kept  # never dropped, however small the budget

    # What is kept besides the newest user message is the newest part of what an unlimited budget keeps: the
    # oldest units are dropped first, inside the newest turn too.
    everything = trim(messages, strategy_spec("safe_token_budget", {"max_tokens": 10**9, "pin_system": pin}),
                      counter=counter, token_counts=counts)
    assert set(result.kept) <= set(everything.kept)
    rest = [i for i in everything.kept if i >= n and i != newest_user]
    kept_rest = [i for i in result.kept if i >= n and i != newest_user]
    assert kept_rest == rest[len(rest) - len(kept_rest):]
    if result.budget_exceeded:
        assert any("Budget exceeded" in n for n in result.notes)
        # Only the floors are kept: the newest user message and at most one unit (a message, or a call with its
        # results) after it, or the newest unit alone when there is no user message.
        assert all(i > newest_user for i in kept_rest) if newest_user is not None else True
        assert sum(1 for i in kept_rest if messages[i].role != "tool") <= 1
    else:
        assert result.tokens_after <= budget


@SETTINGS
@given(conversations, st.floats(0.0, 1.2), st.booleans(), COUNTERS)
def test_it_respects_token_budgets_where_the_framework_does(
    messages: list[Message], fraction: float, pin: bool, counter: str
) -> None:
    counts = count_messages(messages, counter)
    per_list = 0 if counter == "messages" else 3
    budget = max(1, int((sum(counts) + per_list) * fraction))
    n = _pinned(messages, pin)
    pinned = sum(counts[:n])

    for name, params in (
        ("token_limited", {"token_limit": budget}),
        ("langchain_last", {"max_tokens": budget}),
        ("langchain_first", {"max_tokens": budget}),
    ):
        result = trim(messages, strategy_spec(name, {**params, "pin_system": pin}),
                      counter=counter, token_counts=counts)
        body = [i for i in result.kept if i >= n]
        assert not body or result.tokens_after - pinned <= budget, name

    # LlamaIndex respects its own content-only count, except its fallback to the last message alone.
    result = trim(messages, strategy_spec("llamaindex_buffer", {"token_limit": budget, "pin_system": pin}))
    body = [i for i in result.kept if i >= n]
    if len(body) > 1:
        texts = ["None" if m.content is None else m.text for m in messages[body[0]:]]
        assert LlamaIndexContentCount(texts).window(0) <= budget


@SETTINGS
@given(conversations, st.integers(0, 12), st.integers(1, 12))
def test_it_respects_message_counts_where_the_framework_does(messages: list[Message], size: int, turns: int) -> None:
    n = _pinned(messages, True)
    body = lambda r: [i for i in r.kept if i >= n]  # noqa: E731
    if size:
        assert len(body(trim(messages, strategy_spec("openmanus_window", {"max_messages": size})))) <= size
        assert len(body(trim(messages, strategy_spec("buffered", {"buffer_size": size})))) <= size + sum(
            1 for m in messages if m.role == "tool")  # a run of tool results is one AutoGen message
    kept = body(trim(messages, strategy_spec("last_turns", {"max_turns": turns})))
    assert sum(1 for i in kept if messages[i].role == "user") <= turns
