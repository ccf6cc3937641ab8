"""The memory write API (issue 26), for teams that do not trace: stores, versions one or a batch, recalls with their
items and the message or call they fed, snapshots; a project key's write scope; idempotent on the client's ids;
in the OpenAPI schema with examples."""
from __future__ import annotations

import json
import random
import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from agents import models
from agents.models import Membership
from agents.projects import keys
from tests.paths import ROOT

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # before any run of these tests: an arrival is later


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}


def post(client, path: str, body: Any, auth: dict[str, str]) -> Any:
    return client.post(f"/api/memory/writes/{path}/", data=json.dumps(body), content_type="application/json",
                       **auth)


def store(client, auth, **fields: Any) -> Any:
    response = post(client, "stores", {"id": "prefs-alice", "name": "Alice's preferences", "agent": "Travel bot",
                                       "scope": {"user_id": "alice"}, **fields}, auth)
    assert response.status_code in (200, 201), response.content
    return response


def versions_of(record: models.MemoryRecord) -> list[tuple[Any, ...]]:
    return [(v.number, v.op, v.text, v.body_captured, v.external_id) for v in record.versions.order_by("number")]


def test_a_key_creates_a_store_once_whatever_the_retries(client, project, agent, auth):
    first = store(client, auth)
    assert first.status_code == 201
    data = first.json()
    assert (data["id"], data["name"], data["kind"], data["agent"], data["scope"]) == (
        "prefs-alice", "Alice's preferences", "records", "travel-bot", {"user_id": "alice", "store_id": "prefs-alice"})
    again = store(client, auth)
    assert (again.status_code, again.json()["store"]) == (200, data["store"])
    row = models.MemoryStore.objects.get(project=project)
    assert (row.pk, row.agent, row.state, row.source_format) == (data["store"], agent, "ready", "api")
    # The id names a records store: asked as another kind, refused, nothing made.
    refused = post(client, "stores", {"id": "prefs-alice", "kind": "blocks"}, auth)
    assert refused.status_code == 409 and "already" in refused.json()["error"]
    assert models.MemoryStore.objects.filter(project=project).count() == 1


def test_versions_written_one_or_a_batch_in_any_order_make_one_ledger(client, project, agent, auth):
    session = agent.sessions.create(external_id="s1", title="t")
    models.Message.objects.create(session=session, seq=0, role="user", content="I went vegan")
    writes = [
        {"id": "e1", "record": "mem-1", "op": "ADD", "text": "Alice is vegetarian", "metadata": {"turn": 1},
         "at": at(1)},
        {"id": "e2", "record": "mem-2", "op": "ADD", "text": "Alice runs", "at": at(2)},
        {"id": "e3", "record": "mem-1", "op": "UPDATE", "text": "Alice is vegan", "metadata": {"turn": 2},
         "at": at(3), "session": session.pk, "seq": 0, "actor": "agent"},
        {"id": "e4", "record": "mem-2", "op": "UPDATE", "captured": False, "at": at(4)},
        {"id": "e5", "record": "mem-2", "op": "DELETE", "at": at(5)},
    ]
    ledgers = []
    for n, order in enumerate([[writes], [[w] for w in writes], [[w] for w in reversed(writes)],
                               [writes[3:], writes[:2], writes, writes[2:3]]]):
        models.MemoryStore.objects.filter(project=project).delete()
        store(client, auth)
        for batch in order:
            response = post(client, "versions", {"store": "prefs-alice", "versions": batch}, auth)
            assert response.status_code in (200, 201), response.content
        records = {r.external_id: r for r in models.MemoryRecord.objects.filter(store__project=project)}
        ledgers.append({k: (r.text, r.metadata, r.state, r.version_count, versions_of(r)) for k, r in records.items()})
        assert ledgers[-1] == ledgers[0], n
    assert ledgers[0] == {
        "mem-1": ("Alice is vegan", {"turn": 2}, "active", 2,
                  [(1, "ADD", "Alice is vegetarian", True, "e1"), (2, "UPDATE", "Alice is vegan", True, "e3")]),
        "mem-2": ("", {}, "deleted", 3, [(1, "ADD", "Alice runs", True, "e2"), (2, "UPDATE", None, False, "e4"),
                                        (3, "DELETE", None, True, "e5")]),
    }
    update = models.RecordVersion.objects.get(external_id="e3")
    assert (update.session, update.seq, update.actor) == (session, 0, "agent")
    # A retry of the whole batch stores nothing and says so.
    retry = post(client, "versions", {"store": "prefs-alice", "versions": writes}, auth)
    assert (retry.status_code, retry.json()["versions"], retry.json()["skipped"]) == (200, 0, 5)
    assert models.RecordVersion.objects.filter(record__store__project=project).count() == 5


def test_a_version_without_a_time_takes_its_arrival_and_goes_last(client, project, agent, auth):
    store(client, auth)
    post(client, "versions", {"store": "prefs-alice", "versions": [
        {"id": "e1", "record": "mem-1", "op": "ADD", "text": "Alice is vegetarian", "at": at(1)}]}, auth)
    response = post(client, "versions", {"store": "prefs-alice", "versions": [
        {"id": "e2", "record": "mem-1", "text": "Alice is vegan"}]}, auth)
    assert (response.status_code, response.json()["versions"]) == (201, 1)
    record = models.MemoryRecord.objects.get(store__project=project, external_id="mem-1")
    assert versions_of(record) == [(1, "ADD", "Alice is vegetarian", True, "e1"),
                                   (2, "UPDATE", "Alice is vegan", True, "e2")]
    assert record.text == "Alice is vegan" and record.updated_at > T0


def test_a_recall_is_posted_once_with_its_items_matched_by_id_then_text(client, project, agent, auth):
    store(client, auth)
    post(client, "versions", {"store": "prefs-alice", "versions": [
        {"id": "e1", "record": "mem-1", "op": "ADD", "text": "Alice is vegetarian", "at": at(1)},
        {"id": "e2", "record": "mem-1", "op": "UPDATE", "text": "Alice is vegan", "at": at(3)},
        {"id": "e3", "record": "mem-2", "op": "ADD", "text": "Alice runs", "at": at(1)}]}, auth)
    session = agent.sessions.create(external_id="s1", title="t")
    models.Message.objects.create(session=session, seq=0, role="system", content="Known: Alice is vegetarian")
    call = models.LlmCall.objects.create(session=session, trace_id="ab" * 16, span_id="cd" * 8, sent=[0])
    body = {"id": "read-1", "session": session.pk, "seq": 0, "llm_call": call.pk, "store": "prefs-alice",
            "query": "diet", "params": {"limit": 3}, "placement": "system", "at": at(2),
            "items": [{"record": "mem-1", "text": "Alice is vegetarian", "score": 0.9},
                      {"text": "Alice runs", "score": 0.4}, {"text": "Alice likes cats"}]}
    first = post(client, "recalls", body, auth)
    assert (first.status_code, first.json()["recalls"], first.json()["unmatched_items"]) == (201, 1, 1)
    assert post(client, "recalls", body, auth).json()["skipped"] == 1
    [recall] = models.Recall.objects.filter(session=session)
    assert (recall.external_id, recall.seq, recall.llm_call, recall.store.external_id, recall.query, recall.params,
            recall.placement, recall.at) == ("read-1", 0, call, "prefs-alice", "diet", {"limit": 3}, "system",
                                             T0 + timedelta(minutes=2))
    # mem-1 read at 9:02, before its update at 9:03: version 1.
    assert [(i.rank, i.record.external_id if i.record else None, i.version, i.score, i.text)
            for i in recall.items.order_by("rank")] == [
        (1, "mem-1", 1, 0.9, "Alice is vegetarian"), (2, "mem-2", 1, 0.4, "Alice runs"),
        (3, None, None, None, "Alice likes cats")]
    assert models.MemoryRecord.objects.get(external_id="mem-1").read_count == 1


def test_a_recall_given_its_call_alone_is_at_the_input_message_carrying_its_items(client, project, agent, auth):
    session = agent.sessions.create(external_id="s1", title="t")
    for seq, (role, content) in enumerate([("system", "You help Alice."), ("user", "Dinner?"), ("assistant", "Pasta"),
                                           ("user", "Memories:\n- Alice   is vegan\nBreakfast?")]):
        models.Message.objects.create(session=session, seq=seq, role=role, content=content)
    call = models.LlmCall.objects.create(session=session, trace_id="ab" * 16, span_id="cd" * 8, sent=[0, 1, 2, 3],
                                         placed=True)
    body = {"id": "read-1", "session": session.pk, "llm_call": call.pk, "query": "diet",
            "items": [{"text": "Alice is vegan"}]}
    assert post(client, "recalls", body, auth).status_code == 201
    [recall] = models.Recall.objects.filter(session=session)
    assert (recall.seq, recall.call_input, recall.llm_call) == (3, 3, call)
    # Items no input message holds: the call alone, no message.
    assert post(client, "recalls", {**body, "id": "read-2", "items": [{"text": "Alice runs"}]}, auth).status_code \
        == 201
    assert models.Recall.objects.values_list("seq", "call_input").get(external_id="read-2") == (None, None)


def test_a_snapshot_is_posted_once_after_its_parent(client, project, agent, auth):
    session = agent.sessions.create(external_id="s1", title="t")
    first = {"id": "state-1", "agent": "travel-bot", "format": "autogen", "value": {"messages": []}, "step": 1,
             "taken_at": at(1)}
    second = {"id": "state-2", "agent": "Travel bot", "format": "autogen", "value": {"messages": [{"a": 1}]},
              "parent": "state-1", "step": 2, "session": session.pk, "taken_at": at(2)}
    for body in (first, second, second, first):
        assert post(client, "snapshots", body, auth).status_code in (200, 201)
    snapshots = {s.external_id: s for s in models.Snapshot.objects.filter(agent=agent)}
    assert set(snapshots) == {"state-1", "state-2"}
    assert (snapshots["state-2"].parent, snapshots["state-2"].session, snapshots["state-2"].value) == (
        snapshots["state-1"], session, {"messages": [{"a": 1}]})
    assert post(client, "snapshots", second, auth).json()["skipped"] == 1


def test_bad_writes_are_refused_naming_the_field_and_store_nothing(client, project, agent, other_agent, auth):
    store(client, auth)
    theirs = other_agent.sessions.create(external_id="x", title="x")
    cases = [
        ("versions", {"store": "nope", "versions": [{"id": "e1", "record": "r", "text": "t"}]}, "store: no store"),
        ("versions", {"store": "prefs-alice", "versions": []}, "versions"),
        ("versions", {"store": "prefs-alice", "versions": [{"record": "r", "text": "t"}]}, "id"),
        ("versions", {"store": "prefs-alice", "versions": [{"id": "e1", "record": "r", "text": "nul \u0000"}]},
         "NUL"),
        ("versions", {"store": "prefs-alice", "versions": [{"id": "e1", "record": "r", "text": "t",
                                                            "session": theirs.pk}]}, "versions[0].session"),
        ("recalls", {"id": "r1", "session": theirs.pk, "items": []}, "session: no session"),
        ("recalls", {"id": "r1", "session": agent.sessions.create(external_id="s", title="s").pk, "seq": 4},
         "seq: session"),
        ("snapshots", {"id": "s1", "agent": "travel-bot", "value": {}, "session": theirs.pk}, "session"),
    ]
    for path, body, said in cases:
        response = post(client, path, body, auth)
        assert response.status_code == 400, (path, body, response.content)
        assert said in response.json()["error"], (said, response.json())
    assert not models.MemoryRecord.objects.exists() and not models.Recall.objects.exists()
    assert not models.Snapshot.objects.exists()


def test_writing_needs_the_write_scope_of_the_project(client, project, auth):
    assert client.post("/api/memory/writes/stores/", data="{}", content_type="application/json").status_code == 401
    viewer = User.objects.create_user("vic", password="pw-vic-12345")
    Membership.objects.create(project=project, user=viewer, role=Membership.Level.VIEWER)
    client.force_login(viewer)
    response = client.post("/api/memory/writes/stores/", data=json.dumps({"id": "s", "project": "alpha"}),
                           content_type="application/json")
    assert response.status_code == 403
    assert not models.MemoryStore.objects.exists()


def test_many_retried_batches_in_random_order_store_each_version_once(client, project, auth):
    store(client, auth)
    shuffler = random.Random(26)
    writes = [{"id": f"e{i}", "record": f"mem-{i % 7}", "op": "ADD" if i < 7 else "UPDATE", "text": f"fact {i}",
               "at": at(i)} for i in range(60)]
    sent = [writes[i:i + 9] for i in range(0, 60, 9)]
    sent += shuffler.sample(sent, 4)
    shuffler.shuffle(sent)
    for batch in sent:
        assert post(client, "versions", {"store": "prefs-alice", "versions": shuffler.sample(batch, len(batch))},
                    auth).status_code in (200, 201)
    for record in models.MemoryRecord.objects.filter(store__project=project):
        expected = [w for w in writes if w["record"] == record.external_id]
        assert [(n, text, e) for n, _, text, _, e in versions_of(record)] == [
            (n, w["text"], w["id"]) for n, w in enumerate(expected, 1)]
        assert record.text == expected[-1]["text"]


def test_the_schema_documents_the_write_api_with_examples(alice_client):
    from drf_spectacular.validation import validate_schema

    document = alice_client.get("/api/schema/?format=json").json()
    validate_schema(document)
    paths = document["paths"]
    for path, operation in (("stores", "memory_store_write"), ("versions", "memory_versions_write"),
                            ("recalls", "memory_recall_write"), ("snapshots", "memory_snapshot_write")):
        post_op = paths[f"/api/memory/writes/{path}/"]["post"]
        assert post_op["operationId"] == operation
        content = post_op["requestBody"]["content"]["application/json"]
        assert content["examples"], path
        assert {"201", "200", "400", "403"} <= set(post_op["responses"])
    example = next(iter(paths["/api/memory/writes/versions/"]["post"]["requestBody"]["content"][
        "application/json"]["examples"].values()))["value"]
    assert example["versions"][0]["id"] == "evt-1"


def test_the_readmes_memory_write_examples_run_as_written(client, project, agent, auth):
    # A new user's first writes, as the README shows them (with a session of theirs in place of the 7 it names).
    session = agent.sessions.create(external_id="run-42", title="t")
    models.Message.objects.create(session=session, seq=0, role="user", content="Dinner? I am vegan")
    lines = [line.strip() for line in (ROOT / "README.md").read_text().replace("\\\n", " ").splitlines()
             if line.strip().startswith("curl") and "/api/memory/writes/" in line]
    assert [line.split("/api/memory/writes/")[1].split("/")[0] for line in lines] == [
        "stores", "versions", "recalls", "snapshots"]
    for line in lines + lines:  # and again: the retries store nothing
        words = shlex.split(line)
        url = next(w for w in words if w.startswith("http://127.0.0.1:8000/")).removeprefix("http://127.0.0.1:8000")
        body = words[words.index("-d") + 1].replace('"session": 7', f'"session": {session.pk}')
        response = client.post(url, data=body, content_type="application/json", **auth)
        assert response.status_code in (200, 201), (line, response.content)
    [record] = models.MemoryRecord.objects.filter(store__project=project)
    assert (record.store.agent, record.text, record.version_count, record.read_count) == (
        agent, "Alice is vegan", 1, 1)
    [recall] = models.Recall.objects.filter(session=session)
    assert [(i.record, i.version) for i in recall.items.all()] == [(record, 1)]
    [snapshot] = models.Snapshot.objects.filter(agent=agent)
    assert (snapshot.session, snapshot.value) == (session, {"memory": ["Alice is vegan"]})
