"""Memory findings: what went wrong with what an agent remembered and recalled, as violations are for the list.

The stable names of DESIGN.md, each with what to do about it in one sentence:

- ``duplicate_record``: the same text twice in one store (mem0 1.x with an eager model stores a fact twice);
- ``noop_write``: an UPDATE that changed nothing;
- ``repeated_injection``: one call was sent the same recalled memory more than once (AutoGen's ``ListMemory``
  appends its message to the saved context on every run; AgentScope keeps every ``<retrieved_knowledge>``);
- ``stale_recall``: what was sent is an older version than the record had at that moment;
- ``recall_of_deleted``: what was sent had been deleted by then;
- ``unmatched_recall``: recalled text that no record of its store holds (the store's records being known);
- ``block_over_limit`` / ``block_near_limit``: a block over its character limit, or at 90% of it or more;
- ``zero_hit_recall``: a search that returned nothing.

The rules work on plain values (``RecallFacts``, ``RecordFacts``) that a file (``document_findings``, for ``manage.py
lint``) and the database (the pages) both give, so that one rule is written once.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .ledger import MemoryDocument, RecordIn, VersionIn, folded, version_at

KINDS: tuple[str, ...] = (
    "duplicate_record", "noop_write", "repeated_injection", "stale_recall", "recall_of_deleted", "unmatched_recall",
    "block_over_limit", "block_near_limit", "zero_hit_recall",
)
NEAR_LIMIT = 0.9

ADVICE: dict[str, str] = {
    "duplicate_record": "Deduplicate before writing (compare against the store's existing texts), then delete one.",
    "noop_write": "Skip writes whose text equals the record's current text; they cost a model call and say nothing.",
    "repeated_injection": "Send recalled memory once per call: drop the earlier copy from the kept context, or "
                          "mark the injected message transient.",
    "stale_recall": "Read the record again before sending it, or invalidate cached retrievals when it changes.",
    "recall_of_deleted": "Filter deleted records out of retrieval (or rebuild the index after deleting).",
    "unmatched_recall": "Check that the recall reads the store you think it does; the text is in none of its records.",
    "block_over_limit": "Shorten the block or raise its limit; the framework truncates or refuses what is over.",
    "block_near_limit": "Summarise or split the block before it reaches its limit.",
    "zero_hit_recall": "Lower the score threshold or widen the query; the model got no memory for this call.",
}


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    index: int | None = None  # the message it is flagged on, in its conversation
    record: str | None = None  # the record's id in its library
    session: str | None = None  # the conversation (its key in the file, or the stored session's id)
    store: str | None = None
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "index": self.index, "record": self.record,
                               "message": self.message, "advice": ADVICE[self.kind]}
        if self.session is not None:
            out["session"] = self.session
        if self.store is not None:
            out["store"] = self.store
        if self.version is not None:
            out["version"] = self.version
        return out


# --- records -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordFacts:
    external_id: str
    text: str
    state: str
    char_limit: int | None
    versions: Sequence[VersionIn]  # ordered, numbered


def record_findings(store: str, kind: str, records: Iterable[RecordFacts]) -> list[Finding]:
    """``duplicate_record``, ``noop_write`` and, in a block store, the limits."""
    found: list[Finding] = []
    first_with: dict[str, str] = {}
    for record in records:
        if record.state == "active" and record.text.strip():
            key = folded(record.text)
            other = first_with.setdefault(key, record.external_id)
            if other != record.external_id:
                found.append(Finding("duplicate_record", f"{record.external_id!r} holds the same text as {other!r}: "
                                     f"{_short(record.text)}", record=record.external_id, store=store))
        previous: VersionIn | None = None
        for version in record.versions:
            if (previous is not None and version.op.upper() == "UPDATE" and version.text == previous.text
                    and version.value == previous.value):
                found.append(Finding("noop_write", f"version {version.number} of {record.external_id!r} rewrote "
                                     "the same text", record=record.external_id, store=store, version=version.number))
            previous = version
        if kind == "blocks" and record.char_limit:
            used = len(record.text)
            if used > record.char_limit:
                found.append(Finding("block_over_limit", f"block {record.external_id!r} holds {used} characters, "
                                     f"over its limit of {record.char_limit}", record=record.external_id, store=store))
            elif used >= NEAR_LIMIT * record.char_limit:
                found.append(Finding("block_near_limit", f"block {record.external_id!r} holds {used} of its "
                                     f"{record.char_limit} characters ({used / record.char_limit:.0%})",
                                     record=record.external_id, store=store))
    return found


# --- recalls -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemFacts:
    text: str
    record: str | None
    version: int | None


@dataclass(frozen=True)
class RecallFacts:
    session: str | None
    seq: int | None
    store: str | None
    at: datetime | None
    items: Sequence[ItemFacts]
    persisted: bool = False
    query: str | None = None


@dataclass
class StoreFacts:
    """What the recall rules need of a store: whether its records are known, and each record's versions."""

    records_known: bool
    versions: Mapping[str, Sequence[VersionIn]] = field(default_factory=dict)


def recall_findings(recall: RecallFacts, store: StoreFacts | None) -> list[Finding]:
    """``zero_hit_recall``, ``unmatched_recall``, ``stale_recall`` and ``recall_of_deleted`` of one recall."""
    def at(kind: str, message: str, *, record: str | None = None, version: int | None = None) -> Finding:
        return Finding(kind, message, index=recall.seq, record=record, session=recall.session, store=recall.store,
                       version=version)

    if not recall.items:
        query = f" for {_short(recall.query)}" if recall.query else ""
        return [at("zero_hit_recall", f"the search{query} returned nothing")]
    found: list[Finding] = []
    for rank, item in enumerate(recall.items, 1):
        if item.record is None:
            if store is not None and store.records_known:
                found.append(at("unmatched_recall", f"item {rank} matches no record of its store: "
                                f"{_short(item.text)}"))
            continue
        versions = store.versions.get(item.record, ()) if store is not None else ()
        if not versions or recall.at is None:
            continue
        current = version_at(versions, recall.at)
        if current is None:
            continue
        now = versions[current - 1]
        if now.op.upper() == "DELETE":
            found.append(at("recall_of_deleted", f"item {rank} ({item.record!r}) had been deleted "
                            f"(version {current}) when it was sent", record=item.record, version=current))
        elif item.version is not None and item.version < current:
            found.append(at("stale_recall", f"item {rank} sent version {item.version} of {item.record!r}; "
                            f"the record was at version {current} by then", record=item.record,
                            version=item.version))
    return found


def injection_findings(session: str | None, recalls: Sequence[RecallFacts], replies: Sequence[int]) -> list[Finding]:
    """``repeated_injection``: a call (a reply at ``replies[i]``, sent what came before it) that was sent the same
    recalled memory more than once, because the message carrying it stayed in the list and was added again. Flagged
    on the later carrier, once, when a call came after it."""
    check = InjectionCheck(session, max(replies, default=-1))
    placed = sorted((r for r in recalls if r.seq is not None), key=lambda r: r.seq or 0)
    return [finding for recall in placed for finding in check.add(recall)]


class InjectionCheck:
    """``injection_findings`` a recall at a time, for a caller that streams a session's recalls in the order of the
    messages carrying them (the database's: a session of 50,000 recalls is never held whole). ``last_reply``: the
    session's last assistant message (-1: none)."""

    def __init__(self, session: str | None, last_reply: int) -> None:
        self.session = session
        self.last_reply = last_reply
        self.seen: dict[str, int] = {}  # what each recalled memory is -> the first carrier sent that stays in the list

    def add(self, recall: RecallFacts) -> list[Finding]:
        if recall.seq is None:
            return []
        for item in recall.items:
            key = item.record or ("text:" + folded(item.text))
            first = self.seen.get(key)
            if first is not None and first != recall.seq and recall.seq < self.last_reply:
                return [Finding("repeated_injection", f"{_short(item.text)} was put into the list at #{first} "
                                f"and again at #{recall.seq}: later calls carry it twice",
                                index=recall.seq, record=item.record, session=self.session, store=recall.store)]
            if recall.persisted and first is None:
                self.seen[key] = recall.seq
        return []


# --- a file --------------------------------------------------------------------------------------------------------


def document_findings(document: MemoryDocument,
                      replies: Mapping[str | None, Sequence[int]] | None = None) -> list[Finding]:
    """Every finding of a file's memory layers (its records listed: ``MemoryDocument.materialized``).
    ``replies``: each conversation's assistant messages by its key (its external id, or ``#N``), for a file whose
    conversations were streamed rather than kept in the document."""
    found: list[Finding] = []
    facts: dict[str, StoreFacts] = {}
    for store in document.stores:
        records = [r for r in store.records]
        ordered = {r.external_id: r.ordered_versions() for r in records}
        facts[store.key] = StoreFacts(records_known=bool(records), versions=ordered)
        found += record_findings(store.key, store.kind, (_record_facts(r, ordered[r.external_id]) for r in records))
    by_session: dict[str | None, list[RecallFacts]] = {}
    for recall in document.recalls:
        recall_facts = RecallFacts(
            session=recall.session, seq=recall.seq, store=recall.store, at=recall.at, persisted=recall.persisted,
            query=recall.query, items=[ItemFacts(i.text, i.record, i.version) for i in recall.items])
        found += recall_findings(recall_facts, facts.get(recall.store) if recall.store else None)
        by_session.setdefault(recall.session, []).append(recall_facts)
    known = dict(replies) if replies is not None else _replies(document)
    for session, recalls in by_session.items():
        found += injection_findings(session, recalls, known.get(session, ()))
    return found


def _record_facts(record: RecordIn, versions: Sequence[VersionIn]) -> RecordFacts:
    return RecordFacts(record.external_id, record.text, record.state, record.char_limit, versions)


def _replies(document: MemoryDocument) -> dict[str | None, list[int]]:
    out: dict[str | None, list[int]] = {}
    for index, conversation in enumerate(document.conversations):
        key = conversation.external_id or f"#{index}"
        out[key] = [i for i, m in enumerate(conversation.messages) if m.role == "assistant"]
    return out


def _short(text: str | None, limit: int = 80) -> str:
    text = folded(text or "")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
