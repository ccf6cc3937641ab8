"""Memory for the memory pages' tests: files the libraries wrote, imported as a user would, and stores and records
made in bulk (a store of thousands of records, a record with many versions and reads)."""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from agents import models
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
LETTA = MEMORY_SAMPLES / "letta"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def import_friday(project: models.Project, folder: Path) -> models.Agent:
    """AgentScope's two saves of one session (JSONSession names its file {user_id}_{session_id}.json) and its mem0
    long-term memory: the agent Friday, its long-term memory store, its knowledge base, the recalls."""
    for turn in (1, 2):
        (folder / f"turn{turn}").mkdir(parents=True, exist_ok=True)
        copy = shutil.copy(AGENTSCOPE / f"session_user_1_turn{turn}.json", folder / f"turn{turn}" / "user_1_trip.json")
        imports.import_file(copy, project=project)
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project=project)
    return models.Agent.objects.get(project=project, name="Friday")


def import_langgraph_history(project: models.Project) -> models.Agent:
    """LangGraph's get_state_history of one thread: five checkpoints, each with its parent; its agent."""
    imports.import_file(MEMORY_SAMPLES / "langgraph" / "state_history.json", project=project)
    return models.Snapshot.objects.get(parent__isnull=True, source_format="langgraph_checkpoints").agent


def import_letta(project: models.Project, name: str = "customer_service.af") -> models.Agent:
    report = imports.import_file(LETTA / name, project=project)
    return models.Session.objects.get(pk=report.sessions[0].session_id).agent


def import_mem0_history(project: models.Project) -> models.MemoryStore:
    """mem0's history.db: no scope, so a store the project shares."""
    imports.import_file(MEMORY_SAMPLES / "mem0" / "history.db", project=project)
    return models.MemoryStore.objects.get(project=project, source_format="mem0", agent__isnull=True)


def bulk_store(agent: models.Agent, n: int, *, name: str = "bulk", kind: str = "records") -> models.MemoryStore:
    """A store of ``n`` records written in bulk, with its summaries as an import leaves them: record i changed at
    T0 + i minutes, read i % 7 times, deleted every 10th, user_id u{i % 3}."""
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=name, kind=kind,
                                              record_count=n, version_count=n)
    batch: list[models.MemoryRecord] = []
    for i in range(n):
        batch.append(models.MemoryRecord(
            store=store, external_id=f"r{i:07d}", text=f"fact number {i} about the user's trip",
            metadata={"user_id": f"u{i % 3}"}, state="deleted" if i % 10 == 9 else "active",
            created_at=T0, updated_at=T0 + dt.timedelta(minutes=i), version_count=1, read_count=i % 7))
        if len(batch) == 5000:
            models.MemoryRecord.objects.bulk_create(batch)
            batch = []
    models.MemoryRecord.objects.bulk_create(batch)
    return store


def busy_record(agent: models.Agent, session: models.Session, *, versions: int, reads: int) -> models.MemoryRecord:
    """A record with ``versions`` versions (v1 at T0, one a minute after) caused by the messages of ``session``, and
    ``reads`` reads, one recall each, at T0 + 30 s + i minutes, each sending the version before the one then current
    (stale) when i is odd."""
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="busy", kind="records",
                                              record_count=1, version_count=versions, read_count=reads)
    record = models.MemoryRecord.objects.create(
        store=store, external_id="busy-1", text=f"the user likes version {versions}", created_at=T0,
        updated_at=T0 + dt.timedelta(minutes=versions - 1), version_count=versions, read_count=reads)
    models.RecordVersion.objects.bulk_create([models.RecordVersion(
        record=record, number=n, op="ADD" if n == 1 else "UPDATE", text=f"the user likes version {n}",
        at=T0 + dt.timedelta(minutes=n - 1), actor="mem0", session=session, seq=0) for n in range(1, versions + 1)],
        batch_size=5000)
    recalls = models.Recall.objects.bulk_create([models.Recall(
        session=session, seq=0, store=store, query=f"what does the user like? ({i})",
        at=T0 + dt.timedelta(minutes=i, seconds=30), item_count=1) for i in range(reads)], batch_size=5000)
    models.RecallItem.objects.bulk_create([models.RecallItem(
        recall=recall, record=record, rank=1, score=0.5,
        version=max(1, min(i + 1, versions) - (i % 2)), text="the user likes it") for i, recall in enumerate(recalls)],
        batch_size=5000)
    return record

def bulk_snapshots(agent: models.Agent, n: int) -> list[models.Snapshot]:
    """``n`` snapshots a minute apart, each the child of the one before, of a small state."""
    made = models.Snapshot.objects.bulk_create([models.Snapshot(
        agent=agent, external_id=f"cp-{i:06d}", step=i, taken_at=T0 + dt.timedelta(minutes=i),
        source_format="langgraph_checkpoints", value={"values": {"messages": [
            {"type": "human", "content": f"turn {k}", "id": f"h{k}"} for k in range(i % 5 + 1)]}, "step": i})
        for i in range(n)], batch_size=2000)
    made = list(models.Snapshot.objects.filter(agent=agent).order_by("taken_at", "id"))
    for before, after in zip(made, made[1:], strict=False):
        after.parent = before
    models.Snapshot.objects.bulk_update(made, ["parent"], batch_size=2000)
    return made
