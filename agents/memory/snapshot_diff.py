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

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from agents.memory.chain import _gc_paused
from agents.memory.diff import DEFAULT_BUDGET, Budget, _align, align, index_path, key_path, path_parts

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


# --- digests: the diff read from what changed -----------------------------------------------------------------------
#
# A snapshot's digest is written with it (``snapshot_digest``): its value with every message list replaced by a
# marker holding, per message, what the walk aligns on (the role, and the key: the id, else role, content and calls)
# and a hash of the whole message; every other part of the value as it is. ``diff_digests`` walks two digests as
# ``diff_snapshots`` walks the values, and reads through ``fetch`` only what it cannot decide from them: the two
# sides of each pair of messages whose hashes differ, and the old and new values of the changes it keeps. Its
# result is ``diff_snapshots``' exactly (changes, total, counts, exact, steps):
#
# - a message's hash is its canonical JSON's: equal hashes are equal messages. Equal messages may still hash apart
#   (``==`` says ``True == 1 == 1.0``): a pair of messages whose hashes differ is read and walked as values, and
#   where two lists of as many messages differ only where they might be equal, those messages are read to decide
#   whether the lists are equal, as the walk does before aligning them;
# - ``align`` orients itself by comparing the two key sequences (``list(a) > list(b)``); a long key is kept as its
#   first ``_KEY_KEPT`` characters and a hash, and where those do not decide the order the two messages are read;
# - an ordinary array whose items hold a message list is read whole where its lengths differ (its items' canonical
#   JSON, which the alignment compares, is not in the digest), as is an array compared with a message list.

DIGEST_VERSION = 1
_MARK = "\u001fmemoryviz.messages"  # not \u0000: PostgreSQL's jsonb refuses it
_KEY_KEPT = 48

# A path into a value: its keys and indices from the root.
Parts = tuple[str | int, ...]
Side = Literal["left", "right"]
# ``fetch({"left": [parts, ...], "right": [...]})``: the values at those paths, in the same order.
Fetch = Callable[[dict[Side, list[Parts]]], dict[Side, list[Any]]]


class _NoDigest(Exception):
    pass


def snapshot_digest(value: Any) -> dict[str, Any] | None:
    """What ``diff_digests`` reads instead of ``value`` (see above); None for a value that holds the marker's own
    key (its diffs read the values)."""
    try:
        with _gc_paused():
            return {"version": DIGEST_VERSION, "value": _digest(value)}
    except _NoDigest:
        return None


def digest_usable(digest: Any) -> bool:
    return isinstance(digest, dict) and digest.get("version") == DIGEST_VERSION and "value" in digest


def _digest(node: Any) -> Any:
    if isinstance(node, dict):
        if _MARK in node:
            raise _NoDigest
        return {key: _digest(item) for key, item in node.items()}
    if isinstance(node, list):
        said = _messages(node) if node else None
        if said is None:
            return [_digest(item) for item in node]
        entries = []
        for item, s in zip(node, said, strict=True):
            kept: list[Any] = [s.role, _hash(_canonical(item))]
            if s.has_id or len(s.key) <= _KEY_KEPT:
                kept.append(s.key)
            else:
                kept += [s.key[:_KEY_KEPT], _hash(s.key)]
            entries.append(kept)
        return {_MARK: entries}
    return node


def _hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()[:20]


def _entries(node: Any) -> list[list[Any]] | None:
    """A message list's entries, when ``node`` is its marker."""
    if isinstance(node, dict) and len(node) == 1 and _MARK in node:
        entries: list[list[Any]] = node[_MARK]
        return entries
    return None


def message_id(item: Any) -> str:
    """The id of the message ``item`` is (``message_fields``' ``id``), "" for none or for an item no message."""
    said = message_fields(item) if item is not None else None
    found = said[1].get("id") if said else None
    return found if isinstance(found, str) else ""


def digest_message_id(digest: dict[str, Any], parts: Parts) -> str | None:
    """``message_id`` of the item at ``parts`` (a message list's path and an index) of the value ``digest`` is the
    digest of; None where the digest does not say it (the item is inside a message: read it)."""
    node = digest["value"]
    for n, part in enumerate(parts):
        entries = _entries(node)
        if entries is not None:
            if n < len(parts) - 1:
                return None
            if isinstance(part, int) and 0 <= part < len(entries):
                entry = entries[part]
                return entry[2][1:] if _has_id(entry) else ""
            return ""
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return ""
    return None if _has_mark(node) else message_id(node)


def _has_mark(node: Any) -> bool:
    if isinstance(node, dict):
        return _MARK in node or any(_has_mark(item) for item in node.values())
    if isinstance(node, list):
        return any(_has_mark(item) for item in node)
    return False


class _Ref(NamedTuple):
    """A value not read yet: at ``parts`` in the ``side`` snapshot."""

    side: Side
    parts: Parts


def diff_digests(left: Any, right: Any, fetch: Fetch, *, limit: int | None = None,
                 budget: int = DEFAULT_BUDGET) -> SnapshotDiff:
    """``diff_snapshots`` of the two values whose digests these are, reading through ``fetch`` only the parts that
    changed. ``ValueError`` for a digest ``digest_usable`` refuses."""
    if not (digest_usable(left) and digest_usable(right)):
        raise ValueError("not a digest of this version")
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0")
    read = _Reader(fetch)
    with _gc_paused():
        # A first walk, on a budget of its own, lists what the real one will read: then one fetch reads it all.
        plan = _DigestWalk(limit, Budget(budget), read, planning=True)
        plan.value(left["value"], right["value"], "$", None, (), ())
        read.load(plan.wanted)
        walk = _DigestWalk(limit, Budget(budget), read, planning=False)
        walk.value(left["value"], right["value"], "$", None, (), ())
        refs = [v for c in walk.changes for v in (c.old, c.new) if isinstance(v, _Ref)]
        read.load(refs)
        changes = [c._replace(old=read.get(c.old) if isinstance(c.old, _Ref) else c.old,
                              new=read.get(c.new) if isinstance(c.new, _Ref) else c.new) for c in walk.changes]
    return SnapshotDiff(changes, sum(walk.counts.values()), walk.counts, limit, not walk.budget.exhausted,
                        walk.budget.spent)


class _Reader:
    """The values read so far, by side and path; ``fetches`` counts the calls of ``fetch``."""

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch
        self.read: dict[_Ref, Any] = {}
        self.fetches = 0
        # What both walks compute alike: a message list's tokens, an alignment (see ``message_list``).
        self._tokens: dict[int, list[str]] = {}
        self.aligned: dict[tuple[Any, ...], tuple[list[tuple[int, int]], int, bool]] = {}

    def tokens(self, entries: list[list[Any]]) -> list[str]:
        found = self._tokens.get(id(entries))
        if found is None:
            found = self._tokens[id(entries)] = [e[2] if len(e) == 3 else "#" + e[3] for e in entries]
        return found

    def load(self, refs: Iterable[_Ref]) -> None:
        wanted: dict[Side, list[Parts]] = {}
        for ref in dict.fromkeys(refs):
            if ref not in self.read:
                wanted.setdefault(ref.side, []).append(ref.parts)
        if not wanted:
            return
        self.fetches += 1
        got = self.fetch(wanted)
        for side, paths in wanted.items():
            for parts, value in zip(paths, got[side], strict=True):
                self.read[_Ref(side, parts)] = value

    def get(self, ref: _Ref) -> Any:
        if ref not in self.read:
            self.load([ref])
        return self.read[ref]


class _DigestWalk:
    """``_Walk`` on two digests. ``planning``: nothing is read; what would be is listed in ``wanted``."""

    def __init__(self, limit: int | None, budget: Budget, read: _Reader, *, planning: bool) -> None:
        self.limit = limit
        self.budget = budget
        self.read = read
        self.planning = planning
        self.wanted: list[_Ref] = []
        # The walk of real values, for what is read: it puts into the same changes and counts.
        self.real = _Walk(limit, budget)
        self.changes = self.real.changes
        self.counts = self.real.counts

    def need(self, *refs: _Ref) -> list[Any] | None:
        """The values at ``refs``; None while planning (they are listed)."""
        if self.planning:
            self.wanted.extend(refs)
            return None
        self.read.load(refs)
        return [self.read.get(ref) for ref in refs]

    def put(self, path: str, op: ChangeOp, old: Any, new: Any, where: _Where | None) -> None:
        kept = self.limit is None or len(self.changes) < self.limit
        if self.planning and kept:
            self.wanted.extend(v for v in (old, new) if isinstance(v, _Ref))
        self.real.put(path, op, old, new, where)

    def ref(self, node: Any, side: Side, parts: Parts) -> Any:
        """A node as a change holds it: a scalar itself, a container to be read."""
        return _Ref(side, parts) if isinstance(node, (dict, list)) else node

    def value(self, left: Any, right: Any, path: str, where: _Where | None, lp: Parts, rp: Parts) -> None:
        left_items, right_items = _entries(left), _entries(right)
        left_list = left_items is not None or isinstance(left, list)
        right_list = right_items is not None or isinstance(right, list)
        if left_list and right_list:
            self.array(left, right, left_items, right_items, path, where, lp, rp)
        elif isinstance(left, dict) and isinstance(right, dict) and not left_list and not right_list:
            if left != right:
                self.object(left, right, path, where, lp, rp)
        elif left_list != right_list or isinstance(left, dict) != isinstance(right, dict) or left != right:
            self.put(path, "changed", self.ref(left, "left", lp), self.ref(right, "right", rp), where)

    def object(self, left: dict[str, Any], right: dict[str, Any], path: str, where: _Where | None, lp: Parts,
               rp: Parts) -> None:
        for key in sorted(left.keys() | right.keys()):
            lv, rv = left.get(key, _MISSING), right.get(key, _MISSING)
            if lv is _MISSING:
                self.put(key_path(path, key), "added", None, self.ref(rv, "right", (*rp, key)), where)
            elif rv is _MISSING:
                self.put(key_path(path, key), "removed", self.ref(lv, "left", (*lp, key)), None, where)
            else:
                self.value(lv, rv, key_path(path, key), where, (*lp, key), (*rp, key))

    def array(self, left: Any, right: Any, left_items: list[list[Any]] | None, right_items: list[list[Any]] | None,
              path: str, where: _Where | None, lp: Parts, rp: Parts) -> None:
        # The values' walk sees a message list where the digest has a marker, and in an empty list too.
        if (left_items is not None or left == []) and (right_items is not None or right == []):
            self.message_list(left_items or [], right_items or [], path, where, lp, rp)
            return
        if left_items is None and right_items is None:
            if left == right:
                return
            if len(left) == len(right):
                for k, (lv, rv) in enumerate(zip(left, right, strict=True)):
                    self.value(lv, rv, index_path(path, k), where, (*lp, k), (*rp, k))
                return
            if not _has_mark(left) and not _has_mark(right):
                self.plain_aligned(left, right, path, where, lp, rp)
                return
        # A message list against an ordinary array, or arrays whose items hold message lists: read both.
        read = self.need(_Ref("left", lp), _Ref("right", rp))
        if read is not None:
            self.real.value(read[0], read[1], path, where)

    def plain_aligned(self, left: list[Any], right: list[Any], path: str, where: _Where | None, lp: Parts,
                      rp: Parts) -> None:
        matched = align([_canonical(x) for x in left], [_canonical(x) for x in right], budget=self.budget)
        i = j = 0
        for pi, pj in [*matched, (len(left), len(right))]:
            for k in range(max(pi - i, pj - j)):
                if i + k < pi and j + k < pj:
                    self.value(left[i + k], right[j + k], index_path(path, j + k), where, (*lp, i + k),
                               (*rp, j + k))
                elif i + k < pi:
                    self.put(index_path(path, i + k), "removed", self.ref(left[i + k], "left", (*lp, i + k)), None,
                             where)
                else:
                    self.put(index_path(path, j + k), "added", None, self.ref(right[j + k], "right", (*rp, j + k)),
                             where)
            if pi < len(left):
                self.value(left[pi], right[pj], index_path(path, pj), where, (*lp, pi), (*rp, pj))
            i, j = pi + 1, pj + 1

    def message_list(self, left: list[list[Any]], right: list[list[Any]], path: str, where: _Where | None,
                     lp: Parts, rp: Parts) -> None:
        if len(left) == len(right) and self.equal_lists(left, right, lp, rp):
            return  # the values' walk goes in only where ``==`` says the lists differ
        a, b = self.read.tokens(left), self.read.tokens(right)
        greater = self.greater(left, right, a, b, lp, rp)
        # Both walks align the same lists on the same budget left: the second takes the first's result.
        memo = (path, lp, rp, greater, self.budget.left, self.budget.exhausted)
        kept = self.read.aligned.get(memo)
        if kept is not None:
            matched, self.budget.left, self.budget.exhausted = kept
        else:
            matched = [(i, j) for j, i in _align(b, a, self.budget)] if greater else _align(a, b, self.budget)
            self.read.aligned[memo] = (matched, self.budget.left, self.budget.exhausted)
        i = j = 0
        for pi, pj in [*matched, (len(left), len(right))]:
            if i < pi or j < pj:
                self.message_gap(left, right, i, pi, j, pj, path, lp, rp)
            if pi < len(left) and left[pi][1] != right[pj][1]:
                self.message_pair(left, right, pi, pj, path, lp, rp)
            i, j = pi + 1, pj + 1

    def equal_lists(self, left: list[list[Any]], right: list[list[Any]], lp: Parts, rp: Parts) -> bool:
        """Whether two lists of as many messages are equal by ``==``: equal hashes throughout, or messages that
        hash apart but, read, are equal (``True`` against 1). Messages whose roles differ, or whose ids do, are not
        read: they are not equal."""
        differ = [k for k, (x, y) in enumerate(zip(left, right, strict=True)) if x[1] != y[1]]
        if not differ:
            return True
        for k in differ:
            x, y = left[k], right[k]
            if x[0] != y[0] or _has_id(x) != _has_id(y) or (_has_id(x) and x[2] != y[2]):
                return False
        read = self.need(*[ref for k in differ for ref in (_Ref("left", (*lp, k)), _Ref("right", (*rp, k)))])
        return read is not None and all(read[n] == read[n + 1] for n in range(0, len(read), 2))

    def greater(self, left: list[list[Any]], right: list[list[Any]], a: list[str], b: list[str], lp: Parts,
                rp: Parts) -> bool:
        """``list(keys of left) > list(keys of right)``, as ``align`` orients itself."""
        k = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        if k is None:
            return len(a) > len(b)
        x, y = left[k], right[k]
        known_x: str = x[2]
        known_y: str = y[2]
        whole_x, whole_y = len(x) == 3, len(y) == 3
        m = min(len(known_x), len(known_y))
        if known_x[:m] != known_y[:m]:
            return known_x[:m] > known_y[:m]
        if whole_x and whole_y:
            return len(known_x) > len(known_y)
        if whole_x and len(known_x) == m:  # a prefix of the other, which is longer
            return False
        if whole_y and len(known_y) == m:
            return True
        read = self.need(_Ref("left", (*lp, k)), _Ref("right", (*rp, k)))
        if read is None:
            return False
        said = _messages(read)
        if said is None:  # not what the digest says: cannot be
            raise ValueError(f"{index_path('$', k)}: the digest does not match the value")
        return bool(said[0].key > said[1].key)

    def message_gap(self, left: list[list[Any]], right: list[list[Any]], a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                    path: str, lp: Parts, rp: Parts) -> None:
        free_left = [k for k in range(a_lo, a_hi) if not _has_id(left[k])]
        free_right = [k for k in range(b_lo, b_hi) if not _has_id(right[k])]
        pairs: Sequence[tuple[int, int]] = []
        if free_left and free_right:
            found = align([left[k][0] for k in free_left], [right[k][0] for k in free_right], budget=self.budget)
            pairs = [(free_left[x], free_right[y]) for x, y in found]
        i, j = a_lo, b_lo
        for pi, pj in [*pairs, (a_hi, b_hi)]:
            for k in range(i, pi):
                self.put(index_path(path, k), "removed", _Ref("left", (*lp, k)), None, (path, k, k, None))
            for k in range(j, pj):
                self.put(index_path(path, k), "added", None, _Ref("right", (*rp, k)), (path, k, None, k))
            if pi < a_hi:
                self.message_pair(left, right, pi, pj, path, lp, rp)
            i, j = pi + 1, pj + 1

    def message_pair(self, left: list[list[Any]], right: list[list[Any]], i: int, j: int, path: str, lp: Parts,
                     rp: Parts) -> None:
        if left[i][1] == right[j][1]:
            return
        read = self.need(_Ref("left", (*lp, i)), _Ref("right", (*rp, j)))
        if read is not None:
            self.real.value(read[0], read[1], index_path(path, j), (path, j, i, j))


def _has_id(entry: list[Any]) -> bool:
    return len(entry) == 3 and entry[2].startswith("i")
