"""Retrieval what-if (issue 27): which items of a recall a different ``limit`` or ``score_threshold`` would have kept,
and the tokens the dropped ones took.

The rules, as a store applies them (mem0, a vector store's top-k search then its threshold):

- ``limit``: the first ``limit`` items by rank are kept. A limit above the items returned keeps them all: what the
  store would have returned past them is not recorded, so a what-if only ever drops;
- ``score_threshold``: an item whose score is below it is dropped (higher scores are better, as mem0's threshold
  and a similarity search read them: an item at the threshold is kept);
- an item without a score is kept whatever the threshold (the threshold cannot judge it) and said to be so
  (``unscored``);
- both apply: an item is kept when it is within the limit and not below the threshold.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class WhatIfItem:
    rank: int
    score: float | None
    tokens: int  # what its text costs in the window (the session's counter)


@dataclass(frozen=True)
class ItemFate:
    item: WhatIfItem
    kept: bool
    reason: str  # "" when kept; "past the limit", "below the threshold"
    unscored: bool  # a threshold was asked and the item has no score: kept, the threshold cannot judge it


@dataclass(frozen=True)
class WhatIf:
    limit: int | None
    score_threshold: float | None
    items: list[ItemFate]

    @property
    def kept(self) -> list[ItemFate]:
        return [f for f in self.items if f.kept]

    @property
    def dropped(self) -> list[ItemFate]:
        return [f for f in self.items if not f.kept]

    @property
    def tokens_dropped(self) -> int:
        return sum(f.item.tokens for f in self.dropped)

    @property
    def unscored(self) -> int:
        return sum(1 for f in self.items if f.unscored)


def what_if(items: Sequence[WhatIfItem], *, limit: int | None = None,
            score_threshold: float | None = None) -> WhatIf:
    """The fate of each item (in rank order) under ``limit`` and ``score_threshold`` (None: not applied)."""
    if limit is not None and limit < 0:
        raise ValueError("limit: at least 0")
    fates = []
    for position, item in enumerate(sorted(items, key=lambda i: i.rank)):
        unscored = score_threshold is not None and item.score is None
        if limit is not None and position >= limit:
            fates.append(ItemFate(item=item, kept=False, reason="past the limit", unscored=unscored))
        elif score_threshold is not None and item.score is not None and item.score < score_threshold:
            fates.append(ItemFate(item=item, kept=False, reason="below the threshold", unscored=False))
        else:
            fates.append(ItemFate(item=item, kept=True, reason="", unscored=unscored))
    return WhatIf(limit=limit, score_threshold=score_threshold, items=fates)
