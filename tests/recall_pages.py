"""A recall for the recall page's tests: a session whose message #1 carries three items of a mem0 store recalled for
"What does the user eat?" (scores 0.9, 0.5 and none; the first matches a record at its version 2), replied to at #2
and #4."""
from __future__ import annotations

from agents import models
from agents.memory.schema import Conversation, parse_messages
from agents.store.writing import session_store

MESSAGES = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "<long_term_memory>User is vegan\nUser likes trains\nUser lives in Paris"
                                "</long_term_memory>"},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Plan my trip."},
    {"role": "assistant", "content": "Here is a plan."},
]


def scored_recall(agent: models.Agent) -> models.Recall:
    session = session_store(agent=agent, conversation=Conversation(messages=parse_messages(MESSAGES),
                                                                    external_id="recall-page"))
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="mem0 (user_id=alice)",
                                              kind="records", source_format="mem0")
    record = models.MemoryRecord.objects.create(store=store, external_id="rec-1", text="User is vegan",
                                                version_count=2)
    recall = models.Recall.objects.create(session=session, seq=1, store=store, query="What does the user eat?",
                                          params={"limit": 3, "threshold": 0.1}, item_count=3, persisted=True)
    models.RecallItem.objects.bulk_create([
        models.RecallItem(recall=recall, rank=1, score=0.9, text="User is vegan", record=record, version=2),
        models.RecallItem(recall=recall, rank=2, score=0.5, text="User likes trains"),
        models.RecallItem(recall=recall, rank=3, score=None, text="User lives in Paris"),
    ])
    return recall
