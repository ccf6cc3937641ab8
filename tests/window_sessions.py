"""Sessions for the window bar's tests and bench (``What filled the window``): a long session written in bulk with
every kind of part, and the AgentScope files with recalls (turn 1 and 2 of ``user_1_trip``)."""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from agents import models
from agents.memory.schema import Message
from agents.memory.tokens import get_counter
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": CITY}}]
# A system prompt holding a recalled fact, placed there by a system-placed recall.
SYSTEM = "You are a travel helper.\nWhat you know of the user:\n- prefers window seats\nBe brief."


def friday_session(project: str, tmp_path: Path) -> models.Session:
    """AgentScope's ``user_1_trip``, turns 1 and 2 imported (recalls of mem0's memory and of a knowledge base)."""
    for turn in (1, 2):
        folder = tmp_path / f"turn{turn}"
        folder.mkdir()
        path = shutil.copy(MEMORY_SAMPLES / "agentscope" / f"session_user_1_turn{turn}.json",
                           folder / "user_1_trip.json")
        imports.import_file(path, project=project)
    return models.Session.objects.get(external_id="user_1_trip")


def long_session(agent: models.Agent, messages: int, *, run: int = 0, tools: bool = True) -> models.Session:
    """``messages`` messages written in bulk: a system prompt (with a system-placed recall in it), then by fours a
    user message, a message carrying a recall (of a memory store, every third one of a knowledge store), a reply,
    a user message; a compaction's summary at a third of the session; and, with ``run``, that many user messages in
    a row at half of it (a reply whose input is longer than a part lists). Token counts vary; running totals kept."""
    session = models.Session.objects.create(agent=agent, external_id=f"window-{messages}-{run}",
                                            message_count=messages, tools=TOOLS if tools else [])
    half = messages // 2
    system_tokens = get_counter(session.token_counter).count(Message(role="system", content=SYSTEM))
    rows, running = [], 0
    for seq in range(messages):
        if seq == 0:
            role, content = "system", SYSTEM
        elif run and half <= seq < half + run:
            role, content = "user", f"more {seq}"
        else:
            role = ("user", "user", "assistant", "user")[seq % 4]
            content = f"<long_term_memory>fact {seq}</long_term_memory>" if seq % 4 == 1 else f"m{seq}"
        tokens = system_tokens if seq == 0 else 2 + seq % 7
        running += tokens
        rows.append(models.Message(session=session, seq=seq, role=role, content=content, token_count=tokens,
                                   token_running=running))
    models.Message.objects.bulk_create(rows, batch_size=2000)
    session.token_total = running
    session.save(update_fields=["token_total"])
    memory = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=f"memory {session.pk}",
                                               kind="records")
    knowledge = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=f"docs {session.pk}",
                                                  kind="knowledge")
    carriers = [m.seq for m in rows if m.seq % 4 == 1 and m.content.startswith("<long_term_memory>")]
    models.Recall.objects.bulk_create([
        models.Recall(session=session, seq=seq, store=knowledge if k % 3 == 2 else memory, query=f"q{seq}",
                      persisted=True, at=T0) for k, seq in enumerate(carriers)], batch_size=2000)
    placed = models.Recall.objects.create(session=session, seq=0, store=memory, query="the user",
                                          placement=models.Recall.Placement.SYSTEM, at=T0)
    models.RecallItem.objects.create(recall=placed, rank=1, text="prefers window seats")
    summary = next(m.seq for m in rows if m.seq >= messages // 3 and m.seq % 4 == 3)
    models.Compaction.objects.create(session=session, seq=summary, summary="What was said before", source="summary",
                                     external_id=f"c-{session.pk}", at=T0)
    return session
