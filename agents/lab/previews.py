"""One trim as the lab's pages show it (one session, side by side).

``lab.trimming.session_trim`` reads a stored session with the token counts stored at import (nothing is recounted)
and trims it; ``trim_preview`` turns the ``TrimResult`` into what a page can show of a long session in bounded
HTML: a strip of runs and a capped list of message bodies. (Across sessions:
``lab.reports``.)
"""
from __future__ import annotations

import json
import shlex
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from urllib.parse import urlencode

from django.urls import reverse

from agents import models
from agents.memory.chain import Violation
from agents.memory.compare import AlignedCompare, Fold, Mark, Row
from agents.memory.schema import Message, content_text
from agents.memory.trimming import StrategySpec, TrimResult
from agents.memory.trimming.tool_runs import last_of_role

# --- one trim as a page shows it -----------------------------------------------------------------------------

# A long session's page stays small: at most this many message bodies, the first few dropped messages of each
# run of dropped ones, and strip runs longer than STRIP_RUN folded into one labelled block.
MAX_RENDERED = 300
RENDERED_HEAD = 60  # when capped: the first messages (system prompt, task) and the rest from the end
DROPPED_SHOWN = 2
STRIP_CELLS = 240  # a list this short gets one cell per message, whatever its runs
STRIP_RUN = 24


@dataclass(eq=False)
class PreviewRow:
    status: str  # kept | edited | dropped | inserted
    index: int | None  # input index (None for an inserted message)
    position: int | None  # position in the trimmed list (None for a dropped message)
    message: Message
    tokens: int | None
    reason: str
    violations: list[Violation] = field(default_factory=list)
    original: Message | None = None  # an edited message as stored (``message`` is what is sent)
    original_tokens: int | None = None  # its stored count (``tokens`` counts what is sent)
    # The stores whose recalls it carries (the lab's recalls under the trim shown): "" for a store not known.
    recalls: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return content_text(self.message.content)

    @property
    def original_text(self) -> str:
        return content_text(self.original.content) if self.original is not None else ""

    @property
    def original_calls(self) -> list[dict[str, str]]:
        """The calls whose arguments the edit changed, as stored."""
        if self.original is None:
            return []
        sent = {c.id: c.function.arguments for c in self.message.tool_calls}
        return [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in self.original.tool_calls
            if sent.get(c.id) != c.function.arguments
        ]

    @property
    def anchor(self) -> str:
        return f"lm-{self.index}" if self.index is not None else f"lp-{self.position}"

    @property
    def calls(self) -> list[dict[str, str]]:
        return [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in self.message.tool_calls
        ]


@dataclass
class Gap:
    """Messages left out of the rendered list."""

    count: int
    status: str  # dropped | hidden
    first: int
    last: int
    is_gap: bool = True


@dataclass
class StripRun:
    status: str
    rows: list[PreviewRow]  # one cell each, or empty when folded
    count: int
    first: int | None
    last: int | None
    folded: bool
    has_violation: bool = False


@dataclass
class TrimPreview:
    result: TrimResult
    strip: list[StripRun]
    items: list[PreviewRow | Gap]
    rendered: int
    total: int
    kept: int
    dropped: int
    inserted: int
    edited: int
    errors: list[Violation]
    warnings: list[Violation]
    list_violations: list[Violation]  # violations whose index is not a message of the trimmed list
    flagged: list[tuple[Violation, PreviewRow | None]]  # each violation with the row it is on
    newest_user: int | None
    question_lost: bool | None


@dataclass
class _DroppedSpan:
    """Consecutive dropped input messages ``start <= i < stop``, before any row is built for them: a long
    session's preview builds rows only for the dropped messages its strip draws one by one or its list shows."""

    start: int
    stop: int
    status: str = "dropped"

    def __len__(self) -> int:
        return self.stop - self.start


_Piece = PreviewRow | _DroppedSpan


def trim_preview(
    messages: Sequence[Message], counts: Sequence[int], result: TrimResult, *, bodies: bool = True
) -> TrimPreview:
    """What the lab shows of ``result``: every input message and placeholder in order, marked and explained.

    Over a stored list (``memory.stored.StoredMessages``) the rows are built from the outlines, and the whole
    messages are read only for the rows whose bodies are rendered (at most ``MAX_RENDERED``), in one batch;
    ``bodies=False`` (a page that shows no message body: compare) reads none. The dropped messages are held as
    spans (the result's dropped runs): rows are built only for those the strip draws one cell each and the first
    ones of each run the list shows, so the cost follows what is kept and shown, not the session's length."""
    outlines: Sequence[Message] = getattr(messages, "outlines", messages)
    kept_set = set(result.kept)
    edited = {e.index for e in result.edited}
    reason_runs = result.dropped_runs()
    reason_starts = [r["from"] for r in reason_runs]
    by_position: dict[int, list[Violation]] = {}
    for v in result.violations:
        by_position.setdefault(v.index, []).append(v)

    def dropped_row(i: int) -> PreviewRow:
        k = bisect_right(reason_starts, i) - 1
        reason = reason_runs[k]["reason"] if k >= 0 and i <= reason_runs[k]["to"] else "dropped"
        return PreviewRow("dropped", i, None, outlines[i], counts[i], reason)

    # Walk the trimmed list: its non-inserted items are the kept inputs in order. A placeholder is shown just
    # before the next kept input (after the run it stands for), or at the end.
    inserted_at = {x.position: x for x in result.inserted}
    rows_kept: dict[int, PreviewRow] = {}
    pending: list[PreviewRow] = []
    before: dict[int, list[PreviewRow]] = {}
    kept_iter = iter(result.kept)
    kept_reasons, sent, sent_counts = result.kept_reasons, result.messages, result.message_tokens
    no_violations: list[Violation] = []  # shared by the rows that have none: never changed
    for position in range(len(sent)):
        if position in inserted_at:
            x = inserted_at[position]
            pending.append(
                PreviewRow("inserted", None, position, x.message, x.tokens, x.reason, by_position.get(position, []))
            )
            continue
        i = next(kept_iter)
        if pending:
            before[i], pending = pending, []
        if i in edited:
            # The edit as counted, not the stored count.
            sent_tokens = sent_counts[position] if position < len(sent_counts) else counts[i]
            rows_kept[i] = PreviewRow(
                "edited", i, position, sent[position], sent_tokens, kept_reasons.get(i, "kept"),
                by_position.get(position, no_violations), original=messages[i], original_tokens=counts[i],
            )
        else:
            rows_kept[i] = PreviewRow("kept", i, position, outlines[i], counts[i], kept_reasons.get(i, "kept"),
                                      by_position.get(position, no_violations))

    # Every input message in order (each not kept is dropped), a placeholder before the kept one it precedes.
    pieces: list[_Piece] = []
    at = 0
    for i in sorted(i for i in kept_set if 0 <= i < len(outlines)):
        if i > at:
            pieces.append(_DroppedSpan(at, i))
        pieces.extend(before.get(i, []))
        pieces.append(rows_kept[i])
        at = i + 1
    if at < len(outlines):
        pieces.append(_DroppedSpan(at, len(outlines)))
    pieces.extend(pending)
    length = len(outlines) + sum(len(rows) for rows in before.values()) + len(pending)

    newest_user = last_of_role(outlines, "user")
    n_out = len(result.messages)
    items = _bounded_items(pieces, dropped_row)
    if bodies and outlines is not messages:
        # The rendered rows of input messages get their whole message (an edited one is what is sent already).
        shown = [x for x in items if isinstance(x, PreviewRow) and x.index is not None and x.status != "edited"]
        prefetch = getattr(messages, "prefetch", None)
        if prefetch is not None:
            prefetch([r.index for r in shown])
        for row in shown:
            assert row.index is not None
            row.message = messages[row.index]
    at_position = {r.position: r for r in pieces if isinstance(r, PreviewRow) and r.position is not None}
    return TrimPreview(
        result=result,
        strip=_strip(pieces, dropped_row, fold=length > STRIP_CELLS),
        items=items,
        rendered=sum(1 for x in items if isinstance(x, PreviewRow)),
        total=len(messages),
        kept=len(result.kept),
        dropped=len(result.dropped),
        inserted=len(result.inserted),
        edited=len(result.edited),
        errors=[v for v in result.violations if v.severity == "error"],
        warnings=[v for v in result.violations if v.severity != "error"],
        list_violations=[v for v in result.violations if not 0 <= v.index < n_out],
        flagged=[(v, at_position.get(v.index)) for v in result.violations],
        newest_user=newest_user,
        question_lost=None if newest_user is None else newest_user not in kept_set,
    )


def _rows_of(pieces: Sequence[_Piece], dropped_row: Callable[[int], PreviewRow]) -> list[PreviewRow]:
    return [row for p in pieces for row in (
        (dropped_row(i) for i in range(p.start, p.stop)) if isinstance(p, _DroppedSpan) else (p,)
    )]


def _strip(pieces: list[_Piece], dropped_row: Callable[[int], PreviewRow], *, fold: bool) -> list[StripRun]:
    # One run per status change; a folded run (a long list's run longer than STRIP_RUN) is drawn as one block
    # and builds no row.
    runs: list[StripRun] = []
    for status, group in groupby(pieces, key=lambda p: p.status):
        parts = list(group)
        count = sum(len(p) if isinstance(p, _DroppedSpan) else 1 for p in parts)
        ends = [(p.start, p.stop - 1) if isinstance(p, _DroppedSpan) else (p.index, p.index)
                for p in parts if not isinstance(p, PreviewRow) or p.index is not None]
        folded = fold and count > STRIP_RUN
        runs.append(
            StripRun(
                status=status,
                rows=[] if folded else _rows_of(parts, dropped_row),
                count=count,
                first=ends[0][0] if ends else None,
                last=ends[-1][1] if ends else None,
                folded=folded,
                has_violation=any(p.violations for p in parts if isinstance(p, PreviewRow)),
            )
        )
    return runs


def _bounded_items(pieces: list[_Piece], dropped_row: Callable[[int], PreviewRow]) -> list[PreviewRow | Gap]:
    # Every kept and inserted message, the first dropped ones of each dropped run; then at most MAX_RENDERED.
    chosen: list[PreviewRow | Gap] = []
    for status, group in groupby(pieces, key=lambda p: p.status):
        parts = list(group)
        if status != "dropped":
            chosen.extend(_rows_of(parts, dropped_row))
            continue
        start, stop = parts[0], parts[-1]
        assert isinstance(start, _DroppedSpan) and isinstance(stop, _DroppedSpan)  # dropped: spans only
        count = sum(len(p) for p in parts if isinstance(p, _DroppedSpan))
        if count <= DROPPED_SHOWN + 1:
            chosen.extend(_rows_of(parts, dropped_row))
            continue
        # Spans of one group are consecutive input indices (a kept row would have ended the group).
        chosen.extend(dropped_row(i) for i in range(start.start, start.start + DROPPED_SHOWN))
        chosen.append(Gap(count - DROPPED_SHOWN, "dropped", start.start + DROPPED_SHOWN, stop.stop - 1))
    bodies = [x for x in chosen if isinstance(x, PreviewRow)]
    if len(bodies) <= MAX_RENDERED:
        return chosen
    first_hidden = bodies[RENDERED_HEAD]
    last_hidden = bodies[len(bodies) - (MAX_RENDERED - RENDERED_HEAD) - 1]
    start_at = next(k for k, x in enumerate(chosen) if x is first_hidden)
    end_at = next(k for k, x in enumerate(chosen) if x is last_hidden)
    hidden = chosen[start_at : end_at + 1]
    hidden_count = sum(1 if isinstance(x, PreviewRow) else x.count for x in hidden)
    first = next((x.index if isinstance(x, PreviewRow) else x.first) for x in hidden)
    last = next((x.index if isinstance(x, PreviewRow) else x.last) for x in reversed(hidden))
    return chosen[:start_at] + [Gap(hidden_count, "hidden", first or 0, last or 0)] + chosen[end_at + 1 :]


# --- the same result elsewhere -------------------------------------------------------------------------------


def equivalents(
    site: str, session: models.Session, spec: StrategySpec, counter: str, preset: models.Preset | None = None
) -> dict[str, str]:
    """Where else the lab's result comes from, to copy: the trim API's URL (with the messages, as JSON; by the
    preset's name when the lab shows a preset), and the commands that give the same result from a file (the
    session exported, then trimmed). ``site``: the scheme and host the API's URL starts with."""
    if preset is not None:
        query = urlencode({"preset": preset.name})
    else:
        query = spec.lab_query + (f"&{urlencode({'counter': counter})}" if counter != session.token_counter else "")
    api = site + reverse("api:session_trim", args=[session.pk]) + "?" + query
    file = f"session-{session.pk}.json"
    sets: list[str] = []
    for key, value in spec.changed().items():
        written = ",".join(str(v) for v in value) if isinstance(value, list) else (
            value if isinstance(value, str) else json.dumps(value))
        sets += ["--set", f"{key}={written}"]
    export = ["python", "manage.py", "export_history", "--session", str(session.pk), "--format", "openai", "-o", file]
    if preset is not None:
        # The preset by its name, as the API URL names it (its counter is the lab's).
        chosen = ["--preset", preset.name, "--project", session.agent.project.slug]
    else:
        chosen = ["--strategy", spec.name, *sets, "--counter", counter]
    trim_cmd = ["python", "manage.py", "trim", file, *chosen]
    return {
        "api_url": api,
        "messages_url": f"{api}&messages=1",
        "command": f"{shlex.join(export)} && {shlex.join(trim_cmd)}",
    }


# --- strategies compared row by row ----------------------------------------------------------------------------

SNIPPET = 90


@dataclass
class AlignedLine:
    """One line of the aligned compare as the page shows it: a message row (its role, a snippet, its tokens), an
    inserted row (the first column's inserted message), or a fold of identical rows."""

    item: Row | Fold
    role: str
    snippet: str
    tokens: int | None
    cells: list[tuple[Mark, str]]  # each column's mark with its label, "kept: within the last 3 messages"


def _snippet(message: Message) -> str:
    text = " ".join(content_text(message.content).split())
    if not text and message.tool_calls:
        text = ", ".join(f"→ {c.function.name}({c.function.arguments})" for c in message.tool_calls)
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def aligned_lines(messages: Sequence[Message], counts: Sequence[int], aligned: AlignedCompare) -> list[AlignedLine]:
    """The page's lines for one page of ``compare_aligned`` (agents/memory/compare.py). Over a stored list only the
    page's messages are read, in one batch."""
    lines: list[AlignedLine] = []
    prefetch = getattr(messages, "prefetch", None)
    if prefetch is not None:
        prefetch([x.index for x in aligned.items if not isinstance(x, Fold) and x.index is not None])
    for item in aligned.items:
        cells = [(m, f"{m.kind}: {m.reason}" if m.reason and m.reason != m.kind else m.kind) for m in item.marks]
        if isinstance(item, Fold):
            lines.append(AlignedLine(item, "", "", None, cells))
        elif item.index is None:
            body = next(m for m in item.inserted if m is not None)
            cells = [(m, f"inserted: {m.reason}" if m.kind else "nothing inserted here") for m in item.marks]
            lines.append(AlignedLine(item, body.role, _snippet(body), None, cells))
        else:
            message = messages[item.index]
            lines.append(AlignedLine(item, message.role, _snippet(message), counts[item.index], cells))
    return lines


