"""Snapshots are written with their digest, whichever way they come (an import, the write API, the demo, the
migration for those stored before), and two of them are diffed from their digests and the parts of their values that
changed, read in one query (ledger.snapshot_reads): the page and the API list what the values' diff lists, on the
files LangGraph and AgentScope wrote."""
from __future__ import annotations

import importlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from agents.ledger import snapshot_reads
from agents.ledger import snapshots as snapshot_pages
from agents.memory.snapshot_diff import diff_snapshots, digest_usable, snapshot_digest
from agents.projects import keys
from agents.transfer import imports
from tests.memory_pages import import_friday, import_langgraph_history
from tests.paths import MEMORY_SAMPLES, ROOT


@pytest.fixture
def langgraph(project) -> models.Agent:
    return import_langgraph_history(project)


@pytest.fixture
def friday(project, tmp_path: Path) -> models.Agent:
    return import_friday(project, tmp_path)


def page_url(agent: models.Agent, a: int, b: int) -> str:
    return f"{reverse('agents:agent_snapshots', args=[agent.pk])}?a={a}&b={b}"


def assert_digests_are_their_values() -> None:
    stored = list(models.Snapshot.objects.all())
    assert stored
    for snapshot in stored:
        assert digest_usable(snapshot.digest) and snapshot.digest == json.loads(json.dumps(snapshot_digest(
            snapshot.value)))


def test_an_imported_snapshot_is_stored_with_its_values_digest(friday, langgraph):
    imports.import_file(MEMORY_SAMPLES / "letta" / "customer_service.af", project=friday.project)
    assert_digests_are_their_values()


def test_a_posted_snapshot_is_stored_with_its_values_digest(client, project, agent):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}
    body = {"id": "state-1", "agent": "travel-bot", "format": "openai", "value": {"messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello", "id": "m2"}]}}
    response = client.post("/api/memory/writes/snapshots/", data=json.dumps(body), content_type="application/json",
                           **auth)
    assert response.status_code == 201, response.content
    assert_digests_are_their_values()


def test_the_demos_snapshots_are_stored_with_their_values_digest(db):
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115 (the command's chatter)
    assert models.Snapshot.objects.count() > 0
    assert_digests_are_their_values()


def test_the_migration_gives_the_snapshots_stored_before_it_their_digest(agent):
    value = {"memory": [{"role": "user", "content": "Hi", "id": "1"}], "step": 3}
    old = [models.Snapshot.objects.create(agent=agent, external_id=f"old-{k}", value=value) for k in range(3)]
    assert all(s.digest is None for s in old)
    importlib.import_module("agents.migrations.0028_snapshot_digest").backfill(apps, None)
    assert_digests_are_their_values()


def test_no_snapshot_is_written_but_with_its_digest():
    """Every write of a snapshot goes through ``Snapshot.written``: a digest that is not its value's would diff
    wrong."""
    writes = re.compile(r"Snapshot\.objects\.(create|bulk_create|update_or_create|get_or_create)\(|"
                        r"Snapshot\.objects[^\n]*\.update\(|(?<!class )\bSnapshot\(")
    found = [f"{path.relative_to(ROOT)}: {m.group()}" for path in (ROOT / "agents").rglob("*.py")
             if "migrations" not in path.parts for m in writes.finditer(path.read_text())]
    assert found == []


# --- the diff read from the digests -------------------------------------------------------------------------------


def rows(agent: models.Agent, client, a: int, b: int) -> list[tuple[Any, ...]]:
    caches[snapshot_pages.COMPARE_CACHE].clear()
    compare = client.get(page_url(agent, a, b)).context["page"].compare
    return [(r.path, r.op, r.old, r.new, r.old_cut, r.new_cut, r.message, r.message_url, r.message_seq, r.said)
            for r in compare.rows] + [(compare.total, compare.counts, compare.truncated, compare.exact)]


def api(client, a: int, b: int, **query: Any) -> Any:
    response = client.get(reverse("api:snapshot_diff", args=[a, b]), query)
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("sample", ["friday", "langgraph"])
def test_the_page_and_the_api_list_what_the_values_diff_lists(request, alice_client, sample):
    agent = request.getfixturevalue(sample)
    stored = list(models.Snapshot.objects.filter(agent=agent).order_by("pk"))
    assert len(stored) >= 2
    from_digests = {}
    for left, right in itertools.permutations(stored, 2):
        values = diff_snapshots(left.value, right.value, limit=snapshot_pages.DIFF_CHANGES)
        pair = snapshot_reads.pair_diff(left, right, limit=snapshot_pages.DIFF_CHANGES)
        assert pair.digests is not None
        assert (pair.diff.changes, pair.diff.total, pair.diff.counts, pair.diff.exact) == (
            values.changes, values.total, values.counts, values.exact)
        from_digests[left.pk, right.pk] = (rows(agent, alice_client, left.pk, right.pk),
                                           api(alice_client, left.pk, right.pk), api(alice_client, left.pk, right.pk,
                                                                                      limit=2))
        assert from_digests[left.pk, right.pk][1]["changes"] == [c.to_dict() for c in diff_snapshots(
            left.value, right.value).changes]
    # Without digests (a snapshot the migration did not reach): the same page, links included, and the same API.
    models.Snapshot.objects.filter(agent=agent).update(digest=None)
    for (a, b), (page, whole, two) in from_digests.items():
        assert (rows(agent, alice_client, a, b), api(alice_client, a, b), api(alice_client, a, b, limit=2)) == (
            page, whole, two)
    assert any(r[8] is not None for page, _, _ in from_digests.values() for r in page[:-1])  # links were tested


def whole_value_read(sql: str) -> bool:
    """Whether a query reads a snapshot's whole value (the ORM's column, or the reader's own select of it)."""
    return ('"agents_snapshot"."value"' in sql.split(" FROM ")[0]
            or re.search(r"SELECT (value|value::text) FROM agents_snapshot", sql) is not None)


def test_a_diff_first_opened_reads_the_parts_that_changed_not_the_values(alice_client, friday):
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    caches[snapshot_pages.COMPARE_CACHE].clear()
    for url in (page_url(friday, first.pk, second.pk), reverse("api:snapshot_diff", args=[first.pk, second.pk])):
        with CaptureQueriesContext(connection) as ctx:
            assert alice_client.get(url).status_code == 200
        sql = [q["sql"] for q in ctx.captured_queries]
        assert not [q for q in sql if whole_value_read(q)]
        assert len([q for q in sql if '"agents_snapshot"."digest"' in q.split(" FROM ")[0]]) == 1
        parts = [q for q in sql if "json_extract(value" in q or "s.value #>" in q]
        assert len(parts) == 1


@pytest.fixture
def odd_keys(agent) -> tuple[models.Snapshot, models.Snapshot]:
    """Keys a SQLite JSON path cannot name as stored (non-ASCII, a quote), over a message list."""
    messages = [{"role": "user", "content": f"question {k}", "id": f"m{k}"} for k in range(30)]
    later = [*messages[:10], {"role": "user", "content": "inserted", "id": "new"}, *messages[11:]]
    later[20] = {**later[20], "content": "edited"}
    a = models.Snapshot.written(agent=agent, external_id="a", value={"mémoire": {'say "hi"': messages}, "n": 1})
    b = models.Snapshot.written(agent=agent, external_id="b", value={"mémoire": {'say "hi"': later}, "n": 2})
    return a, b


def test_keys_sqlite_cannot_name_read_that_side_whole_with_the_same_diff(odd_keys):
    a, b = odd_keys
    pair = snapshot_reads.pair_diff(a, b, limit=None)
    expected = diff_snapshots(a.value, b.value)
    assert pair.digests is not None and pair.reads == 1
    assert (pair.diff.changes, pair.diff.total) == (expected.changes, expected.total)
    inside = '$["mémoire"]["say \\"hi\\""]'
    assert [c.path for c in pair.diff.changes] == [f"{inside}[10]", f"{inside}[10]", f"{inside}[20].content", "$.n"]


def test_many_parts_read_the_side_whole_with_the_same_diff(odd_keys, monkeypatch):
    a, b = odd_keys
    monkeypatch.setattr(snapshot_reads, "PARTS_READ", 1)
    pair = snapshot_reads.pair_diff(a, b, limit=None)
    expected = diff_snapshots(a.value, b.value)
    assert (pair.diff.changes, pair.diff.total) == (expected.changes, expected.total)


def test_many_parts_are_read_in_one_query_past_sqlites_arguments(agent):
    before = [{"role": "user", "content": f"question {k}", "id": f"m{k}"} for k in range(400)]
    after = [{**m, "content": m["content"] + "?"} for m in before]
    a = models.Snapshot.written(agent=agent, external_id="a", value={"memory": before})
    b = models.Snapshot.written(agent=agent, external_id="b", value={"memory": after})
    with CaptureQueriesContext(connection) as ctx:
        pair = snapshot_reads.pair_diff(a, b, limit=5)
    expected = diff_snapshots(a.value, b.value, limit=5)
    assert (pair.diff.changes, pair.diff.total) == (expected.changes, expected.total) and expected.total == 400
    assert pair.reads == 1 and len(ctx.captured_queries) == 2  # the digests, then 800 parts


def test_a_snapshot_written_after_its_parent_reads_neither_the_parents_value_nor_its_digest(client, project, agent):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}
    session = agent.sessions.create(external_id="s1", title="t")
    value = {"messages": [{"role": "user", "content": f"question {k}", "id": f"m{k}"} for k in range(50)]}
    for k, parent in enumerate((None, "state-0")):
        body = {"id": f"state-{k}", "agent": "travel-bot", "format": "openai", "value": value, "parent": parent,
                "session": session.pk, "seq": None}
        with CaptureQueriesContext(connection) as ctx:
            response = client.post("/api/memory/writes/snapshots/", data=json.dumps(body),
                                   content_type="application/json", **auth)
        assert response.status_code == 201, response.content
        reads = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
        assert not [q for q in reads if '"agents_snapshot"."value"' in q or '"agents_snapshot"."digest"' in q]
    assert models.Snapshot.objects.get(external_id="state-1").parent.external_id == "state-0"
