"""A record's page follows it live (issue 26: "the memory pages follow new versions and recalls as they arrive"): a
record written or read lately (or asked ``?follow=1``) polls; while nothing arrived a poll costs the record's row and
answers the poller alone; when a version or a read arrives (here through the write API) it answers the newest
versions, reads and counts out of band. Paged or diffed, the page does not follow."""
from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents import models
from agents.projects import keys

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "record-live"}


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}


def write(client, path: str, body: Any, auth: dict[str, str]) -> None:
    response = client.post(f"/api/memory/writes/{path}/", data=json.dumps(body), content_type="application/json",
                           **auth)
    assert response.status_code in (200, 201), response.content


def token_of(html: str) -> str:
    match = re.search(r'id="record-live"[^>]*hx-get="[^"]*\?live=([^"&]+)"', html)
    assert match, html[:2000]
    return match.group(1)


@pytest.fixture
def written(client, auth, agent) -> models.MemoryRecord:
    write(client, "stores", {"id": "prefs", "name": "Preferences", "agent": agent.name}, auth)
    write(client, "versions", {"store": "prefs", "versions": [
        {"id": "e1", "record": "mem-1", "op": "ADD", "text": "Alice is vegetarian",
         "at": timezone.now().isoformat()}]}, auth)
    return models.MemoryRecord.objects.get(external_id="mem-1")


def test_a_record_written_lately_follows_new_versions_and_reads(client, alice, auth, agent, written) -> None:
    client.force_login(alice)
    page = client.get(f"/memory/records/{written.pk}/").content.decode()
    token = token_of(page)
    poll = f"/memory/records/{written.pk}/?live={token}"

    # Nothing new: the poller alone, the same token, for the record's row (and the login's own queries).
    with CaptureQueriesContext(connection) as queries:
        quiet = client.get(poll, **HTMX).content.decode()
    assert token_of(quiet) == token and 'id="versions"' not in quiet
    assert len([q for q in queries.captured_queries if "agents_memoryrecord" in q["sql"]]) == 1
    assert len(queries.captured_queries) <= 3

    write(client, "versions", {"store": "prefs", "versions": [
        {"id": "e2", "record": "mem-1", "op": "UPDATE", "text": "Alice is vegan <b>now</b>",
         "at": timezone.now().isoformat()}]}, auth)
    changed = client.get(poll, **HTMX).content.decode()
    new_token = token_of(changed)
    assert new_token != token
    assert re.search(r'<section id="versions"[^>]*hx-swap-oob="true"', changed)
    assert 'id="v-2"' in changed and "Alice is vegan &lt;b&gt;now&lt;/b&gt;" in changed
    assert re.search(r'<header [^>]*id="record-head" hx-swap-oob="true">', changed)
    assert '<div id="record-counts-versions"><dt>Versions</dt><dd>2</dd>' in changed
    assert re.search(r'<section id="diff"[^>]*hx-swap-oob="true"', changed)

    session = agent.sessions.create(external_id="s1", title="Trip")
    models.Message.objects.create(session=session, seq=0, role="user", content="Known: Alice is vegan <b>now</b>")
    write(client, "recalls", {"id": "read-1", "session": session.pk, "seq": 0, "store": "prefs", "query": "diet",
                              "items": [{"record": "mem-1", "text": "Alice is vegan <b>now</b>", "score": 0.9}]},
          auth)
    read = client.get(f"/memory/records/{written.pk}/?live={new_token}", **HTMX).content.decode()
    assert re.search(r'<section id="reads"[^>]*hx-swap-oob="true"', read) and "diet" in read
    assert token_of(read) not in (token, new_token)


def test_a_quiet_record_offers_to_follow_and_a_paged_one_does_not(client, alice, auth, written) -> None:
    long_ago = timezone.now() - timedelta(days=3)
    models.MemoryRecord.objects.filter(pk=written.pk).update(updated_at=long_ago, last_read_at=None)
    client.force_login(alice)
    quiet = client.get(f"/memory/records/{written.pk}/").content.decode()
    assert 'id="record-live"' not in quiet and 'id="record-follow"' in quiet
    followed = client.get(f"/memory/records/{written.pk}/?follow=1").content.decode()
    assert token_of(followed)
    paged = client.get(f"/memory/records/{written.pk}/?follow=1&versions_before=2").content.decode()
    assert 'id="record-live"' not in paged and 'id="record-follow"' not in paged


def test_following_another_projects_record_is_not_found(client, auth, written, django_user_model) -> None:
    bob = django_user_model.objects.create_user("bob", password="x")
    client.force_login(bob)
    assert client.get(f"/memory/records/{written.pk}/?live=1.0.active", **HTMX).status_code == 404


# --- the session page's live tail brings the recalls of new messages ---------------------------------------------


def test_the_live_tail_shows_what_was_recalled_into_new_messages(client, alice, project) -> None:
    from tests.otlp_memory_spans import post, request, span

    key = keys.api_key_create(project=project, name="agent").key

    def turn(n: int, question: str, found: list[str], *, start: float) -> list[Any]:
        trace = f"{n:02d}" * 16
        spans = [span(f"turn{n}", "invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, start=start,
                      end=start + 3, trace=trace)]
        if found:
            spans.append(span(f"find{n}", "search_memory", {
                "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "prefs",
                "gen_ai.memory.query.text": question,
                "gen_ai.memory.records": json.dumps([{"id": f"mem-{i}", "content": c, "score": 0.9 - i / 10}
                                                     for i, c in enumerate(found)])},
                parent=f"turn{n}", start=start + 1, trace=trace))
        system = "Known: " + "\n".join(found) if found else "Be brief."
        spans.append(span(f"chat{n}", "chat gpt-4o", {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "session.id": "live-mem",
            "gen_ai.input.messages": json.dumps([{"role": "system", "parts": [{"type": "text", "content": system}]},
                                                 {"role": "user", "parts": [{"type": "text", "content": question}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "text", "content": f"answer {n}"}]}])}, parent=f"turn{n}", start=start + 2, trace=trace))
        return spans

    post(client, key, request(*turn(1, "Hello", [], start=0)))
    session = models.Session.objects.get(external_id="live-mem")
    client.force_login(alice)
    page = client.get(session.get_absolute_url()).content.decode()
    last = session.messages.order_by("-seq").values_list("seq", flat=True).first()
    assert f'hx-get="?after={last}&amp;live=1"' in page

    post(client, key, request(*turn(2, "What do I eat?", ["Alice is vegan <b>strictly</b>"], start=10)))
    tail = client.get(f"{session.get_absolute_url()}?after={last}&live=1", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in tail and "answer 2" in tail
    assert "Recalled from" in tail and "Alice is vegan &lt;b&gt;strictly&lt;/b&gt;" in tail
    [recall] = models.Recall.objects.filter(session=session)
    assert f'id="m-{recall.seq}"' in tail


# --- the agent's memory page follows its store ----------------------------------------------------------------------


def poller_url(html: str, element: str) -> str:
    match = re.search(rf'id="{element}"[^>]*hx-get="([^"]+)"', html)
    assert match, html[:3000]
    return match.group(1).replace("&amp;", "&")


def test_the_memory_page_follows_new_records_of_its_store(client, alice, auth, agent, written) -> None:
    client.force_login(alice)
    page = client.get(f"/agents/{agent.pk}/memory/").content.decode()
    poll = poller_url(page, "memory-live")
    assert "live=" in poll
    quiet = client.get(poll, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="memory-live").content.decode()
    assert poller_url(quiet, "memory-live") == poll and 'id="records"' not in quiet

    write(client, "versions", {"store": "prefs", "versions": [
        {"id": "e9", "record": "mem-2", "op": "ADD", "text": "Alice runs <i>daily</i>",
         "at": timezone.now().isoformat()}]}, auth)
    changed = client.get(poll, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="memory-live").content.decode()
    assert poller_url(changed, "memory-live") != poll
    assert re.search(r'<div id="records" class="records-table" hx-swap-oob="true">', changed)
    assert re.search(r'<div class="table-scroll" id="stores-table" hx-swap-oob="true">', changed)
    assert "Alice runs &lt;i&gt;daily&lt;/i&gt;" in changed and "<i>daily</i>" not in changed


def test_a_quiet_store_offers_to_follow_and_a_later_page_does_not(client, alice, agent, written) -> None:
    long_ago = timezone.now() - timedelta(days=3)
    models.MemoryStore.objects.filter(pk=written.store_id).update(last_write_at=long_ago, last_read_at=None)
    client.force_login(alice)
    quiet = client.get(f"/agents/{agent.pk}/memory/").content.decode()
    assert 'id="memory-live"' not in quiet and 'id="memory-follow"' in quiet
    assert 'id="memory-live"' in client.get(f"/agents/{agent.pk}/memory/?follow=1").content.decode()
    later = client.get(f"/agents/{agent.pk}/memory/?follow=1&after={written.pk}").content.decode()
    assert 'id="memory-live"' not in later and 'id="memory-follow"' not in later


def test_following_another_projects_memory_is_not_found(client, agent, written, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_user("eve", password="x"))
    answer = client.get(f"/agents/{agent.pk}/memory/?live=1.1.0", HTTP_HX_REQUEST="true",
                        HTTP_HX_TARGET="memory-live")
    assert answer.status_code == 404
