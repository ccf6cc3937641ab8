from __future__ import annotations

import datetime as dt
import itertools
import re

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import access
from agents.memory.chain import ProtocolChecker, find_violations
from agents.memory.schema import Conversation, FunctionCall, Message, ToolCall, parse_messages
from agents.memory.tokens import count_messages, total_tokens
from agents.models import Message as MessageRow
from agents.models import Session
from agents.models import ToolCall as ToolCallRow
from agents.sessions import chain as sessions_chain
from agents.store import listing, mapping, reading, writing

WEATHER = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 12}'},
    {"role": "tool", "tool_call_id": "c2", "content": "service down", "is_error": True},
    {"role": "assistant", "content": "Paris is 12 °C; Tokyo's service is down."},
]
ORPHAN = [
    {"role": "user", "content": "hi"},
    {"role": "tool", "tool_call_id": "ghost", "content": "42"},
    {"role": "assistant", "content": "ok"},
]
PENDING = [
    {"role": "user", "content": "search"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "p1", "type": "function", "function": {"name": "search", "arguments": "{}"}}],
    },
]


def test_it_stores_messages_in_order_with_their_tool_calls(make_session):
    session = make_session(WEATHER, title="Weather")
    rows = list(session.messages.order_by("seq"))
    assert [r.seq for r in rows] == list(range(6))
    assert [r.role for r in rows] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert rows[2].content is None
    calls = list(ToolCallRow.objects.filter(session=session).order_by("position"))
    assert [(c.call_id, c.name, c.position, c.message_id) for c in calls] == [
        ("c1", "get_weather", 0, rows[2].pk),
        ("c2", "get_weather", 1, rows[2].pk),
    ]


def test_it_stores_token_counts_and_the_total(make_session):
    session = make_session(WEATHER)
    expected = count_messages(parse_messages(WEATHER), "cl100k")
    assert list(session.messages.order_by("seq").values_list("token_count", flat=True)) == expected
    assert session.token_total == total_tokens(expected, "cl100k") == sum(expected) + 3
    assert session.token_counter == "cl100k"


def test_it_stores_summaries(make_session):
    session = make_session(WEATHER)
    session.refresh_from_db()
    assert session.message_count == 6
    assert session.has_errors is True
    assert session.violation_count == 0
    assert session.violations == []


def test_it_stores_violations_with_their_seq(make_session):
    session = make_session(ORPHAN)
    session.refresh_from_db()
    expected = [v.to_dict() for v in find_violations(parse_messages(ORPHAN))]
    assert session.violation_count == len(expected) == 1
    assert session.violations[0]["kind"] == "orphan_tool_result"
    assert session.violations[0]["seq"] == 1
    assert {k: session.violations[0][k] for k in expected[0]} == expected[0]


def test_it_counts_only_errors_as_violations(make_session):
    session = make_session(PENDING)
    session.refresh_from_db()
    assert [v["kind"] for v in session.violations] == ["pending_tool_call"]
    assert session.violation_count == 0


def test_it_stores_with_another_counter(agent):
    conversation = Conversation(messages=parse_messages(WEATHER), external_id="m")
    session = writing.session_store(agent=agent, conversation=conversation, counter="messages")
    assert set(session.messages.values_list("token_count", flat=True)) == {1}
    assert session.token_total == 6
    assert session.token_counter == "messages"


def test_it_stores_nothing_when_the_counter_is_unknown(agent):
    conversation = Conversation(messages=parse_messages(WEATHER), external_id="x")
    with pytest.raises(ValueError, match="unknown counter"):
        writing.session_store(agent=agent, conversation=conversation, counter="nope")
    assert not Session.objects.exists()


def test_it_takes_session_fields_from_the_conversation(agent):
    started = dt.datetime(2026, 5, 1, 9, 30, tzinfo=dt.UTC)
    conversation = Conversation(
        messages=parse_messages(WEATHER), external_id="ext-9", title="Trip", source_format="openai",
        started_at=started, tools=[{"type": "function", "function": {"name": "get_weather"}}], metadata={"k": "v"},
    )
    session = writing.session_store(agent=agent, conversation=conversation)
    session.refresh_from_db()
    assert (session.external_id, session.title, session.source_format, session.started_at) == (
        "ext-9",
        "Trip",
        "openai",
        started,
    )
    assert session.tools == [{"type": "function", "function": {"name": "get_weather"}}]
    assert session.metadata == {"k": "v"}


def test_it_starts_a_session_at_its_first_message_time(agent):
    first = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    messages = [Message(role="user", content="hi", created_at=first), Message(role="assistant", content="yo")]
    session = writing.session_store(agent=agent, conversation=Conversation(messages=messages, external_id="t"))
    assert session.started_at == first


def test_it_stores_in_batches_as_it_stores_whole(agent):
    whole = writing.session_store(
        agent=agent, conversation=Conversation(messages=parse_messages(WEATHER), external_id="whole")
    )
    messages = parse_messages(WEATHER)
    session = writing.session_create(agent=agent, conversation=Conversation(external_id="batched"))
    checker = ProtocolChecker()
    count = tokens = 0
    errors = False
    for start in range(0, len(messages), 4):
        batch = messages[start:start + 4]
        for m in batch:
            checker.feed(m)
        stored = writing.messages_append(session=session, messages=batch, start_seq=start)
        count, tokens, errors = count + stored.count, tokens + stored.tokens, errors or stored.has_errors
    writing.session_finish(session=session, message_count=count, token_counts_sum=tokens, has_errors=errors,
                           violations=checker.finish())
    session.refresh_from_db()
    whole.refresh_from_db()
    assert reading.session_messages(session) == reading.session_messages(whole) == messages
    assert (session.message_count, session.token_total, session.has_errors, session.violations) == (
        whole.message_count, whole.token_total, whole.has_errors, whole.violations)
    assert ToolCallRow.objects.filter(session=session).count() == 2


def test_it_builds_unsaved_rows_with_a_seq_offset(agent):
    session = Session.objects.create(agent=agent, external_id="rows")
    rows, calls = mapping.message_rows(parse_messages(WEATHER), session=session, start_seq=100, token_counts=[1] * 6)
    assert [r.seq for r in rows] == list(range(100, 106))
    assert all(r.pk is None for r in rows)
    assert [c.message for c in calls] == [rows[2], rows[2]]
    assert not MessageRow.objects.exists()


def test_it_refuses_token_counts_of_another_length(agent):
    session = Session.objects.create(agent=agent, external_id="rows")
    with pytest.raises(ValueError, match="token_counts has 2 entries for 6 messages"):
        mapping.message_rows(parse_messages(WEATHER), session=session, token_counts=[1, 2])


# --- the one mapping ------------------------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
_json_scalar = st.one_of(st.integers(-10**6, 10**6), _text, st.booleans(), st.none())


@st.composite
def stored_messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    content = draw(
        st.one_of(st.none(), _text, st.lists(st.builds(lambda t: {"type": "text", "text": t}, _text), max_size=3))
    )
    calls = []
    if role == "assistant":
        calls = draw(
            st.lists(
                st.builds(
                    lambda i, n, a: ToolCall(id=f"call_{i}", function=FunctionCall(name=n, arguments=a)),
                    st.integers(0, 999),
                    st.sampled_from(["search", "get_weather"]),
                    st.sampled_from(["{}", '{"q": "x"}', "{oops"]),
                ),
                max_size=3,
            )
        )
    return Message(
        role=role,
        content=content,
        name=draw(st.one_of(st.none(), st.sampled_from(["alice", "planner"]))),
        tool_calls=calls,
        tool_call_id=draw(st.sampled_from(["call_1", "toolu_9"])) if role == "tool" else None,
        external_id=draw(st.one_of(st.none(), st.just("msg_1"))),
        created_at=draw(
            st.one_of(
                st.none(),
                st.datetimes(
                    min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC)
                ),
            )
        ),
        is_error=draw(st.one_of(st.none(), st.booleans())),
        reasoning=draw(st.one_of(st.none(), _text.filter(bool))),
        usage=draw(
            st.one_of(
                st.none(),
                st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), st.integers(0, 10**6)),
            )
        ),
        marks=draw(st.lists(_text, max_size=2)),
        extra=draw(st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=5), _json_scalar, max_size=3)),
    )


_sessions = itertools.count()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=stored_messages())
def test_it_gives_back_every_message_it_stores(agent, message):
    session = Session.objects.create(agent=agent, external_id=f"rt-{next(_sessions)}")
    row = mapping.message_from_schema(message, session=session, seq=0)
    row.save()
    row = MessageRow.objects.get(pk=row.pk)
    assert mapping.message_to_schema(row) == message


def test_it_keeps_content_parts_and_their_joined_text(agent):
    session = Session.objects.create(agent=agent, external_id="parts")
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "text", "text": "here"},
    ]
    row = mapping.message_from_schema(Message(role="user", content=parts), session=session, seq=0)
    assert row.content == "look\nhere"
    assert row.content_parts == parts
    assert mapping.message_to_schema(row).content == parts


# --- reading --------------------------------------------------------------------------------------------------


def _long(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n)]


def test_it_reads_a_page_after_a_seq(make_session):
    session = make_session(_long(25))
    first = sessions_chain.session_message_page(session, size=10)
    assert [r.seq for r in first.rows] == list(range(10))
    assert (first.after, first.next_after, first.tokens_before, first.shown_through) == (None, 9, 0, 10)
    second = sessions_chain.session_message_page(session, after=first.next_after, size=10)
    assert [r.seq for r in second.rows] == list(range(10, 20))
    assert second.tokens_before == sum(r.token_count for r in first.rows)
    last = sessions_chain.session_message_page(session, after=second.next_after, size=10)
    assert [r.seq for r in last.rows] == list(range(20, 25))
    assert (last.next_after, last.shown_through) == (None, 25)


def test_it_reads_a_page_in_the_same_number_of_queries_for_any_session_length(make_session):
    short, long = make_session(_long(5)), make_session(_long(900))
    counts = []
    for session, after in ((short, None), (long, None), (long, 599)):
        with CaptureQueriesContext(connection) as ctx:
            page = sessions_chain.session_message_page(session, after=after)
            len(page.rows)
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] == counts[2] == 1
    assert len(sessions_chain.session_message_page(long, after=599).rows) == 300


def test_it_reads_a_whole_session_in_one_query(make_session):
    session = make_session(_long(50))
    with CaptureQueriesContext(connection) as ctx:
        messages, counts = reading.session_messages_with_counts(session)
    assert len(messages) == len(counts) == 50
    assert len(ctx.captured_queries) == 1


def test_it_gives_back_the_conversation_it_stored(make_session):
    session = make_session(WEATHER)
    assert reading.session_messages(session) == parse_messages(WEATHER)


# --- access ---------------------------------------------------------------------------------------------------


def test_it_scopes_sessions_to_the_users_projects(make_session, alice, bob, other_agent):
    mine = make_session(WEATHER)
    theirs = make_session(WEATHER, agent=other_agent)
    assert list(access.sessions_for_user(alice)) == [mine]
    assert list(access.sessions_for_user(bob)) == [theirs]
    assert access.session_for_user(alice, mine.pk) == mine
    with pytest.raises(Http404):
        access.session_for_user(alice, theirs.pk)


def test_it_shows_an_anonymous_user_nothing(make_session):
    from django.contrib.auth.models import AnonymousUser

    make_session(WEATHER)
    assert not access.sessions_for_user(AnonymousUser()).exists()
    assert not access.user_projects(AnonymousUser()).exists()


def test_it_filters_sessions(make_session, alice, agent):
    weather = make_session(WEATHER, title="Weather", started_at=dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC))
    orphan = make_session(ORPHAN, title="Broken", started_at=dt.datetime(2026, 3, 5, 12, tzinfo=dt.UTC))

    def ids(**filters) -> list[int]:
        return [s.pk for s in listing.sessions_filtered(alice, listing.SessionFilters(**filters))]

    assert ids() == [orphan.pk, weather.pk]
    assert ids(sort="started") == [weather.pk, orphan.pk]
    assert ids(q="weath") == [weather.pk]
    assert ids(q="tokyo") == [weather.pk]  # found in message content
    assert ids(tool="get_weather") == [weather.pk]
    assert ids(has_violations=True) == [orphan.pk]
    assert ids(has_errors=True) == [weather.pk]
    assert ids(date_from=dt.date(2026, 3, 2)) == [orphan.pk]
    assert ids(date_to=dt.date(2026, 3, 1)) == [weather.pk]
    assert ids(min_tokens=weather.token_total) == [weather.pk]
    assert ids(max_tokens=orphan.token_total) == [orphan.pk]
    assert ids(agent=agent) == [orphan.pk, weather.pk]
    assert ids(sort="-tokens")[0] == weather.pk
    assert ids(sort="-violations")[0] == orphan.pk


@pytest.mark.parametrize(
    ("message", "place"),
    [
        ({"role": "user", "content": "a\x00b"}, "messages[1].content"),
        ({"role": "user", "content": [{"type": "text", "text": "\x00"}]}, "messages[1].content"),
        (
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": "\x00"}'}}
                ],
            },
            "messages[1].tool_calls[0].function.arguments",
        ),
        ({"role": "user", "content": "x", "extra": {"k": ["\x00"]}}, "messages[1].extra"),
    ],
)
def test_it_names_the_place_of_text_the_database_cannot_store(agent, message, place):
    conversation = Conversation(
        messages=parse_messages([{"role": "user", "content": "ok"}, message]), external_id="nul"
    )
    with pytest.raises(ValueError, match=rf"^{re.escape(place)}: contains a NUL character"):
        writing.session_store(agent=agent, conversation=conversation)
    assert not Session.objects.exists()
