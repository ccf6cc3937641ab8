"""A store for the health-by-period tests (tests/test_memory_health_periods.py, the browser's look at the panel):
written through the memory write API over five weeks, read by two sessions."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from agents import models
from agents.projects import keys

T0 = dt.datetime(2026, 2, 26, 22, 0, tzinfo=dt.UTC)  # a Thursday, late: days, weeks and months all change soon


def at(days: float) -> dt.datetime:
    return T0 + dt.timedelta(days=days)


def api_post(client, path: str, body: Any, key: str) -> None:
    response = client.post(f"/api/memory/writes/{path}/", data=json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code in (200, 201), response.content


def health_store(client, project: models.Project, agent: models.Agent) -> models.MemoryStore:
    """A store written through the write API over five weeks (two records with one text, an unchanged rewrite, a
    rewrite, deletes, records written again days later), read by two sessions (some reads feeding a captured call,
    several one call, some carried by no message) with 14 records read and 12 queries that found nothing."""
    key = keys.api_key_create(project=project, name="agent").key
    api_post(client, "stores", {"id": "prefs", "name": "prefs"}, key)
    versions = []
    for n in range(14):
        versions.append({"id": f"add-{n}", "record": f"r{n}", "op": "ADD", "text": f"Fact number {n} about Alice",
                         "at": at(n * 0.7).isoformat()})
    versions += [
        {"id": "dup", "record": "r14", "op": "ADD", "text": "Fact number 0 about Alice", "at": at(1).isoformat()},
        {"id": "same", "record": "r3", "op": "UPDATE", "text": "Fact number 3 about Alice", "at": at(4).isoformat()},
        {"id": "new", "record": "r3", "op": "UPDATE", "text": "Alice moved", "at": at(9).isoformat()},
        {"id": "same-2", "record": "r3", "op": "UPDATE", "text": "Alice moved", "at": at(9.2).isoformat()},
        {"id": "gone", "record": "r5", "op": "DELETE", "at": at(12).isoformat()},
        {"id": "back", "record": "r5", "op": "ADD", "text": "Fact number 5, again", "at": at(33).isoformat()},
    ]
    api_post(client, "versions", {"store": "prefs", "versions": versions}, key)
    row = models.MemoryStore.objects.get(project=project)
    sessions = []
    for name in ("s1", "s2"):
        session = agent.sessions.create(external_id=name, title=name)
        for seq in range(4):
            models.Message.objects.create(session=session, seq=seq, role="user", content=f"message {seq}")
        sessions.append(session)
    call = models.LlmCall.objects.create(session=sessions[0], trace_id="ab" * 16, span_id="cd" * 8, sent=[0, 1])
    records = {r.external_id: r for r in row.records.all()}
    # Reads that found something: record rN is read 14 - N times (r12 and r13 once each: a tie, by id).
    n = 0
    for record_number in range(14):
        for _ in range(max(1, 14 - record_number)):
            n += 1
            session = sessions[n % 2]
            recall = models.Recall.objects.create(
                session=session, seq=None if n % 7 == 0 else n % 4, store=row, query=f"about {record_number}",
                at=at((n * 0.37) % 36), llm_call=call if session == sessions[0] and n % 3 == 0 else None,
                item_count=1)
            models.RecallItem.objects.create(recall=recall, record=records[f"r{record_number}"], version=1, rank=1,
                                             text=records[f"r{record_number}"].text)
    # Reads that found nothing: query qN asked 12 - N times (and q10, q11 once each), the last of each by s2 or s1.
    for q in range(13):
        for k in range(max(1, 12 - q)):
            models.Recall.objects.create(session=sessions[(q + k) % 2], seq=k % 4, store=row, query=f"q{q}",
                                         at=at((q * 2.3 + k * 1.1) % 36), item_count=0)
    return row
