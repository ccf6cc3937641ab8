"""AgentScope session: a 1.x ``JSONSession`` file (``{module_name: state_dict, ...}``, every agent in it) or a 2.x
``AgentState`` dumped with ``agent.state.model_dump(mode="json")``.

What each agent of the file becomes:

- **a conversation**: its ``memory.content`` (``[[msg, marks], ...]``), read by the ``agentscope`` message reader
  (marks kept, ``compressed`` and ``hint`` among them; ``_compressed_summary`` kept in the metadata, and as
  ``metadata["summary"]`` when there is one); a memory with ``compressed`` messages is also a compaction, placed
  before the first message after them, saying which went out and the summary that came in (``_compaction``).
  The agent's ``_sys_prompt`` leads it as a ``system`` message: it is
  what the model receives first on every call (``ReActAgent._reasoning`` formats ``Msg("system", self.sys_prompt,
  "system")`` before the memory: tests/samples/memory/agentscope/agent_model_calls.json), though AgentScope keeps it
  in the agent, not in the memory. It carries the id ``_sys_prompt`` (the importer appends a later file's messages
  by id; a prompt changed between two files is not appended again: the snapshots show it) and
  ``extra["agentscope"]["sys_prompt"]``. Its ``external_id``: the session as the file names it (the file name less
  ``.json``: ``{user_id}_{session_id}``, or ``{session_id}``), else the agent's name; the same for every file of
  one session, so that a later file appends its new messages to the same session. With several agents in one
  file, the agent's name follows (``user_1_trip/Friday``).
- **recalls**: the ``<long_term_memory>`` messages (name ``long_term_memory``, role user: the long-term memory's
  ``retrieve`` output, one memory per line) and the ``<retrieved_knowledge>`` messages (one chunk per content block
  between the opening and the closing blocks). Both stay in the memory and are sent again on every later call:
  ``placement="message"``, ``persisted=True``. The query is the user message they answer. The items carry no id:
  the file holds only their text. A long-term memory recall points to a ``records`` store of ``source_format``
  ``mem0`` scoped ``{"user_id": <from the file name>, "agent_id": <the agent's name>}`` with no records (the
  session file holds none: ``long_term_memory`` is ``{}``), so that a mem0 export of the same scope joins it; a
  knowledge recall to a ``knowledge`` store of the agent, with no records either. ``join_records`` matches the
  items to a store's records once they are known: by the text (mem0's md5 hash, then the folded text), and a
  knowledge item then takes its chunk's ``{"doc_id", "chunk_id"}`` from the record it matched (AgentScope's
  ``Document.id`` is new on every retrieval: never an identity).
- **a snapshot**: the agent's whole ``state_dict`` verbatim (memory, long-term memory, toolkit, plan notebook, name,
  system prompt, anything else), ``session`` the conversation and ``seq`` its last message. ``parent`` is left
  None: the file does not say which state came before; two files of one session give two snapshots of the same
  session whose ``seq`` orders them. Its ``external_id``: the session, the number of messages and a hash of the
  state (``user_1_trip@11:3f0c...``), the same for the same state and different for any change.

A module of the file that is not an agent: an ``InMemoryMemory`` state becomes a conversation and a snapshot;
anything else a snapshot, and a note.

2.x: ``AgentState`` (``session_id``, ``summary``, ``context``, ``reply_context``, ``tool_context``,
``tasks_context``, ...). ``context`` becomes the conversation (``external_id`` the ``session_id``), split as
AgentScope's own ``OpenAIChatFormatter`` splits a reply for the model: a hint block becomes a user message, a tool
result a ``tool`` message, the text and calls before them an assistant message; its messages are turned into 1.x
ones and read by the same ``agentscope`` reader. The summary is kept (``metadata["summary"]``), the whole state is
the snapshot. The state holds neither the system prompt nor the agent's name (``name`` gives the agent where the
caller knows it).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from agents.memory.ledger import (
    CompactionIn,
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    RecordIndex,
    SnapshotIn,
    StoreIn,
    match_items,
    version_at,
)
from agents.memory.schema import Conversation, Message

from . import agentscope
from .base import (
    FormatError,
    FormatSpec,
    at,
    json_type,
    make_conversation,
    make_message,
    need_dict,
    need_list,
    need_str,
    opt_str,
)
from .json_input import check_depth

NAME = "agentscope_session"
SPEC = FormatSpec(
    name=NAME,
    label="AgentScope session",
    description="AgentScope 1.x JSONSession file (every agent's state_dict) or a 2.x AgentState dump",
    extension="json",
    media_type="application/json",
)

LTM_OPEN = "<long_term_memory>"
LTM_CLOSE = "</long_term_memory>"
LTM_NAME = "long_term_memory"
KNOWLEDGE = "knowledge"
KNOWLEDGE_OPEN = "<retrieved_knowledge>"
KNOWLEDGE_CLOSE = "</retrieved_knowledge>"
SYS_PROMPT_ID = "_sys_prompt"
# ReActAgent retrieves with the libraries' defaults: Mem0LongTermMemory.retrieve(msg, limit=5) and
# KnowledgeBase.retrieve(query, limit=5, score_threshold=None).
DEFAULT_LIMIT = 5
_V2_KEYS = frozenset({"session_id", "summary", "context"})


# --- detection ----------------------------------------------------------------------------------------------------

def _is_memory_state(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("content"), list) and "_compressed_summary" in value


def _is_agent_state(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("memory"), dict) and isinstance(
        value["memory"].get("content"), list)


def _is_v2(data: Any) -> bool:
    return (isinstance(data, dict) and data.keys() >= _V2_KEYS and isinstance(data.get("context"), list)
            and isinstance(data.get("session_id"), str)
            and ("reply_context" in data or "tool_context" in data or "tasks_context" in data))


def detect(data: Any) -> bool:
    if _is_v2(data):
        return True
    if not isinstance(data, dict) or not data or not all(isinstance(v, dict) for v in data.values()):
        return False
    return any(_is_agent_state(v) or _is_memory_state(v) for v in data.values())


# --- the file name --------------------------------------------------------------------------------------------------

def session_of_name(name: str | None) -> tuple[str | None, str | None, str | None]:
    """(session key, user_id, session_id) from a ``JSONSession`` file name: ``{user_id}_{session_id}.json`` or
    ``{session_id}.json``. The key is the name less ``.json`` (what identifies the session's file). Both ids may
    hold an underscore, so the split is a guess: at the last one (a user id such as ``user_1`` is common, a session
    id is usually one token, a uuid or a short id); a name without one is a session id alone."""
    if not name:
        return None, None, None
    stem = os.path.basename(name.replace("\\", "/"))
    if stem.lower().endswith(".json"):
        stem = stem[:-5]
    if not stem:
        return None, None, None
    user, sep, session = stem.rpartition("_")
    if sep and user and session:
        return stem, user, session
    return stem, None, stem


# --- reading ------------------------------------------------------------------------------------------------------

def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    check_depth(data, "input")
    if _is_v2(data):
        return _read_v2(data, name)
    need_dict(data, "input")
    if not data:
        raise FormatError("input", "an empty session file: it holds no module's state")
    key, user_id, _ = session_of_name(name)
    document = MemoryDocument(format=NAME)
    agents = [k for k, v in data.items() if _is_agent_state(v)]
    conversations = [k for k, v in data.items() if _is_agent_state(v) or _is_memory_state(v)]
    if not conversations:
        raise FormatError("input", "no agent in the session file: no module has a memory with content")
    used: set[str] = set()
    for module, state in data.items():
        need_dict(state, module)
        if _is_agent_state(state) or _is_memory_state(state):
            agent = _agent_name(state, module) if module in agents else None
            base = key or agent or module
            conv_id = base if len(conversations) == 1 else f"{base}/{agent or module}"
            while conv_id in used:
                conv_id = f"{conv_id}/{module}"
            used.add(conv_id)
            _read_module(document, module, state, conv_id, agent, user_id, name)
        else:
            document.snapshots.append(SnapshotIn(external_id=_snapshot_id(module if key is None else f"{key}/{module}",
                                                                          None, state),
                                                 value=state, source_format=NAME, format_version="1"))
            document.notes.append(f"{module}: not an agent nor a memory; kept as a snapshot")
    if len(agents) == 1:
        document.agent = document.conversations[0].agent
    return document


def _agent_name(state: dict[str, Any], module: str) -> str:
    value = state.get("name")
    if value is None:
        return module
    return need_str(value, at(module, "name"))


def _read_module(document: MemoryDocument, module: str, state: dict[str, Any], conv_id: str, agent: str | None,
                 user_id: str | None, file_name: str | None) -> None:
    memory_place = at(module, "memory") if agent is not None else module
    memory = state["memory"] if agent is not None else state
    conversation = agentscope.read(memory, memory_place)[0]
    messages = list(conversation.messages)
    if agent is not None and "_sys_prompt" in state:
        prompt = state["_sys_prompt"]
        if not isinstance(prompt, str):
            raise FormatError(at(module, "_sys_prompt"), f"expected a string, got {json_type(prompt)}")
        if prompt:
            messages.insert(0, make_message(at(module, "_sys_prompt"), role="system", name="system", content=prompt,
                                            external_id=SYS_PROMPT_ID, extra={"agentscope": {"sys_prompt": True}}))
    metadata = dict(conversation.metadata)
    session_meta: dict[str, Any] = {"module": module}
    if file_name:
        session_meta["file"] = os.path.basename(file_name)
    if user_id:
        session_meta["user_id"] = user_id
    metadata[NAME] = session_meta
    summary = memory.get("_compressed_summary")
    if isinstance(summary, str) and summary:
        metadata["summary"] = summary
    conversation = make_conversation(memory_place, messages=messages, external_id=conv_id, agent=agent,
                                      source_format=NAME, metadata=metadata)
    document.conversations.append(conversation)
    compaction = _compaction(conversation, memory.get("_compressed_summary"))
    if compaction is not None:
        document.compactions.append(compaction)
    recalls = _recalls(conversation)
    long_term = knowledge = None
    if agent is not None:
        if "long_term_memory" in state or any(kind == LTM_NAME for kind, _ in recalls):
            long_term = _long_term_store(document, agent, user_id)
        if any(kind == KNOWLEDGE for kind, _ in recalls):
            knowledge = _knowledge_store(document, agent)
    for kind, recall in recalls:
        store = long_term if kind == LTM_NAME else knowledge
        document.recalls.append(recall.model_copy(update={"store": store}))
    document.snapshots.append(SnapshotIn(
        external_id=_snapshot_id(conv_id, len(messages), state), value=state, source_format=NAME, format_version="1",
        agent=agent, session=conv_id, seq=len(messages) - 1 if messages else None))


def _compaction(conversation: Conversation, summary: Any) -> CompactionIn | None:
    """The agent's memory compression (``ReActAgent._compress_memory_if_needed``), as its saved memory shows it: the
    messages marked ``compressed`` went out (every later call is sent the summary instead of them: ``get_memory``
    prepends ``_compressed_summary`` as a user message), placed before the first message after the last of them.
    The file keeps the last summary only: each compression saved is one event, told by the last message it covers
    (a later save that compressed more is a later event)."""
    out = [seq for seq, m in enumerate(conversation.messages) if "compressed" in m.marks]
    if not out:
        return None
    runs: list[tuple[int, int]] = []
    for seq in out:
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    last = conversation.messages[out[-1]]
    after = out[-1] + 1
    return CompactionIn(
        external_id=f"agentscope:compressed:{last.external_id or out[-1]}", session=conversation.external_id,
        seq=after if after < len(conversation.messages) else None, at=last.created_at,
        summary=summary if isinstance(summary, str) else None, source="marks", went_out=runs)


def _unique_key(document: MemoryDocument, key: str) -> str:
    keys = {s.key for s in document.stores}
    out, n = key, 2
    while out in keys:
        out, n = f"{key}#{n}", n + 1
    return out


def _long_term_store(document: MemoryDocument, agent: str, user_id: str | None) -> str:
    scope = {"user_id": user_id, "agent_id": agent} if user_id else {"agent_id": agent}
    for store in document.stores:
        if store.kind == "records" and store.source_format == "mem0" and store.scope == scope:
            return store.key
    key = _unique_key(document, "mem0:" + ":".join(str(v) for v in scope.values()))
    document.stores.append(StoreIn(key=key, name=f"long-term memory of {agent}", kind="records",
                                   source_format="mem0", scope=scope, agent=agent))
    return key


def _knowledge_store(document: MemoryDocument, agent: str) -> str:
    for store in document.stores:
        if store.kind == "knowledge" and store.agent == agent:
            return store.key
    key = _unique_key(document, f"knowledge:{agent}")
    document.stores.append(StoreIn(key=key, name=f"knowledge of {agent}", kind="knowledge", source_format=NAME,
                                   agent=agent))
    return key


def _snapshot_id(session: str, count: int | None, state: Any) -> str:
    digest = hashlib.sha256(json.dumps(state, sort_keys=True, ensure_ascii=False,
                                       separators=(",", ":")).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{session}@{count}:{digest}" if count is not None else f"{session}:{digest}"


# --- recalls ------------------------------------------------------------------------------------------------------

def _recall_kind(message: Message) -> str | None:
    if message.role != "user":
        return None
    content = message.content
    if isinstance(content, str):
        if content.startswith(LTM_OPEN) and content.endswith(LTM_CLOSE):
            return LTM_NAME
        return None
    if (isinstance(content, list) and len(content) >= 2 and _part_text(content[0]).startswith(KNOWLEDGE_OPEN)
            and _part_text(content[-1]) == KNOWLEDGE_CLOSE):
        return KNOWLEDGE
    return None


def _part_text(part: dict[str, Any]) -> str:
    text = part.get("text") if part.get("type") == "text" else None
    return text if isinstance(text, str) else ""


def _query_for(messages: Sequence[Message], seq: int) -> str | None:
    """The user message a retrieval answers: ReActAgent adds the input to the memory, then the long-term memory's
    message, then the knowledge's, so it is the nearest user message before them that is neither."""
    for message in reversed(messages[:seq]):
        if _recall_kind(message) is not None:
            continue
        if message.role == "user" and "hint" not in message.marks:
            return message.text
        return None
    return None


def _long_term_items(text: str) -> list[RecallItemIn]:
    body = text[len(LTM_OPEN):-len(LTM_CLOSE)]
    # "The content below are retrieved from long-term memory, which maybe useful:\n" then "\n".join(memories)
    _, sep, rest = body.partition("\n")
    lines = (rest if sep else "").split("\n")
    return [RecallItemIn(text=line, rank=i) for i, line in enumerate((x for x in lines if x.strip()), 1)]


def _knowledge_items(parts: list[dict[str, Any]]) -> list[RecallItemIn]:
    items = []
    for rank, part in enumerate(parts[1:-1], 1):
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            items.append(RecallItemIn(text=part["text"], rank=rank))
        else:  # an image or other chunk: its block is what identifies it
            items.append(RecallItemIn(text=json.dumps(part, ensure_ascii=False, sort_keys=True), rank=rank,
                                      metadata={"block": part}))
    return items


def recalls_of(conversation: Conversation, *, long_term_store: str | None = None,
               knowledge_store: str | None = None) -> list[RecallIn]:
    """The ``<long_term_memory>`` and ``<retrieved_knowledge>`` messages of an AgentScope conversation (a session
    file's, or a plain ``agentscope`` memory file's) as recalls, each in the store given for its kind (None:
    unknown)."""
    return [recall.model_copy(update={"store": long_term_store if kind == LTM_NAME else knowledge_store})
            for kind, recall in _recalls(conversation)]


def _recalls(conversation: Conversation) -> list[tuple[str, RecallIn]]:
    out: list[tuple[str, RecallIn]] = []
    messages = conversation.messages
    for seq, message in enumerate(messages):
        kind = _recall_kind(message)
        if kind is None:
            continue
        if kind == LTM_NAME:
            assert isinstance(message.content, str)
            items = _long_term_items(message.content)
        else:
            assert isinstance(message.content, list)
            items = _knowledge_items(message.content)
        out.append((kind, RecallIn(
            session=conversation.external_id, seq=seq, query=_query_for(messages, seq),
            params={"limit": DEFAULT_LIMIT}, placement="message", persisted=True, at=message.created_at,
            items=items, external_id=message.external_id or f"{conversation.external_id}:{seq}")))
    return out


def join_records(recalls: Sequence[RecallIn], store: str, records: Sequence[RecordIn]) -> list[RecallIn]:
    """The recalls with the items of those reading ``store`` matched to its ``records`` (once a mem0 export or a
    knowledge base's chunks are known beside the session): by the text (md5, then folded), the version being the
    one whose text was recalled (AgentScope's times are local and naive, mem0's UTC: the text is surer). A
    knowledge item takes its chunk's ``{"doc_id", "chunk_id"}`` from the matched record's metadata."""
    index = RecordIndex.of(records)
    by_id = {r.external_id: r for r in records}
    out = []
    for recall in recalls:
        if recall.store != store:
            out.append(recall)
            continue
        items = []
        for item in match_items(recall.items, index):
            record = by_id.get(item.record) if item.record else None
            if record is not None:
                update: dict[str, Any] = {"version": version_at(record.ordered_versions(), None, item.text)}
                if "doc_id" in record.metadata and "chunk_id" in record.metadata and not item.ref:
                    update["ref"] = {"doc_id": record.metadata["doc_id"], "chunk_id": record.metadata["chunk_id"]}
                item = item.model_copy(update=update)
            items.append(item)
        out.append(recall.model_copy(update={"items": items}))
    return out


# --- 2.x ------------------------------------------------------------------------------------------------------------

def _read_v2(data: dict[str, Any], name: str | None) -> MemoryDocument:
    key, user_id, _ = session_of_name(name)
    session = need_str(data["session_id"], "session_id") or key or "agentscope"
    context = need_list(data["context"], "context")
    msgs: list[dict[str, Any]] = []
    agent: str | None = None
    for i, msg in enumerate(context):
        place = at("context", i)
        need_dict(msg, place)
        if msg.get("role") == "assistant" and isinstance(msg.get("name"), str) and agent is None:
            agent = msg["name"]
        msgs.extend(_v1_msgs(msg, place))
    # Every field the 1.x reader checks was checked above, at its 2.x place.
    conversation = agentscope.read(msgs, "context")[0]
    metadata: dict[str, Any] = dict(conversation.metadata)
    summary = data.get("summary")
    if isinstance(summary, list):
        summary = "\n".join(_part_text(b) for b in summary if isinstance(b, dict) and _part_text(b))
    elif summary is not None and not isinstance(summary, str):
        raise FormatError("summary", f"expected a string or an array of blocks, got {json_type(summary)}")
    if summary:
        metadata["summary"] = summary
    metadata[NAME] = {"version": 2, **({"user_id": user_id} if user_id else {})}
    conversation = make_conversation("context", messages=conversation.messages, external_id=session, agent=agent,
                                     source_format=NAME, metadata=metadata)
    document = MemoryDocument(format=NAME, agent=agent)
    document.conversations.append(conversation)
    count = len(conversation.messages)
    document.snapshots.append(SnapshotIn(
        external_id=_snapshot_id(session, count, data), value=data, source_format=NAME, format_version="2",
        agent=agent, session=session, seq=count - 1 if count else None))
    return document


def _v1_msgs(msg: dict[str, Any], place: str) -> list[dict[str, Any]]:
    """One 2.x ``Msg`` as the 1.x Msg dicts its blocks make when AgentScope's ``OpenAIChatFormatter`` formats it:
    the text and calls before a hint or a tool result form one message, a hint a user message, each tool result a
    tool message. The pieces after the first take the id ``{id}:{n}``."""
    role = msg.get("role")
    if role not in agentscope.ROLES:
        shown = role if isinstance(role, str) else json_type(role)
        raise FormatError(at(place, "role"), f"expected user, assistant or system, got {shown!r}"[:120])
    name = opt_str(msg.get("name"), at(place, "name"))
    msg_id = need_str(msg.get("id"), at(place, "id"))
    stamp = opt_str(msg.get("created_at"), at(place, "created_at"))
    metadata = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
    cplace = at(place, "content")
    raw_content = msg.get("content")
    content: list[Any] = ([{"type": "text", "text": raw_content}] if isinstance(raw_content, str)
                          else need_list(raw_content, cplace))
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    # Each piece takes the time of its first block (a reply's blocks are written as it goes), else the message's.
    pending_stamp: list[str | None] = []

    def emit(item_role: Any, item_name: Any, blocks: list[dict[str, Any]], when: str | None) -> None:
        piece_id = msg_id if not out else f"{msg_id}:{len(out)}"
        out.append({"id": piece_id, "name": item_name, "role": item_role, "content": blocks,
                    "metadata": metadata if not out else {}, "timestamp": when or stamp})

    def flush() -> None:
        if pending:
            emit(role, name, list(pending), pending_stamp[0])
            pending.clear()
            pending_stamp.clear()

    for i, block in enumerate(content):
        bplace = at(cplace, i)
        need_dict(block, bplace)
        kind = block.get("type")
        when = opt_str(block.get("created_at"), at(bplace, "created_at"))
        if kind in ("text", "thinking", "tool_call", "data"):
            pending_stamp.append(when)
        if kind == "text":
            pending.append({"type": "text", "text": need_str(block.get("text"), at(bplace, "text"))})
        elif kind == "thinking":
            pending.append({"type": "thinking", "thinking": need_str(block.get("thinking"), at(bplace, "thinking"))})
        elif kind == "tool_call":
            raw = need_str(block.get("input"), at(bplace, "input"))
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            pending.append({"type": "tool_use", "id": need_str(block.get("id"), at(bplace, "id")),
                            "name": need_str(block.get("name"), at(bplace, "name")),
                            "input": parsed if isinstance(parsed, dict) else {}, "raw_input": raw})
        elif kind == "hint":
            flush()
            hint = block.get("hint")
            parts = ([{"type": "text", "text": hint}] if isinstance(hint, str)
                     else [_v1_part(b, at(at(bplace, "hint"), k)) for k, b in
                           enumerate(need_list(hint, at(bplace, "hint")))])
            emit("user", None, parts, when)
        elif kind == "tool_result":
            flush()
            output = block.get("output")
            if isinstance(output, list):
                parts = [_v1_part(b, at(at(bplace, "output"), k)) for k, b in enumerate(output)]
                # The formatter sends the text of a tool result as one string (its data blocks aside).
                output = ("\n".join(p["text"] for p in parts) if all(p.get("type") == "text" for p in parts)
                          else parts)
            elif not isinstance(output, str):
                raise FormatError(at(bplace, "output"), f"expected a string or an array, got {json_type(output)}")
            emit("system", "system", [{"type": "tool_result", "id": need_str(block.get("id"), at(bplace, "id")),
                                       "name": need_str(block.get("name"), at(bplace, "name")), "output": output}],
                 when)
        elif kind == "data":
            pending.append(_v1_part(block, bplace))
        else:
            raise FormatError(at(bplace, "type"), f"expected text, thinking, hint, tool_call, tool_result or data, "
                                                  f"got {kind if isinstance(kind, str) else json_type(kind)!r}"[:160])
    flush()
    return out


def _v1_part(block: Any, place: str) -> dict[str, Any]:
    need_dict(block, place)
    if block.get("type") == "text":
        return {"type": "text", "text": need_str(block.get("text"), at(place, "text"))}
    return {k: v for k, v in block.items() if k not in {"id", "created_at", "finished_at"}}
