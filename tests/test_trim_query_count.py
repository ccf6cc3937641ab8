"""Everything that trims a stored session (the lab's preview, compare and report, the trim API, trimmed exports)
costs the same number of queries however long the session is: rows are read in keyset batches, never one query
per message (issue 10)."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from tests.conversations import chat

SHORT, LONG = 2, 60  # turns: 9 and 241 messages, both within one read batch


def queries_of(request: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = request()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
    assert response.status_code == 200, response.content[:500] if not response.streaming else response.status_code
    return len(ctx.captured_queries)


def same_count_short_and_long(make_session: Any, request: Callable[[models.Session], Any]) -> int:
    short, long = make_session(chat(SHORT)), make_session(chat(LONG))
    request(short)  # first request: caches, session, ContentTypes
    few, many = queries_of(lambda: request(short)), queries_of(lambda: request(long))
    assert many == few, f"{few} queries for {short.message_count} messages, {many} for {long.message_count}"
    return many


def test_it_previews_in_the_lab_with_as_many_queries_at_any_length(alice_client, make_session):
    n = same_count_short_and_long(
        make_session,
        lambda s: alice_client.get(f"/sessions/{s.pk}/lab/", {"strategy": "langchain_last", "max_tokens": "120"}),
    )
    assert n <= 6


def test_it_refreshes_a_lab_preview_over_htmx_with_as_many_queries_at_any_length(alice_client, make_session):
    n = same_count_short_and_long(
        make_session,
        lambda s: alice_client.get(f"/sessions/{s.pk}/lab/", {"strategy": "buffered", "buffer_size": "5"},
                                   HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result"),
    )
    assert n <= 6


def test_it_compares_four_strategies_with_as_many_queries_at_any_length(alice_client, make_session):
    specs = ["buffered buffer_size=5", "langchain_last max_tokens=200", "safe_token_budget", "token_limited"]
    n = same_count_short_and_long(
        make_session, lambda s: alice_client.get(f"/sessions/{s.pk}/lab/compare/", {"s": specs})
    )
    assert n <= 6


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
    assert n <= 12


def test_it_reports_with_as_many_queries_whatever_the_sessions_length(alice_client, make_session, agent):
    specs = ["buffered buffer_size=5", "langchain_last max_tokens=200", "safe_token_budget"]

    def report() -> Any:
        return alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk})

    for _ in range(3):
        make_session(chat(SHORT))
    report()
    few = queries_of(report)
    models.Session.objects.all().delete()
    for _ in range(3):
        make_session(chat(LONG))
    many = queries_of(report)
    assert many == few
    assert many <= 12


def test_it_reports_on_more_sessions_without_a_query_per_session(alice_client, make_session, agent):
    specs = ["buffered buffer_size=5"]

    def report() -> Any:
        return alice_client.get("/lab/report/", {"s": specs, "agent": agent.pk})

    make_session(chat(SHORT))
    report()
    one = queries_of(report)
    for _ in range(9):
        make_session(chat(SHORT))
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

