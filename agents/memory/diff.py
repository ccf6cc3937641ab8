"""Diff two message lists message by message: two runs of one task, or a session and a trimmed view of it.

Two runs of one task never share tool call ids or timestamps, so messages are aligned on what they say: role,
sender name, content (whitespace-normalised), the calls they make (names and arguments compared as JSON), and for a
tool result the name of the call it answers (looked up through the ids of its own list) and whether it is an error.

The alignment survives insertions and deletions. ``align`` matches equal keys in three steps: the common prefix
and suffix; then, as patience diff does, keys that occur once on each side as anchors (the longest increasing run of
them), recursing between anchors; and where a stretch has no such anchor, Myers' O(ND) diff, which is minimal. A
whole call shares one work budget: past it, a stretch is matched greedily within a small look-ahead, so two long
and entirely different sessions cost O(n) there instead of O(n*m). Messages left unmatched between two matches are
then paired by role (a system prompt against a developer one), so that an answer reworded in the other run shows
as one changed pair with its words highlighted, not as a deletion and an insertion.

Every alignment is computed in one canonical orientation (the smaller key sequence on the left) and mirrored when
the caller's sides are the other way round, so swapping the sides mirrors the result exactly.

Differences are computed per pair on demand (``MessageDiff.changes``): a page shows a window of a 10,000-message
diff and pays only for the pairs it shows.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from agents.memory.chain import _gc_paused
from agents.memory.schema import SYSTEM_ROLES, Message, ToolCall, content_text

if TYPE_CHECKING:
    from agents.memory.trimming.registry import TrimResult

# ---------------------------------------------------------------------------------------------------------------
# Aligning two sequences of keys

# Steps of Myers' search (diagonals visited plus matches followed) allowed per ``align`` call before the rest is
# matched greedily: a few tenths of a second of Python; two runs of one task, split by their anchors into short
# stretches, need far less.
DEFAULT_BUDGET = 250_000
# How far the greedy fallback looks ahead on each side for the next match.
_LOOKAHEAD = 8


class Budget:
    """Steps of Myers' search one diff may spend: shared by every ``align`` of it (a message list and the
    lists inside it, or a whole snapshot)."""

    __slots__ = ("left", "total", "exhausted")

    def __init__(self, steps: int) -> None:
        self.left = self.total = steps
        self.exhausted = False  # some stretch was matched greedily: the alignment may not be the best one

    @property
    def spent(self) -> int:
        return min(self.total, self.total - self.left)


def align(
    a: Sequence[Hashable], b: Sequence[Hashable], *, budget: int | Budget = DEFAULT_BUDGET
) -> list[tuple[int, int]]:
    """The matched index pairs ``(i, j)`` with ``a[i] == b[j]``, increasing on both sides.

    Keys must be comparable with each other (strings, or ints): the orientation is chosen by comparing the two
    sequences, so ``align(b, a)`` is exactly ``align(a, b)`` with each pair swapped. A ``Budget`` passed in is
    shared with the caller's other alignments."""
    spend = budget if isinstance(budget, Budget) else Budget(budget)
    if list(a) > list(b):
        return [(i, j) for j, i in _align(b, a, spend)]
    return _align(a, b, spend)


def _align(a: Sequence[Hashable], b: Sequence[Hashable], budget: Budget) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a_lo, a_hi, b_lo, b_hi = stack.pop()
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            pairs.append((a_lo, b_lo))
            a_lo += 1
            b_lo += 1
        while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
            a_hi -= 1
            b_hi -= 1
            pairs.append((a_hi, b_hi))
        if a_lo == a_hi or b_lo == b_hi:
            continue
        anchors = _unique_anchors(a, b, a_lo, a_hi, b_lo, b_hi)
        if anchors:
            prev_i, prev_j = a_lo, b_lo
            for i, j in anchors:
                pairs.append((i, j))
                stack.append((prev_i, i, prev_j, j))
                prev_i, prev_j = i + 1, j + 1
            stack.append((prev_i, a_hi, prev_j, b_hi))
            continue
        found = _myers(a, b, a_lo, a_hi, b_lo, b_hi, budget)
        pairs.extend(found if found is not None else _greedy(a, b, a_lo, a_hi, b_lo, b_hi))
    pairs.sort()
    return pairs


def _unique_anchors(
    a: Sequence[Hashable], b: Sequence[Hashable], a_lo: int, a_hi: int, b_lo: int, b_hi: int
) -> list[tuple[int, int]]:
    """Keys that occur once in each stretch, as pairs; the longest run of them increasing on both sides."""
    count_a = Counter(a[a_lo:a_hi])
    count_b = Counter(b[b_lo:b_hi])
    where_b = {b[j]: j for j in range(b_lo, b_hi) if count_b[b[j]] == 1}
    candidates = [(i, where_b[a[i]]) for i in range(a_lo, a_hi) if count_a[a[i]] == 1 and a[i] in where_b]
    if not candidates:
        return []
    # Longest increasing subsequence of the b positions (patience sorting), O(k log k).
    tails: list[int] = []  # the smallest last b position of an increasing run of each length
    tail_at: list[int] = []  # index into candidates of that last element
    back: list[int] = []  # for each candidate, the previous one in its run
    for c, (_, j) in enumerate(candidates):
        k = bisect_left(tails, j)
        back.append(tail_at[k - 1] if k else -1)
        if k == len(tails):
            tails.append(j)
            tail_at.append(c)
        else:
            tails[k] = j
            tail_at[k] = c
    out: list[tuple[int, int]] = []
    c = tail_at[-1]
    while c >= 0:
        out.append(candidates[c])
        c = back[c]
    out.reverse()
    return out


def _myers(
    a: Sequence[Hashable], b: Sequence[Hashable], a_lo: int, a_hi: int, b_lo: int, b_hi: int, budget: Budget
) -> list[tuple[int, int]] | None:
    """Myers' greedy O((n+m)D) diff of the stretches: the pairs of a longest common subsequence, or None when the
    search would exceed the budget (the budget is spent either way)."""
    n, m = a_hi - a_lo, b_hi - b_lo
    if (n - m) * (n - m) // 2 > budget.left:  # it takes at least |n - m| edits, so about (n - m)**2 / 2 steps
        budget.exhausted = True
        return None
    offset = n + m + 1
    v = [0] * (2 * offset + 1)
    trace: list[list[int]] = []  # trace[d][k + d]: the furthest x on diagonal k after d edits
    for d in range(n + m + 1):
        budget.left -= d + 1
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[a_lo + x] == b[b_lo + y]:
                x += 1
                y += 1
            budget.left -= x - start
            v[offset + k] = x
            if x >= n and y >= m:
                trace.append(v[offset - d : offset + d + 1])
                return _myers_pairs(trace, n, m, a_lo, b_lo)
        if budget.left < 0:
            budget.exhausted = True
            return None
        trace.append(v[offset - d : offset + d + 1])
    raise AssertionError("unreachable: n + m edits always reach the end")


def _myers_pairs(trace: list[list[int]], n: int, m: int, a_lo: int, b_lo: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        prev = trace[d - 1]  # covers k in [-(d - 1), d - 1]
        k = x - y
        if k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1]):
            prev_k = k + 1  # came down: an element of b inserted
        else:
            prev_k = k - 1  # came right: an element of a deleted
        prev_x = prev[prev_k + d - 1]
        prev_y = prev_x - prev_k
        mid_x, mid_y = (prev_x, prev_y + 1) if prev_k == k + 1 else (prev_x + 1, prev_y)
        while x > mid_x and y > mid_y:
            x -= 1
            y -= 1
            pairs.append((a_lo + x, b_lo + y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((a_lo + x, b_lo + y))
    pairs.reverse()
    return pairs


def _greedy(
    a: Sequence[Hashable], b: Sequence[Hashable], a_lo: int, a_hi: int, b_lo: int, b_hi: int
) -> list[tuple[int, int]]:
    """Match in one pass: equal keys pair; otherwise the nearest match within a few steps on either side."""
    pairs: list[tuple[int, int]] = []
    i, j = a_lo, b_lo
    while i < a_hi and j < b_hi:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
            continue
        best: tuple[int, int, int] | None = None  # (steps skipped, i, j)
        for step in range(1, _LOOKAHEAD + 1):
            for di in range(step + 1):
                ii, jj = i + di, j + step - di
                if ii < a_hi and jj < b_hi and a[ii] == b[jj]:
                    best = (step, ii, jj)
                    break
            if best:
                break
        if best is None:
            i += 1
            j += 1
        else:
            _, i, j = best
    return pairs


# ---------------------------------------------------------------------------------------------------------------
# Text and JSON differences

Op = Literal["=", "-", "+"]
_WORDS = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class TextDiff:
    """A word-level diff: segments ``("=", text)`` on both sides, ``("-", text)`` only on the left, ``("+", text)``
    only on the right. Joining the ``=`` and ``-`` segments gives the left text back; ``=`` and ``+`` the right."""

    segments: tuple[tuple[Op, str], ...]

    def side(self, side: Literal["left", "right"]) -> list[tuple[bool, str]]:
        """That side's text as ``(changed, text)`` pieces, for highlighting."""
        own = "-" if side == "left" else "+"
        return [(op == own, text) for op, text in self.segments if op in ("=", own)]

    @property
    def left(self) -> str:
        return "".join(text for op, text in self.segments if op != "+")

    @property
    def right(self) -> str:
        return "".join(text for op, text in self.segments if op != "-")

    def to_list(self) -> list[list[str]]:
        return [[op, text] for op, text in self.segments]


def diff_text(left: str, right: str, *, budget: int = DEFAULT_BUDGET) -> TextDiff:
    """Word-level diff of two texts (words, runs of whitespace and single punctuation marks are the units)."""
    a, b = _WORDS.findall(left), _WORDS.findall(right)
    segments: list[tuple[Op, str]] = []

    def put(op: Op, text: str) -> None:
        if segments and segments[-1][0] == op:
            segments[-1] = (op, segments[-1][1] + text)
        else:
            segments.append((op, text))

    i = j = 0
    for pi, pj in [*align(a, b, budget=budget), (len(a), len(b))]:
        if i < pi:
            put("-", "".join(a[i:pi]))
        if j < pj:
            put("+", "".join(b[j:pj]))
        if pi < len(a):
            put("=", a[pi])
        i, j = pi + 1, pj + 1
    return TextDiff(tuple(segments))


class PathChange(NamedTuple):
    path: str  # "$", "$.city", "$.items[2]", '$["a key"]'
    op: Literal["changed", "added", "removed"]
    left: Any
    right: Any

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "op": self.op}
        if self.op != "added":
            out["left"] = self.left
        if self.op != "removed":
            out["right"] = self.right
        return out


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MISSING = object()


def key_path(path: str, key: str) -> str:
    """The path of ``key`` in the object at ``path``: ``$.city``, or ``$["a key"]`` where the key is no
    identifier (the key's JSON string)."""
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def index_path(path: str, index: int) -> str:
    """The path of item ``index`` of the array at ``path``: ``$.items[2]``."""
    return f"{path}[{index}]"


_NAME_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX_AT = re.compile(r"[0-9]+")


def path_parts(path: str) -> list[str | int]:
    """A path as ``key_path`` and ``index_path`` write it, read back: its keys (str) and indices (int) from the
    root. ``ValueError`` for anything else."""
    if not path.startswith("$"):
        raise ValueError(f"not a path: {path[:80]!r}")
    parts: list[str | int] = []
    k = 1
    while k < len(path):
        if path[k] == ".":
            found = _NAME_AT.match(path, k + 1)
            if found is None:
                raise ValueError(f"no key after '.' at {k} in {path[:80]!r}")
            parts.append(found.group())
            k = found.end()
            continue
        if path[k] != "[":
            raise ValueError(f"expected '.' or '[' at {k} in {path[:80]!r}")
        if path.startswith('"', k + 1):
            try:
                key, end = _DECODER.raw_decode(path, k + 1)
            except ValueError:
                raise ValueError(f"a key that is not a JSON string at {k} in {path[:80]!r}") from None
            parts.append(key)
        else:
            found = _INDEX_AT.match(path, k + 1)
            if found is None:
                raise ValueError(f"no index or key after '[' at {k} in {path[:80]!r}")
            parts.append(int(found.group()))
            end = found.end()
        if not path.startswith("]", end):
            raise ValueError(f"expected ']' at {end} in {path[:80]!r}")
        k = end + 1
    return parts


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_canonical_json = _CANONICAL.encode


def json_changes(left: Any, right: Any, path: str = "$") -> list[PathChange]:
    """Where two parsed JSON values differ, path by path. Object keys are compared by name (order does not
    matter); arrays of the same length position by position, otherwise aligned on their items, so that one item
    inserted shows as one ``added`` path and not as every later item changed."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[PathChange] = []
        for key in sorted(left.keys() | right.keys()):
            lv, rv = left.get(key, _MISSING), right.get(key, _MISSING)
            if lv is _MISSING:
                out.append(PathChange(key_path(path, key), "added", None, rv))
            elif rv is _MISSING:
                out.append(PathChange(key_path(path, key), "removed", lv, None))
            else:
                out.extend(json_changes(lv, rv, key_path(path, key)))
        return out
    if isinstance(left, list) and isinstance(right, list):
        if len(left) == len(right):
            pairs = enumerate(zip(left, right, strict=True))
            return [c for k, (lv, rv) in pairs for c in json_changes(lv, rv, index_path(path, k))]
        matched = align([_canonical_json(x) for x in left], [_canonical_json(x) for x in right])
        out = []
        i = j = 0
        for pi, pj in [*matched, (len(left), len(right))]:
            gap_left, gap_right = list(range(i, pi)), list(range(j, pj))
            # Within a gap, items at the same place are changed in place; the rest are removed or added.
            for k in range(max(len(gap_left), len(gap_right))):
                if k < len(gap_left) and k < len(gap_right):
                    out.extend(json_changes(left[gap_left[k]], right[gap_right[k]], index_path(path, gap_left[k])))
                elif k < len(gap_left):
                    out.append(PathChange(index_path(path, gap_left[k]), "removed", left[gap_left[k]], None))
                else:
                    out.append(PathChange(index_path(path, gap_right[k]), "added", None, right[gap_right[k]]))
            i, j = pi + 1, pj + 1
        return out
    # Scalars, or two values of different kinds. 1 and 1.0 are the same JSON number; True is not 1.
    if (type(left) is type(right) or (_is_number(left) and _is_number(right))) and left == right:
        return []
    return [PathChange(path, "changed", left, right)]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_DECODER = json.JSONDecoder()


def _parse_arguments(arguments: str) -> tuple[bool, Any]:
    try:
        return True, _DECODER.decode(arguments)
    except ValueError:
        return False, None


def _pretty_arguments(arguments: str) -> str:
    ok, value = _parse_arguments(arguments)
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) if ok else arguments


# ---------------------------------------------------------------------------------------------------------------
# What one message says, for alignment and equality


def _canonical_arguments(arguments: str) -> str:
    ok, value = _parse_arguments(arguments)
    return _canonical_json(value) if ok else arguments


def _attachments(message: Message) -> tuple[str, ...]:
    """The content parts that are not text (images, files, audio), as canonical JSON."""
    if not isinstance(message.content, list):
        return ()
    return tuple(
        _canonical_json(part)
        for part in message.content
        if not (isinstance(part, dict) and isinstance(part.get("text"), str))
    )


class _Said(NamedTuple):
    key: str  # what alignment matches on
    detail: tuple[Any, ...]  # what "identical" compares
    role_class: str  # what unmatched messages are paired on
    answers: str | None  # for a tool result: the name of the call it answers (None: no such call in its list)


def _call_names(messages: Sequence[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for call in m.tool_calls:
            names.setdefault(call.id, call.function.name)
    return names


def _said(messages: Sequence[Message], names: dict[str, str] | None = None) -> list[_Said]:
    """``names``: call id -> name to resolve tool results with (default: the calls of ``messages`` itself)."""
    names = _call_names(messages) if names is None else names
    canonical: dict[str, str] = {}  # arguments as written -> canonical JSON (agents repeat the same calls)
    out: list[_Said] = []
    append = out.append
    for m in messages:
        content = m.content
        attachments: tuple[str, ...] = ()
        if isinstance(content, str):
            text = content
        else:
            text, attachments = content_text(content), _attachments(m)
        calls: tuple[tuple[str, str], ...] = ()
        if m.tool_calls:
            listed = []
            for c in m.tool_calls:
                raw = c.function.arguments
                args = canonical.get(raw)
                if args is None:
                    args = canonical[raw] = _canonical_arguments(raw)
                listed.append((c.function.name, args))
            calls = tuple(listed)
        role = m.role
        answers = names.get(m.tool_call_id) if role == "tool" and m.tool_call_id else None
        key = "\x1f".join((
            role,
            m.name or "",
            " ".join(text.split()),
            "\x1e".join(attachments),
            "\x1e".join([f"{name}\x1d{args}" for name, args in calls]) if calls else "",
            answers or "",
            "error" if m.is_error else "",
        ))
        detail = (role, m.name or None, text, attachments, calls, answers, bool(m.is_error), m.reasoning or None)
        append(_Said(key, detail, "system" if role in SYSTEM_ROLES else role, answers))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Differences of one pair


@dataclass(frozen=True)
class CallDiff:
    """One tool call of a pair of assistant messages: paired by name and position, never by id."""

    left: int | None  # its position in the left message's tool_calls (None: only on the right)
    right: int | None
    name_left: str | None
    name_right: str | None
    arguments: TextDiff | None = None  # word diff of the pretty-printed arguments, when they differ
    paths: tuple[PathChange, ...] = ()  # where the arguments differ, when both are JSON

    @property
    def kind(self) -> str:
        if self.left is None:
            return "added"
        if self.right is None:
            return "removed"
        return "changed" if self.arguments is not None or self.name_left != self.name_right else "same"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "left": self.left, "right": self.right}
        out["name"] = self.name_left if self.name_left == self.name_right else [self.name_left, self.name_right]
        if self.arguments is not None:
            out["arguments"] = self.arguments.to_list()
            out["paths"] = [p.to_dict() for p in self.paths]
        return out


@dataclass(frozen=True)
class PairDiff:
    """How the two messages of an aligned pair differ; a field is None (calls: empty) where they agree."""

    role: tuple[str, str] | None = None
    name: tuple[str | None, str | None] | None = None
    content: TextDiff | None = None
    attachments: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    reasoning: TextDiff | None = None
    is_error: tuple[bool, bool] | None = None
    answers: tuple[str | None, str | None] | None = None  # the name of the call a tool result answers
    calls: tuple[CallDiff, ...] = ()  # every call of both messages, aligned, when any of them differs

    @property
    def fields(self) -> list[str]:
        """The names of the fields that differ."""
        names = ["role", "name", "content", "attachments", "reasoning", "is_error", "answers"]
        out = [f for f in names if getattr(self, f) is not None]
        if self.calls:
            out.append("tool_calls")
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in ("role", "name", "is_error", "answers"):
            value = getattr(self, f)
            if value is not None:
                out[f] = {"left": value[0], "right": value[1]}
        for f in ("content", "reasoning"):
            value = getattr(self, f)
            if value is not None:
                out[f] = value.to_list()
        if self.attachments is not None:
            out["attachments"] = {
                "left": [json.loads(x) for x in self.attachments[0]],
                "right": [json.loads(x) for x in self.attachments[1]],
            }
        if self.calls:
            out["tool_calls"] = [c.to_dict() for c in self.calls]
        return out


def _diff_calls(left: Sequence[ToolCall], right: Sequence[ToolCall]) -> tuple[CallDiff, ...]:
    matched = align([c.function.name for c in left], [c.function.name for c in right])
    out: list[CallDiff] = []
    i = j = 0
    for pi, pj in [*matched, (len(left), len(right))]:
        out.extend(CallDiff(k, None, left[k].function.name, None) for k in range(i, pi))
        out.extend(CallDiff(None, k, None, right[k].function.name) for k in range(j, pj))
        if pi < len(left):
            out.append(_diff_call(pi, left[pi], pj, right[pj]))
        i, j = pi + 1, pj + 1
    if all(c.kind == "same" for c in out):
        return ()
    return tuple(out)


def _diff_call(i: int, left: ToolCall, j: int, right: ToolCall) -> CallDiff:
    la, ra = left.function.arguments, right.function.arguments
    l_ok, l_value = _parse_arguments(la)
    r_ok, r_value = _parse_arguments(ra)
    if l_ok and r_ok:
        paths = tuple(json_changes(l_value, r_value))
        arguments = diff_text(_pretty_arguments(la), _pretty_arguments(ra)) if paths else None
    else:
        paths = ()
        arguments = diff_text(la, ra) if la != ra else None
    return CallDiff(i, j, left.function.name, right.function.name, arguments, paths)


def _diff_pair(left: Message, right: Message, ls: _Said, rs: _Said) -> PairDiff:
    changes: dict[str, Any] = {}
    if left.role != right.role:
        changes["role"] = (left.role, right.role)
    if (left.name or None) != (right.name or None):
        changes["name"] = (left.name or None, right.name or None)
    lt, rt = ls.detail[2], rs.detail[2]
    if lt != rt:
        changes["content"] = diff_text(lt, rt)
    if ls.detail[3] != rs.detail[3]:
        changes["attachments"] = (ls.detail[3], rs.detail[3])
    if (left.reasoning or "") != (right.reasoning or ""):
        changes["reasoning"] = diff_text(left.reasoning or "", right.reasoning or "")
    if bool(left.is_error) != bool(right.is_error):
        changes["is_error"] = (bool(left.is_error), bool(right.is_error))
    if (left.role == "tool" or right.role == "tool") and ls.answers != rs.answers:
        changes["answers"] = (ls.answers, rs.answers)
    if ls.detail[4] != rs.detail[4]:
        changes["calls"] = _diff_calls(left.tool_calls, right.tool_calls)
    return PairDiff(**changes)


# ---------------------------------------------------------------------------------------------------------------
# The result

RowKind = Literal["same", "changed", "left_only", "right_only"]


class Row(NamedTuple):
    """One row of a diff: a pair of messages, or a message on one side only. ``note`` says why, for a trimmed
    view (the strategy's reason for keeping, dropping, inserting or editing)."""

    kind: RowKind
    left: int | None  # index in the left list
    right: int | None  # index in the right list
    note: str = ""


class Fold(NamedTuple):
    """A run of rows shown as a count: identical pairs (``left[left:left+size] == right[right:right+size]``), or
    messages on one side only for one reason (a long run a trim dropped, a stretch only one run has)."""

    left: int | None  # the first row's index on each side (None: the run is on the other side only)
    right: int | None
    size: int  # how many rows (``count`` would shadow the tuple method)
    start: int  # index of its first row in ``MessageDiff.rows``
    kind: RowKind = "same"  # what the folded rows are: same, left_only or right_only
    note: str = ""  # their common note (one-sided runs are folded per reason)


@dataclass
class MessageDiff:
    """Two message lists aligned: ``rows`` in order, each index of each side in exactly one row."""

    left: Sequence[Message]
    right: Sequence[Message]
    rows: list[Row]
    steps: int = 0  # steps of Myers' search spent (the work beyond one pass over both lists)
    exact: bool = True  # False: the sessions differed too much for the budget, some stretch was matched greedily
    _said_left: list[_Said] = field(repr=False, default_factory=list)
    _said_right: list[_Said] = field(repr=False, default_factory=list)
    _changes: dict[int, PairDiff] = field(repr=False, default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {"same": 0, "changed": 0, "left_only": 0, "right_only": 0}
        for row in self.rows:
            out[row.kind] += 1
        return out

    @property
    def identical(self) -> bool:
        return all(row.kind == "same" for row in self.rows)

    def answers(self, side: Literal["left", "right"], index: int) -> str | None:
        """For a tool result: the name of the call it answers, resolved through its own list's call ids (for a
        trimmed view, through the input's)."""
        return (self._said_left if side == "left" else self._said_right)[index].answers

    def changes(self, row: Row) -> PairDiff | None:
        """How the pair differs (None for a one-sided row; an empty PairDiff for a same row)."""
        if row.left is None or row.right is None:
            return None
        if row.kind == "same":
            return PairDiff()
        found = self._changes.get(row.left)
        if found is None:
            found = _diff_pair(
                self.left[row.left], self.right[row.right], self._said_left[row.left], self._said_right[row.right]
            )
            self._changes[row.left] = found
        return found

    def blocks(self, *, context: int = 1, min_fold: int = 3, start: int = 0, stop: int | None = None
               ) -> list[Row | Fold]:
        """``rows[start:stop]`` with every run longer than ``min_fold`` of identical pairs, or of one-sided rows
        of one side with one note, folded; ``context`` rows of a run stay next to whatever differs (a run at
        either end of the window keeps them on its inner side only). Changed pairs are never folded."""
        rows = self.rows
        stop = len(rows) if stop is None else min(stop, len(rows))
        out: list[Row | Fold] = []
        k = start
        while k < stop:
            kind, note = rows[k].kind, rows[k].note
            if kind == "changed":
                out.append(rows[k])
                k += 1
                continue
            end = k + 1
            if kind == "same":
                while end < stop and rows[end].kind == "same":
                    end += 1
            else:
                while end < stop and rows[end].kind == kind and rows[end].note == note:
                    end += 1
            head = context if k > start else 0
            tail = context if end < stop else 0
            if end - k - head - tail >= min_fold:
                out.extend(rows[k : k + head])
                first = rows[k + head]
                folded = end - k - head - tail
                out.append(Fold(first.left, first.right, folded, k + head, kind, "" if kind == "same" else note))
                out.extend(rows[end - tail : end])
            else:
                out.extend(rows[k:end])
            k = end
        return out

    def row_dict(self, row: Row) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": row.kind, "left": row.left, "right": row.right}
        if row.note:
            out["note"] = row.note
        if row.kind == "changed":
            out["changes"] = self.changes(row).to_dict()  # type: ignore[union-attr]
        return out

    def to_dict(self, *, start: int = 0, stop: int | None = None, context: int = 1) -> dict[str, Any]:
        """The JSON of the API: counts, then ``rows[start:stop]`` as blocks, folded runs as
        ``{"kind": "fold", "of": "same" | "left_only" | "right_only", "left", "right", "count", "note"?}``."""
        blocks: list[dict[str, Any]] = []
        for block in self.blocks(context=context, start=start, stop=stop):
            if isinstance(block, Fold):
                fold = {"kind": "fold", "of": block.kind, "left": block.left, "right": block.right,
                        "count": block.size}
                if block.note:
                    fold["note"] = block.note
                blocks.append(fold)
            else:
                blocks.append(self.row_dict(block))
        return {
            "left_messages": len(self.left),
            "right_messages": len(self.right),
            "counts": self.counts(),
            "rows": len(self.rows),
            "exact": self.exact,
            "start": start,
            "stop": len(self.rows) if stop is None else min(stop, len(self.rows)),
            "blocks": blocks,
        }


def diff_messages(left: Sequence[Message], right: Sequence[Message], *, budget: int = DEFAULT_BUDGET) -> MessageDiff:
    """Align two message lists (two runs of one task) and say, pair by pair, whether they are identical.
    ``budget`` bounds Myers' search over the whole call (both the alignment and the pairing by role)."""
    spend = Budget(budget)
    with _gc_paused():
        said_left, said_right = _said(left), _said(right)
        matched = align([s.key for s in said_left], [s.key for s in said_right], budget=spend)
        rows: list[Row] = []
        i = j = 0
        for pi, pj in [*matched, (len(left), len(right))]:
            if i < pi or j < pj:
                rows.extend(_gap_rows(said_left, said_right, i, pi, j, pj, spend))
            if pi < len(left):
                same = said_left[pi].detail == said_right[pj].detail
                rows.append(Row("same" if same else "changed", pi, pj))
            i, j = pi + 1, pj + 1
    return MessageDiff(left, right, rows, spend.spent, not spend.exhausted, said_left, said_right)


def _gap_rows(
    said_left: list[_Said], said_right: list[_Said], a_lo: int, a_hi: int, b_lo: int, b_hi: int, budget: Budget
) -> Iterator[Row]:
    """Messages between two matches: paired by role where the roles line up, the rest one-sided."""
    pairs = align(
        [s.role_class for s in said_left[a_lo:a_hi]], [s.role_class for s in said_right[b_lo:b_hi]], budget=budget
    ) if a_lo < a_hi and b_lo < b_hi else []
    i, j = a_lo, b_lo
    for pi, pj in [*((a_lo + x, b_lo + y) for x, y in pairs), (a_hi, b_hi)]:
        yield from (Row("left_only", k, None) for k in range(i, pi))
        yield from (Row("right_only", None, k) for k in range(j, pj))
        if pi < a_hi:
            same = said_left[pi].detail == said_right[pj].detail
            yield Row("same" if same else "changed", pi, pj)
        i, j = pi + 1, pj + 1


def diff_trim(messages: Sequence[Message], result: TrimResult) -> MessageDiff:
    """A session (left) against a trimmed view of it (right, ``result.messages``): no alignment to guess, the
    result says where each trimmed message came from. A kept message is ``same``, or ``changed`` where it goes out
    different (stripped thoughts, a cleared result: what ``result.edited`` lists, compared field by field); a
    dropped one is ``left_only``; an inserted placeholder or summary ``right_only``. Each row's note is the
    strategy's reason (for an edit, what it changed)."""
    with _gc_paused():
        # A kept result whose call was dropped still answers that call: resolve both sides with the input's calls,
        # so that a trim shows as an edit only where the strategy changed the message itself.
        names = _call_names(messages)
        said_left = _said(messages, names)
        said_right = _said(result.messages, {**_call_names(result.messages), **names})
        dropped = {d.index: d.reason for d in result.dropped}
        inserted = {x.position: x.reason for x in result.inserted}
        edits = {e.index: e.reason for e in result.edited}
        rows: list[Row] = []
        next_input = 0
        for position, source in enumerate(result.sources):
            if source is None:
                rows.append(Row("right_only", None, position, inserted.get(position, "inserted")))
                continue
            while next_input < source:
                rows.append(Row("left_only", next_input, None, dropped.get(next_input, "dropped")))
                next_input += 1
            same = said_left[source].detail == said_right[position].detail
            reason = edits.get(source) or result.kept_reasons.get(source, "kept")
            rows.append(Row("same" if same else "changed", source, position, reason))
            next_input = max(next_input, source + 1)
        while next_input < len(messages):
            rows.append(Row("left_only", next_input, None, dropped.get(next_input, "dropped")))
            next_input += 1
    return MessageDiff(messages, result.messages, rows, 0, True, said_left, said_right)
