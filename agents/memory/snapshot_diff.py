"""The structural diff of two snapshots: what was added, removed and changed, by path, message lists by message.

A snapshot's value is the agent's whole state as the library keeps it (AgentScope's ``state_dict``, a decoded
LangGraph checkpoint or ``get_state_history`` entry, a Letta agent entry, AutoGen's ``save_state``): plain JSON. Two of
them differ by paths, written as ``diff.json_changes`` writes them (``$.memory.content[3]``, ``$["a key"]``):

- objects by key: a key on one side only is ``added`` or ``removed`` whole; a key on both is compared inside;
- ordinary arrays as ``json_changes`` compares them: item by item when their lengths agree, otherwise aligned on the
  items' canonical JSON, so that one item inserted is one ``added`` (unmatched items between two matches are paired
  by position, the rest added or removed);
- **message lists by message**: an array whose every item is a message of a shape the readers meet (OpenAI, Letta
  and AgentScope dicts with a ``role``; AgentScope's ``[msg, marks]`` pairs; LangChain's ``model_dump`` with its
  ``type``, ``messages_to_dict``'s ``{"type", "data"}``, its ``lc`` constructor, LangGraph's decoded
  ``{"__type__": "langchain_core.messages.ai.AIMessage", ...}``; AutoGen's ``{"type": "UserMessage", ...}``) is
  aligned with ``diff.align`` on each message's id where it has one (LangChain's and AgentScope's ``id``), else on its
  role and content (and calls); messages left between two matches are paired by role when neither has an id (an
  answer reworded), as ``diff.diff_messages`` pairs them. A message inserted at the head is one ``added`` change, not
  a change at every index. Each change inside a message list says which: ``message_list`` (the list's path),
  ``message`` (its index there: on the right side, or on the left for a removed one), ``left_index`` and
  ``right_index``, so that a page links it to the message it reaches.

Paths name the right side, except the last index of a ``removed`` path, which names the left: a pair of items shifted
by an insertion is found at its new place. ``apply_changes(left, changes)`` gives ``right`` back; it is the
definition of that rule.

Values are compared as Python compares JSON values (``1 == 1.0``, as JSON says; but also ``True == 1``: a flag turned
into the number 1 is not told apart). That keeps equal subtrees, most of two consecutive checkpoints, at the speed of
``==`` in C. Linear: every key and item is visited once and only where its subtree differs; message lists matched by
id cost one pass; alignments on content share one search budget (``diff.DEFAULT_BUDGET``), past which they are
greedy (``exact`` False), never O(n*m).

``limit`` bounds the changes kept, not the walk: ``total`` and ``counts`` are those of the whole diff. Each change
holds its old and new values whole (references into the two values, nothing copied); ``to_dict`` cuts long ones for
display (``max_chars``) and says so in ``cut``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from agents.memory.chain import _gc_paused
from agents.memory.diff import DEFAULT_BUDGET, Budget, align, index_path, key_path, path_parts

ChangeOp = Literal["added", "removed", "changed"]
# How much of an old or new value ``to_dict`` shows: a string's first characters, a container's JSON text's.
DISPLAY_CHARS = 2000

# LangChain's message types (``BaseMessage.type``) and classes, as model_dump, messages_to_dict and LangGraph's
# checkpoints write them.
_LANGCHAIN_TYPES = frozenset({"human", "ai", "tool", "system", "chat", "function", "remove", "developer",
                              "HumanMessageChunk", "AIMessageChunk", "ToolMessageChunk", "SystemMessageChunk",
                              "ChatMessageChunk", "FunctionMessageChunk"})
_LANGCHAIN_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system",
                      "ChatMessage": "chat", "FunctionMessage": "function", "RemoveMessage": "remove",
                      "HumanMessageChunk": "human", "AIMessageChunk": "ai", "ToolMessageChunk": "tool",
                      "SystemMessageChunk": "system", "ChatMessageChunk": "chat",
                      "FunctionMessageChunk": "function"}
# AutoGen's: autogen-core's LLMMessage types (UserMessage, ...) and agentchat's messages and events (TextMessage,
# ToolCallRequestEvent, MemoryQueryEvent, ...).
_AUTOGEN_SUFFIXES = ("Message", "Event")


class SnapshotChange(NamedTuple):
    """One difference. ``old`` is None for ``added``, ``new`` for ``removed``. Inside a message list,
    ``message_list`` is the list's path and ``message`` the index of the message it reaches (``right_index``, or
    ``left_index`` for a removed message)."""

    path: str
    op: ChangeOp
    old: Any
    new: Any
    message_list: str | None = None
    message: int | None = None
    left_index: int | None = None
    right_index: int | None = None

    def to_dict(self, *, max_chars: int | None = DISPLAY_CHARS) -> dict[str, Any]:
        """``{"path", "op", "old", "new"}`` (and the message fields inside a message list). A value longer than
        ``max_chars`` is cut: a string to its first ``max_chars`` characters, an array or object to the first
        ``max_chars`` characters of its JSON text; ``cut`` then gives, for ``old`` and/or ``new``, how many
        characters it has in all. ``max_chars=None``: whole values."""
        out: dict[str, Any] = {"path": self.path, "op": self.op}
        cut: dict[str, int] = {}
        for side, value in (("old", self.old), ("new", self.new)):
            shown, whole = _shown(value, max_chars)
            out[side] = shown
            if whole is not None:
                cut[side] = whole
        if cut:
            out["cut"] = cut
        if self.message_list is not None:
            out["message_list"] = self.message_list
            out["message"] = self.message
            out["left_index"] = self.left_index
            out["right_index"] = self.right_index
        return out


def _shown(value: Any, max_chars: int | None) -> tuple[Any, int | None]:
    if max_chars is None:
        return value, None
    if isinstance(value, str):
        return (value, None) if len(value) <= max_chars else (value[:max_chars], len(value))
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, default=repr)
        return (value, None) if len(text) <= max_chars else (text[:max_chars], len(text))
    return value, None


@dataclass
class SnapshotDiff:
    """The changes from ``left`` to ``right`` in walk order (keys sorted, items in order), the first ``limit`` of
    them; ``total`` and ``counts`` count every one."""

    changes: list[SnapshotChange]
    total: int
    counts: dict[str, int] = field(default_factory=dict)
    limit: int | None = None
    exact: bool = True  # False: some alignment ran out of budget and was matched greedily
    steps: int = 0  # steps of the alignments' search spent

    @property
    def truncated(self) -> bool:
        return self.total > len(self.changes)

    @property
    def identical(self) -> bool:
        return self.total == 0

    def to_dict(self, *, max_chars: int | None = DISPLAY_CHARS) -> dict[str, Any]:
        """The API's JSON: ``{"changes": [...], "total", "counts", "truncated", "exact"}``."""
        return {"changes": [c.to_dict(max_chars=max_chars) for c in self.changes], "total": self.total,
                "counts": dict(self.counts), "truncated": self.truncated, "exact": self.exact}


def diff_snapshots(left: Any, right: Any, *, limit: int | None = None, budget: int = DEFAULT_BUDGET) -> SnapshotDiff:
    """The structural diff of two snapshots' values (see the module's docstring). ``limit``: how many changes to
    keep (None: all); the walk goes on to count them all. ``budget``: Myers' search steps shared by every alignment."""
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0")
    walk = _Walk(limit, Budget(budget))
    with _gc_paused():
        walk.value(left, right, "$", None)
    return SnapshotDiff(walk.changes, sum(walk.counts.values()), walk.counts, limit, not walk.budget.exhausted,
                        walk.budget.spent)


# --- messages -----------------------------------------------------------------------------------------------------

def message_fields(item: Any) -> tuple[str, dict[str, Any]] | None:
    """``(role, fields)`` when ``item`` is a message of a shape the readers meet, else None. ``role`` as the shape
    says it (``user``, ``human``, ``UserMessage``); ``fields`` the dict holding its ``content`` and ``id``."""
    if isinstance(item, list):
        # AgentScope 1.x memory: [msg, marks].
        if len(item) == 2 and isinstance(item[0], dict) and isinstance(item[0].get("role"), str) \
                and isinstance(item[1], list):
            return message_fields(item[0])
        return None
    if not isinstance(item, dict):
        return None
    role = item.get("role")
    if isinstance(role, str) and ("content" in item or "tool_calls" in item):
        return role, item  # OpenAI, Letta, AgentScope's Msg
    kind = item.get("type")
    if isinstance(kind, str):
        if kind == "constructor" and item.get("lc") in (1, 2) and isinstance(item.get("kwargs"), dict):
            ids = item.get("id")
            name = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else ""
            return (_LANGCHAIN_CLASSES[name], item["kwargs"]) if name in _LANGCHAIN_CLASSES else None
        data = item.get("data")
        if isinstance(data, dict) and kind in _LANGCHAIN_TYPES and "content" in data:
            return kind, data  # messages_to_dict
        if "content" in item and (kind in _LANGCHAIN_TYPES or kind.endswith(_AUTOGEN_SUFFIXES)):
            return kind, item  # LangChain's model_dump (LangGraph's decoded messages too), AutoGen
    cls = item.get("__type__")
    if isinstance(cls, str) and "content" in item:
        name = cls.rsplit(".", 1)[-1]
        if name in _LANGCHAIN_CLASSES:
            return _LANGCHAIN_CLASSES[name], item
    return None


class _Said(NamedTuple):
    key: str  # what alignment matches on: the id, else role, content and calls
    role: str
    has_id: bool


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr).encode


def _canonical(value: Any) -> str:
    try:
        return _CANONICAL(value)
    except (TypeError, ValueError):  # keys that do not sort, a cycle: not JSON, but still a value to compare
        return repr(value)


def _messages(items: list[Any]) -> list[_Said] | None:
    """What each item says for alignment, when every item is a message; else None."""
    out: list[_Said] = []
    for item in items:
        found = message_fields(item)
        if found is None:
            return None
        role, fields = found
        message_id = fields.get("id")
        if isinstance(message_id, str) and message_id:
            out.append(_Said("i" + message_id, role, True))
        else:
            said = [role, fields.get("content"), fields.get("tool_calls"), fields.get("tool_call_id")]
            out.append(_Said("k" + _canonical(said), role, False))
    return out


# --- the walk -----------------------------------------------------------------------------------------------------

# Inside a message list: (the list's path, the message's index, left index, right index).
_Where = tuple[str, int, int | None, int | None]
_MISSING = object()


class _Walk:
    def __init__(self, limit: int | None, budget: Budget) -> None:
        self.limit = limit
        self.budget = budget
        self.changes: list[SnapshotChange] = []
        self.counts = {"added": 0, "removed": 0, "changed": 0}

    def put(self, path: str, op: ChangeOp, old: Any, new: Any, where: _Where | None) -> None:
        self.counts[op] += 1
        if self.limit is None or len(self.changes) < self.limit:
            self.changes.append(SnapshotChange(path, op, old, new, *where) if where
                                else SnapshotChange(path, op, old, new))

    def value(self, left: Any, right: Any, path: str, where: _Where | None) -> None:
        if left is right:
            return
        if isinstance(left, dict) and isinstance(right, dict):
            if left != right:
                self.object(left, right, path, where)
        elif isinstance(left, list) and isinstance(right, list):
            if left != right:
                self.array(left, right, path, where)
        elif left != right:
            self.put(path, "changed", left, right, where)

    def object(self, left: dict[str, Any], right: dict[str, Any], path: str, where: _Where | None) -> None:
        for key in sorted(left.keys() | right.keys()):
            lv, rv = left.get(key, _MISSING), right.get(key, _MISSING)
            if lv is _MISSING:
                self.put(key_path(path, key), "added", None, rv, where)
            elif rv is _MISSING:
                self.put(key_path(path, key), "removed", lv, None, where)
            else:
                self.value(lv, rv, key_path(path, key), where)

    def array(self, left: list[Any], right: list[Any], path: str, where: _Where | None) -> None:
        said_left, said_right = _messages(left), _messages(right)
        if said_left is not None and said_right is not None:
            self.message_list(left, right, said_left, said_right, path)
        elif len(left) == len(right):
            for k, (lv, rv) in enumerate(zip(left, right, strict=True)):
                self.value(lv, rv, index_path(path, k), where)
        else:
            matched = align([_canonical(x) for x in left], [_canonical(x) for x in right], budget=self.budget)
            i = j = 0
            for pi, pj in [*matched, (len(left), len(right))]:
                # Within a gap, items at the same place are compared; the rest are removed or added.
                for k in range(max(pi - i, pj - j)):
                    if i + k < pi and j + k < pj:
                        self.value(left[i + k], right[j + k], index_path(path, j + k), where)
                    elif i + k < pi:
                        self.put(index_path(path, i + k), "removed", left[i + k], None, where)
                    else:
                        self.put(index_path(path, j + k), "added", None, right[j + k], where)
                if pi < len(left):
                    self.value(left[pi], right[pj], index_path(path, pj), where)
                i, j = pi + 1, pj + 1

    def message_list(self, left: list[Any], right: list[Any], said_left: list[_Said], said_right: list[_Said],
                     path: str) -> None:
        matched = align([s.key for s in said_left], [s.key for s in said_right], budget=self.budget)
        i = j = 0
        for pi, pj in [*matched, (len(left), len(right))]:
            if i < pi or j < pj:
                self.message_gap(left, right, said_left, said_right, i, pi, j, pj, path)
            if pi < len(left):
                self.message_pair(left, right, pi, pj, path)
            i, j = pi + 1, pj + 1

    def message_gap(self, left: list[Any], right: list[Any], said_left: list[_Said], said_right: list[_Said],
                    a_lo: int, a_hi: int, b_lo: int, b_hi: int, path: str) -> None:
        """Messages between two matches: those without an id paired by role where the roles line up (the same
        message, its content changed), the rest removed or added. A message with an id is itself or another one."""
        free_left = [k for k in range(a_lo, a_hi) if not said_left[k].has_id]
        free_right = [k for k in range(b_lo, b_hi) if not said_right[k].has_id]
        pairs: Sequence[tuple[int, int]] = []
        if free_left and free_right:
            found = align([said_left[k].role for k in free_left], [said_right[k].role for k in free_right],
                          budget=self.budget)
            pairs = [(free_left[x], free_right[y]) for x, y in found]
        i, j = a_lo, b_lo
        for pi, pj in [*pairs, (a_hi, b_hi)]:
            for k in range(i, pi):
                self.put(index_path(path, k), "removed", left[k], None, (path, k, k, None))
            for k in range(j, pj):
                self.put(index_path(path, k), "added", None, right[k], (path, k, None, k))
            if pi < a_hi:
                self.message_pair(left, right, pi, pj, path)
            i, j = pi + 1, pj + 1

    def message_pair(self, left: list[Any], right: list[Any], i: int, j: int, path: str) -> None:
        lv, rv = left[i], right[j]
        if lv is not rv and lv != rv:
            self.value(lv, rv, index_path(path, j), (path, j, i, j))


# --- applying changes ---------------------------------------------------------------------------------------------

_REMOVED = object()


def apply_changes(value: Any, changes: Iterable[SnapshotChange]) -> Any:
    """``value`` with ``changes`` applied (all of a diff from it, whole values: ``limit=None``): the diff's right
    side. ``value`` itself is not modified; what no change touches is shared with it. ``ValueError`` for a change
    whose path does not fit ``value``."""
    parsed = [(path_parts(c.path), c) for c in changes]
    return _apply(value, [(parts, 0, c) for parts, c in parsed], "$")


def _apply(value: Any, items: list[tuple[list[str | int], int, SnapshotChange]], where: str) -> Any:
    """``items``: changes whose path goes through ``value`` (``parts[depth:]`` is the rest of it)."""
    if not items:
        return value
    here = [c for parts, depth, c in items if depth == len(parts)]
    if here:
        if len(here) > 1 or len(items) > 1:
            raise ValueError(f"{where}: a change at this path and another one at or under it")
        return _REMOVED if here[0].op == "removed" else here[0].new
    under: dict[str | int, list[tuple[list[str | int], int, SnapshotChange]]] = {}
    for parts, depth, change in items:
        under.setdefault(parts[depth], []).append((parts, depth + 1, change))
    if isinstance(value, dict):
        out = dict(value)
        for key, sub in under.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: an index into an object")
            placed = _apply(value.get(key), sub, key_path(where, key))
            if placed is _REMOVED:
                out.pop(key, None)
            else:
                out[key] = placed
        return out
    if isinstance(value, list):
        # Removed items are named by their left index, everything else by its right one: remove, then insert the
        # added ones in order, then change the items in their right places.
        removed: list[int] = []
        added: list[tuple[int, Any]] = []
        inside: list[tuple[int, list[tuple[list[str | int], int, SnapshotChange]]]] = []
        for index, sub in under.items():
            if not isinstance(index, int):
                raise ValueError(f"{where}: a key into an array")
            for parts, depth, change in sub:
                if depth == len(parts) and change.op == "removed":
                    removed.append(index)
                elif depth == len(parts) and change.op == "added":
                    added.append((index, change.new))
                else:
                    inside.append((index, [(parts, depth, change)]))
        out_list = list(value)
        for index in sorted(removed, reverse=True):
            if index >= len(out_list):
                raise ValueError(f"{index_path(where, index)}: no such item to remove")
            del out_list[index]
        for index, new in sorted(added, key=lambda a: a[0]):
            if index > len(out_list):
                raise ValueError(f"{index_path(where, index)}: added past the end")
            out_list.insert(index, new)
        grouped: dict[int, list[tuple[list[str | int], int, SnapshotChange]]] = {}
        for index, sub in inside:
            grouped.setdefault(index, []).extend(sub)
        for index, sub in grouped.items():
            if index >= len(out_list):
                raise ValueError(f"{index_path(where, index)}: no such item")
            placed = _apply(out_list[index], sub, index_path(where, index))
            if placed is _REMOVED:
                raise ValueError(f"{index_path(where, index)}: removed twice")
            out_list[index] = placed
        return out_list
    raise ValueError(f"{where}: a change under a value that is neither an object nor an array")
