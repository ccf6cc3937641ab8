"""A store's health (GET /api/memory/stores/<id>/health/, agents/ledger/health.py): the figures agree with a count
made directly from the rows, read one by one in Python, for every store the libraries' files make (AgentScope's
three saves with mem0's records and its knowledge base, AutoGen's ListMemory, Letta's blocks, mem0's history.db) and
for a mem0 store holding one fact twice with an unchanged rewrite, read by searches of which some found nothing."""
from __future__ import annotations

import datetime as dt
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from agents import models
from agents.memory.ledger import folded
from agents.memory.tokens import cl100k_encoding, o200k_encoding
from agents.projects import keys
from agents.transfer import imports
from tests.memory_findings import mem0_duplicates
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
ENCODINGS = {"cl100k": cl100k_encoding, "o200k": o200k_encoding}


def import_everything(project: models.Project, folder: Path) -> None:
    for turn in (1, 2, 3):
        (folder / str(turn)).mkdir(parents=True)
        imports.import_file(Path(shutil.copy(AGENTSCOPE / f"session_user_1_turn{turn}.json",
                                             folder / str(turn) / "user_1_trip.json")), project=project)
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project=project)
    for path in ("autogen/assistant_state_after_run2.json", "autogen/list_memory_component.json",
                 "letta/memgpt_agent_with_convo.af", "mem0/history.db"):
        imports.import_file(MEMORY_SAMPLES / path, project=project)
    imports.import_file(mem0_duplicates(folder / "dup", 4, text="Likes green tea"), project=project)
    # Searches of the duplicated store from a session: two found nothing, one found two records.
    store = models.MemoryStore.objects.get(project=project, scope__user_id="dana")
    session = models.Session.objects.filter(agent__project=project).order_by("pk").first()
    assert session is not None
    record = store.records.order_by("external_id").first()
    for n in range(3):
        recall = models.Recall.objects.create(session=session, seq=0, store=store, query=f"tea {n}", at=T0,
                                              item_count=2 if n == 2 else 0)
        if n == 2:
            models.RecallItem.objects.create(recall=recall, record=record, version=2, rank=1, text="Likes green tea")
            models.RecallItem.objects.create(recall=recall, record=None, rank=2, text="Drinks it at 4 pm, daily")


def counted_from_rows(store: models.MemoryStore) -> dict[str, Any]:
    """Every figure from the rows, read one by one: no aggregate, no summary column, no finding."""
    records = list(models.MemoryRecord.objects.filter(store=store).order_by("pk"))
    recalls = list(models.Recall.objects.filter(store=store))
    items = list(models.RecallItem.objects.filter(recall__in=[r.pk for r in recalls]).select_related(
        "recall__session"))
    read_records = {item.record_id for item in models.RecallItem.objects.all() if item.record_id is not None}
    with_items = {item.recall_id for item in items}
    versions: dict[int, list[models.RecordVersion]] = defaultdict(list)
    for version in models.RecordVersion.objects.order_by("record_id", "number"):
        versions[version.record_id].append(version)
    noop = 0
    for record in records:
        chain = versions[record.pk]
        noop += sum(1 for before, after in zip(chain, chain[1:], strict=False)
                    if after.op.upper() == "UPDATE" and after.text == before.text and after.value == before.value)
    seen: set[str] = set()
    duplicates = 0
    for record in records:
        if record.state == "active" and record.text.strip():
            key = folded(record.text)
            duplicates += key in seen
            seen.add(key)
    tokens = 0
    for item in items:
        tokens += len(ENCODINGS[item.recall.session.token_counter]().encode_ordinary(item.text))
    return {
        "store": store.pk, "records": len(records),
        "never_read": sum(1 for record in records if record.pk not in read_records),
        "reads": len(recalls), "zero_hit_recalls": sum(1 for recall in recalls if recall.pk not in with_items),
        "writes": sum(len(versions[record.pk]) for record in records), "noop_writes": noop,
        "duplicates": duplicates, "tokens_recalled": tokens,
    }


def totals(data: dict[str, Any]) -> dict[str, Any]:
    """The store's totals of an answer (the periods and top lists: tests/test_memory_health_periods.py)."""
    return {k: v for k, v in data.items() if k not in ("period", "since", "until", "most_read", "zero_hit_queries",
                                                      "periods")}


def test_the_figures_agree_with_a_count_made_directly_from_the_rows(alice_client, project, tmp_path) -> None:
    import_everything(project, tmp_path)
    stores = list(models.MemoryStore.objects.filter(project=project))
    assert {s.kind for s in stores} == {"records", "knowledge", "list", "blocks"}
    every = {}
    for store in stores:
        response = alice_client.get(f"/api/memory/stores/{store.pk}/health/")
        assert response.status_code == 200, response.content[:300]
        assert totals(response.json()) == counted_from_rows(store), store.name
        every[store.name] = response.json()
    # The figures are not all zero: each counts something in one of these stores.
    for figure in ("records", "never_read", "zero_hit_recalls", "reads", "writes", "noop_writes", "duplicates",
                   "tokens_recalled"):
        assert any(health[figure] for health in every.values()), figure
    duplicated = next(h for h in every.values() if h["duplicates"])
    assert {k: duplicated[k] for k in ("records", "never_read", "reads", "zero_hit_recalls", "writes",
                                       "noop_writes", "duplicates")} == {
        "records": 4, "never_read": 3, "reads": 3, "zero_hit_recalls": 2, "writes": 5, "noop_writes": 1,
        "duplicates": 3}


def test_the_figures_are_counted_even_when_a_summary_is_wrong(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_duplicates(tmp_path, 3), project=project)
    store = models.MemoryStore.objects.get(project=project)
    models.MemoryStore.objects.filter(pk=store.pk).update(record_count=99, read_count=42)
    models.MemoryRecord.objects.filter(store=store).update(read_count=7)
    data = alice_client.get(f"/api/memory/stores/{store.pk}/health/").json()
    assert (data["records"], data["never_read"], data["reads"]) == (3, 3, 0)
    assert totals(data) == counted_from_rows(store)


def test_another_projects_store_is_not_found(alice_client, project, other_project, tmp_path) -> None:
    imports.import_file(mem0_duplicates(tmp_path / "theirs", 2), project=other_project)
    theirs = models.MemoryStore.objects.get(project=other_project)
    response = alice_client.get(f"/api/memory/stores/{theirs.pk}/health/")
    assert (response.status_code, set(response.json())) == (404, {"error"})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='script').key}"}
    alice_client.logout()
    assert alice_client.get(f"/api/memory/stores/{theirs.pk}/health/", **auth).status_code == 404
    assert alice_client.get(f"/api/memory/stores/{theirs.pk}/health/").status_code == 401


@pytest.mark.django_db
def test_the_schema_documents_the_health(alice_client) -> None:
    from drf_spectacular.validation import validate_schema

    document = alice_client.get("/api/schema/?format=json").json()
    validate_schema(document)
    operation = document["paths"]["/api/memory/stores/{store_id}/health/"]["get"]
    assert operation["operationId"] == "memory_store_health"
    assert set(document["components"]["schemas"]["StoreHealthOut"]["properties"]) == {
        "store", "records", "never_read", "zero_hit_recalls", "reads", "writes", "noop_writes", "duplicates",
        "tokens_recalled", "period", "since", "until", "most_read", "zero_hit_queries", "periods"}
