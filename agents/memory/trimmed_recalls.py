"""Recalls under a trim: which recalled memories and documents the trimmed list still holds and which it drops
(``recall_trimmed``: the strategy drops the message that carries a recall), and whether a persisted injection piles
up in what would be sent (the ``repeated_injection`` rule of ``findings``, run on the kept recalls only).

Plain values in, plain values out: the lab's pages (one session, compare, the report) and any other interface
give the trim's kept and dropped input indices (a stored message's ``seq`` is its input index) and the recalls.
"""
from __future__ import annotations

from collections.abc import Collection, Container, Iterable
from dataclasses import dataclass, field

from .findings import Finding, InjectionCheck, RecallFacts

RECALL_TRIMMED = "recall_trimmed"
RECALL_TRIMMED_ADVICE = ("Pin the message that carries the recall (or put recalled memory in the system prompt), "
                         "or choose a strategy that keeps it: the model no longer sees what was recalled.")


@dataclass(frozen=True)
class PlacedRecall:
    """A recall carried by a message of the trimmed input: ``index`` is its place in the recalls given."""

    index: int
    recall: RecallFacts
    edited: bool = False  # kept, but the carrying message is sent changed


@dataclass
class RecallsInTrim:
    kept: list[PlacedRecall] = field(default_factory=list)  # the carrying message is kept (edited or not)
    dropped: list[PlacedRecall] = field(default_factory=list)  # recall_trimmed
    # Carried by no message of the input (the system prompt, no message, or a message after the call shown):
    # the trim does not decide on them.
    elsewhere: list[PlacedRecall] = field(default_factory=list)
    # repeated_injection among the kept recalls: the same recalled memory more than once in what would be sent.
    piled_up: list[Finding] = field(default_factory=list)

    @property
    def edited(self) -> int:
        return sum(1 for r in self.kept if r.edited)


def recalls_in_trim(
    recalls: Iterable[RecallFacts],
    *,
    kept: Collection[int],
    dropped: Container[int],
    edited: Collection[int] = (),
    sent_before: int | None = None,
) -> RecallsInTrim:
    """Each recall by whether the trim keeps the message carrying it (``seq`` in ``kept``; ``edited``: kept but sent
    changed, which keeps the recall) or drops it (in ``dropped``). ``sent_before``: the call the trimmed list is
    sent to (the input's length: every kept message comes before it; None: the same, from the kept indices).
    ``piled_up``: the repeated-injection check of ``findings.InjectionCheck`` over the kept recalls in the order of
    their messages: a persisted recall kept, and the same memory kept again at a later message."""
    kept_set = kept if isinstance(kept, (set, frozenset)) else set(kept)
    # ``dropped`` may be anything with a quick ``in`` (a long session's dropped runs, never one int per message).
    dropped_set = set(dropped) if isinstance(dropped, (list, tuple)) else dropped
    edited_set = edited if isinstance(edited, (set, frozenset)) else set(edited)
    out = RecallsInTrim()
    for index, recall in enumerate(recalls):
        if recall.seq is not None and recall.seq in kept_set:
            out.kept.append(PlacedRecall(index, recall, edited=recall.seq in edited_set))
        elif recall.seq is not None and recall.seq in dropped_set:
            out.dropped.append(PlacedRecall(index, recall))
        else:
            out.elsewhere.append(PlacedRecall(index, recall))
    if sent_before is None:
        sent_before = max(kept_set, default=-1) + 1
    session = out.kept[0].recall.session if out.kept else None
    check = InjectionCheck(session, sent_before)
    for placed in sorted(out.kept, key=lambda p: (p.recall.seq or 0, p.index)):
        out.piled_up += check.add(placed.recall)
    return out

