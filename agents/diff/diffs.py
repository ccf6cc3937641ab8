"""The diff page's logic: two stored sessions (two runs of one task), or a session against a trimmed view of it,
aligned by the core (``agents.memory.diff``), one page of the result as the template shows it, and the page itself
(``session_diff_page``).

A 10,000-message pair stays fast: the alignment is one pass over both sessions plus a search bounded by the edits;
identical runs are folded into one block each, the blocks are paged, and only the pairs on the page have their
differences computed and their texts cut to a bounded size.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.http import Http404

from agents import access, models
from agents.lab import presets
from agents.lab import trimming as lab_trimming
from agents.memory.diff import CallDiff, Fold, MessageDiff, PairDiff, Row, TextDiff, diff_messages, diff_trim
from agents.memory.schema import Message, ToolCall
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import FALSE_WORDS, STRATEGIES, TRUE_WORDS, StrategyError, StrategySpec, TrimResult
from agents.sessions import find
from agents.store import reading

# Blocks (a row, or a folded run of identical rows) per page, and rows shown when a fold is opened.
BLOCKS_PER_PAGE = 200
UNFOLD_ROWS = 300
# Text shown per side of a row: beyond it, the rest is cut (the message's own page has it whole).
TEXT_CHARS = 2_000
# Inside a changed text, identical stretches longer than twice this keep this much on each side of the change.
CONTEXT_CHARS = 160

Side = Literal["left", "right"]


@dataclass
class SessionDiff:
    """Two sessions aligned, or (``right`` None) a session against the trimmed view ``spec`` gives of it."""

    left: models.Session
    right: models.Session | None
    diff: MessageDiff
    spec: StrategySpec | None = None
    result: TrimResult | None = None

    @property
    def trimmed(self) -> bool:
        return self.right is None


def session_diff(*, left: models.Session, right: models.Session) -> SessionDiff:
    """Two sessions (both already scoped to the user) aligned message by message."""
    return SessionDiff(left, right, diff_messages(reading.session_messages(left), reading.session_messages(right)))


def session_diff_trimmed(*, session: models.Session, spec: StrategySpec, counter: str | None = None) -> SessionDiff:
    """The session against its trimmed view under ``spec``, with the counts stored at import (nothing recounted),
    or counted with ``counter`` (a preset's: ``presets.trim_counter``)."""
    trimmed = lab_trimming.session_trim(session=session, specs=[spec], counter=counter)
    result = trimmed.results[0]
    return SessionDiff(session, None, diff_trim(trimmed.messages, result), spec, result)


# --- one page as the template shows it -----------------------------------------------------------------------


@dataclass
class CallView:
    name: str
    call_id: str
    kind: str  # same | changed | removed | added
    arguments: list[tuple[str, str]]  # (css class: "" | "del" | "ins" | "elided", text)
    paths: list[str] = field(default_factory=list)  # where the arguments differ, e.g. "$.city"


@dataclass
class CellView:
    index: int
    href: str  # the message on its session page ("" for a message that exists only in a trimmed view)
    role: str
    name: str
    is_error: bool
    answers: str  # for a tool result: the name of the call it answers
    text: list[tuple[str, str]]
    reasoning: list[tuple[str, str]]
    calls: list[CallView]
    changed: frozenset[str] = frozenset()  # the fields that differ from the other side


@dataclass
class RowView:
    is_fold = False
    kind: str  # same | changed | left_only | right_only
    label: str  # what the kind means here: "only in A", "dropped", "edited", ...
    left: CellView | None
    right: CellView | None
    note: str
    fields: list[str]


@dataclass
class FoldView:
    is_fold = True
    count: int
    label: str  # "Show 12 identical messages", "Show 40 dropped messages"
    where: str  # "A #10–#21 · B #9–#20"
    note: str
    href: str  # opens the folded rows (``?rows=start-stop``)


@dataclass
class DiffPage:
    blocks: list[RowView | FoldView]
    page: Page | None  # None when showing an opened fold
    rows_from: int | None = None  # the opened fold's first row
    rows_to: int | None = None


LABELS = {
    False: {"same": "identical", "changed": "changed", "left_only": "only in A", "right_only": "only in B"},
    True: {"same": "kept", "changed": "edited", "left_only": "dropped", "right_only": "inserted"},
}


def diff_page(found: SessionDiff, *, query: str, page: str | None = None, rows: str | None = None) -> DiffPage:
    """Page ``page`` of the folded blocks, or with ``rows="start-stop"`` those rows unfolded (at most
    UNFOLD_ROWS of them; the rest of a longer run stays folded). ``query`` is the page's query string without
    its paging, for the links of folds."""
    diff = found.diff
    opened = _row_range(rows, len(diff.rows))
    if opened is not None:
        start, stop = opened
        cut = min(stop, start + UNFOLD_ROWS)
        blocks: list[Row | Fold] = list(diff.rows[start:cut])
        if cut < stop:
            rest = diff.rows[cut]
            blocks.append(Fold(rest.left, rest.right, stop - cut, cut, rest.kind, rest.note))
        return DiffPage([_block_view(found, b, query) for b in blocks], None, start, stop)
    shown = Paginator(diff.blocks(), BLOCKS_PER_PAGE).get_page(page)
    return DiffPage([_block_view(found, b, query) for b in shown.object_list], shown)


def _row_range(text: str | None, total: int) -> tuple[int, int] | None:
    start, sep, stop = (text or "").partition("-")
    try:
        first, last = int(start), int(stop)
    except ValueError:
        return None
    if not sep or not 0 <= first < last or first >= total:
        return None
    return first, min(last, total)


def _block_view(found: SessionDiff, block: Row | Fold, query: str) -> RowView | FoldView:
    if isinstance(block, Fold):
        rows = f"{block.start}-{block.start + block.size}"
        href = f"?{query}&rows={rows}" if query else f"?rows={rows}"
        return FoldView(block.size, _fold_label(found, block), _fold_where(block), block.note, href)
    diff = found.diff
    changes = diff.changes(block) if block.kind == "changed" else None
    fields = changes.fields if changes is not None else []
    return RowView(
        kind=block.kind,
        label=LABELS[found.trimmed][block.kind],
        left=None if block.left is None else _cell(found, "left", block.left, changes),
        right=None if block.right is None else _cell(found, "right", block.right, changes),
        note=block.note,
        fields=fields,
    )


def _fold_label(found: SessionDiff, fold: Fold) -> str:
    plural = "" if fold.size == 1 else "s"
    if fold.kind == "same":
        return f"Show {fold.size:,} identical message{plural}"
    if found.trimmed:
        return f"Show {fold.size:,} {LABELS[True][fold.kind]} message{plural}"
    return f"Show {fold.size:,} message{plural} {LABELS[False][fold.kind]}"


def _fold_where(fold: Fold) -> str:
    sides = [f"{name} #{first:,}–#{first + fold.size - 1:,}"
             for name, first in (("A", fold.left), ("B", fold.right)) if first is not None]
    return " · ".join(sides)


def _cell(found: SessionDiff, side: Side, index: int, changes: PairDiff | None) -> CellView:
    diff = found.diff
    message: Message = (diff.left if side == "left" else diff.right)[index]
    if found.trimmed and side == "right":
        source = found.result.input_index(index) if found.result is not None else None
        href = "" if source is None else find.permalink(found.left, source)
    else:
        href = find.permalink(found.left if side == "left" else found.right, index)  # type: ignore[arg-type]
    answers = diff.answers(side, index) or ""
    return CellView(
        index=index,
        href=href,
        role=message.role,
        name=message.name or "",
        is_error=bool(message.is_error),
        answers=answers,
        text=_pieces(changes.content if changes else None, message.text, side),
        reasoning=_pieces(changes.reasoning if changes else None, message.reasoning or "", side),
        calls=_calls(message.tool_calls, changes.calls if changes else (), side),
        changed=frozenset(changes.fields) if changes else frozenset(),
    )


def _pieces(text_diff: TextDiff | None, text: str, side: Side) -> list[tuple[str, str]]:
    """A side's text as (class, text) pieces: changed words marked, long identical stretches elided, the whole
    cut at TEXT_CHARS."""
    if text_diff is None:
        pieces = [("", text)] if text else []
    else:
        mark = "del" if side == "left" else "ins"
        pieces = _elide([(mark if changed else "", piece) for changed, piece in text_diff.side(side)])
    total = sum(len(piece) for css, piece in pieces if css != "elided")
    out: list[tuple[str, str]] = []
    room, shown = TEXT_CHARS, 0
    for css, piece in pieces:
        if room <= 0:
            break
        if css == "elided":
            out.append((css, piece))
            continue
        taken = piece[:room]
        out.append((css, taken))
        room -= len(taken)
        shown += len(taken)
    if shown < total:
        out.append(("elided", f" … {total - shown:,} more characters"))
    return out


def _elide(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    last = len(pieces) - 1
    for k, (css, text) in enumerate(pieces):
        if css or len(text) <= 2 * CONTEXT_CHARS + 40:
            out.append((css, text))
            continue
        head = text[:CONTEXT_CHARS] if k > 0 else ""
        tail = text[-CONTEXT_CHARS:] if k < last else ""
        hidden = len(text) - len(head) - len(tail)
        out.extend([("", head), ("elided", f" … {hidden:,} identical characters … "), ("", tail)])
    return [(css, text) for css, text in out if text]


def _calls(calls: list[ToolCall], diffs: tuple[CallDiff, ...], side: Side) -> list[CallView]:
    if not diffs:
        return [CallView(c.function.name, c.id, "same", [("", _pretty(c.function.arguments))]) for c in calls]
    out = []
    for d in diffs:
        position = d.left if side == "left" else d.right
        if position is None:
            continue
        call = calls[position]
        if d.arguments is None:
            arguments = [("", _pretty(call.function.arguments))]
        else:
            arguments = _pieces(d.arguments, "", side)
        out.append(CallView(call.function.name, call.id, d.kind, arguments, [p.path for p in d.paths]))
    return out


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False, sort_keys=True)
    except ValueError:
        return arguments


# --- the API's shape -----------------------------------------------------------------------------------------


def diff_dict(found: SessionDiff, *, start: int, stop: int, context: int, messages: bool) -> dict[str, Any]:
    """The JSON twin: the core's counts and the rows ``[start, stop)`` as blocks, with the trim's summary for a
    trimmed view and, with ``messages``, each row's messages (OpenAI format) beside their indices."""
    data = found.diff.to_dict(start=start, stop=stop, context=context)
    if messages:
        for block in data["blocks"]:
            if block["kind"] == "fold":
                continue
            if block["left"] is not None:
                block["left_message"] = found.diff.left[block["left"]].to_openai()
            if block["right"] is not None:
                block["right_message"] = found.diff.right[block["right"]].to_openai()
    if found.result is not None and found.spec is not None:
        data["trim"] = {
            "strategy": found.result.strategy,
            "params": found.result.params,
            "counter": found.result.counter,
            "tokens_before": found.result.tokens_before,
            "tokens_after": found.result.tokens_after,
            "notes": list(found.result.notes),
        }
    return data


# --- choosing what to compare --------------------------------------------------------------------------------

CANDIDATES = 30


def diff_candidates(*, user: access.User, session: models.Session) -> list[models.Session]:
    """Sessions to offer for "Compare with…": the same agent's other sessions, newest first (any session the user
    can see may be compared; these are the likely second runs)."""
    others = access.sessions_for_user(user).filter(agent=session.agent).exclude(pk=session.pk)
    return list(others.order_by("-started_at", "-pk")[:CANDIDATES])


# --- the diff page ------------------------------------------------------------------------------------------------


def session_diff_page(*, user: access.User, session_id: int, query: Any) -> dict[str, Any]:
    """The diff page's context: ``with=ID``, this session (A) against another (B); ``trim=SPEC``, against its
    trimmed view (``trim=preset:NAME``: a preset of the session's project; ``counter=``: what the trimmed view counts
    with, the lab's when it counts again, else the preset's or the session's stored counts), one page of rows
    (``page``, ``rows``). Without either, or with a wrong one, no ``found``: the page offers the choices (an invalid
    ``trim=`` is shown on the form)."""
    session = access.session_for_user(user, session_id)
    other, spec_text = query.get("with", "").strip(), query.get("trim", "").strip()
    counter = query.get("counter", "").strip() if spec_text else ""
    context: dict[str, Any] = {"session": session, "with": other, "trim": spec_text, "strategies": STRATEGIES}
    found = None
    try:
        if other:
            found = session_diff(left=session, right=access.session_for_user(user, _session_id(other)))
        elif spec_text:
            spec, preset = presets.spec_or_preset(user=None, text=spec_text, project=session.agent.project)
            if counter and counter not in COUNTERS:
                raise StrategyError(f"counter: unknown counter '{counter}'; valid: {', '.join(sorted(COUNTERS))}")
            found = session_diff_trimmed(session=session, spec=spec,
                                         counter=presets.trim_counter(preset, counter or None))
    except (StrategyError, presets.PresetError) as exc:
        context["error"] = f"trim={spec_text}: {exc}"
    if found is None:
        context["candidates"] = diff_candidates(user=user, session=session)
        return context
    kept = urlencode({"with": other} if other else {"trim": spec_text, **({"counter": counter} if counter else {})})
    page = diff_page(found, query=kept, page=query.get("page"), rows=query.get("rows"))
    context.update(found=found, page=page, query=kept, counts=found.diff.counts(), labels=LABELS[found.trimmed])
    return context


def _session_id(text: str) -> int:
    if not text.isdigit():
        raise Http404(f"with={text}: no such session")
    return int(text)


# --- the API's diff ----------------------------------------------------------------------------------------------

# Rows of a diff per answer by default, and at most.
DIFF_ROWS = 500
MAX_DIFF_ROWS = 5000


def session_diff_answer(*, user: access.User, session_id: int, other: str | int, query: Any) -> tuple[SessionDiff,
                                                                                                      dict[str, Any]]:
    """The diff the API answers: the session (left, 404 outside the user's projects) against ``other`` (a session
    id) or, with ``trim=SPEC`` in ``query``, against its trimmed view (``trim=preset:NAME``: a preset of the
    session's project); the rows ``start`` to ``start + limit`` as ``diff_dict`` gives them. ValueError names a
    wrong parameter."""
    session = access.session_for_user(user, session_id)
    spec_text = query.get("trim", "").strip()
    numbers: dict[str, int] = {}
    for key, default, top in (("start", 0, None), ("limit", DIFF_ROWS, MAX_DIFF_ROWS), ("context", 1, 50)):
        text = query.get(key, str(default))
        if not text.isdigit() or (top is not None and int(text) > top):
            raise ValueError(f"{key}={text}: expected a whole number{f' up to {top}' if top else ''}")
        numbers[key] = int(text)
    with_messages = query.get("messages", "0").strip().lower()
    if with_messages not in TRUE_WORDS | FALSE_WORDS | {""}:
        raise ValueError(f"messages={with_messages}: expected 1 or 0")
    if other == "" and not spec_text:
        raise ValueError("say what to compare with: /diff/{id}/, ?with=ID or ?trim=name:key=value")
    if other != "":
        if not str(other).isdigit():
            raise ValueError(f"with={other}: expected a session id")
        found = session_diff(left=session, right=access.session_for_user(user, int(other)))
    else:
        try:
            # trim=preset:NAME: a preset of the session's project.
            spec, preset = presets.spec_or_preset(user=None, text=spec_text, project=session.agent.project)
            found = session_diff_trimmed(session=session, spec=spec, counter=presets.trim_counter(preset))
        except (StrategyError, presets.PresetError) as exc:
            raise ValueError(f"trim: {exc}") from None
    start = numbers["start"]
    return found, diff_dict(found, start=start, stop=start + numbers["limit"], context=numbers["context"],
                            messages=with_messages in TRUE_WORDS)
