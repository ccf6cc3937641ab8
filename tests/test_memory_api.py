"""The memory API (agents/api/memory.py) on files the libraries wrote, imported through the one import path: an
agent's stores, a store's records (searched, filtered, sorted, paged at a cost flat in the store's size), a record
with its versions, its reads and the diff of two versions, a session's recalls, an agent's snapshots and the diff of
AgentScope's two saves; scoped to the caller's projects, and in the OpenAPI schema."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.memory.snapshot_diff import snapshot_digest
from agents.projects import keys
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
TRAINS = "User prefers high-speed trains over flights"


def agentscope_save(folder: Path, turn: int) -> Path:
    # JSONSession names its file {user_id}_{session_id}.json: the user scopes the agent's mem0 store.
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(AGENTSCOPE / f"session_user_1_turn{turn}.json", folder / "user_1_trip.json"))


def import_friday(project: models.Project, tmp_path: Path) -> models.Session:
    """AgentScope's two saves of one session and its mem0 long-term memory, as a user imports them."""
    imports.import_file(agentscope_save(tmp_path / f"{project.slug}-1", 1), project=project)
    imports.import_file(agentscope_save(tmp_path / f"{project.slug}-2", 2), project=project)
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project=project)
    return models.Session.objects.get(agent__project=project, external_id="user_1_trip")


def mem0_file(folder: Path, records: int, *, versions: int = 1, user: str = "carol") -> Path:
    """A mem0 ``get_all`` output with its history rows, as mem0 writes them: ``records`` records, each with
    ``versions`` writes (an ADD, then UPDATEs)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    results, history = [], []
    for i in range(records):
        memory_id = str(uuid.UUID(int=i + 1))
        texts = [f"fact {i} as written {n}" for n in range(1, versions + 1)]
        times = [(start + timedelta(days=i % 300, minutes=n)).isoformat() for n in range(versions)]
        results.append({"id": memory_id, "memory": texts[-1], "hash": hashlib.md5(texts[-1].encode()).hexdigest(),
                        "metadata": None, "created_at": times[0], "updated_at": times[-1], "user_id": user})
        for n, (text, when) in enumerate(zip(texts, times, strict=True)):
            history.append({"id": str(uuid.UUID(int=(i + 1) * 1000 + n)), "memory_id": memory_id,
                            "old_memory": texts[n - 1] if n else None, "new_memory": text,
                            "event": "UPDATE" if n else "ADD", "created_at": times[0], "updated_at": when,
                            "is_deleted": False, "actor_id": user, "role": "user"})
    path = folder / f"mem0-{user}-{records}x{versions}.json"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"results": results, "history": history}))
    return path


@pytest.fixture
def friday(project, tmp_path) -> models.Session:
    session = import_friday(project, tmp_path)
    imports.import_file(MEMORY_SAMPLES / "mem0" / "history.db", project=project)  # a store the project shares
    return session


@pytest.fixture
def theirs(other_project, tmp_path) -> models.Session:
    """The same files in another project, which alice is not in."""
    return import_friday(other_project, tmp_path / "theirs")


def get(client: Any, url: str, **headers: Any) -> Any:
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.content[:500])
    return response.json()


def store_of(session: models.Session, kind: str = "records") -> models.MemoryStore:
    return models.MemoryStore.objects.get(agent=session.agent, kind=kind)


# --- an agent's stores ------------------------------------------------------------------------------------------


def test_it_lists_an_agents_stores_its_own_first_then_those_its_project_shares(alice_client, friday) -> None:
    agent = friday.agent
    data = get(alice_client, f"/api/agents/{agent.pk}/memory/")
    assert (data["agent"], data["count"], data["next"], data["previous"]) == (agent.pk, 3, None, None)
    assert [(s["name"], s["kind"], s["agent"]) for s in data["stores"]] == [
        ("knowledge of Friday", "knowledge", agent.pk), ("long-term memory of Friday", "records", agent.pk),
        ("mem0", "records", None)]
    ltm = data["stores"][1]
    store = store_of(friday)
    assert ltm == {
        "id": store.pk, "name": "long-term memory of Friday", "kind": "records", "source_format": "mem0",
        "scope": {"user_id": "user_1", "agent_id": "Friday"}, "external_id": "", "project": "alpha",
        "agent": agent.pk, "records": 2, "versions": 3, "recalls": 1,
        "last_write_at": store.last_write_at.isoformat(), "last_read_at": store.last_read_at.isoformat(),
        "records_url": f"http://testserver/api/memory/stores/{store.pk}/records/",
        "export_url": f"http://testserver/api/memory/stores/{store.pk}/export/",
    }
    shared = data["stores"][2]
    assert (shared["records"], shared["versions"], shared["recalls"], shared["last_read_at"]) == (4, 6, 0, None)
    assert data["snapshots_url"] == f"http://testserver/api/agents/{agent.pk}/snapshots/"


def test_the_root_the_agent_and_the_session_link_the_memory_lists(alice_client, friday) -> None:
    root = get(alice_client, "/api/")
    assert root["memory_stores"] == "http://testserver/api/memory/stores/"
    stores = get(alice_client, root["memory_stores"])
    assert stores["count"] == 3 and {s["project"] for s in stores["results"]} == {"alpha"}
    agent = get(alice_client, f"/api/agents/{friday.agent_id}/")
    assert get(alice_client, agent["memory_url"])["count"] == 3
    assert get(alice_client, agent["snapshots_url"])["count"] == 2
    session = get(alice_client, f"/api/sessions/{friday.pk}/")
    assert len(get(alice_client, session["recalls_url"])["recalls"]) == 3


# --- a store's records ------------------------------------------------------------------------------------------


def records(client: Any, store: models.MemoryStore, query: str = "") -> Any:
    return get(client, f"/api/memory/stores/{store.pk}/records/{query}")


def test_it_lists_a_stores_records_as_they_stand_with_their_counts(alice_client, friday) -> None:
    data = records(alice_client, store_of(friday))
    assert (data["count"], data["next"], data["previous"]) == (2, None, None)
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    assert data["results"][0] == {  # the last written first
        "id": trains.pk, "url": f"http://testserver/api/memory/records/{trains.pk}/",
        "external_id": trains.external_id, "text": TRAINS, "state": "active", "versions": 2, "reads": 1,
        "created_at": trains.created_at.isoformat(), "updated_at": trains.updated_at.isoformat(), "char_limit": None,
    }
    assert data["results"][1]["text"] == "User is planning a trip to Hangzhou next week"


def test_it_searches_filters_and_sorts_records(alice_client, friday) -> None:
    shared = models.MemoryStore.objects.get(agent=None)

    def texts(query: str) -> list[str]:
        return [r["text"] for r in records(alice_client, shared, query)["results"]]

    assert texts("?q=PEANUTS") == ["Noted, no meat and no peanuts.", "I am vegan and allergic to peanuts"]
    assert texts("?state=deleted") == ["Noted, no meat and no peanuts."]
    assert texts("?q=peanuts&state=active") == ["I am vegan and allergic to peanuts"]
    assert texts("?sort=-versions")[:2] == ["Noted, no meat and no peanuts.", "I am vegan and allergic to peanuts"]
    assert texts("?changed_from=2026-12-07") == []
    assert len(texts("?changed_from=2026-12-06&changed_to=2026-12-06")) == 4
    assert texts("?read=yes") == [] and len(texts("?read=never")) == 4
    assert [r["text"] for r in records(alice_client, store_of(friday), "?read=yes&sort=id")["results"]] == [
        TRAINS, "User is planning a trip to Hangzhou next week"]
    filtered = records(alice_client, shared, "?q=peanuts")
    assert filtered["count"] == 2  # counted, since the filter narrows the list


@pytest.mark.parametrize(("query", "error"), [
    ("?state=gone", "state: expected one of active, deleted, invalidated"),
    ("?read=maybe", "read: expected never or yes"),
    ("?changed_from=yesterday", "changed_from: expected a date, YYYY-MM-DD"),
    ("?changed_to=2026-13-01", "changed_to: expected a date, YYYY-MM-DD"),
    ("?sort=text", "sort: expected one of updated, -updated, reads, -reads, versions, -versions, id"),
])
def test_a_filter_that_cannot_apply_is_refused_naming_it(alice_client, friday, query, error) -> None:
    response = alice_client.get(f"/api/memory/stores/{store_of(friday).pk}/records/{query}")
    assert (response.status_code, response.json()) == (400, {"error": error})


def test_it_pages_records_like_the_session_list(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_file(tmp_path, 120), project=project)
    store = models.MemoryStore.objects.get()
    first = records(alice_client, store, "?sort=id")
    assert first["count"] == 120 and first["previous"] is None
    assert first["next"] == f"http://testserver/api/memory/stores/{store.pk}/records/?page=2&sort=id"
    seen = [r["external_id"] for r in first["results"]]
    page = first
    while page["next"]:
        page = get(alice_client, page["next"])
        seen += [r["external_id"] for r in page["results"]]
    assert seen == sorted(str(uuid.UUID(int=i + 1)) for i in range(120))
    response = alice_client.get(f"/api/memory/stores/{store.pk}/records/?page=4")
    assert response.status_code == 404
    assert response.json() == {"error": "page 4: no such page; there are 3 (page=1 to page=3)"}


def _grow(store: models.MemoryStore, to: int) -> None:
    """Rows added as an import writes them, and the store's summary with them."""
    have = store.records.count()
    models.MemoryRecord.objects.bulk_create([
        models.MemoryRecord(store=store, external_id=f"grown-{i}", text=f"grown fact {i}", version_count=1,
                            updated_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=i))
        for i in range(have, to)], batch_size=2000)
    models.MemoryStore.objects.filter(pk=store.pk).update(record_count=to)


def _record_page_queries(client: Any, store: models.MemoryStore, query: str = "") -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        data = records(client, store, query + ("&" if query else "?") + "page=2")
    assert len(data["results"]) == 50
    return [q["sql"] for q in captured]


def test_a_record_page_costs_the_same_queries_in_a_store_of_any_size(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_file(tmp_path, 100), project=project)
    store = models.MemoryStore.objects.get()
    small = _record_page_queries(alice_client, store)
    small_filtered = _record_page_queries(alice_client, store, "?state=active")
    _grow(store, 20_000)
    store.refresh_from_db()
    large = _record_page_queries(alice_client, store)
    assert len(large) == len(small)
    assert len(_record_page_queries(alice_client, store, "?state=active")) == len(small_filtered)
    assert records(alice_client, store)["count"] == 20_000
    # Unfiltered, the count is the store's own: no query counts its records.
    counting = [sql for sql in large if re.search(r"COUNT\(\*\)", sql) and "agents_memoryrecord" in sql]
    assert counting == []
    page = [sql for sql in large if 'FROM "agents_memoryrecord"' in sql]
    assert len(page) == 1 and "LIMIT 50 OFFSET 50" in page[0]


# --- one record -------------------------------------------------------------------------------------------------


def test_a_record_shows_its_versions_in_order_and_its_reads_with_their_session_and_seq(alice_client, friday) -> None:
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    recall = models.Recall.objects.get(session=friday, store=trains.store)
    data = get(alice_client, f"/api/memory/records/{trains.pk}/")
    assert (data["id"], data["store"], data["text"], data["state"]) == (trains.pk, trains.store_id, TRAINS, "active")
    assert (data["version_count"], data["read_count"], data["metadata"]) == (
        2, 1, {"user_id": "user_1", "agent_id": "Friday"})
    assert [(v["number"], v["op"], v["text"]) for v in data["versions"]] == [
        (1, "ADD", "User prefers trains over flights"), (2, "UPDATE", TRAINS)]
    assert data["versions"][1]["at"] == trains.updated_at.isoformat()
    # Turn 2's <long_term_memory> message (#7) sent the record as it was before mem0's update: version 1.
    assert data["reads"] == [{"id": recall.items.get(record=trains).pk, "recall": recall.pk, "session": friday.pk,
                              "seq": 7, "rank": 2, "score": None, "query": "Make me a plan for the trip.",
                              "version": 1, "text": "User prefers trains over flights"}]
    assert (data["versions_next"], data["reads_next"]) == (None, None)
    assert data["diff_url"] == f"http://testserver/api/memory/records/{trains.pk}/diff/"


def test_a_records_versions_and_reads_are_paged_by_keyset(alice_client, friday, project, tmp_path) -> None:
    imports.import_file(mem0_file(tmp_path, 1, versions=7), project=project)
    record = models.MemoryRecord.objects.get(external_id=str(uuid.UUID(int=1)))
    # Five more recalls of it in the session, two of them sending it twice.
    for n in range(5):
        recall = models.Recall.objects.create(session=friday, seq=7, store=record.store, query=f"q{n}")
        for rank in range(1, 3 if n % 2 else 2):
            models.RecallItem.objects.create(recall=recall, record=record, version=7, rank=rank, text=record.text)
    expected = list(models.RecallItem.objects.filter(record=record).order_by("-recall_id", "rank", "id")
                    .values_list("pk", flat=True))
    assert len(expected) == 7
    url = f"/api/memory/records/{record.pk}/?limit=3"
    versions, reads, pages = [], [], 0
    while url:
        with CaptureQueriesContext(connection) as captured:
            data = get(alice_client, url)
        pages += 1
        assert len(captured) == 5  # the session and the user, then the record, its versions and its reads
        versions += [v["number"] for v in data["versions"]]
        url = data["versions_next"]
    assert versions == [1, 2, 3, 4, 5, 6, 7] and pages == 3
    url = f"/api/memory/records/{record.pk}/?limit=3"
    while url:
        data = get(alice_client, url)
        reads += [r["id"] for r in data["reads"]]
        url = data["reads_next"]
    assert reads == expected
    assert [r["query"] for r in get(alice_client, f"/api/memory/records/{record.pk}/")["reads"]][:3] == [
        "q4", "q3", "q3"]


def test_it_diffs_two_versions_word_by_word(alice_client, friday) -> None:
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    data = get(alice_client, f"/api/memory/records/{trains.pk}/diff/")
    assert data["record"] == trains.pk and data["changed"] is True
    assert (data["from"]["number"], data["from"]["op"], data["to"]["number"], data["to"]["op"]) == (
        1, "ADD", 2, "UPDATE")
    assert data["diff"] == [["=", "User prefers "], ["+", "high-speed "], ["=", "trains over flights"]]
    back = get(alice_client, f"/api/memory/records/{trains.pk}/diff/?from=2&to=1")
    assert back["diff"] == [["=", "User prefers "], ["-", "high-speed "], ["=", "trains over flights"]]
    same = get(alice_client, f"/api/memory/records/{trains.pk}/diff/?from=2&to=2")
    assert same["changed"] is False and same["diff"] == [["=", TRAINS]]
    deleted = models.MemoryRecord.objects.get(state="deleted")
    gone = get(alice_client, f"/api/memory/records/{deleted.pk}/diff/")
    assert gone["to"]["op"] == "DELETE" and gone["diff"] == [["-", "Noted, no meat and no peanuts."]]


@pytest.mark.parametrize(("query", "error"), [
    ("?from=3", "from: the record has no version 3 (it has 2, numbered from 1)"),
    ("?from=1&to=9", "to: the record has no version 9 (it has 2, numbered from 1)"),
    ("?to=first", "to: Input should be a valid integer, unable to parse string as an integer"),
    ("?from=0", "from: Input should be greater than or equal to 1"),
])
def test_a_diff_of_versions_the_record_does_not_have_is_refused(alice_client, friday, query, error) -> None:
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    response = alice_client.get(f"/api/memory/records/{trains.pk}/diff/{query}")
    assert (response.status_code, response.json()) == (400, {"error": error})


def test_a_bad_page_of_a_record_is_refused(alice_client, friday) -> None:
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    for query, error in (("?limit=0", "limit: Input should be greater than or equal to 1"),
                         ("?limit=5000", "limit: Input should be less than or equal to 1000"),
                         ("?versions_after=x", "versions_after: Input should be a valid integer, unable to parse "
                                               "string as an integer"),
                         ("?reads_after=999999", "reads_after: the record has no read 999999")):
        response = alice_client.get(f"/api/memory/records/{trains.pk}/{query}")
        assert (response.status_code, response.json()) == (400, {"error": error}), query


# --- a session's recalls ----------------------------------------------------------------------------------------


def test_it_lists_a_sessions_recalls_with_their_items_at_the_messages_carrying_them(alice_client, friday) -> None:
    data = get(alice_client, f"/api/sessions/{friday.pk}/recalls/")
    assert data["session"] == friday.pk and data["next"] is None
    knowledge, ltm = store_of(friday, "knowledge"), store_of(friday)
    assert [(r["seq"], r["store"], r["placement"], r["persisted"]) for r in data["recalls"]] == [
        (2, knowledge.pk, "message", True), (7, ltm.pk, "message", True), (8, knowledge.pk, "message", True)]
    recall = data["recalls"][1]
    assert recall["query"] == "Make me a plan for the trip." and recall["params"] == {"limit": 5}
    plan = models.MemoryRecord.objects.get(text="User is planning a trip to Hangzhou next week")
    trains = models.MemoryRecord.objects.get(text=TRAINS)
    assert recall["items"] == [
        {"record": plan.pk, "version": 1, "rank": 1, "score": None,
         "text": "User is planning a trip to Hangzhou next week", "metadata": {}},
        {"record": trains.pk, "version": 1, "rank": 2, "score": None, "text": "User prefers trains over flights",
         "metadata": {}}]
    # Knowledge chunks match no record of the store: null, with the text as sent.
    assert [(i["record"], i["rank"]) for i in data["recalls"][0]["items"]] == [(None, 1), (None, 2), (None, 3)]
    assert data["recalls"][0]["items"][1]["text"] == "West Lake is the main sight of Hangzhou."
    # The message carrying it is the session's #7.
    assert models.Message.objects.get(session=friday, seq=7).content.startswith("<long_term_memory>")


def test_a_sessions_recalls_are_paged_by_seq_even_where_several_share_a_message(alice_client, friday) -> None:
    store = store_of(friday)
    extra = [models.Recall.objects.create(session=friday, seq=seq, store=store, query=f"extra {n}")
             for n, seq in enumerate([7, 7, 9, None, None])]
    expected = list(models.Recall.objects.filter(session=friday).order_by("seq", "id").values_list("pk", flat=True))
    expected = [pk for pk in expected if pk not in {extra[3].pk, extra[4].pk}] + [extra[3].pk, extra[4].pk]
    url, seen, queries = f"/api/sessions/{friday.pk}/recalls/?limit=2", [], set()
    while url:
        with CaptureQueriesContext(connection) as captured:
            data = get(alice_client, url)
        queries.add(len(captured))
        seen += [r["id"] for r in data["recalls"]]
        url = data["next"]
    # The session and the user, the session, its recalls (and those no message carries, once reached), their items.
    assert seen == expected and queries == {5, 6}
    after = get(alice_client, f"/api/sessions/{friday.pk}/recalls/?after=7")
    assert [r["seq"] for r in after["recalls"]] == [8, 9, None, None]
    first = get(alice_client, f"/api/sessions/{friday.pk}/recalls/?limit=2")
    assert first["next"] == (f"http://testserver/api/sessions/{friday.pk}/recalls/?after=7&"
                             f"after_id={first['recalls'][1]['id']}&limit=2")


# --- snapshots --------------------------------------------------------------------------------------------------


def test_it_lists_an_agents_snapshots_without_their_values_and_shows_one_with_it(alice_client, friday) -> None:
    data = get(alice_client, f"/api/agents/{friday.agent_id}/snapshots/")
    first, second = models.Snapshot.objects.filter(agent=friday.agent).order_by("seq")
    assert data["count"] == 2
    assert data["results"][0] == {
        "id": first.pk, "url": f"http://testserver/api/snapshots/{first.pk}/", "agent": friday.agent_id,
        "external_id": first.external_id, "parent": None, "step": None, "taken_at": None,
        "source_format": "agentscope_session", "format_version": first.format_version, "session": friday.pk,
        "seq": 5}
    assert (data["results"][1]["parent"], data["results"][1]["seq"]) == (first.pk, 11)
    assert all("value" not in row for row in data["results"])
    one = get(alice_client, data["results"][1]["url"])
    assert one["value"] == second.value and one["parent"] == first.pk
    assert set(one["value"]) >= {"memory", "plan_notebook"}


def test_the_diff_of_agentscope_s_two_saves_is_six_messages_added_and_the_plan_changed(alice_client, friday) -> None:
    first, second = models.Snapshot.objects.filter(agent=friday.agent).order_by("seq")
    data = get(alice_client, f"/api/snapshots/{first.pk}/diff/{second.pk}/")
    assert (data["left"], data["right"], data["total"], data["truncated"], data["exact"]) == (
        first.pk, second.pk, 7, False, True)
    assert data["counts"] == {"added": 6, "removed": 0, "changed": 1}
    added = [c for c in data["changes"] if c["op"] == "added"]
    assert [(c["path"], c["message_list"], c["message"]) for c in added] == [
        (f"$.memory.content[{i}]", "$.memory.content", i) for i in range(5, 11)]
    assert added[0]["new"][0]["content"] == "Make me a plan for the trip."
    [plan] = [c for c in data["changes"] if c["op"] == "changed"]
    assert plan["path"] == "$.plan_notebook.current_plan" and plan["old"] is None
    assert plan["new"]["name"] == "Hangzhou trip"
    cut = get(alice_client, f"/api/snapshots/{first.pk}/diff/{second.pk}/?limit=2")
    assert (len(cut["changes"]), cut["total"], cut["truncated"]) == (2, 7, True)
    back = get(alice_client, f"/api/snapshots/{second.pk}/diff/{first.pk}/")
    assert back["counts"] == {"added": 0, "removed": 6, "changed": 1}


def test_a_long_value_in_a_snapshot_diff_is_cut_for_display(alice_client, friday) -> None:
    first, second = models.Snapshot.objects.filter(agent=friday.agent).order_by("seq")
    second.value = {**second.value, "notes": "x" * 5000}
    second.digest = snapshot_digest(second.value)  # a value is written with its digest (Snapshot.written)
    second.save(update_fields=["value", "digest"])
    data = get(alice_client, f"/api/snapshots/{first.pk}/diff/{second.pk}/")
    [notes] = [c for c in data["changes"] if c["path"] == "$.notes"]
    assert len(notes["new"]) == 2000 and notes["cut"] == {"new": 5000}


# --- scope ------------------------------------------------------------------------------------------------------


def _their_urls(theirs: models.Session) -> list[str]:
    store = store_of(theirs)
    record = store.records.first()
    first, second = models.Snapshot.objects.filter(agent=theirs.agent).order_by("seq")
    return [f"/api/agents/{theirs.agent_id}/memory/", f"/api/memory/stores/{store.pk}/records/",
            f"/api/memory/records/{record.pk}/", f"/api/memory/records/{record.pk}/diff/",
            f"/api/sessions/{theirs.pk}/recalls/", f"/api/agents/{theirs.agent_id}/snapshots/",
            f"/api/snapshots/{first.pk}/", f"/api/snapshots/{first.pk}/diff/{second.pk}/"]


def test_another_projects_memory_is_not_found(alice_client, friday, theirs) -> None:
    for url in _their_urls(theirs):
        response = alice_client.get(url)
        assert response.status_code == 404, url
        assert set(response.json()) == {"error"}, url
    mine = models.Snapshot.objects.filter(agent=friday.agent).first()
    other = models.Snapshot.objects.filter(agent=theirs.agent).first()
    for url in (f"/api/snapshots/{mine.pk}/diff/{other.pk}/", f"/api/snapshots/{other.pk}/diff/{mine.pk}/"):
        assert alice_client.get(url).status_code == 404, url
    assert {s["project"] for s in get(alice_client, "/api/memory/stores/")["results"]} == {"alpha"}


def test_a_key_reads_the_memory_of_its_project_and_of_no_other(client, friday, theirs, project) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='script').key}"}
    assert get(client, f"/api/agents/{friday.agent_id}/memory/", **auth)["count"] == 3
    assert len(get(client, f"/api/sessions/{friday.pk}/recalls/", **auth)["recalls"]) == 3
    for url in _their_urls(theirs):
        assert client.get(url, **auth).status_code == 404, url
    assert client.get(f"/api/agents/{friday.agent_id}/memory/").status_code == 401


# --- the schema -------------------------------------------------------------------------------------------------


def test_the_schema_validates_and_documents_the_memory_api(alice_client) -> None:
    from drf_spectacular.validation import validate_schema

    document = get(alice_client, "/api/schema/?format=json")
    validate_schema(document)
    operations = {op["operationId"]: (path, method) for path, item in document["paths"].items()
                  for method, op in item.items()}
    assert {name: operations[name] for name in (
        "memory_stores_list", "agent_memory", "memory_store_records", "memory_record", "memory_record_diff",
        "session_recalls", "agent_snapshots", "snapshot_detail", "snapshot_diff", "memory_store_export")} == {
        "memory_stores_list": ("/api/memory/stores/", "get"),
        "agent_memory": ("/api/agents/{agent_id}/memory/", "get"),
        "memory_store_records": ("/api/memory/stores/{store_id}/records/", "get"),
        "memory_record": ("/api/memory/records/{record_id}/", "get"),
        "memory_record_diff": ("/api/memory/records/{record_id}/diff/", "get"),
        "session_recalls": ("/api/sessions/{session_id}/recalls/", "get"),
        "agent_snapshots": ("/api/agents/{agent_id}/snapshots/", "get"),
        "snapshot_detail": ("/api/snapshots/{snapshot_id}/", "get"),
        "snapshot_diff": ("/api/snapshots/{snapshot_id}/diff/{other_id}/", "get"),
        "memory_store_export": ("/api/memory/stores/{store_id}/export/", "post"),
    }
    schemas = document["components"]["schemas"]
    record = schemas["RecordDetailOut"]["properties"]
    assert {"versions", "reads", "versions_next", "reads_next"} <= set(record)
    assert set(schemas["VersionOut"]["properties"]) == {"number", "op", "text", "at", "actor", "session", "seq"}
    assert schemas["StoreOut"]["examples"][0]["kind"] == "records"
    records_op = document["paths"]["/api/memory/stores/{store_id}/records/"]["get"]
    assert {p["name"] for p in records_op["parameters"]} >= {"q", "state", "read", "changed_from", "changed_to",
                                                            "sort", "page"}
    assert records_op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/RecordPage")
    diff_op = document["paths"]["/api/memory/records/{record_id}/diff/"]["get"]
    assert {p["name"] for p in diff_op["parameters"]} >= {"from", "to"}
    assert "from" in schemas["VersionsDiffOut"]["properties"]


def _plan(records: Any) -> str:
    """How the database reads a page of ``records``: on PostgreSQL with sorting and sequential scans discouraged,
    so that the plan says whether an index can give the order at all, not which is cheaper on a small table."""
    query = records[50:100]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("SET LOCAL enable_seqscan = off")
        try:
            return query.explain()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET enable_sort")
                cursor.execute("RESET enable_seqscan")
    return query.explain()


@pytest.mark.parametrize("sort", ["-updated", "updated", "reads", "-reads", "versions", "-versions", "id"])
def test_every_sort_of_a_stores_records_is_read_in_order_from_an_index(project, tmp_path, sort) -> None:
    """A page deep in a store of a million records reads its rows in order from an index, never sorts them all:
    on PostgreSQL too, where a DESC index puts NULLs first and the list puts records without a time last."""
    from agents.ledger import reading

    imports.import_file(mem0_file(tmp_path, 100), project=project)
    store = models.MemoryStore.objects.get()
    plan = _plan(reading.store_records(store, reading.RecordFilters(sort=sort)))
    assert "TEMP B-TREE FOR ORDER BY" not in plan  # SQLite
    # PostgreSQL: no Sort node (an Incremental Sort of rows presorted by a unique key sorts nothing).
    assert not re.search(r"^\s*(->\s*)?Sort\s+\(", plan, re.MULTILINE), plan


def _plans_of(captured: CaptureQueriesContext, table: str, order: str) -> list[str]:
    """The plans of the captured queries that page ``table`` in an order starting with ``order``."""
    plans = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            if f'FROM "{table}"' in query["sql"] and f"ORDER BY {order}" in query["sql"] and "LIMIT" in query["sql"]:
                cursor.execute(("EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN ") + query["sql"])
                plans.append(" | ".join(str(row[-1]) for row in cursor.fetchall()))
    return plans


def test_a_page_deep_in_a_sessions_recalls_or_a_records_reads_starts_at_its_cursor(alice_client, friday) -> None:
    """Keyset pages read from the cursor on, by a range of the index, not every row before it filtered out."""
    record = models.MemoryRecord.objects.get(text=TRAINS)
    recalls = models.Recall.objects.bulk_create([
        models.Recall(session=friday, seq=100 + i // 2, store=record.store, query="q") for i in range(400)])
    models.RecallItem.objects.bulk_create([
        models.RecallItem(recall=r, record=record, rank=1, version=2, text=TRAINS) for r in recalls])
    last = get(alice_client, f"/api/sessions/{friday.pk}/recalls/?after=280&limit=1")["recalls"][-1]
    with CaptureQueriesContext(connection) as captured:
        get(alice_client, f"/api/sessions/{friday.pk}/recalls/?after={last['seq']}&after_id={last['id']}")
    placed = _plans_of(captured, "agents_recall", '"agents_recall"."seq" ASC')[0]
    read = get(alice_client, f"/api/memory/records/{record.pk}/?limit=300")["reads"][-1]
    with CaptureQueriesContext(connection) as captured:
        get(alice_client, f"/api/memory/records/{record.pk}/?reads_after={read['id']}")
    reads = _plans_of(captured, "agents_recallitem", '"agents_recallitem"."recall_id" DESC')[0]
    if connection.vendor == "sqlite":
        assert "recall_session_seq (session_id=? AND seq>?)" in placed, placed
        assert "recallitem_record_recall (record_id=? AND recall_id<?)" in reads, reads
    else:
        assert f"(seq >= {last['seq']})" in placed and "Index Cond" in placed, placed
        assert f"(recall_id <= {read['recall']})" in reads and "Index Cond" in reads, reads
