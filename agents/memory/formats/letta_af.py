"""Letta agent files (``.af``), both schemas, JSON-encoded once or twice (some published files are a JSON string
holding the JSON).

- **Current schema** (``AgentFileSchema``): ``{agents, groups, blocks, files, sources, tools, mcp_servers, metadata,
  created_at}``; each agent points to its blocks by ``block_ids`` and its tools by ``tool_ids``, and carries its last
  messages (Letta exports 50) and ``in_context_message_ids``.
- **Older schema** (Letta up to 0.6/0.7): the file is the agent, with ``core_memory`` (its blocks), ``messages``,
  ``in_context_message_indices`` and ``tools``.

What each agent becomes:

- its messages a **conversation** (external_id: the agent's id in the file, or its name in the older schema), in
  OpenAI granularity as Letta sends them (``Message.to_openai_dicts_from_list``): a tool message whose
  ``tool_returns`` answer several calls becomes one tool message per call, its content the return's
  ``func_response``; ``summary`` messages are sent as user messages; an ``approval`` message without tool calls is
  not sent, so not kept (noted). ``send_message`` calls are how a MemGPT agent talks: they stay tool calls. The
  system message is the text Letta sent. Reasoning parts are ``reasoning``; Letta's other message fields are kept in
  ``extra["letta_af"]``. ``metadata["in_context_seqs"]``: the seqs of the messages the agent had in its context
  window when exported (``in_context_message_ids`` / ``_indices``, in Letta's order, system message first), i.e.
  what it last sent. Letta 0.6.43 exported messages out of order: an older-schema file whose times go back is read in
  the order of its ``created_at`` (noted); the current schema's order is Letta's sequence, kept.
- its core memory blocks a store of kind ``blocks`` (key ``<agent>/core_memory``), one record per block: the label
  as external_id, the value as text, ``limit`` as char_limit, description, read_only, the block's metadata (and its
  id in the file) as metadata, the block verbatim as value. A block that several agents share is a record of each
  agent's store, with one history.
- the **history of each block**, which the file keeps nowhere as such, rebuilt from what it does keep: each system
  message renders the blocks (``<memory_blocks>`` with ``chars_current``, or the older ``<label
  characters="n/limit">`` sections: the length gives the exact value), and each memory tool call says what it
  changed (``core_memory_append``/``_replace``; ``memory_replace``/``_insert``/``_rethink``, ``rethink_memory``,
  ``memory_str_replace``/``_str_insert`` and the ``memory`` command tool), replayed as Letta's executor runs them
  (a call whose return says it failed changed nothing). Values are carried forward from each rendering and, where a
  later value is known, backward through the edits (a replace undone where the new text is unique, an insert or an
  append removed), so that every version has its whole text; a later value the edit cannot have made (something the
  file does not show came between: an edit in older messages, a change through the API) is not given to it, and an
  edit whose result cannot be told makes no version. Versions: the first one is the value the first system
  message shows (``ADD``, that message's seq); each edit an ``UPDATE`` at the seq of the assistant message carrying
  the call, at its time; a rendering that differs from what the edits explain an ``UPDATE`` at that system message;
  and if the last known value is not the block's value in the file, a last ``UPDATE`` with no message (something the
  exported messages do not show changed it). The older Letta wrote a new system message after each edit, so its
  renderings are ordered by position; the current one rewrites its system message in place (same id, same
  ``created_at``), so its rendering is placed at the time it says memory was last modified, after the edits made
  until then.
- ``archival_memory_search`` calls become recalls of a ``records`` store named ``archival`` (key
  ``<agent>/archival``), placed in the tool result that carries them (persisted: Letta sends in-context tool results
  again), with the query and ``top_k`` (as ``limit``), tags and dates from the call, and the items parsed from the
  return (the Python ``repr`` of Letta's result list: id, timestamp, content, tags, relevance). The store has no
  records: ``.af`` files carry no archival passages, so the items stay unmatched.
- the whole agent entry with its blocks and tools (and sources, groups) a **snapshot**, verbatim; external_id the
  agent's id and the export time.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from agents.memory.ledger import (
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    SnapshotIn,
    StoreIn,
    VersionIn,
)
from agents.memory.schema import Message

from .base import (
    FormatError,
    FormatSpec,
    at,
    dump_arguments,
    json_type,
    list_or_empty,
    load_arguments,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_str,
    opt_str,
)
from .json_input import parse_json

NAME = "letta_af"
SPEC = FormatSpec(
    name=NAME,
    label="Letta agent file",
    description="Letta .af agent file, current or older schema",
    extension="af",
    media_type="application/json",
)

_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool", "summary": "user",
          "approval": "assistant"}
# Message fields mapped onto memoryviz's own; the others are kept in extra["letta_af"].
_MAPPED = {"role", "content", "tool_calls", "tool_call_id", "tool_returns", "created_at", "name", "id", "type"}
# Letta's archival search returns are not truncated, but a parse of a huge repr is not worth its cost.
_MAX_RETURN_PARSE = 4 * 1024 * 1024


# --- detection --------------------------------------------------------------------------------------------------

def _is_current(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("agents"), list) and isinstance(doc.get("blocks"), list)
            and isinstance(doc.get("tools"), list)
            and all(isinstance(a, dict) and ("in_context_message_ids" in a or "block_ids" in a)
                    for a in doc["agents"][:50]))


def _is_older(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("core_memory"), list)
            and isinstance(doc.get("messages"), list)
            and ("in_context_message_indices" in doc or "agent_type" in doc))


def _inner(data: Any) -> Any:
    """The document a twice-encoded file holds (a JSON string whose text is the JSON), parsed; else ``data``."""
    if isinstance(data, str) and data.lstrip().startswith("{"):
        return parse_json(data, "input (the JSON text the file's string holds)")
    return data


def detect(data: Any) -> bool:
    try:
        doc = _inner(data)
    except FormatError:
        return False
    return _is_current(doc) or _is_older(doc)


# --- small readers ----------------------------------------------------------------------------------------------

def _time(value: Any, place: str) -> datetime | None:
    """An ISO time; a naive one is UTC (Letta stores UTC without a zone in the older schema)."""
    if value is None:
        return None
    text = need_str(value, place)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise FormatError(place, f"expected an ISO 8601 time, got {text[:40]!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _stamp(when: datetime) -> float:
    return when.timestamp()


_MODIFIED = re.compile(r"(?:Memory blocks were last modified|### Memory \[last modified):\s*"
                       r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [AP]M)[ \t]*[A-Za-z_/]*[ \t]*([+-]\d{4})?")


def _rendered_at(text: str) -> datetime | None:
    """The time a system message says memory was last modified (``%Y-%m-%d %I:%M:%S %p %Z%z``, to the second)."""
    match = _MODIFIED.search(text)
    if not match:
        return None
    try:
        when = datetime.strptime(match.group(1), "%Y-%m-%d %I:%M:%S %p")
    except ValueError:
        return None
    offset = match.group(2)
    if offset:
        minutes = int(offset[1:3]) * 60 + int(offset[3:5])
        zone = timezone(timedelta(minutes=minutes if offset[0] == "+" else -minutes))
    else:
        zone = UTC
    return when.replace(tzinfo=zone)


# --- rendered blocks: the values a system message shows -------------------------------------------------------

_BLOCK_HEAD = re.compile(r"<([^\n<]+)>\n<description>\n")
_OLD_HEAD = re.compile(r'<([^\s<>"]+) characters="(\d+)/(\d+)">\n')
_CHARS = re.compile(r"- chars_current=(\d+)")


def rendered_blocks(text: str) -> dict[str, str]:
    """The value of each block a system message renders, by label: the ``<memory_blocks>`` of current Letta (plain,
    or line-numbered ``1→ ...`` with a ``<warning>``), and the ``<label characters="n/limit">`` sections of the
    older one. Each value is cut by the length the rendering states, so a value holding tags reads right."""
    found: dict[str, str] = {}
    start = text.find("<memory_blocks>")
    if start >= 0:
        _read_memory_blocks(text, start, found)
    pos = 0
    while True:
        match = _OLD_HEAD.search(text, pos)
        if not match:
            break
        label, size = match.group(1), int(match.group(2))
        begin = match.end()
        closing = "\n</" + label + ">"
        if text.startswith(closing, begin + size):
            found.setdefault(label, text[begin:begin + size])
            pos = begin + size + len(closing)
        else:
            pos = begin
    return found


# Block heads that turn out not to start a block (text inside a value that looks like one) before the rendering is
# given up: each costs a search to the end of the text.
_MISSES = 100


def _read_memory_blocks(text: str, start: int, found: dict[str, str]) -> None:
    pos = start
    misses = 0
    while misses < _MISSES:
        head = _BLOCK_HEAD.search(text, pos)
        if not head:
            return
        label = head.group(1)
        meta_start = text.find("\n</description>\n<metadata>", head.end() - 1)
        if meta_start < 0:
            return
        meta_end = text.find("</metadata>\n", meta_start)
        if meta_end < 0:
            return
        chars = _CHARS.search(text, meta_start, meta_end)
        size = int(chars.group(1)) if chars else None
        body = meta_end + len("</metadata>\n")
        numbered = text.startswith("<warning>\n", body)
        if numbered:
            warning_end = text.find("</warning>\n", body)
            if warning_end < 0:
                return
            body = warning_end + len("</warning>\n")
        if not text.startswith("<value>\n", body):
            pos = head.end()
            misses += 1
            continue
        body += len("<value>\n")
        closing = "</value>\n</" + label + ">"
        if numbered:
            value, end = _numbered_value(text, body)
        elif size is not None and text.startswith("\n" + closing, body + size):
            value, end = text[body:body + size], body + size + 1
        else:
            cut = text.find("\n" + closing, body)
            value, end = (text[body:cut], cut + 1) if cut >= 0 else (None, -1)
        if value is None or not text.startswith(closing, end) or (size is not None and len(value) != size):
            pos = head.end()
            misses += 1
            continue
        found.setdefault(label, value)
        pos = end + len(closing)


def _numbered_value(text: str, pos: int) -> tuple[str | None, int]:
    """The value of a line-numbered rendering (``1→ first line\\n2→ ...``) from ``pos``, and where it ends."""
    lines: list[str] = []
    number = 1
    while True:
        prefix = f"{number}→ "
        if not text.startswith(prefix, pos):
            return ("\n".join(lines) if lines else ""), pos
        end = text.find("\n", pos)
        if end < 0:
            return None, -1
        lines.append(text[pos + len(prefix):end])
        pos = end + 1
        number += 1


# --- memory edits, as Letta's executor runs them -----------------------------------------------------------------

@dataclass
class Edit:
    """One memory tool call on one block: what it does to a value (``forward``) and, where that can be told, what
    the value was before it (``backward``). Either gives None where it cannot say."""

    tool: str
    label: str
    op: str
    forward: Callable[[str | None], str | None]
    backward: Callable[[str], str | None]


def _unknown(_: Any) -> None:
    return None


def _replace_once(old: str, new: str) -> tuple[Callable[[str | None], str | None], Callable[[str], str | None]]:
    """``memory_replace``: tabs expanded, the old text must appear exactly once."""
    old, new = old.expandtabs(), new.expandtabs()

    def forward(value: str | None) -> str | None:
        if value is None:
            return None
        value = value.expandtabs()
        return value.replace(old, new) if value.count(old) == 1 else None

    def backward(after: str) -> str | None:
        if not new or after.count(new) != 1:
            return None
        before = after.replace(new, old)
        return before if forward(before) == after else None

    return forward, backward


def _replace_all(old: str, new: str) -> tuple[Callable[[str | None], str | None], Callable[[str], str | None]]:
    """``core_memory_replace`` (older Letta): every occurrence of the old text, which must appear."""

    def forward(value: str | None) -> str | None:
        if value is None or old not in value:
            return None
        return value.replace(old, new)

    def backward(after: str) -> str | None:
        if not new or after.count(new) != 1:
            return None
        before = after.replace(new, old)
        return before if before.count(old) == 1 and forward(before) == after else None

    return forward, backward


def _insert(text: str, line: int) -> tuple[Callable[[str | None], str | None], Callable[[str], str | None]]:
    """``memory_insert``: the text's lines put after line ``line`` (-1: at the end), tabs expanded."""
    new_lines = text.expandtabs().split("\n")

    def forward(value: str | None) -> str | None:
        if value is None:
            return None
        lines = value.expandtabs().split("\n")
        where = len(lines) if line == -1 else line
        if where < 0 or where > len(lines):
            return None
        return "\n".join(lines[:where] + new_lines + lines[where:])

    def backward(after: str) -> str | None:
        lines = after.split("\n")
        where = len(lines) - len(new_lines) if line == -1 else line
        if where < 0 or lines[where:where + len(new_lines)] != new_lines:
            return None
        before = "\n".join(lines[:where] + lines[where + len(new_lines):])
        return before if forward(before) == after else None

    return forward, backward


def _append(content: str) -> tuple[Callable[[str | None], str | None], Callable[[str], str | None]]:
    """``core_memory_append``: a newline and the content."""
    tail = "\n" + content

    def forward(value: str | None) -> str | None:
        return None if value is None else value + tail

    def backward(after: str) -> str | None:
        return after[:-len(tail)] if after.endswith(tail) else None

    return forward, backward


def _rewrite(value: str) -> tuple[Callable[[str | None], str | None], Callable[[str], str | None]]:
    """``memory_rethink`` and the like: the whole new value (what was there before cannot be told)."""
    return (lambda _: value), _unknown


def _label_of_path(path: str, underscores: bool) -> str:
    label = path.removeprefix("/memories/").removeprefix("/")
    return label.replace("/", "_") if underscores else label


def _text_arg(args: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, str):
            return value
    return None


def memory_edit(tool: str, args: dict[str, Any]) -> Edit | None:
    """The edit a memory tool call makes, or None for a call that edits no block's value (or that memoryviz does
    not replay: ``memory_apply_patch``, a rename). Argument names as each Letta version spelled them
    (``old_str``/``old_string``, ...)."""
    label = args.get("label")
    funcs: tuple[Callable[[str | None], str | None], Callable[[str], str | None]] | None = None
    op = "UPDATE"
    if tool == "core_memory_append":
        content = _text_arg(args, "content")
        funcs = _append(content) if content is not None else None
    elif tool == "core_memory_replace":
        old, new = _text_arg(args, "old_content"), _text_arg(args, "new_content")
        funcs = _replace_all(old, new) if old is not None and new is not None else None
    elif tool in ("memory_replace", "memory_str_replace"):
        old, new = _text_arg(args, "old_str", "old_string"), _text_arg(args, "new_str", "new_string")
        if tool == "memory_str_replace" and isinstance(args.get("path"), str):
            label = _label_of_path(args["path"], underscores=False)
        funcs = _replace_once(old, new) if old is not None and new is not None else None
    elif tool in ("memory_insert", "memory_str_insert"):
        text = _text_arg(args, "new_str", "new_string", "insert_text")
        if tool == "memory_str_insert" and isinstance(args.get("path"), str):
            label = _label_of_path(args["path"], underscores=True)
        line = args.get("insert_line", -1)
        line = -1 if line is None else line
        funcs = _insert(text, line) if text is not None and isinstance(line, int) else None
    elif tool in ("memory_rethink", "rethink_memory"):
        if tool == "rethink_memory":
            label = args.get("target_block_label")
        text = _text_arg(args, "new_memory")
        funcs = _rewrite(text) if text is not None else None
    elif tool == "memory":
        return _memory_command(args)
    if funcs is None or not isinstance(label, str):
        return None
    return Edit(tool, label, op, funcs[0], funcs[1])


def _memory_command(args: dict[str, Any]) -> Edit | None:
    command, path = args.get("command"), args.get("path")
    if not isinstance(path, str):
        return None
    if command == "str_replace":
        edit = memory_edit("memory_str_replace", args)
    elif command == "insert":
        edit = memory_edit("memory_str_insert", {**args, "insert_line": args.get("insert_line", -1)})
    elif command == "create":
        text = args.get("file_text")
        forward, backward = _rewrite(text if isinstance(text, str) else "")
        return Edit("memory", _label_of_path(path, underscores=False), "ADD", forward, backward)
    elif command == "delete":
        return Edit("memory", _label_of_path(path, underscores=True), "DELETE", _unknown, _unknown)
    else:
        return None
    return Edit("memory", edit.label, edit.op, edit.forward, edit.backward) if edit else None


# --- the file, read -------------------------------------------------------------------------------------------

@dataclass
class _Call:
    seq: int
    name: str
    args: dict[str, Any] | None


@dataclass
class _Return:
    seq: int
    failed: bool | None
    text: str
    at: datetime | None


@dataclass
class _Agent:
    place: str
    entry: dict[str, Any]
    index: int
    key: str
    name: str | None
    schema: str
    blocks: list[tuple[dict[str, Any], str]]  # (block, its place), in the agent's order
    tools: list[dict[str, Any]]
    messages: list[Message] = field(default_factory=list)
    seqs_of: list[list[int]] = field(default_factory=list)  # Letta message index (as read) -> memoryviz seqs
    original: list[int] = field(default_factory=list)  # Letta message index (as read) -> its index in the file
    times: list[datetime | None] = field(default_factory=list)  # Letta message index -> created_at
    raw_messages: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    returns: dict[str, _Return] = field(default_factory=dict)
    call_order: list[str] = field(default_factory=list)


def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    doc = _inner(data)
    if _is_current(doc):
        agents, snapshots_of, export, notes = _current(doc)
    elif _is_older(doc):
        agents, snapshots_of, export, notes = _older(doc)
    else:
        raise FormatError("input", "not a Letta agent file: expected an object with agents, blocks and tools "
                                   "(the current schema) or with core_memory and messages (the older one)")
    document = MemoryDocument(format=NAME, notes=notes)
    if len(agents) == 1:
        document.agent = agents[0].name
    for agent in agents:
        _read_messages(agent, document.notes)
    versions_of = _block_histories(agents, export, document.notes)
    for agent in agents:
        conversation = _conversation(agent, document.notes)
        document.conversations.append(conversation)
        document.stores.append(_blocks_store(agent, versions_of))
        recalls = _recalls(agent, document.notes)
        if recalls:
            document.stores.append(StoreIn(key=f"{agent.key}/archival", name="archival", kind="records",
                                           source_format=NAME, scope={"agent_id": agent.key}, agent=agent.name))
            document.recalls.extend(recalls)
        last = len(agent.messages) - 1
        document.snapshots.append(SnapshotIn(
            external_id=f"{agent.key}@{export.isoformat()}" if export else agent.key,
            value=snapshots_of(agent), source_format=NAME, format_version=_format_version(doc, agent),
            taken_at=export, agent=agent.name, session=agent.key, seq=last if last >= 0 else None,
        ))
    return document


def _format_version(doc: dict[str, Any], agent: _Agent) -> str | None:
    if agent.schema == "older":
        version = agent.entry.get("version")
        return version if isinstance(version, str) else None
    meta = doc.get("metadata")
    revision = meta.get("revision_id") if isinstance(meta, dict) else None
    return f"revision {revision}" if isinstance(revision, str) else None


_Shape = tuple[list["_Agent"], Callable[["_Agent"], Any], datetime | None, list[str]]


def _current(doc: dict[str, Any]) -> _Shape:
    blocks_by_id: dict[str, tuple[dict[str, Any], str]] = {}
    for i, raw in enumerate(doc["blocks"]):
        place = at("blocks", i)
        block = need_dict(raw, place)
        block_id = need_str(block.get("id"), at(place, "id"))
        need_str(block.get("label"), at(place, "label"))
        _block_value(block, place)
        blocks_by_id[block_id] = (block, place)
    export = _time(doc.get("created_at"), "created_at")
    agents: list[_Agent] = []
    used: set[str] = set()
    for i, raw in enumerate(doc["agents"]):
        place = at("agents", i)
        entry = need_dict(raw, place)
        key = need_str(entry.get("id"), at(place, "id"))
        blocks = []
        labels: set[str] = set()
        for j, block_id in enumerate(need_list(entry.get("block_ids") or [], at(place, "block_ids"))):
            bplace = at(at(place, "block_ids"), j)
            block_id = need_str(block_id, bplace)
            if block_id not in blocks_by_id:
                raise FormatError(bplace, f"no block {block_id!r} in blocks")
            block, block_place = blocks_by_id[block_id]
            if block["label"] in labels:
                raise FormatError(bplace, f"a second block labelled {block['label']!r} for this agent")
            labels.add(block["label"])
            used.add(block_id)
            blocks.append((block, block_place))
        tool_ids = set(t for t in need_list(entry.get("tool_ids") or [], at(place, "tool_ids")) if isinstance(t, str))
        tools = [t for t in doc["tools"] if isinstance(t, dict) and t.get("id") in tool_ids]
        agents.append(_Agent(place=place, entry=entry, index=i, key=key, name=opt_str(entry.get("name"),
                             at(place, "name")), schema="current", blocks=blocks, tools=tools))
    keys = [a.key for a in agents]
    if len(set(keys)) != len(keys):
        raise FormatError("agents", "two agents with the same id")
    unused = [b["label"] for block_id, (b, _) in blocks_by_id.items() if block_id not in used]
    notes: list[str] = []
    if unused:
        notes.append(f"blocks {', '.join(unused[:10])}: attached to no agent of the file; not read")

    def snapshot(agent: _Agent) -> Any:
        # The agent as exported, with what it points to: verbatim.
        value: dict[str, Any] = {"agent": agent.entry, "blocks": [b for b, _ in agent.blocks], "tools": agent.tools}
        for key, ids in (("sources", "source_ids"), ("groups", "group_ids")):
            wanted = set(i for i in list_or_empty(agent.entry.get(ids)) if isinstance(i, str))
            held = [s for s in list_or_empty(doc.get(key)) if isinstance(s, dict) and s.get("id") in wanted]
            if held:
                value[key] = held
        return value

    return agents, snapshot, export, notes


def _older(doc: dict[str, Any]) -> _Shape:
    blocks = []
    labels: set[str] = set()
    for i, raw in enumerate(doc["core_memory"]):
        place = at("core_memory", i)
        block = need_dict(raw, place)
        label = need_str(block.get("label"), at(place, "label"))
        _block_value(block, place)
        if label in labels:
            raise FormatError(at(place, "label"), f"a second block labelled {label!r}")
        labels.add(label)
        blocks.append((block, place))
    name = opt_str(doc.get("name"), "name")
    key = opt_str(doc.get("id"), "id") or name or "agent"
    tools = [t for t in list_or_empty(doc.get("tools")) if isinstance(t, dict)]
    export = _time(doc.get("updated_at"), "updated_at") or _time(doc.get("created_at"), "created_at")
    agent = _Agent(place="", entry=doc, index=0, key=key, name=name, schema="older", blocks=blocks, tools=tools)
    return [agent], (lambda a: a.entry), export, []


def _block_value(block: dict[str, Any], place: str) -> str:
    value = block.get("value")
    if value is None:
        return ""
    return need_str(value, at(place, "value"))


# --- messages -----------------------------------------------------------------------------------------------------

def _read_messages(agent: _Agent, notes: list[str]) -> None:
    mplace = at(agent.place, "messages")
    raw = need_list(agent.entry.get("messages", []), mplace)
    times = []
    for i, item in enumerate(raw):
        place = at(mplace, i)
        times.append(_time(need_dict(item, place).get("created_at"), at(place, "created_at")))
    order = list(range(len(raw)))
    carried: list[float] = []
    clock = float("-inf")
    for when in times:
        clock = _stamp(when) if when else clock
        carried.append(clock)
    if agent.schema == "older" and any(later < earlier for earlier, later in zip(carried, carried[1:], strict=False)):
        # Letta 0.6.43 exported its messages out of order (a tool result before its call): they are read in the
        # order they were written. (The current schema lists them in Letta's own sequence, which is the order they
        # were sent in, even where a user message was stamped before the step that came first.)
        order.sort(key=lambda i: carried[i])
        notes.append(f"{agent.place or 'the agent'}: the messages are listed out of time order; read in the order "
                     "of their created_at")
    skipped = 0
    for i in order:
        place = at(mplace, i)
        message = raw[i]
        agent.original.append(i)
        agent.raw_messages.append(message)
        agent.times.append(times[i])
        made = _read_message(agent, message, len(agent.raw_messages) - 1, place)
        seqs = list(range(len(agent.messages), len(agent.messages) + len(made)))
        agent.seqs_of.append(seqs)
        agent.messages.extend(made)
        if not made:
            skipped += 1
    if skipped:
        notes.append(f"{agent.place or 'the agent'}: {skipped} approval message(s) without tool calls, which Letta "
                     "does not send to the model; kept in the snapshot only")


def _content(raw: Any, place: str, memo: dict[str, Any]) -> tuple[str | list[dict[str, Any]] | None, str | None]:
    """Letta's content parts as memoryviz content (the text parts; one is a string) and the reasoning."""
    if raw is None or isinstance(raw, str):
        return raw, None
    parts = need_list(raw, place)
    texts: list[str] = []
    reasoning: list[str] = []
    kept: list[dict[str, Any]] = []
    plain = True
    for i, part in enumerate(parts):
        pplace = at(place, i)
        part = need_dict(part, pplace)
        kind = part.get("type")
        if kind == "text":
            texts.append(need_str(part.get("text"), at(pplace, "text")))
            plain = plain and set(part) <= {"type", "text"}
        elif kind == "reasoning" and isinstance(part.get("reasoning"), str):
            reasoning.append(part["reasoning"])
            plain = False
        elif kind == "image":
            kept.append(part)
        else:
            plain = False
    if not plain:
        memo["content"] = parts
    content: str | list[dict[str, Any]] | None
    if kept:
        content = [{"type": "text", "text": t} for t in texts] + kept
    elif len(texts) == 1:
        content = texts[0]
    elif texts:
        content = [{"type": "text", "text": t} for t in texts]
    else:
        content = None
    return content, "\n\n".join(reasoning) if reasoning else None


def _packaged_status(text: str) -> bool | None:
    """Whether Letta's packaged function response (``{"status": "OK"|"Failed", "message", "time"}``) says it
    failed."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and value.get("status") in ("OK", "Failed"):
        return bool(value["status"] == "Failed")
    return None


def _read_message(agent: _Agent, message: dict[str, Any], index: int, place: str) -> list[Message]:
    role_raw = need_str(message.get("role"), at(place, "role"))
    role = _ROLES.get(role_raw)
    if role is None:
        raise FormatError(at(place, "role"), f"expected system, user, assistant, tool, summary or approval, got "
                                             f"{role_raw[:40]!r}")
    memo: dict[str, Any] = {k: v for k, v in message.items() if k not in _MAPPED and v not in (None, [], {}, "")}
    if role_raw != role:
        memo["role"] = role_raw
    content, reasoning = _content(message.get("content"), at(place, "content"), memo)
    created = _time(message.get("created_at"), at(place, "created_at"))
    fields: dict[str, Any] = {"role": role, "content": content, "reasoning": reasoning, "created_at": created,
                              "name": opt_str(message.get("name"), at(place, "name")),
                              "external_id": opt_str(message.get("id"), at(place, "id"))}
    seq = len(agent.messages)
    if role == "assistant":
        raw_calls = message.get("tool_calls")
        if role_raw == "approval" and not raw_calls:
            return []
        calls = []
        for j, raw in enumerate(need_list(raw_calls or [], at(place, "tool_calls"))):
            cplace = at(at(place, "tool_calls"), j)
            call = need_dict(raw, cplace)
            call_id = need_str(call.get("id"), at(cplace, "id"))
            function = need_dict(call.get("function"), at(cplace, "function"))
            fname = need_str(function.get("name"), at(at(cplace, "function"), "name"))
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                arguments = dump_arguments(arguments)
            elif not isinstance(arguments, str):
                raise FormatError(at(at(cplace, "function"), "arguments"),
                                  f"expected a string or an object, got {json_type(arguments)}")
            calls.append({"id": call_id, "function": {"name": fname, "arguments": arguments}})
            agent.calls[call_id] = _Call(seq, fname, load_arguments(arguments))
            agent.call_order.append(call_id)
        fields["tool_calls"] = calls
        return [make_message(place, **fields, extra={NAME: memo} if memo else {})]
    if role == "tool":
        return _tool_messages(agent, message, fields, memo, index, place)
    return [make_message(place, **fields, extra={NAME: memo} if memo else {})]


def _tool_messages(agent: _Agent, message: dict[str, Any], fields: dict[str, Any], memo: dict[str, Any],
                   index: int, place: str) -> list[Message]:
    """One tool message per return (Letta's own expansion for OpenAI: content the return's ``func_response``); a
    message whose returns name no call is one tool message with its content (older files)."""
    text = fields["content"] if isinstance(fields["content"], str) else ""
    returns = need_list(message.get("tool_returns") or [], at(place, "tool_returns"))
    own_id = opt_str(message.get("tool_call_id"), at(place, "tool_call_id"))
    answers: list[tuple[str, str | list[dict[str, Any]] | None, bool | None, dict[str, Any]]] = []
    explicit = [need_dict(r, at(at(place, "tool_returns"), j)) for j, r in enumerate(returns)]
    if explicit and all(isinstance(r.get("tool_call_id"), str) or (len(explicit) == 1 and own_id)
                        for r in explicit):
        for r in explicit:
            call_id = r.get("tool_call_id") or own_id
            assert call_id is not None
            response = r.get("func_response")
            body: str | list[dict[str, Any]] | None = response if isinstance(response, str) else fields["content"]
            status = r.get("status")
            failed = status == "error" if status in ("success", "error") else None
            rest = {k: v for k, v in r.items() if k not in ("tool_call_id", "func_response") and v not in (None, [])}
            answers.append((call_id, body, failed, rest))
        if len(explicit) == 1 and isinstance(explicit[0].get("func_response"), str) and \
                explicit[0]["func_response"] != text:
            memo.setdefault("content", message.get("content"))
    else:
        if own_id is None:
            raise FormatError(at(place, "tool_call_id"), "a tool message needs the id of the call it answers")
        status = explicit[0].get("status") if explicit else None
        failed = status == "error" if status in ("success", "error") else None
        rest = {k: v for k, v in explicit[0].items() if v not in (None, [])} if explicit else {}
        answers.append((own_id, fields["content"], failed, rest))
    out: list[Message] = []
    for call_id, body, failed, rest in answers:
        seq = len(agent.messages) + len(out)
        body_text = body if isinstance(body, str) else ""
        if failed is None:
            failed = _packaged_status(body_text)
        extra = dict(memo)
        if rest:
            extra["tool_return"] = rest
        if len(answers) > 1:
            extra["returns_of_one_message"] = len(answers)
        out.append(make_message(place, **{**fields, "content": body, "tool_call_id": call_id, "is_error": failed},
                                extra={NAME: extra} if extra else {}))
        agent.returns[call_id] = _Return(seq, failed, body_text, fields["created_at"])
    return out


def _conversation(agent: _Agent, notes: list[str]) -> Any:
    entry = agent.entry
    in_context: list[int] = []
    if agent.schema == "current":
        positions = {m.get("id"): i for i, m in enumerate(agent.raw_messages) if isinstance(m.get("id"), str)}
        missing = 0
        for j, ref in enumerate(need_list(entry.get("in_context_message_ids") or [],
                                          at(agent.place, "in_context_message_ids"))):
            ref = need_str(ref, at(at(agent.place, "in_context_message_ids"), j))
            if ref in positions:
                in_context.extend(agent.seqs_of[positions[ref]])
            else:
                missing += 1
    else:
        missing = 0
        read_at = {original: i for i, original in enumerate(agent.original)}
        for j, ref in enumerate(need_list(entry.get("in_context_message_indices") or [],
                                          "in_context_message_indices")):
            if not isinstance(ref, int) or isinstance(ref, bool):
                raise FormatError(at("in_context_message_indices", j), f"expected an index, got {json_type(ref)}")
            if 0 <= ref < len(agent.seqs_of):
                in_context.extend(agent.seqs_of[read_at[ref]])
            else:
                missing += 1
        if "in_context_message_indices" not in entry:
            # Letta 0.6.43 marked each message instead.
            for i, message in enumerate(agent.raw_messages):
                if message.get("in_context") is True:
                    in_context.extend(agent.seqs_of[i])
    if missing:
        notes.append(f"{agent.place or 'the agent'}: {missing} in-context message(s) not in the file's messages")
    tools = []
    for tool in agent.tools:
        schema = tool.get("json_schema")
        if isinstance(schema, dict) and isinstance(schema.get("name"), str):
            tools.append({"type": "function", "function": schema})
    meta: dict[str, Any] = {"in_context_seqs": in_context, NAME: {"schema": agent.schema}}
    for key in ("agent_type", "id", "version"):
        if isinstance(entry.get(key), str):
            meta[NAME][key] = entry[key]
    started = next((m.created_at for m in agent.messages if m.created_at), None)
    return make_conversation(agent.place or "input", messages=agent.messages, external_id=agent.key,
                             title=agent.name, source_format=NAME, agent=agent.name, tools=tools or None,
                             started_at=started, metadata=meta)


# --- block histories ----------------------------------------------------------------------------------------------

@dataclass
class _Event:
    sort: tuple[float, int, int, int]
    agent: _Agent
    index: int  # the Letta message
    seq: int | None
    at: datetime | None
    value: str | None = None  # a rendering
    edit: Edit | None = None
    failed: bool | None = None


def _block_histories(agents: list[_Agent], export: datetime | None,
                     notes: list[str]) -> dict[int, list[VersionIn]]:
    """Every block's versions (by ``id()`` of its dict in the file), from the renderings and the edits of every
    agent that has it."""
    events: dict[int, list[_Event]] = {}
    holders: dict[int, dict[str, Any]] = {}
    skipped_tools: set[str] = set()
    foreign = 0
    for agent in agents:
        by_label = {block["label"]: block for block, _ in agent.blocks}
        for block in by_label.values():
            holders[id(block)] = block
            events.setdefault(id(block), [])
        clock = float("-inf")
        for index, message in enumerate(agent.raw_messages):
            when = agent.times[index]
            clock = _stamp(when) if when else clock
            seqs = agent.seqs_of[index]
            if message.get("role") == "system" and seqs:
                text = agent.messages[seqs[0]].text
                rendered = rendered_blocks(text)
                shown = _rendered_at(text) if agent.schema == "current" else None
                # The current Letta rewrites its system message in place: what it shows is memory at the time it
                # says (to the second), after every edit made until then.
                sort_time = _stamp(shown) + 1 if shown else clock
                for label, value in rendered.items():
                    shown_block = by_label.get(label)
                    if shown_block is not None:
                        events[id(shown_block)].append(_Event(_sort(agent, sort_time, index, 0), agent, index, seqs[0],
                                                         shown or when, value=value))
            for call_id in _calls_of(agent, index):
                call = agent.calls[call_id]
                edit = memory_edit(call.name, call.args or {}) if call.args is not None else None
                if edit is None:
                    if call.name.startswith(("memory", "core_memory", "rethink")) and call.name not in (
                            "memory_finish_edits",):
                        skipped_tools.add(call.name)
                    continue
                edited = by_label.get(edit.label)
                answer = agent.returns.get(call_id)
                if edited is None:
                    if not (answer and answer.failed):
                        foreign += 1
                    continue
                events[id(edited)].append(_Event(_sort(agent, clock, index, 1), agent, index, call.seq, when,
                                                edit=edit, failed=answer.failed if answer else None))
    if skipped_tools:
        notes.append(f"memory tool calls not replayed ({', '.join(sorted(skipped_tools))}): the block versions they "
                     "made come from the next rendering")
    if foreign:
        notes.append(f"{foreign} memory edit(s) of a block the file does not hold; not read")
    out: dict[int, list[VersionIn]] = {}
    for key, block_events in events.items():
        block = holders[key]
        block_events.sort(key=lambda e: e.sort)
        out[key] = _versions(block_events, block, export)
    return out


def _sort(agent: _Agent, when: float, index: int, kind: int) -> tuple[float, int, int, int]:
    if agent.schema == "older":
        return (0.0, agent.index, index, kind)  # the older Letta wrote a new system message after each edit
    return (when, agent.index, index, kind)


def _calls_of(agent: _Agent, index: int) -> Iterator[str]:
    message = agent.raw_messages[index]
    for call in list_or_empty(message.get("tool_calls")):
        if isinstance(call, dict) and call.get("id") in agent.calls:
            yield call["id"]


_UNKNOWN = object()


def _versions(events: list[_Event], block: dict[str, Any], export: datetime | None) -> list[VersionIn]:
    final = block.get("value") or ""
    applied = [e for e in events if e.value is not None or not e.failed]
    # Forward from each rendering, through the edits.
    forward: list[str | None] = []
    current: str | None = None
    for event in applied:
        if event.value is not None:
            current = event.value
        else:
            assert event.edit is not None
            current = event.edit.forward(current)
        forward.append(current)
    # Backward from the file's value and from each rendering, undoing the edits.
    after: list[str | None] = [None] * len(applied)
    later: str | None = final
    for i in range(len(applied) - 1, -1, -1):
        event = applied[i]
        if event.value is not None:
            after[i] = later
            later = event.value
            continue
        assert event.edit is not None
        before = event.edit.backward(later) if later is not None else None
        # A later value is this edit's result only if the edit can have made it: something the file does not
        # show (an edit in older messages, a change through the API) may lie between them.
        if before is not None or (later is not None and event.edit.forward(None) == later):
            after[i] = later
        later = before
    initial = later
    versions: list[VersionIn] = []
    last: Any = _UNKNOWN

    def emit(op: str, text: str | None, event: _Event | None, when: datetime | None, actor: str | None) -> None:
        versions.append(VersionIn(op=op, text=text, at=when, actor=actor,
                                  session=event.agent.key if event else None,
                                  seq=event.seq if event else None, order=len(versions)))

    if applied and applied[0].value is None and initial is not None:
        # The value before the first edit: the first system message shows it, when it comes first.
        first = min((e for e in applied if e.value is not None), key=lambda e: (_time_key(e.agent, e.index)),
                    default=None)
        start = first if first and _time_key(first.agent, first.index) <= _time_key(applied[0].agent,
                                                                                    applied[0].index) else None
        emit("ADD", initial, start, start.agent.times[start.index] if start else None, None)
        last = initial
    for i, event in enumerate(applied):
        if event.value is not None:
            if not versions:
                # The first version: the value the first system message shows, at that message's time (a system
                # message rewritten in place shows it as of later; nothing earlier is known).
                emit("ADD", event.value, event, event.agent.times[event.index], None)
            elif last is _UNKNOWN or event.value != last:
                emit("UPDATE", event.value, event, event.at, None)
            last = event.value
            continue
        assert event.edit is not None
        value = forward[i] if forward[i] is not None else after[i]
        if event.edit.op == "DELETE":
            emit("DELETE", None, event, event.at, event.agent.name)
            last = _UNKNOWN
            continue
        if value is None:
            last = _UNKNOWN
            continue
        if event.failed is None and value == last:
            continue  # no return says it ran, and it changed nothing
        emit(event.edit.op, value, event, event.at, event.agent.name)
        last = value
    if last is _UNKNOWN or last != final:
        when = _time(block.get("updated_at"), "updated_at") if isinstance(block.get("updated_at"), str) else export
        emit("UPDATE" if versions else "ADD", final, None, when, None)
    return versions


def _time_key(agent: _Agent, index: int) -> tuple[float, int, int]:
    when = agent.times[index]
    return (_stamp(when) if when else float("-inf"), agent.index, index)


def _blocks_store(agent: _Agent, versions_of: dict[int, list[VersionIn]]) -> StoreIn:
    records = []
    for block, place in agent.blocks:
        metadata: dict[str, Any] = {}
        for key, name in (("description", "description"), ("read_only", "read_only"), ("metadata", "metadata"),
                          ("metadata_", "metadata"), ("id", "block_id")):
            if block.get(key) is not None:
                metadata[name] = block[key]
        if block.get("hidden"):
            metadata["hidden"] = block["hidden"]
        limit = block.get("limit")
        records.append(RecordIn(
            external_id=block["label"], text=_block_value(block, place), value=block, metadata=metadata,
            char_limit=limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else None,
            created_at=_time(block.get("created_at"), at(place, "created_at")),
            updated_at=_time(block.get("updated_at"), at(place, "updated_at")),
            versions=versions_of.get(id(block), []),
        ))
    return StoreIn(key=f"{agent.key}/core_memory", name="core_memory", kind="blocks", source_format=NAME,
                   scope={"agent_id": agent.key}, agent=agent.name, records=records)


# --- archival searches ------------------------------------------------------------------------------------------

def _recalls(agent: _Agent, notes: list[str]) -> list[RecallIn]:
    recalls = []
    unanswered = 0
    for call_id in agent.call_order:
        call = agent.calls[call_id]
        if call.name != "archival_memory_search":
            continue
        answer = agent.returns.get(call_id)
        if answer is None:
            unanswered += 1
            continue
        args = call.args or {}
        params: dict[str, Any] = {}
        if isinstance(args.get("top_k"), int):
            params["limit"] = args["top_k"]
        for key in ("tags", "tag_match_mode", "start_datetime", "end_datetime", "page", "start"):
            if args.get(key) is not None:
                params[key] = args[key]
        items = [] if answer.failed else archival_items(answer.text)
        if items is None:
            notes.append(f"{agent.place or 'the agent'}: the archival search return at message {answer.seq} is not "
                         "a result list memoryviz reads; kept as one item")
            items = [RecallItemIn(text=answer.text, rank=1)]
        query = args.get("query")
        recalls.append(RecallIn(
            session=agent.key, seq=answer.seq, store=f"{agent.key}/archival",
            query=query if isinstance(query, str) else None, params=params, placement="tool_result",
            persisted=True, at=answer.at, items=items, external_id=call_id,
        ))
    if unanswered:
        notes.append(f"{agent.place or 'the agent'}: {unanswered} archival search(es) without a return in the file")
    return recalls


def archival_items(text: str) -> list[RecallItemIn] | None:
    """The items of an ``archival_memory_search`` return: Letta packs the result as ``{"status", "message",
    "time"}`` with the message the ``str()`` of a list of ``{id, timestamp, content, tags, relevance}`` (the older
    Letta: of a tuple ``(list, count)``, items ``{timestamp, content}``). None when it is none of these."""
    message: Any = text
    if text.startswith("{"):
        try:
            packed = json.loads(text)
        except (ValueError, RecursionError):
            packed = None
        if isinstance(packed, dict) and "message" in packed:
            message = packed["message"]
    if isinstance(message, list):
        results: Any = message
    elif isinstance(message, str):
        stripped = message.strip()
        if stripped in ("", "[]", "None", "No results found."):
            return []
        if len(stripped) > _MAX_RETURN_PARSE or not stripped.startswith(("[", "(")):
            return None
        try:
            # A literal only: no name is looked up, nothing is called.
            results = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    else:
        return None
    if isinstance(results, tuple) and results and isinstance(results[0], list):
        results = results[0]
    if not isinstance(results, list) or not all(isinstance(r, dict) and isinstance(r.get("content"), str)
                                                for r in results):
        return None
    items = []
    for rank, result in enumerate(results, 1):
        relevance = result.get("relevance")
        score = relevance.get("rrf_score") if isinstance(relevance, dict) else None
        meta = {k: v for k, v in result.items() if k in ("timestamp", "tags", "relevance") and v not in (None, [])}
        items.append(RecallItemIn(
            text=result["content"], rank=rank,
            score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            ref={"id": result["id"]} if isinstance(result.get("id"), str) else {}, metadata=meta,
        ))
    return items
