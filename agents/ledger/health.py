"""A memory store's health (``GET /api/memory/stores/<id>/health/``), counted from its rows:

- ``records``: the store's records, in every state; ``never_read``: those no recalled item points at;
- ``reads``: the recalls (searches) that read the store; ``zero_hit_recalls``: those that returned nothing;
- ``writes``: the versions of its records (each write keeps one); ``noop_writes``: UPDATEs that changed nothing;
- ``duplicates``: active records holding the same text as an earlier one (``noop_writes`` and ``duplicates`` are the
  store's ``noop_write`` and ``duplicate_record`` findings, ledger.findings, made fresh first);
- ``tokens_recalled``: the tokens of the text the store's recalls sent, each item's text counted alone (without a
  message's overhead) with its session's counter.

Counted, not read from the store's summaries (``record_count``, ``read_count``...), so that the figures are what the
rows say even when a writer forgot a summary. Every figure is one indexed aggregate except ``tokens_recalled``, which
reads the recalled texts ``BATCH`` at a time (the only figure whose cost grows with the reads).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from agents import models
from agents.access import User
from agents.ledger import findings
from agents.ledger.reading import store_for_user
from agents.memory.schema import Message
from agents.memory.tokens import TokenCounter, get_counter

BATCH = 2000


@dataclass(frozen=True)
class StoreHealth:
    store: int
    records: int
    never_read: int
    zero_hit_recalls: int
    reads: int
    writes: int
    noop_writes: int
    duplicates: int
    tokens_recalled: int


def store_health(*, user: User, store_id: int) -> StoreHealth:
    """The health of a store of the user's projects (404 for any other)."""
    store = findings.store_findings_fresh(store_for_user(user, store_id))
    records = models.MemoryRecord.objects.filter(store=store)
    recalls = models.Recall.objects.filter(store=store)
    kinds = findings.findings_counted(models.MemoryFinding.objects.filter(store=store))
    return StoreHealth(
        store=store.pk,
        records=records.count(),
        never_read=records.filter(~Exists(models.RecallItem.objects.filter(record=OuterRef("pk")))).count(),
        reads=recalls.count(),
        zero_hit_recalls=recalls.filter(~Exists(models.RecallItem.objects.filter(recall=OuterRef("pk")))).count(),
        writes=models.RecordVersion.objects.filter(record__store=store).count(),
        noop_writes=kinds.get("noop_write", 0),
        duplicates=kinds.get("duplicate_record", 0),
        tokens_recalled=tokens_recalled(store),
    )


def tokens_recalled(store: models.MemoryStore) -> int:
    """The tokens of every text the store's recalls sent, each counted alone with its session's counter."""
    counters: dict[str, TokenCounter] = {}
    total, last = 0, 0
    while True:
        batch = list(models.RecallItem.objects.filter(recall__store=store, pk__gt=last).order_by("pk").values_list(
            "pk", "text", "recall__session__token_counter")[:BATCH])
        if not batch:
            return total
        last = batch[-1][0]
        for _pk, text, name in batch:
            if not text:
                continue
            counter = counters.get(name)
            if counter is None:
                try:
                    counter = get_counter(name)
                except ValueError:  # a counter this process does not have: the default, rather than no figure
                    counter = get_counter("cl100k")
                counters[name] = counter
            total += text_tokens(text, counter)


def text_tokens(text: str, counter: TokenCounter) -> int:
    """A text's tokens under ``counter``: a message holding it, less the same message empty (the per-message
    overhead a recall's text shares with whatever carries it)."""
    return counter.count(Message(role="user", content=text)) - counter.count(Message(role="user", content=""))
