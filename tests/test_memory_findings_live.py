"""Memory findings after live writes (issues 26 + 27): an OTLP batch of memory spans and a request of the memory
write API compute the findings of the stores and sessions they touched, as an import does (ledger.findings'
findings_refresh, bounded: what is past the bound is left to a worker, findings_refresh_later). Checked on the rows
as the writer left them, before any page or API read (a read would compute stale findings again itself), then
through the API and the session list's filter; a batch or request sent again adds nothing."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from agents import models
from agents.ledger import findings
from agents.projects import keys as projects_keys
from tests.otlp_memory_spans import post, request, span

# --- hand-made spans: writes, searches and the chat call they fed (tests/otlp_memory_spans) -----------------------


def write(name: str, op: str, record: str, content: str | None = None, *, start: float) -> Any:
    attributes: dict[str, Any] = {"gen_ai.operation.name": op, "gen_ai.memory.store.id": "prefs",
                                  "gen_ai.memory.record.id": record}
    if content is not None:
        attributes["gen_ai.memory.records"] = json.dumps([{"id": record, "content": content}])
    return span(name, op, attributes, start=start, parent="turn")


def search(name: str, query: str, found: list[tuple[str, str]], *, start: float) -> Any:
    return span(name, "search_memory", {
        "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "prefs", "gen_ai.memory.query.text": query,
        "gen_ai.memory.records": json.dumps([{"id": i, "content": c, "score": 0.5} for i, c in found])},
        start=start, parent="turn")


def chat(name: str, *, start: float, system: str, question: str) -> Any:
    messages = [{"role": "system", "parts": [{"type": "text", "content": system}]},
                {"role": "user", "parts": [{"type": "text", "content": question}]}]
    return span(name, "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "session.id": "prefs-1",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])},
        start=start, parent="turn")


def first_turn() -> bytes:
    """mem-1 and mem-2 hold one text (duplicate_record); mem-3 is written and deleted, then a search returns it
    (recall_of_deleted); another search finds nothing (zero_hit_recall); both fed the call c1."""
    return request(
        write("w1", "create_memory", "mem-1", "Alice is vegan", start=0),
        write("w2", "create_memory", "mem-2", "Alice is vegan", start=0.2),
        write("w3", "create_memory", "mem-3", "Alice runs", start=0.3),
        write("w4", "delete_memory", "mem-3", start=0.4),
        search("s1", "diet", [], start=1),
        search("s2", "sport", [("mem-3", "Alice runs")], start=1.5),
        chat("c1", start=2, system="Known: Alice runs", question="Dinner?"))


# --- what is stored, and what a computation from the rows says ------------------------------------------------------


def stored(owner: models.Session | models.MemoryStore) -> list[tuple[Any, ...]]:
    rows = models.MemoryFinding.objects.filter(**{
        "session" if isinstance(owner, models.Session) else "store": owner}).order_by("kind", "seq", "id")
    return [(f.kind, f.seq, f.recall_id, f.record_id, f.version, f.message) for f in rows]


def computed(owner: models.Session | models.MemoryStore) -> list[tuple[Any, ...]]:
    """The findings the import's code computes from the rows now."""
    found = (findings.session_findings_compute(owner) if isinstance(owner, models.Session)
             else findings.store_findings_compute(owner))
    return sorted((f.finding.kind, f.finding.index, f.recall, f.record, f.finding.version, f.finding.message)
                  for f in found)


def assert_fresh(session: models.Session, store: models.MemoryStore) -> None:
    """Stored as the writer left them (no read in between) and equal to a computation from the rows now."""
    session.refresh_from_db()
    store.refresh_from_db()
    assert stored(session) == computed(session) and stored(store) == computed(store)
    assert session.memory_finding_count == len(stored(session))
    assert store.finding_count == len(stored(store))
    assert session.memory_findings_key == findings.session_key(session)
    assert store.findings_key == findings.store_key(store)


@pytest.fixture
def key(project) -> str:
    return projects_keys.api_key_create(project=project, name="agent").key


def test_a_live_batch_stores_the_findings_it_makes(alice_client, project, key):
    post(alice_client, key, first_turn())
    session = models.Session.objects.get(agent__project=project)
    store = models.MemoryStore.objects.get(project=project)
    assert_fresh(session, store)
    assert [f[0] for f in stored(session)] == ["recall_of_deleted", "zero_hit_recall"]
    assert [f[0] for f in stored(store)] == ["duplicate_record"]
    ids = list(models.MemoryFinding.objects.order_by("id").values_list("id", flat=True))
    # The session list's filter reads the stored count: the session is listed without anyone opening it.
    listed = alice_client.get("/api/sessions/?memory_findings=1").json()
    assert [s["id"] for s in listed["results"]] == [session.pk]
    data = alice_client.get(f"/api/sessions/{session.pk}/memory-findings/").json()
    assert (data["count"], data["counts"]) == (2, {"recall_of_deleted": 1, "zero_hit_recall": 1})
    deleted = next(r for r in data["results"] if r["kind"] == "recall_of_deleted")
    assert deleted["record"] == models.MemoryRecord.objects.get(external_id="mem-3").pk
    data = alice_client.get(f"/api/memory/stores/{store.pk}/findings/").json()
    assert (data["count"], data["counts"]) == (1, {"duplicate_record": 1})
    # Reading computed nothing again: the rows are those the batch stored.
    assert list(models.MemoryFinding.objects.order_by("id").values_list("id", flat=True)) == ids

    # The same batch again: nothing new, no finding twice, not even computed again (the same rows).
    post(alice_client, key, first_turn())
    assert list(models.MemoryFinding.objects.order_by("id").values_list("id", flat=True)) == ids
    assert_fresh(session, store)


def second_turn() -> bytes:
    """Another session (its own trace) whose search reads mem-1, ending at 4 s."""
    trace = "cd" * 16
    return request(
        span("turn2", "turn-2", {}, start=3, end=9, trace=trace),
        span("s3", "search_memory", {
            "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "prefs",
            "gen_ai.memory.query.text": "diet", "gen_ai.memory.records": json.dumps(
                [{"id": "mem-1", "content": "Alice is vegan", "score": 0.9}])},
            start=3.5, parent="turn2", trace=trace),
        span("c2", "chat gpt-4o", {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "session.id": "prefs-2",
            "gen_ai.input.messages": json.dumps([
                {"role": "system", "parts": [{"type": "text", "content": "Known: Alice is vegan"}]},
                {"role": "user", "parts": [{"type": "text", "content": "Lunch?"}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Salad"}]}])},
            start=4, parent="turn2", trace=trace))


def late_deletes() -> bytes:
    """A third trace, late, deleting mem-1 and mem-2 at 3.7 s and 3.8 s: before the second session's search read
    mem-1 (it ended at 4 s). No call: no session of its own."""
    return request(*(
        span(name, "delete_memory", {"gen_ai.operation.name": "delete_memory", "gen_ai.memory.store.id": "prefs",
                                     "gen_ai.memory.record.id": record}, start=start, trace="ef" * 16)
        for name, record, start in (("w5", "mem-1", 3.2), ("w6", "mem-2", 3.3))))


def run_worker() -> None:
    Worker(queue_names=["default"], interval=0, batch=True, backend_name="default", startup_delay=False,
           max_tasks=None, worker_id="test-worker", excluded_queue_names=[]).run()


def test_a_later_batch_refreshes_the_sessions_that_read_what_it_wrote(alice_client, project, key):
    post(alice_client, key, first_turn())
    post(alice_client, key, second_turn())
    later = models.Session.objects.get(agent__project=project, external_id="prefs-2")
    store = models.MemoryStore.objects.get(project=project)
    assert_fresh(later, store)
    assert stored(later) == []
    # The deletes: the second session sent a deleted record, and the duplicate is gone. No batch of either
    # session came again: the store's readers are computed again because the store changed.
    post(alice_client, key, late_deletes())
    assert_fresh(later, store)
    assert [(f[0], f[1]) for f in stored(later)] == [("recall_of_deleted", 0)]
    assert stored(store) == []
    first = models.Session.objects.get(agent__project=project, external_id="prefs-1")
    assert_fresh(first, store)
    assert not DBTaskResult.objects.exists()


# A real worker closes its connections between tasks: the test's transaction would go with them (PostgreSQL).
@pytest.mark.django_db(transaction=True)
def test_a_store_read_by_more_sessions_than_the_bound_has_its_readers_computed_by_a_worker(
        alice_client, project, key, monkeypatch):
    post(alice_client, key, first_turn())
    post(alice_client, key, second_turn())
    monkeypatch.setattr(findings, "LIVE", findings.Bound(readers=1))
    post(alice_client, key, late_deletes())
    store = models.MemoryStore.objects.get(project=project)
    later = models.Session.objects.get(agent__project=project, external_id="prefs-2")
    # The store itself is computed (small), its two readers are not: the task has the store to find them.
    store.refresh_from_db()
    assert store.finding_count == 0 and stored(store) == computed(store) == []
    assert later.memory_finding_count == 0 and computed(later) != []
    [task] = DBTaskResult.objects.all()
    assert task.args_kwargs["args"] == [[], [store.pk]]
    run_worker()
    assert_fresh(later, store)
    assert [(f[0], f[1]) for f in stored(later)] == [("recall_of_deleted", 0)]
    assert_fresh(models.Session.objects.get(agent__project=project, external_id="prefs-1"), store)


# A real worker closes its connections between tasks: the test's transaction would go with them (PostgreSQL).
@pytest.mark.django_db(transaction=True)
def test_past_the_bound_a_worker_computes_them(alice_client, project, key, monkeypatch):
    monkeypatch.setattr(findings, "LIVE", findings.Bound(store_rows=3, session_recalls=1, readers=0))
    post(alice_client, key, first_turn())
    session = models.Session.objects.get(agent__project=project)
    store = models.MemoryStore.objects.get(project=project)
    # The store holds 3 records and 4 versions, the session 2 recalls: neither computed by the receiver...
    assert (store.finding_count, store.findings_key, session.memory_finding_count, session.memory_findings_key) \
        == (0, "", 0, "")
    [task] = DBTaskResult.objects.all()
    assert task.task_path == "agents.ledger.findings.findings_refresh_later"
    assert task.args_kwargs["args"] == [[session.pk], [store.pk]]
    # ...but by a worker, with the same code and no bound.
    run_worker()
    assert DBTaskResult.objects.get().status == "SUCCESSFUL"
    assert_fresh(session, store)
    assert len(stored(session)) == 2 and len(stored(store)) == 1


# --- the write API -------------------------------------------------------------------------------------------------

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def api_post(client, path: str, body: Any, key: str) -> Any:
    response = client.post(f"/api/memory/writes/{path}/", data=json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code in (200, 201), response.content
    return response.json()


def test_the_write_api_stores_the_findings_it_makes(client, alice, project, agent, key):
    session = agent.sessions.create(external_id="s1", title="t")
    models.Message.objects.create(session=session, seq=0, role="system", content="Known: Alice runs")
    models.Message.objects.create(session=session, seq=1, role="user", content="Dinner?")
    requests = [
        ("stores", {"id": "prefs", "name": "prefs"}),
        ("versions", {"store": "prefs", "versions": [
            {"id": "e1", "record": "mem-1", "op": "ADD", "text": "Alice is vegan", "at": at(1)},
            {"id": "e2", "record": "mem-2", "op": "ADD", "text": "Alice is vegan", "at": at(2)},
            {"id": "e3", "record": "mem-3", "op": "ADD", "text": "Alice runs", "at": at(3)},
            {"id": "e4", "record": "mem-3", "op": "DELETE", "at": at(4)}]}),
        ("recalls", {"id": "read-1", "session": session.pk, "seq": 0, "store": "prefs", "query": "sport",
                     "at": at(5), "items": [{"record": "mem-3", "text": "Alice runs"}]}),
        ("recalls", {"id": "read-2", "session": session.pk, "seq": 1, "store": "prefs", "query": "diet",
                     "at": at(5), "items": []}),
    ]
    for path, body in requests:
        api_post(client, path, body, key)
    store = models.MemoryStore.objects.get(project=project)
    assert_fresh(session, store)
    assert [(f[0], f[1]) for f in stored(session)] == [("recall_of_deleted", 0), ("zero_hit_recall", 1)]
    assert [f[0] for f in stored(store)] == ["duplicate_record"]
    ids = list(models.MemoryFinding.objects.order_by("id").values_list("id", flat=True))
    for path, body in requests:  # retried: skipped, nothing twice
        api_post(client, path, body, key)
    assert list(models.MemoryFinding.objects.order_by("id").values_list("id", flat=True)) == ids

    # A new version of mem-1 that rewrites its text: a noop_write of the store, found by the write itself.
    api_post(client, "versions", {"store": "prefs", "versions": [
        {"id": "e5", "record": "mem-1", "op": "UPDATE", "text": "Alice is vegan", "at": at(6)}]}, key)
    assert_fresh(session, store)
    assert sorted(f[0] for f in stored(store)) == ["duplicate_record", "noop_write"]
    client.force_login(alice)
    listed = client.get("/api/sessions/?memory_findings=1").json()
    assert [s["id"] for s in listed["results"]] == [session.pk]
    data = client.get(f"/api/sessions/{session.pk}/memory-findings/").json()
    assert data["counts"] == {"recall_of_deleted": 1, "zero_hit_recall": 1}


def test_a_live_batch_of_calls_alone_writes_no_finding(client, project, key):
    """A session without recalls (most live sessions) costs its findings one aggregate of its recalls, no write."""
    with CaptureQueriesContext(connection) as queries:
        post(client, key, request(chat("c1", start=2, system="You help.", question="Dinner?")))
    session = models.Session.objects.get(agent__project=project)
    assert (session.memory_finding_count, session.memory_findings_key) == (0, "")
    said = [q["sql"] for q in queries.captured_queries]
    assert not [q for q in said if "agents_memoryfinding" in q or q.startswith("UPDATE") and "memory_findings_key" in q]
    assert len([q for q in said if q.startswith("SELECT COUNT") and "agents_recall" in q]) == 1
