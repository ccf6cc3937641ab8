"""Everything that trims a stored session (the lab's preview, compare and report, the trim API, trimmed exports)
costs the same number of queries however long the session is: rows are read in keyset batches, never one query
per message (issue 10)."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.memory.trimming.tool_runs import Grouped, codes
from tests.conversations import chat

SHORT, LONG = 2, 60  # turns: 9 and 241 messages, both within one read batch


def queries_of(request: Callable[[], Any]) -> int:
    """The queries of the request when nothing of the session's trims is cached (test_trim_cache.py: when it is)."""
    caches["trims"].clear()
    with CaptureQueriesContext(connection) as ctx:
        response = request()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
    assert response.status_code == 200, response.content[:500] if not response.streaming else response.status_code
    return len(ctx.captured_queries)


def same_count_short_and_long(make_session: Any, request: Callable[[models.Session], Any]) -> int:
    """The queries of a request over a short and a long session, alike: the first (which reads the session's rows
    and keeps its structure, store_outlines.session_structure) and the next (which reads the structure). The latter."""
    request(make_session(chat(SHORT)))  # a first request: caches, ContentTypes
    short, long = make_session(chat(SHORT)), make_session(chat(LONG))
    first, first_long = queries_of(lambda: request(short)), queries_of(lambda: request(long))
    assert first_long == first, f"first: {first} queries for {short.message_count} messages, {first_long} for more"
    few, many = queries_of(lambda: request(short)), queries_of(lambda: request(long))
    assert many == few, f"{few} queries for {short.message_count} messages, {many} for {long.message_count}"
    # The rows in one batch, and the structure kept: a savepoint, one upsert, its release.
    assert first == many + 4
    return many


def test_it_previews_in_the_lab_with_as_many_queries_at_any_length(alice_client, make_session):
    n = same_count_short_and_long(
        make_session,
        lambda s: alice_client.get(f"/sessions/{s.pk}/lab/", {"strategy": "langchain_last", "max_tokens": "120"}),
    )
    assert n <= 7  # the outlines, and the texts of the rows shown: two reads of messages


@pytest.mark.parametrize("part", ["", "replay"])
def test_a_long_sessions_preview_and_replay_part_take_as_many_queries_at_any_length(alice_client, make_session,
                                                                                     settings, part):
    # Past MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES: the preview without its replay, then the replay alone.
    settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES = 5  # both sessions are longer
    query = {"strategy": "langchain_last", "max_tokens": "120", **({"part": part} if part else {})}
    n = same_count_short_and_long(make_session, lambda s: alice_client.get(f"/sessions/{s.pk}/lab/", query))
    assert n <= 7
    session = make_session(chat(LONG))
    read, light = text_rows_read(lambda: alice_client.get(f"/sessions/{session.pk}/lab/", query))
    assert len(light) == 1  # the outlines, once
    response = alice_client.get(f"/sessions/{session.pk}/lab/", query)
    if part:
        assert read == 0 and response.context["replay"].total_calls > 1  # the replay renders no message
    else:
        assert response.context["replay"] is None and response.context["replay_deferred"]
        assert read == shown_rows(response) < session.message_count // 4


def test_it_refreshes_a_lab_preview_over_htmx_with_as_many_queries_at_any_length(alice_client, make_session):
    n = same_count_short_and_long(
        make_session,
        lambda s: alice_client.get(f"/sessions/{s.pk}/lab/", {"strategy": "buffered", "buffer_size": "5"},
                                   HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result"),
    )
    assert n <= 7


def test_it_compares_four_strategies_with_as_many_queries_at_any_length(alice_client, make_session):
    specs = ["buffered:buffer_size=5", "langchain_last:max_tokens=200", "safe_token_budget", "token_limited"]
    n = same_count_short_and_long(
        make_session, lambda s: alice_client.get(f"/sessions/{s.pk}/lab/compare/", {"s": specs})
    )
    assert n <= 12


def _tool_loop(steps: int) -> list[dict[str, Any]]:
    """One question, then an agent's long loop of tool calls: the newest user message is at the very start."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools."},
                                      {"role": "user", "content": "Find it."}]
    for k in range(steps):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k}"},
        ]
    return messages + [{"role": "assistant", "content": "Found."}]


def test_it_compares_a_long_tool_loop_after_one_question_with_as_many_queries(alice_client, make_session):
    # Compare looks for the newest user message from the end: in the outlines, not message by message (which
    # read one row per query back to the question, 5,000 queries for the demo's longest session).
    specs = ["buffered:buffer_size=5", "langchain_last:max_tokens=200"]
    short, long = make_session(_tool_loop(4)), make_session(_tool_loop(120))
    request = lambda s: alice_client.get(f"/sessions/{s.pk}/lab/compare/", {"s": specs})  # noqa: E731
    request(short)
    assert queries_of(lambda: request(long)) == queries_of(lambda: request(short)) + 4  # the first: rows, kept
    assert queries_of(lambda: request(long)) == queries_of(lambda: request(short)) <= 12


@pytest.mark.parametrize("query", [
    "strategy=buffered&buffer_size=4",
    "strategy=buffered&buffer_size=4&messages=1",
    "strategy=langchain_last&max_tokens=150&detail=full",
])
def test_it_answers_the_trim_api_with_as_many_queries_at_any_length(alice_client, make_session, query):
    n = same_count_short_and_long(make_session, lambda s: alice_client.get(f"/api/sessions/{s.pk}/trim/?{query}"))
    assert n <= 6


@pytest.mark.parametrize("fmt", ["native", "openai"])
def test_it_exports_a_trimmed_session_with_as_many_queries_at_any_length(alice_client, make_session, fmt):
    n = same_count_short_and_long(
        make_session,
        lambda s: alice_client.post(f"/sessions/{s.pk}/export/",
                                    {"format": fmt, "strategy": "buffered", "params": "buffer_size=5"}),
    )
    assert n <= 16


def test_it_reports_with_as_many_queries_whatever_the_sessions_length(alice_client, make_session, agent):
    specs = ["buffered:buffer_size=5", "langchain_last:max_tokens=200", "safe_token_budget"]

    def report() -> Any:
        return alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk})

    for _ in range(3):
        make_session(chat(SHORT))
    report()
    few = queries_of(report)
    models.Session.objects.all().delete()
    for _ in range(3):
        make_session(chat(LONG))
    assert queries_of(report) == few + 4  # the first: their rows in one query, their structures in one upsert
    many = queries_of(report)
    assert many == few
    assert many <= 12


def test_it_reports_on_more_sessions_without_a_query_per_session(alice_client, make_session, agent):
    specs = ["buffered:buffer_size=5"]

    def report() -> Any:
        return alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk})

    make_session(chat(SHORT))
    report()
    one = queries_of(report)
    for _ in range(9):
        make_session(chat(SHORT))
    assert queries_of(report) == one + 4  # the first: the nine's rows in one query, their structures in one upsert
    ten = queries_of(report)
    assert ten == one


def test_it_exports_trimmed_sessions_of_a_list_with_the_same_queries_at_any_length(alice_client, make_session):
    def export() -> Any:
        return alice_client.post("/export/", {"format": "native", "strategy": "buffered", "params": "buffer_size=3"})

    make_session(chat(SHORT))
    make_session(chat(SHORT))
    export()
    few = queries_of(export)
    models.Session.objects.all().delete()
    make_session(chat(LONG))
    make_session(chat(LONG))
    many = queries_of(export)
    assert many == few
    doc = json.loads(b"".join(export().streaming_content))
    assert [len(s["messages"]) for s in doc["sessions"]] == [4, 4]  # the pinned system message and the last 3



# --- no text read for the rows a trim does not show or write --------------------------------------------------

TEXT_COLUMNS = ('"content"', '"content_parts"', '"reasoning"', '"extra"', '"usage"', '"marks"')
_IN = re.compile(r'"seq" IN \(([^)]*)\)')
_RANGE = re.compile(r'"seq" >= (\d+) AND "agents_message"\."seq" <= (\d+)')


def text_rows_read(request: Callable[[], Any]) -> tuple[int, list[str]]:
    """How many messages' texts the request read (by the seqs its queries name), and the SELECTs of message rows
    without a text column."""
    caches["trims"].clear()
    with CaptureQueriesContext(connection) as ctx:
        response = request()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
    assert response.status_code == 200
    read, light = 0, []
    for q in ctx.captured_queries:
        sql = q["sql"]
        if not sql.startswith("SELECT") or 'FROM "agents_message"' not in sql:
            continue
        if not any(f'"agents_message".{c}' in sql for c in TEXT_COLUMNS):
            light.append(sql)
            continue
        if m := _IN.search(sql):
            read += len(m.group(1).split(","))
        elif m := _RANGE.search(sql):
            read += int(m.group(2)) - int(m.group(1)) + 1
        else:
            raise AssertionError(f"a whole session's texts read: {sql}")
    return read, light


def shown_rows(response: Any) -> int:
    """How many input messages' bodies the lab's preview rendered."""
    preview = response.context["preview"]
    return sum(1 for x in preview.items if getattr(x, "index", None) is not None and x.status != "edited")


@pytest.mark.parametrize("query", [
    {"strategy": "langchain_last", "max_tokens": "120"},
    {"strategy": "buffered", "buffer_size": "5", "step": "7"},  # what one call of the replayed run sent
    {"strategy": "sk_truncation", "target_count": "6", "threshold_count": "2", "step": "20"},  # carried memory
    {"strategy": "safe_token_budget", "max_tokens": "300", "step": "30"},
])
def test_it_previews_in_the_lab_reading_only_the_texts_of_the_rows_it_shows(alice_client, make_session, query):
    session = make_session(chat(LONG))
    url = f"/sessions/{session.pk}/lab/"
    read, light = text_rows_read(lambda: alice_client.get(url, query))
    shown = shown_rows(alice_client.get(url, query))
    assert read == shown < session.message_count // 4
    assert len(light) == 1  # the outlines, once, for the replay and the preview


def test_it_previews_a_strategy_that_reads_text_reading_every_text(alice_client, make_session):
    session = make_session(chat(LONG))
    query = {"strategy": "llamaindex_buffer", "token_limit": "300"}
    read, _ = text_rows_read(lambda: alice_client.get(f"/sessions/{session.pk}/lab/", query))
    assert read == session.message_count


def test_it_previews_again_reading_only_the_texts_of_the_rows_it_shows(alice_client, make_session):
    """The replay, the trim and the outlines are kept per session version: a preview seen again reads no more."""
    session = make_session(chat(LONG))
    url, query = f"/sessions/{session.pk}/lab/", {"strategy": "langchain_last", "max_tokens": "120"}
    alice_client.get(url, query)
    with CaptureQueriesContext(connection) as ctx:
        response = alice_client.get(url, query)
    reads = [q["sql"] for q in ctx.captured_queries if 'FROM "agents_message"' in q["sql"]]
    assert len(reads) == 1 and '"agents_message"."content"' in reads[0]  # the shown rows' texts, nothing else
    assert _IN.search(reads[0]) or _RANGE.search(reads[0])
    assert response.context["preview"].kept == len(response.context["preview"].result.kept)


def test_it_reports_per_call_without_reading_a_text(alice_client, make_session, agent):
    for _ in range(2):
        make_session(chat(LONG))
    specs = ["buffered:buffer_size=5", "sk_truncation:target_count=6,threshold_count=2"]
    read, light = text_rows_read(
        lambda: alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk, "per_call": "1"})
    )
    assert read == 0 and len(light) == 1


def test_it_compares_reading_only_the_texts_of_the_lines_it_shows(alice_client, make_session):
    session = make_session(chat(LONG))
    specs = ["buffered:buffer_size=5", "langchain_last:max_tokens=200", "safe_token_budget", "token_limited"]
    read, light = text_rows_read(lambda: alice_client.get(f"/sessions/{session.pk}/lab/compare/", {"s": specs}))
    assert read < session.message_count and len(light) == 1  # one read of the outlines for the four


def test_it_reports_without_reading_a_text(alice_client, make_session, agent):
    for _ in range(3):
        make_session(chat(LONG))
    specs = ["buffered:buffer_size=5", "langchain_last:max_tokens=200", "safe_token_budget"]
    read, light = text_rows_read(lambda: alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk}))
    assert read == 0 and len(light) == 1


def test_it_answers_the_trim_api_reading_only_the_kept_texts(alice_client, make_session):
    session = make_session(chat(LONG))
    url = f"/api/sessions/{session.pk}/trim/?strategy=langchain_last&max_tokens=300"
    read, _ = text_rows_read(lambda: alice_client.get(url))
    assert read == 0
    kept = alice_client.get(url).json()["kept"]
    assert text_rows_read(lambda: alice_client.get(url + "&messages=1"))[0] == len(kept) < 30
    assert text_rows_read(lambda: alice_client.get(url + "&detail=full"))[0] == len(kept)


def test_it_exports_a_trimmed_session_reading_only_the_kept_texts(alice_client, make_session):
    session = make_session(chat(LONG))
    read, _ = text_rows_read(lambda: alice_client.post(
        f"/sessions/{session.pk}/export/", {"format": "native", "strategy": "buffered", "params": "buffer_size=5"}
    ))
    assert read == 6  # the pinned system prompt and the last 5


def test_it_reads_every_text_for_a_strategy_that_counts_text(alice_client, make_session):
    session = make_session(chat(LONG))
    url = f"/api/sessions/{session.pk}/trim/?strategy=llamaindex_buffer&token_limit=200"
    assert text_rows_read(lambda: alice_client.get(url))[0] == session.message_count


def test_it_stores_whether_each_message_has_content_as_the_checker_counts_it(make_session):
    session = make_session([
        {"role": "user", "content": "   "},
        {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
        {"role": "user", "content": [{"type": "text", "text": " \n"}]},
        {"role": "assistant", "content": "fine"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": ""},
    ])
    stored = list(models.Message.objects.filter(session=session).order_by("seq").values_list("has_content", flat=True))
    assert stored == [False, True, False, True, False, False]


def test_it_fills_the_flag_of_messages_stored_before_it(make_session):
    from importlib import import_module

    from django.apps import apps

    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": " "}])
    models.Message.objects.update(has_content=None)
    import_module("agents.migrations.0014_message_has_content").fill(apps, None)
    assert list(session.messages.order_by("seq").values_list("has_content", flat=True)) == [True, False]


def test_it_reads_a_sessions_outlines_as_the_structure_of_its_messages(make_session):
    """The outlines are read without Django's converters (reading._plain_rows): booleans, names, call ids and
    tool calls come out as the whole messages have them, alone and several sessions per query (the report)."""
    from agents.memory.stored import has_content, outline
    from agents.store import outlines as store_outlines
    from agents.store import reading

    session = make_session([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "name": "ann", "content": "   "},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": [1, "\\u00e9"]}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": True},
        {"role": "tool", "tool_call_id": "c2", "content": "ok", "is_error": False},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ])
    whole = reading.session_messages(session)
    expected = [
        outline(role=m.role, has_text=has_content(m.content), name=m.name, tool_call_id=m.tool_call_id,
                tool_calls=[c.model_dump() for c in m.tool_calls], is_error=m.is_error)
        for m in whole
    ]
    stored_counts = list(session.messages.order_by("seq").values_list("token_count", flat=True))
    read, counts = store_outlines.session_stored_messages(session)
    (_, in_batch, batch_counts), = store_outlines.sessions_stored_messages([session])
    for outlines, got in ((read.outlines, counts), (in_batch.outlines, batch_counts)):
        assert list(outlines) == expected and list(got) == stored_counts
        assert isinstance(outlines, Grouped) and outlines.codes == codes(expected)  # units found once
        assert [repr(o.is_error) for o in outlines] == ["None", "None", "None", "True", "False", "None"]  # not 1, 0
        assert [o.to_openai() for o in outlines] == [o.to_openai() for o in expected]
        assert [c.function.arguments for c in outlines[2].tool_calls] == ['{"a": [1, "\\u00e9"]}', "{}"]
