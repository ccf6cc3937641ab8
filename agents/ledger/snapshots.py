"""What the snapshots page shows, read and decided in one call from its view: an agent's snapshots on a timeline
(paged by keyset: an agent of 100,000 snapshots costs what one of 5 does), one opened as a folded tree of its state,
and any two as the structural diff ``memory.snapshot_diff`` computes (through ``reading.snapshots_diff``, the API's
path: the page and its JSON twin list the same changes).

A snapshot's value is whatever the agent's library kept: any size, any text. The tree is bounded (``TREE_NODES``
values, ``TREE_ITEMS`` items of one array or object, ``TEXT_SHOWN`` characters of one string) and says what it cut;
everything from the value is text for the template to escape.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from django.core.cache import caches
from django.db.models import Q
from django.http import Http404
from django.urls import reverse

from agents import models
from agents.access import User, agent_for_user
from agents.ledger import reading
from agents.ledger.pages import Keyset, int_param, message_url
from agents.ledger.snapshot_reads import PairDiff, pair_diff
from agents.memory.diff import index_path, key_path
from agents.memory.snapshot_diff import DISPLAY_CHARS, Side, SnapshotChange, message_fields

SNAPSHOTS_PER_PAGE = 50
# Where a pair's compared rows are kept (settings.CACHES: the trims' cache, shared by app servers when it is the
# database's), and the shape's version, bumped when what is kept changes.
COMPARE_CACHE = "trims"
_COMPARE_FORMAT = 1

# The changes of a diff listed on the page (the API's ``limit``: its JSON twin is asked for the same number).
DIFF_CHANGES = 200
# The tree of one snapshot: at most this many values in all, this many items of one array or keys of one object,
# this many characters of one string, this deep.
TREE_NODES = 2000
TREE_ITEMS = 200
TEXT_SHOWN = 4000
TREE_DEPTH = 32
# A string longer than this is folded under <details> (its first characters as the summary).
FOLD_CHARS = 160
PREVIEW_CHARS = 90
# A change whose value is longer than this many lines is folded under <details>.
FOLD_LINES = 16
# Where the cuts of one tree are listed, at most this many of them.
CUTS_LISTED = 20

# As reading.agent_snapshots orders them (and the index snapshot_agent_taken holds them): oldest first, the
# snapshots without a time (AgentScope's saves) first of all.
TIMELINE = Keyset("taken_at", descending=False, nullable=True, nulls_first=True)


# --- the timeline --------------------------------------------------------------------------------------------------


@dataclass
class SnapshotRow:
    snapshot: models.Snapshot
    open_url: str  # this page with the snapshot opened
    message_url: str  # the session at the message it reaches
    diff_url: str  # its changes from its parent, else from the one before it on the page
    diff_from: str  # "parent" | "previous" | ""
    is_open: bool
    side: str  # "a" | "b" | "": where the diff shown has it


@dataclass
class Paging:
    first_url: str = ""
    previous_url: str = ""
    next_url: str = ""
    last_url: str = ""


# --- one snapshot as a tree ----------------------------------------------------------------------------------------


NodeKind = Literal["open", "close", "leaf", "more"]


@dataclass
class TreeNode:
    """One line of the tree, in document order: ``open`` starts a folded object or array (``close`` ends it),
    ``leaf`` is a value, ``more`` says how many items of the array or object above were left out."""

    kind: NodeKind
    key: str = ""  # "memory", "[3]"
    path: str = ""
    type: str = ""  # object | array | messages | message | string | number | bool | null
    summary: str = ""  # a container's size, a message's role and first words
    text: str = ""  # a leaf's value as text (a string's first TEXT_SHOWN characters)
    folded: bool = False  # a long string, under <details>
    preview: str = ""  # a folded string's first characters
    length: int = 0  # a string's characters
    cut: int = 0  # characters (leaf) or items (more) not shown
    expanded: bool = False


@dataclass
class Tree:
    nodes: list[TreeNode]
    shown: int  # values shown
    cuts: list[str] = field(default_factory=list)  # "$.memory.content: 9,800 of 10,000 items not shown"
    more_cuts: int = 0  # cuts past CUTS_LISTED
    stopped: bool = False  # TREE_NODES reached: the rest of the state is not shown


class _TreeWalk:
    def __init__(self) -> None:
        self.nodes: list[TreeNode] = []
        self.shown = 0
        self.cuts: list[str] = []
        self.cut_count = 0
        self.stopped = False

    def cut(self, text: str) -> None:
        self.cut_count += 1
        if len(self.cuts) < CUTS_LISTED:
            self.cuts.append(text)

    def value(self, key: str, value: Any, path: str, depth: int, *, in_pair: bool = False) -> None:
        """``in_pair``: the message of an AgentScope ``[msg, marks]`` pair, which the pair already names."""
        if self.shown >= TREE_NODES:
            self.stopped = True
            return
        self.shown += 1
        if isinstance(value, dict):
            said = None if in_pair else message_fields(value)
            if said is not None:
                self.container(key, list(value.items()), path, depth, "message", _message_summary(said))
            else:
                self.container(key, list(value.items()), path, depth, "object", _count(len(value), "key"))
        elif isinstance(value, list):
            said = message_fields(value)  # AgentScope's [msg, marks]: one message
            items = list(enumerate(value))
            if said is not None:
                self.container(key, items, path, depth, "message", _message_summary(said))
            elif value and all(message_fields(item) is not None for item in value):
                self.container(key, items, path, depth, "messages", _count(len(value), "message"))
            else:
                self.container(key, items, path, depth, "array", _count(len(value), "item"))
        elif isinstance(value, str):
            shown = value[:TEXT_SHOWN]
            if len(value) > TEXT_SHOWN:
                self.cut(f"{path}: {len(value) - TEXT_SHOWN:,} of {len(value):,} characters not shown")
            self.nodes.append(TreeNode(
                "leaf", key=key, path=path, type="string", text=shown, length=len(value),
                folded=len(value) > FOLD_CHARS or "\n" in value.strip(), preview=_one_line(value, PREVIEW_CHARS),
                cut=len(value) - len(shown)))
        else:
            kind = "null" if value is None else "bool" if isinstance(value, bool) else "number" if isinstance(
                value, (int, float)) else "other"
            text = json.dumps(value) if kind != "other" else repr(value)
            self.nodes.append(TreeNode("leaf", key=key, path=path, type=kind, text=text))

    def container(self, key: str, items: list[tuple[Any, Any]], path: str, depth: int, kind: str,
                  summary: str) -> None:
        if not items:
            self.nodes.append(TreeNode("leaf", key=key, path=path, type="empty",
                                       text="{}" if kind in ("object", "message") else "[]"))
            return
        if depth >= TREE_DEPTH:
            self.nodes.append(TreeNode("leaf", key=key, path=path, type=kind, text=summary))
            self.cut(f"{path}: nested deeper than {TREE_DEPTH} levels, not shown")
            return
        # The state's first level opens (what it keeps: memory, toolkit, plan...), the rest stays folded.
        self.nodes.append(TreeNode("open", key=key, path=path, type=kind, summary=summary,
                                   expanded=depth == 1 and kind == "object"))
        for k, (name, item) in enumerate(items[:TREE_ITEMS]):
            if self.shown >= TREE_NODES:
                self.stopped = True
                self.nodes.append(TreeNode("more", path=path, cut=len(items) - k))
                break
            if isinstance(name, int):
                self.value(f"#{name}" if kind == "messages" else f"[{name}]", item, index_path(path, name),
                           depth + 1, in_pair=kind == "message" and name == 0)
            else:
                self.value(str(name), item, key_path(path, str(name)), depth + 1)
        else:
            if len(items) > TREE_ITEMS:
                left = len(items) - TREE_ITEMS
                self.nodes.append(TreeNode("more", path=path, cut=left))
                what = "items" if isinstance(items[0][0], int) else "keys"
                self.cut(f"{path}: {left:,} of {len(items):,} {what} not shown")
        self.nodes.append(TreeNode("close"))


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _message_summary(said: tuple[str, dict[str, Any]]) -> str:
    """Who said what, in a line: the text, else the tools it calls or answers."""
    role, fields = said
    content = fields.get("content")
    calls = [c for c in fields.get("tool_calls") or [] if isinstance(c, dict)]
    if isinstance(content, list):  # blocks: their text; AgentScope's tool_use and tool_result blocks by name
        texts = []
        for block in content:
            if not isinstance(block, dict):
                texts.append(str(block))
            elif block.get("type") == "tool_use":
                calls.append(block)
            elif block.get("type") == "tool_result":
                texts.append(f"(result of {block.get('name') or 'a tool'})")
            else:
                texts.append(str(block.get("text", "")))
        content = " ".join(t for t in texts if t)
    text = _one_line(content, PREVIEW_CHARS) if isinstance(content, str) and content.strip() else ""
    if not text and calls:
        names = [str(c.get("name") or (c["function"].get("name") if isinstance(c.get("function"), dict) else None)
                     or "?") for c in calls]
        text = f"(calls {', '.join(names)})"
    return f"{role}: {text}" if text else role


def snapshot_tree(value: Any) -> Tree:
    """The snapshot's state as the folded tree the page shows, bounded (see the module's docstring)."""
    walk = _TreeWalk()
    if isinstance(value, dict):
        for key, item in value.items():
            walk.value(str(key), item, key_path("$", str(key)), 1)
            if walk.stopped:
                break
    else:
        walk.value("$", value, "$", 1)
    if walk.stopped:
        walk.cut(f"the state holds more than {TREE_NODES:,} values: the rest is not shown")
    return Tree(nodes=walk.nodes, shown=walk.shown, cuts=walk.cuts,
                more_cuts=max(0, walk.cut_count - len(walk.cuts)), stopped=walk.stopped)


@dataclass
class OpenedSnapshot:
    snapshot: models.Snapshot
    tree: Tree
    message_url: str
    parent_url: str
    json_url: str  # GET /api/snapshots/<id>/


# --- two snapshots as a diff ---------------------------------------------------------------------------------------


@dataclass
class ChangeRow:
    path: str
    op: str  # added | removed | changed
    old: str  # as text: a string itself, anything else its JSON (cut as the API cuts it)
    new: str
    old_cut: int | None  # the whole length of a value cut for display
    new_cut: int | None
    message: int | None  # the index of the message it reaches in its list
    message_url: str  # the session at that message
    message_seq: int | None  # that message's place in the session
    said: str = ""  # a whole message added or removed: who said what ("user: Make me a plan")

    # A side is folded under <details> when it is long, or a whole message its summary names.
    @property
    def old_folded(self) -> bool:
        return bool(self.said) or self.old.count("\n") > FOLD_LINES

    @property
    def new_folded(self) -> bool:
        return bool(self.said) or self.new.count("\n") > FOLD_LINES


@dataclass
class SnapshotCompare:
    left: models.Snapshot
    right: models.Snapshot
    rows: list[ChangeRow]
    total: int
    counts: dict[str, int]
    truncated: bool
    exact: bool
    json_url: str  # GET /api/snapshots/<a>/diff/<b>/?limit=DIFF_CHANGES
    swap_url: str


@dataclass
class SnapshotsPage:
    agent: models.Agent
    rows: list[SnapshotRow]
    count: int
    start: int | None  # the place of the first row (1 on the first page), when known
    paging: Paging
    opened: OpenedSnapshot | None
    compare: SnapshotCompare | None
    errors: list[str]
    path: str
    json_url: str  # GET /api/agents/<id>/snapshots/
    kept: list[tuple[str, str]]  # what the compare form sends again (the page, the one opened, A or B elsewhere)
    a: int | None
    b: int | None

    @property
    def summary(self) -> str:
        if not self.rows:
            return f"{self.count:,} snapshot{'' if self.count == 1 else 's'}"
        if self.start is None:
            return f"{len(self.rows):,} shown of {self.count:,}"
        return f"{self.start:,}–{self.start + len(self.rows) - 1:,} of {self.count:,}"


def agent_snapshots_page(*, user: User, agent_id: int, query: Mapping[str, str]) -> SnapshotsPage:
    """An agent's snapshots (404 when the agent is not in the user's projects), oldest first, one page after
    ``?after=`` or before ``?before=`` (a snapshot's id; ``?before=last``: the newest page); the snapshot
    ``?snapshot=`` opened as a tree, and ``?a=`` and ``?b=`` compared (404 for a snapshot that is not this agent's)."""
    agent = agent_for_user(user, agent_id)
    path = reverse("agents:agent_snapshots", args=[agent.pk])
    snapshots = models.Snapshot.objects.filter(agent=agent)
    opened_id, a, b = int_param(query.get("snapshot")), int_param(query.get("a")), int_param(query.get("b"))
    errors: list[str] = []
    compare = None
    if a is not None and b is not None:
        compare = _compare(user, agent, a, b, path, query)
    elif a is not None or b is not None or query.get("a") or query.get("b"):
        errors.append("Pick two snapshots to compare: a and b.")
    opened = None
    if opened_id is not None:
        opened = _opened(user, agent, opened_id)
    rows, start, paging = _timeline(snapshots, query, path, opened_id=opened_id, compare=compare)
    kept = [(k, str(query[k])) for k in ("after", "before", "start", "snapshot") if query.get(k)]
    # A or B picked on another page of the timeline is sent again, before this page's choices (the last value of a
    # name wins): A picked on the first page, B on the tenth.
    on_page = {row.snapshot.pk for row in rows}
    kept += [(name, str(pk)) for name, pk in (("a", a), ("b", b)) if pk is not None and pk not in on_page]
    return SnapshotsPage(
        agent=agent, rows=rows, count=snapshots.count(), start=start, paging=paging, opened=opened, compare=compare,
        errors=errors, path=path, json_url=reverse("api:agent_snapshots", args=[agent.pk]), kept=kept,
        a=compare.left.pk if compare else a, b=compare.right.pk if compare else b,
    )


def _link(path: str, query: Mapping[str, str], drop: tuple[str, ...], **set_: Any) -> str:
    kept = {k: str(query[k]) for k in ("after", "before", "start", "snapshot", "a", "b")
            if k not in drop and query.get(k)}
    kept |= {k: str(v) for k, v in set_.items() if v is not None}
    return f"{path}?{urlencode(kept)}" if kept else path


def _timeline(snapshots: Any, query: Mapping[str, str], path: str, *, opened_id: int | None,
              compare: SnapshotCompare | None) -> tuple[list[SnapshotRow], int | None, Paging]:
    after, before = int_param(query.get("after")), int_param(query.get("before"))
    last = query.get("before") == "last"
    start = int_param(query.get("start"))
    anchor_id = before if before is not None else after
    anchor = None
    if anchor_id is not None:
        found = snapshots.filter(pk=anchor_id).values_list("taken_at", "pk").first()
        if found is None:
            anchor_id = None  # a cursor of another agent, or gone: the first page
        else:
            anchor = found
    forward = not (last or (before is not None and anchor is not None))
    listed = snapshots.select_related("session", "parent").only(
        "id", "agent_id", "session_id", "seq", "external_id", "parent_id", "step", "taken_at", "source_format",
        "format_version", "session__id", "session__title", "session__external_id", "parent__id",
        "parent__external_id", "parent__step")
    read = TIMELINE.read(listed, anchor=anchor, forward=forward, size=SNAPSHOTS_PER_PAGE)
    more = len(read) > SNAPSHOTS_PER_PAGE
    rows = read[:SNAPSHOTS_PER_PAGE]
    if not forward:
        rows = rows[::-1]
    if last:
        start = None
    elif anchor is None:
        start = 1
    elif start is not None and not forward:
        start = max(1, start - len(rows))
    drop = ("after", "before", "start")
    has_previous = (anchor is not None and forward) or (not forward and more)
    has_next = (forward and more) or (not forward and anchor is not None and not last)
    paging = Paging(
        first_url=_link(path, query, drop) if has_previous else "",
        previous_url=_link(path, query, drop, before=rows[0].pk, start=start) if has_previous and rows else "",
        next_url=_link(path, query, drop, after=rows[-1].pk, start=start + len(rows) if start is not None else None)
        if has_next and rows else "",
        last_url=_link(path, query, drop, before="last") if has_next else "",
    )
    shown: list[SnapshotRow] = []
    for k, snapshot in enumerate(rows):
        source = snapshot.parent_id if snapshot.parent_id is not None else rows[k - 1].pk if k else None
        shown.append(SnapshotRow(
            snapshot=snapshot, open_url=_link(path, query, ("snapshot",), snapshot=snapshot.pk),
            message_url=message_url(snapshot.session, snapshot.seq),
            diff_url=_link(path, query, ("a", "b"), a=source, b=snapshot.pk) if source is not None else "",
            diff_from="parent" if snapshot.parent_id is not None else "previous" if source is not None else "",
            is_open=snapshot.pk == opened_id,
            side="a" if compare and compare.left.pk == snapshot.pk else "b" if compare and compare.right.pk ==
            snapshot.pk else "",
        ))
    return shown, start, paging


def _agents_snapshot(user: User, agent: models.Agent, snapshot_id: int) -> models.Snapshot:
    snapshot = reading.snapshot_for_user(user, snapshot_id)
    if snapshot.agent_id != agent.pk:
        raise Http404("No such snapshot of this agent.")
    return snapshot


def _opened(user: User, agent: models.Agent, snapshot_id: int) -> OpenedSnapshot:
    snapshot = _agents_snapshot(user, agent, snapshot_id)
    path = reverse("agents:agent_snapshots", args=[agent.pk])
    return OpenedSnapshot(
        snapshot=snapshot, tree=snapshot_tree(snapshot.value), message_url=message_url(snapshot.session, snapshot.seq),
        parent_url=f"{path}?{urlencode({'snapshot': snapshot.parent_id})}" if snapshot.parent_id else "",
        json_url=reverse("api:snapshot_detail", args=[snapshot.pk]))


def _compare(user: User, agent: models.Agent, a: int, b: int, path: str, query: Mapping[str, str]
             ) -> SnapshotCompare:
    # This agent's alone (the agent is the user's: agent_for_user), without their values: one query.
    found = {s.pk: s for s in models.Snapshot.objects.filter(agent=agent, pk__in={a, b}).select_related(
        "session").defer("value", "digest", "session__metadata", "session__violations")}
    if a not in found or b not in found:
        raise Http404("No such snapshot of this agent.")
    left, right = found[a], found[b]
    # A snapshot's value is written once: the pair's diff is computed once (from the two digests and the parts of
    # the values that changed, snapshot_reads) and kept, so that the page opened again, or its address shared,
    # reads neither.
    cache = caches[COMPARE_CACHE]
    # The links into the sessions follow them: a session's content_version changes with any message it gets.
    sessions = [f"{s.session_id}.{s.session.content_version}" if s.session is not None else "-" for s in (left, right)]
    key = (f"snapshot-compare:{_COMPARE_FORMAT}:{left.pk}:{left.created_at.isoformat()}:{right.pk}:"
           f"{right.created_at.isoformat()}:{':'.join(sessions)}:{DIFF_CHANGES}")
    computed = cache.get(key)
    if computed is None:
        computed = _compared(left, right)
        cache.set(key, computed)
    rows, total, counts, truncated, exact = computed
    return SnapshotCompare(
        left=left, right=right, rows=rows, total=total, counts=counts, truncated=truncated, exact=exact,
        json_url=f"{reverse('api:snapshot_diff', args=[a, b])}?{urlencode({'limit': DIFF_CHANGES})}",
        swap_url=_link(path, query, ("a", "b"), a=b, b=a))


def _compared(left: models.Snapshot, right: models.Snapshot
              ) -> tuple[list[ChangeRow], int, dict[str, int], bool, bool]:
    """The diff of two snapshots (read without their values) as the page lists it: its rows, total, counts, and
    whether it was cut and exact (``snapshot_reads.pair_diff``: the digests, then the parts that changed)."""
    pair = pair_diff(left, right, limit=DIFF_CHANGES)
    diff = pair.diff
    links = _message_links(pair, diff.changes)
    rows = []
    for change, link in zip(diff.changes, links, strict=True):
        shown = change.to_dict(max_chars=DISPLAY_CHARS)
        cut = shown.get("cut", {})
        whole = change.new if change.op == "added" else change.old if change.op == "removed" else None
        said = message_fields(whole) if whole is not None and change.message_list is not None else None
        rows.append(ChangeRow(
            path=change.path, op=change.op, old=_as_text(shown["old"]) if change.op != "added" else "",
            new=_as_text(shown["new"]) if change.op != "removed" else "", old_cut=cut.get("old"),
            new_cut=cut.get("new"), message=change.message, message_url=link[0], message_seq=link[1],
            said=_message_summary(said) if said else ""))
    return rows, diff.total, diff.counts, diff.truncated, diff.exact


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=repr)


def _message_links(pair: PairDiff, changes: list[SnapshotChange]) -> list[tuple[str, int | None]]:
    """For each change inside a message list, the session page at the message it reaches and its seq: the message
    of the same id in the snapshot's session (one query for the page of changes). A message without an id is not
    linked: its index in the list is not its place in the session (AgentScope's session starts with the system
    prompt, which its memory does not hold)."""
    sides: list[models.Snapshot | None] = []
    asked: list[tuple[Side, str, int]] = []
    for change in changes:
        if change.message_list is None or change.message is None:
            sides.append(None)
            continue
        side: Side = "left" if change.op == "removed" and change.right_index is None else "right"
        sides.append(pair.left if side == "left" else pair.right)
        asked.append((side, change.message_list, change.message))
    ids = iter(pair.message_ids(asked))
    wanted = [(snapshot, next(ids)) if snapshot is not None else (None, "") for snapshot in sides]
    by_session: dict[int, set[str]] = {}
    for snapshot, message_id in wanted:
        if message_id and snapshot is not None and snapshot.session_id is not None:
            by_session.setdefault(snapshot.session_id, set()).add(message_id)
    seq_of: dict[tuple[int, str], int] = {}
    if by_session:
        match = Q()
        for session_id, message_ids in by_session.items():
            match |= Q(session_id=session_id, external_id__in=message_ids)
        for session_id, external_id, place in models.Message.objects.filter(match).values_list(
                "session_id", "external_id", "seq"):
            seq_of[(session_id, external_id)] = place
    links: list[tuple[str, int | None]] = []
    for snapshot, message_id in wanted:
        seq = seq_of.get((snapshot.session_id, message_id)) if (
            snapshot is not None and message_id and snapshot.session_id) else None
        links.append((message_url(snapshot.session, seq), seq) if snapshot is not None and seq is not None
                     else ("", None))
    return links
