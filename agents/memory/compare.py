"""Strategies compared row by row: each input message's mark in every column, aligned.

``compare_aligned(messages, results)`` takes the trim results of N strategies over the same messages (one column
each) and returns the rows a page shows: one per input message with its mark in every column (kept, dropped or
edited, with the strategy's reason), one per inserted message (a placeholder or summary, at the place the column
put it: before the next input message it sent), and whether the columns disagree on the row (their marks differ:
kept in one, dropped or edited in another; an inserted row disagrees unless every column inserted the same
message there).

A long session stays a bounded page: consecutive message rows with the same marks and reasons in every column
form a run, and a run longer than ``FOLD_AT`` shows its first and last ``CONTEXT`` rows around one ``Fold``; with
``only_disagreements`` every run the columns agree on is one ``Fold``. What is left is paged by ``page_size``
(``offset`` and ``next_offset``). Each column also gets its summary: messages and tokens sent, errors a provider
rejects, whether the newest user message was sent.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from agents.memory.schema import Message
from agents.memory.stored import outlines_of
from agents.memory.trimming import TrimResult
from agents.memory.trimming.tool_runs import last_of_role

KEPT = "kept"
DROPPED = "dropped"
EDITED = "edited"
INSERTED = "inserted"
ABSENT = ""  # an inserted row of other columns: this column has no message there

FOLD_AT = 8  # a run of identical rows longer than this is folded
CONTEXT = 2  # rows shown at each end of a folded run
PAGE_SIZE = 400  # items (rows and folds) per page


@dataclass(frozen=True, slots=True)
class Mark:
    kind: str  # KEPT, DROPPED, EDITED, INSERTED or ABSENT
    reason: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "reason": self.reason}


@dataclass(slots=True)
class Row:
    index: int | None  # input index; None for an inserted row
    marks: tuple[Mark, ...]
    disagree: bool
    # For an inserted row: each column's inserted message (None where the column inserted nothing here).
    inserted: tuple[Message | None, ...] = ()
    is_fold: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "message" if self.index is not None else "inserted",
            "index": self.index,
            "disagree": self.disagree,
            "marks": [m.to_dict() for m in self.marks],
        }
        if self.index is None:
            out["inserted"] = [None if m is None else m.to_openai() for m in self.inserted]
        return out


@dataclass(slots=True)
class Fold:
    first: int  # input indices of the folded rows, both included
    last: int
    marks: tuple[Mark, ...]  # the marks every folded row has
    disagree: bool
    is_fold: bool = True

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "fold", "first": self.first, "last": self.last, "count": self.count,
            "disagree": self.disagree, "marks": [m.to_dict() for m in self.marks],
        }


@dataclass(frozen=True, slots=True)
class ColumnSummary:
    messages: int  # messages sent
    tokens: int  # tokens sent
    tokens_before: int
    errors: int  # violations a provider rejects
    question_kept: bool | None  # the newest user message was sent (None: there is none)
    kept: int
    dropped: int
    edited: int
    inserted: int
    budget_exceeded: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages, "tokens": self.tokens, "tokens_before": self.tokens_before,
            "errors": self.errors, "question_kept": self.question_kept, "kept": self.kept, "dropped": self.dropped,
            "edited": self.edited, "inserted": self.inserted, "budget_exceeded": self.budget_exceeded,
        }


@dataclass
class AlignedCompare:
    columns: int
    messages: int  # input messages
    rows: int  # message rows plus inserted rows
    disagreeing: int  # rows where the columns disagree
    summaries: list[ColumnSummary]
    items: list[Row | Fold]  # this page
    only_disagreements: bool
    offset: int  # items before this page
    total_items: int
    next_offset: int | None  # the next page's offset (None: this is the last page)
    first_disagreement: int | None = None  # input index of the first message row the columns disagree on
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns, "messages": self.messages, "rows": self.rows,
            "disagreeing": self.disagreeing, "first_disagreement": self.first_disagreement,
            "only_disagreements": self.only_disagreements,
            "summaries": [s.to_dict() for s in self.summaries],
            "offset": self.offset, "total_items": self.total_items, "next_offset": self.next_offset,
            "items": [x.to_dict() for x in self.items],
        }


def _column_marks(messages: Sequence[Message], result: TrimResult) -> tuple[list[str], list[str]]:
    """Each input message's kind and reason in one result."""
    n = len(messages)
    kinds = [DROPPED] * n
    reasons = ["dropped"] * n
    # The drops as runs (a long session's are a few): a slice each, not a ``Dropped`` per message.
    for run in result.dropped_runs():
        start, stop = max(0, run["from"]), min(n, run["to"] + 1)
        if start < stop:
            reasons[start:stop] = [run["reason"]] * (stop - start)
    for i in result.kept:
        if 0 <= i < n:
            kinds[i] = KEPT
            reasons[i] = result.kept_reasons.get(i, KEPT)
    for e in result.edited:
        if 0 <= e.index < n:
            kinds[e.index] = EDITED
            reasons[e.index] = e.reason
    return kinds, reasons


def _inserted_by_anchor(n: int, result: TrimResult) -> dict[int, list[tuple[Message, str]]]:
    """The column's inserted messages, each under the input index of the next input message it sent (n: none)."""
    anchors: dict[int, list[tuple[Message, str]]] = {}
    reasons = {x.position: x.reason for x in result.inserted}
    pending: list[tuple[Message, str]] = []
    for position, source in enumerate(result.sources):
        if source is None:
            pending.append((result.messages[position], reasons.get(position, INSERTED)))
        elif pending:
            anchors.setdefault(source, []).extend(pending)
            pending = []
    if pending:
        anchors.setdefault(n, []).extend(pending)
    return anchors


def column_summary(
    messages: Sequence[Message], result: TrimResult, kinds: Sequence[str] | None = None
) -> ColumnSummary:
    """What one column sent (``kinds``: its marks, when already known)."""
    # Roles from a stored list's outlines: walking its whole messages back from the end read one row per query.
    roles = outlines_of(messages)
    if roles is None:
        roles = messages
    newest_user = last_of_role(roles, "user")
    if kinds is None:
        kinds = _column_marks(messages, result)[0]
    sent = {s for s in result.sources if s is not None}
    return ColumnSummary(
        messages=len(result.messages),
        tokens=result.tokens_after,
        tokens_before=result.tokens_before,
        errors=sum(1 for v in result.violations if v.severity == "error"),
        question_kept=None if newest_user is None else newest_user in sent,
        kept=kinds.count(KEPT),
        dropped=kinds.count(DROPPED),
        edited=kinds.count(EDITED),
        inserted=len(result.inserted),
        budget_exceeded=result.budget_exceeded,
    )


def compare_aligned(
    messages: Sequence[Message],
    results: Sequence[TrimResult],
    *,
    only_disagreements: bool = False,
    offset: int = 0,
    page_size: int = PAGE_SIZE,
) -> AlignedCompare:
    n, width = len(messages), len(results)
    columns = [_column_marks(messages, r) for r in results]
    inserted = [_inserted_by_anchor(n, r) for r in results]
    anchors = sorted({a for col in inserted for a in col})

    def inserted_rows(anchor: int) -> list[Row]:
        depth = max(len(col.get(anchor, ())) for col in inserted)
        rows = []
        for k in range(depth):
            per_column = [col.get(anchor, [])[k] if k < len(col.get(anchor, [])) else None for col in inserted]
            marks = tuple(Mark(INSERTED, x[1]) if x is not None else Mark(ABSENT) for x in per_column)
            bodies = tuple(x[0] if x is not None else None for x in per_column)
            same = all(b is not None for b in bodies) and all(b == bodies[0] for b in bodies)
            rows.append(Row(None, marks, not same, bodies))
        return rows

    items: list[Row | Fold] = []
    disagreeing = 0
    first_disagreement: int | None = None
    row_count = 0
    next_anchor = 0  # position in anchors

    def emit_run(a: int, b: int) -> None:
        """Message rows a..b (included), which have the same marks in every column."""
        nonlocal disagreeing, first_disagreement
        marks = tuple(Mark(kinds[a], reasons[a]) for kinds, reasons in columns)
        disagree = len({m.kind for m in marks}) > 1
        length = b - a + 1
        if disagree:
            disagreeing += length
            if first_disagreement is None:
                first_disagreement = a
        if only_disagreements and not disagree:
            items.append(Fold(a, b, marks, False))
        elif length > FOLD_AT:
            items.extend(Row(i, marks, disagree) for i in range(a, a + CONTEXT))
            items.append(Fold(a + CONTEXT, b - CONTEXT, marks, disagree))
            items.extend(Row(i, marks, disagree) for i in range(b - CONTEXT + 1, b + 1))
        else:
            items.extend(Row(i, marks, disagree) for i in range(a, b + 1))

    # A run ends before an anchor of inserted rows, at the end, or where any column's mark changes: only those
    # places are visited, found per column by groupby (C-level), not by comparing every message in Python.
    cuts = {n, *anchors}
    for kinds, reasons in columns:
        at = 0
        for _, same in groupby(zip(kinds, reasons, strict=True)):
            at += len(list(same))
            cuts.add(at)
    run_start = 0
    for i in sorted(cuts):
        if i > run_start:
            emit_run(run_start, i - 1)
            row_count += i - run_start
            run_start = i
        if next_anchor < len(anchors) and anchors[next_anchor] == i:
            for row in inserted_rows(i):
                row_count += 1
                if row.disagree:
                    disagreeing += 1
                items.append(row)
            next_anchor += 1
    offset = max(0, min(offset, len(items)))
    page = items[offset : offset + page_size]
    end = offset + len(page)
    return AlignedCompare(
        columns=width,
        messages=n,
        rows=row_count,
        disagreeing=disagreeing,
        summaries=[column_summary(messages, r, kinds) for r, (kinds, _) in zip(results, columns, strict=True)],
        items=page,
        only_disagreements=only_disagreements,
        offset=offset,
        total_items=len(items),
        next_offset=end if end < len(items) else None,
        first_disagreement=first_disagreement,
    )
