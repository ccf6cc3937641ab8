"""The session list's text search across the memory layers (issue 25, "Search across the layers"): ``q`` also finds
sessions whose recalls (a query, an item's text as sent) or memory records (one they wrote, one they read) hold the
text, and each row says where, linked: the message, the recall's message, the record's page. On the files the
libraries wrote (AgentScope's turn-3 save with its mem0 long-term memory, mem0's history.db, Letta's agent file) and
writes through the memory write API; scoped to the user's projects; the API's list says the same."""
from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from agents.projects import keys
from agents.store import listing
from tests.memory_pages import import_friday, import_letta, import_mem0_history

URL = reverse("agents:session_list")
# mem0 updated the record Friday read at #7 ("User prefers trains over flights") to this; no message nor any
# recalled item holds "high-speed", only the record's current text.
RECORD_WORD = "high-speed"


@pytest.fixture
def friday(project, tmp_path) -> models.Session:
    """AgentScope's session (turn 1 and 2 saves) with Friday's mem0 long-term memory and the project's mem0 store."""
    import_friday(project, tmp_path / "friday")
    import_mem0_history(project)
    return models.Session.objects.get(agent__project=project, source_format="agentscope_session")


@pytest.fixture
def letta(project) -> models.Session:
    """Letta's customer-service agent: its memory blocks, written by its session."""
    agent = import_letta(project)
    return agent.sessions.get()


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}


def write(client, path: str, body: dict[str, Any], auth: dict[str, str]) -> None:
    response = client.post(f"/api/memory/writes/{path}/", data=json.dumps(body), content_type="application/json",
                           **auth)
    assert response.status_code in (200, 201), response.content


def found(user, q: str) -> list[int]:
    return sorted(listing.sessions_filtered(user, listing.SessionFilters(q=q)).values_list("pk", flat=True))


def listed(client, q: str) -> list[int]:
    """The sessions the list page links to for ``q``."""
    page = client.get(URL, {"q": q}).content.decode()
    return sorted({int(pk) for pk in re.findall(r'<td class="title-cell">\s*<a href="/sessions/(\d+)/', page)})


def places(client, q: str) -> dict[int, list[tuple[str, str]]]:
    """For each session the list shows for ``q``: where it says it matched, as (link, text)."""
    page = client.get(URL, {"q": q}).content.decode()
    out: dict[int, list[tuple[str, str]]] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S):
        session = re.search(r'<td class="title-cell">\s*<a href="/sessions/(\d+)/', row)
        found_in = re.search(r'<div class="small matched-in">(.*?)</div>', row, flags=re.S)
        if session:
            out[int(session.group(1))] = [
                (html.unescape(href), text) for href, text in
                re.findall(r'<a href="([^"]*)" data-layer="[a-z]+">([^<]*)</a>', found_in.group(1))
            ] if found_in else []
    return out


def api_found(client, q: str | None) -> dict[int, Any]:
    response = client.get("/api/sessions/", {"q": q} if q is not None else {})
    assert response.status_code == 200, response.content
    return {row["id"]: row for row in response.json()["results"]}


def at(session: models.Session, seq: int) -> str:
    return f"{session.get_absolute_url()}?at={seq}#m-{seq}"


def test_a_word_only_in_a_record_it_read_finds_the_session_and_says_which_record(friday, alice, alice_client):
    record = models.MemoryRecord.objects.get(text__contains=RECORD_WORD)
    assert not models.Message.objects.filter(content__icontains=RECORD_WORD).exists()
    assert not models.RecallItem.objects.filter(text__icontains=RECORD_WORD).exists()
    assert found(alice, RECORD_WORD) == [friday.pk] == listed(alice_client, RECORD_WORD)
    record_page = reverse("agents:memory_record", args=[record.pk])
    assert places(alice_client, RECORD_WORD) == {
        friday.pk: [(record_page, f"in memory record {record.external_id} read at #7")]}
    # Any case, as the messages' search.
    assert found(alice, RECORD_WORD.upper()) == [friday.pk]


def test_a_recalled_item_says_the_message_and_the_recall_that_carried_it(friday, alice_client):
    # "Longjing" came in from the knowledge base at #2, placed in the message it recalled into (also at #8).
    assert places(alice_client, "Longjing") == {friday.pk: [
        (at(friday, 2), "in a message at #2"), (at(friday, 2), "in a recall at #2")]}
    # A recall's query: "Make me a plan for the trip." was the question at #7.
    assert (at(friday, 7), "in a recall at #7") in places(alice_client, "plan for the trip")[friday.pk]


def test_a_word_only_in_a_recall_s_item_finds_the_session(friday, letta, alice, alice_client, auth):
    # A recall written through the API whose item's text is in no message (the system prompt it went to is not
    # stored), on Letta's session at its last message.
    seq = letta.message_count - 1
    write(alice_client, "recalls", {"id": "r-1", "session": letta.pk, "seq": seq, "placement": "system",
                                    "query": "customer loyalty", "items": [{"text": "Offer a kumquat voucher"}]}, auth)
    assert not models.Message.objects.filter(content__icontains="kumquat").exists()
    assert found(alice, "kumquat") == [letta.pk] == listed(alice_client, "kumquat")
    assert places(alice_client, "KUMQUAT") == {letta.pk: [(at(letta, seq), f"in a recall at #{seq}")]}
    assert places(alice_client, "customer loyalty") == {letta.pk: [(at(letta, seq), f"in a recall at #{seq}")]}


def test_a_record_the_session_wrote_finds_it_and_says_where_it_was_written(letta, alice, alice_client, auth):
    write(alice_client, "stores", {"id": "notes", "agent": letta.agent.name}, auth)
    write(alice_client, "versions", {"store": "notes", "versions": [
        {"id": "w-1", "record": "note-1", "op": "ADD", "text": "Customer asked for a zeppelin ride",
         "session": letta.pk, "seq": letta.message_count - 1}]}, auth)
    record, seq = models.MemoryRecord.objects.get(external_id="note-1"), letta.message_count - 1
    assert found(alice, "zeppelin") == [letta.pk]
    assert places(alice_client, "zeppelin") == {letta.pk: [
        (reverse("agents:memory_record", args=[record.pk]), f"in memory record note-1 written at #{seq}")]}
    # The record's current text is what is searched: after an update without the word, the session is not found.
    write(alice_client, "versions", {"store": "notes", "versions": [
        {"id": "w-2", "record": "note-1", "op": "UPDATE", "text": "Customer asked for a balloon ride"}]}, auth)
    assert found(alice, "zeppelin") == []
    assert found(alice, "balloon") == [letta.pk]


def test_a_word_in_nothing_finds_nothing(friday, letta, alice, alice_client):
    assert found(alice, "quetzalcoatl") == [] == listed(alice_client, "quetzalcoatl")
    assert api_found(alice_client, "quetzalcoatl") == {}
    assert "No session matches these filters." in alice_client.get(URL, {"q": "quetzalcoatl"}).content.decode()


def test_another_project_s_memory_never_finds_a_session(friday, alice, alice_client, bob, other_project, tmp_path,
                                                        client):
    # Bob's project holds the same files: the same words, in his sessions, recalls and records.
    import_friday(other_project, tmp_path / "bob")
    bobs = models.Session.objects.get(agent__project=other_project, source_format="agentscope_session")
    assert found(alice, RECORD_WORD) == [friday.pk] and found(alice, "Longjing") == [friday.pk]
    assert found(bob, RECORD_WORD) == [bobs.pk]
    assert bobs.pk not in api_found(alice_client, RECORD_WORD)
    # A recall of alice's session pointed at a record of bob's store: that record's text finds nothing for her.
    secret = models.MemoryRecord.objects.filter(store__project=other_project).first()
    assert secret is not None
    secret.text = "bob's hidden okapi preference"
    secret.save(update_fields=["text"])
    models.RecallItem.objects.filter(recall__session=friday).update(record=secret)
    assert found(alice, "okapi") == [] == listed(alice_client, "okapi")
    client.force_login(bob)
    assert list(api_found(client, "okapi")) == [bobs.pk]  # bob's own session read it: his alone


def test_the_api_lists_the_same_sessions_and_says_where_only_when_searched(friday, letta, alice, alice_client):
    for q in (RECORD_WORD, "Longjing", "Hangzhou", "customer"):
        rows = api_found(alice_client, q)
        assert sorted(rows) == found(alice, q) == listed(alice_client, q), q
        shown = places(alice_client, q)
        for pk, row in rows.items():
            assert [(m["url"].removeprefix("http://testserver"), m["text"]) for m in row["matched_in"]] == shown[pk]
    record = models.MemoryRecord.objects.get(text__contains=RECORD_WORD)
    assert api_found(alice_client, RECORD_WORD)[friday.pk]["matched_in"] == [{
        "layer": "record", "seq": 7, "text": f"in memory record {record.external_id} read at #7",
        "record": record.pk, "record_external_id": record.external_id, "how": "read",
        "url": "http://testserver" + reverse("agents:memory_record", args=[record.pk])}]
    # Without a search, the rows are as before: no matched_in.
    assert all("matched_in" not in row for row in api_found(alice_client, None).values())


def test_the_search_reads_messages_once_and_memory_in_a_bounded_number_of_queries(friday, letta, alice_client):
    with CaptureQueriesContext(connection) as plain:
        alice_client.get(URL, {"q": "Hangzhou"}, HTTP_HX_REQUEST="true")
    with CaptureQueriesContext(connection) as ctx:
        alice_client.get(URL, {"q": RECORD_WORD}, HTTP_HX_REQUEST="true")
    reads = [q["sql"] for q in ctx.captured_queries if "agents_message" in q["sql"]]
    assert len(reads) == 1, reads  # the first hits came with the sessions found: no second read of messages
    # Saying where costs three queries (recalls, records written, records read), whatever the page holds.
    assert len(ctx.captured_queries) == len(plain.captured_queries) <= 15, [q["sql"] for q in ctx.captured_queries]


def test_a_short_text_is_found_in_memory_by_a_scan(friday, alice, alice_client):
    # Shorter than a trigram, no index is asked: "-s" is in "high-speed", the record's text alone.
    assert not models.Message.objects.filter(content__icontains="-s").exists()
    assert found(alice, "-s") == [friday.pk]
    record = models.MemoryRecord.objects.get(text__contains=RECORD_WORD)
    assert places(alice_client, "-s")[friday.pk] == [
        (reverse("agents:memory_record", args=[record.pk]), f"in memory record {record.external_id} read at #7")]


def test_the_recall_indexes_stay_in_step_with_their_tables(friday, letta, alice, alice_client, auth):
    write(alice_client, "recalls", {"id": "r-2", "session": letta.pk, "seq": 0, "query": "gondola",
                                    "items": [{"text": "a narwhal fact"}]}, auth)
    assert found(alice, "gondola") == found(alice, "narwhal") == [letta.pk]
    models.RecallItem.objects.filter(text="a narwhal fact").update(text="a walrus fact")
    assert found(alice, "narwhal") == [] and found(alice, "walrus") == [letta.pk]
    models.Recall.objects.filter(query="gondola").delete()
    assert found(alice, "gondola") == found(alice, "walrus") == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for table in ("agents_recall_fts", "agents_recallitem_fts"):
                cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
