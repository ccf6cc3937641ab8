"""Every framework's history format: detect it, read it into the message model, write the model back out.

Public API (the commands, views, API and importer all call these):

- ``FORMATS``: name -> ``FormatSpec`` (name, label, description, extension, media_type).
- ``detect_format(data)``: the format of a parsed document; ``FormatError`` when unknown or ambiguous.
- ``read_data(data, format=None)``: conversations from parsed JSON (or a list of JSONL rows).
- ``read_input(source, format=None, *, name=None)``: conversations from a path, ``"-"`` (stdin) or a binary file
  object. ``name`` is the file name to judge the input by when ``source`` does not carry it (an upload stored
  under another name, pasted text): ``travel.jsonl`` means JSON Lines, as the path does on the command line.
  Without it the name is the path's, or the file object's ``name`` attribute.
- ``iter_conversations(source, format=None, *, name=None)``: the same, one conversation at a time.
- ``open_stream(source, format=None, *, name=None)``: ``ConversationStream``s whose messages are read as they are
  consumed, so that a single conversation of a million messages never sits in memory (openai and native stream
  message by message; JSONL line by line; an array of documents in any format document by document; any other big
  document is read whole).
- ``write_chunks(conversations, format, report, on_invalid="skip")``: write, as a generator of text pieces
  (each conversation's messages are iterated once, in order, so a lazy sequence from the database works) that
  fills in a ``WriteReport``: what the target format could not hold, and for ``openai_jsonl`` which
  conversations were skipped (``on_invalid="skip"``) for breaking the protocol; ``"stop"`` raises instead.
  ``write_conversations(conversations, format, out, ...)`` writes them into a file object, ``dumps(...)`` into a
  string; both return the report.

- ``open_layers(source, format=None, *, name=None)``: every layer a file holds (a context manager giving ``Layers``):
  its conversations, streamed as ``open_stream`` streams them, then, once they are read, its memory layers
  (``Layers.memory()``, a ``ledger.MemoryDocument``): what a memory format holds (``memory_files``: mem0, Letta,
  LangGraph, ... and SQLite databases), native's ``memory`` section, and the recalls a message format carries in its
  messages (AutoGen's ListMemory message in a ``save_state``, AgentScope's ``<long_term_memory>`` messages). The one
  path every import takes (the command line, the upload page, the API, the benchmarks).
- ``write_memory(document, format, report)``: memory layers (one store, as ``ledger.exporting.memory_of_store``
  reads it) as a file the library loads: ``mem0`` (``get_all`` output and history rows), ``autogen_memory`` (a
  ``ListMemory`` component), ``langgraph_store`` (items), or ``native``; ``MEMORY_WRITE_FORMATS`` names them.
  ``format_layers(name)``: which layers (``messages``, ``memory``) a format reads and writes.

Small inputs (up to 8 MB) are parsed whole, so that a JSON syntax error names its line and column; bigger ones
are parsed with ijson, and detection looks at their first megabyte.

Detection rules (a file can always be read as a named format instead):

- ``native``: an object with ``"format": "memoryviz"``.
- ``autogen``: an object whose ``messages`` items have ``type`` SystemMessage, UserMessage, AssistantMessage or
  FunctionExecutionResultMessage, or an ``AssistantAgentState`` wrapper with ``llm_context``.
- ``agentscope``: an object whose ``content`` is a list of ``[msg, marks]`` pairs (or of bare Msg dicts), or a list
  of Msg dicts (``id``, ``name``, ``role``, ``timestamp``). A list whose every object has all of ``Msg.to_dict()``'s
  keys (``id``, ``name``, ``role``, ``content``, ``metadata``, ``timestamp``) is agentscope even where it would
  also read as openai (no tool result in it); with fewer of those keys, it is ambiguous.
- ``langchain``: a list of ``{"type", "data"}`` envelopes.
- ``openai_responses``: items with ``type`` message / function_call / function_call_output / reasoning, or an
  object with ``input`` (and ``instructions``).
- ``anthropic``: ``tool_use`` / ``tool_result`` / ``thinking`` blocks, or an object with a top-level ``system``
  next to ``messages``.
- ``openmanus`` and ``openai`` are both plain role lists; a list is ``openmanus`` only when it clearly is (every
  tool message has a ``name``, no key is null, and tool-call assistants have string content), else ``openai``.
- ``openai_jsonl``: JSON Lines (one object per line with ``messages``); lines in another format are read as that
  format, one document per line.
- A JSON array of documents (lists, or objects with ``messages`` / ``input`` / ``llm_context`` / ...) holds several
  conversations of one format.
When more than one format fits, the error lists the candidates and says to name the format
(``FormatError.choose_format``).
When none fits these rules, detection goes by shape alone: a list (or an object with ``messages``) whose objects
look like chat messages (a ``role`` key, whatever its value, or only Chat Completions keys) is ``openai``
(``openmanus``, ``anthropic`` or ambiguous by the same marks as above), so that its reader names the bad place
(``messages[0].role: ...``) instead of the input being called an unknown format. Validation is the reader's.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import IO, Any

from agents.memory.ledger import CompactionIn, MemoryDocument, RecallIn
from agents.memory.schema import Conversation, Message

from . import (
    agentscope,
    agentscope_session,
    anthropic,
    autogen,
    autogen_memory,
    langchain,
    memory_files,
    native,
    openai,
    openai_jsonl,
    openai_responses,
    openmanus,
)
from .base import ConversationStream, FormatError, FormatSpec, SkippedConversation, WriteReport, json_type
from .json_input import (
    PREVIEW_BYTES,
    SMALL_INPUT,
    Events,
    LiftedStrings,
    PrefixedStream,
    check_depth,
    decode,
    iter_jsonl,
    looks_like_jsonl,
    open_source,
    parse_json,
    preview,
    read_head,
    text_encoding,
)

__all__ = [
    "ALL_FORMATS",
    "FORMATS",
    "MEMORY_FORMATS",
    "MEMORY_WRITE_FORMATS",
    "ConversationStream",
    "FormatError",
    "FormatSpec",
    "Layers",
    "SkippedConversation",
    "WriteReport",
    "detect_format",
    "dumps",
    "format_layers",
    "iter_conversations",
    "open_layers",
    "open_stream",
    "read_data",
    "read_input",
    "write_chunks",
    "write_conversations",
    "write_memory",
]

# In the order the formats are offered (pages, --help); detection does not depend on it.
_CODECS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (native, openai, openai_jsonl, openai_responses, anthropic, autogen, agentscope, langchain, openmanus)
}
FORMATS: dict[str, FormatSpec] = {name: module.SPEC for name, module in _CODECS.items()}
MEMORY_FORMATS: dict[str, FormatSpec] = memory_files.MEMORY_FORMATS
# Every format a file may be read as: the message formats, then the memory formats.
ALL_FORMATS: dict[str, FormatSpec] = {**FORMATS, **MEMORY_FORMATS}


def _codec(name: str) -> ModuleType:
    try:
        return _CODECS[name]
    except KeyError:
        if name in MEMORY_FORMATS:
            raise FormatError("format", f"{name} holds memory layers: read it with open_layers") from None
        raise FormatError("format", f"unknown format {name!r}; valid: {', '.join(sorted(_CODECS))}") from None


# --- detection --------------------------------------------------------------------------------------------------

_DOCUMENT_KEYS = ("messages", "input", "llm_context", "sessions", "_compressed_summary")


def _documents(data: Any) -> list[Any] | None:
    """The documents of a JSON array that holds several conversations, else None."""
    if not isinstance(data, list) or not data:
        return None
    for item in data[:50]:
        if isinstance(item, list):
            continue
        if isinstance(item, dict) and any(k in item for k in _DOCUMENT_KEYS) and "role" not in item:
            continue
        return None
    return data


def _candidates(doc: Any) -> list[str]:
    found = [name for name, module in _CODECS.items() if name != "openai_jsonl" and module.detect(doc)]
    if "openmanus" in found and "openai" in found:
        found.remove("openai")
    if "agentscope" in found and "openai" in found and isinstance(doc, list) and agentscope.full_msgs(doc[:200]):
        found.remove("openai")
    return found


def _loose_candidates(doc: Any) -> list[str]:
    """When no format matches strictly: the formats whose shape (keys) the document has, whatever its values, so
    that a message with a bad role, a missing key or a stray number in the list is read by its format's reader,
    which names the place, rather than reported as an unknown format. Validation is the reader's job."""
    messages = openai.loose_messages_of(doc)
    if messages is None:
        return []
    objects = [m for m in messages[:200] if isinstance(m, dict)]
    if (isinstance(doc, dict) and "system" in doc) or openai.has_anthropic_blocks(objects):
        return ["anthropic"]  # a top-level system or tool_use/tool_result blocks: Anthropic's, as in strict detection
    if isinstance(doc, list) and all(agentscope.looks_like_msg(m) for m in objects):
        # A list of whole Msg dicts is AgentScope's; with fewer of their keys it reads as both.
        return ["agentscope"] if agentscope.full_msgs(objects) else ["openai", "agentscope"]
    if isinstance(doc, list) and openmanus.clearly(objects):
        return ["openmanus"]
    return ["openai"]


def describe_shape(data: Any, depth: int = 0) -> str:
    if isinstance(data, dict):
        keys = ", ".join(list(map(str, data))[:8]) or "no keys"
        return f"an object with keys {keys}"
    if isinstance(data, list):
        if not data:
            return "an empty array"
        if depth >= 2:
            return "an array"
        return f"an array whose first item is {describe_shape(data[0], depth + 1)}"
    return json_type(data)


def detect_format(data: Any) -> str:
    """The format of a parsed document. FormatError when it is none of them or could be several."""
    docs = _documents(data)
    doc = docs[0] if docs else data
    found = _candidates(doc) or _loose_candidates(doc)
    if len(found) == 1:
        return found[0]
    if not found:
        raise FormatError(
            "input",
            f"unknown format: {describe_shape(data)}, which matches none of {', '.join(sorted(ALL_FORMATS))}; "
            "name the format",
            choose_format=True,
        )
    raise FormatError("input", f"ambiguous format: it reads as {' or '.join(found)}; name the format",
                      choose_format=True)


# --- reading ----------------------------------------------------------------------------------------------------

def read_data(data: Any, format: str | None = None) -> list[Conversation]:
    """Conversations from parsed JSON (or, for ``openai_jsonl``, a list of parsed lines)."""
    check_depth(data, "input")
    name = format or detect_format(data)
    codec = _codec(name)
    try:
        docs = None if name in {"openai_jsonl", "native"} else _documents(data)
        if docs is None:
            return list(codec.read(data))
        out: list[Conversation] = []
        for i, doc in enumerate(docs):
            out.extend(codec.read(doc, f"[{i}]"))
        return out
    except RecursionError:
        raise FormatError("input", "nested too deeply") from None


def read_input(
    source: str | os.PathLike[str] | IO[bytes], format: str | None = None, *, name: str | None = None
) -> list[Conversation]:
    return list(iter_conversations(source, format, name=name))


def iter_conversations(
    source: str | os.PathLike[str] | IO[bytes], format: str | None = None, *, name: str | None = None
) -> Iterator[Conversation]:
    """The conversations of any file memoryviz reads, a memory format's included (its message lists)."""
    with open_layers(source, format, name=name) as layers:
        for stream in layers.streams:
            messages = list(stream.messages)
            yield stream.conversation.model_copy(update={"messages": messages})


def open_stream(
    source: str | os.PathLike[str] | IO[bytes], format: str | None = None, *, name: str | None = None,
    sink: MemorySink | None = None,
) -> Iterator[ConversationStream]:
    """``name``: the file name detection goes by (``.jsonl`` is JSON Lines) when ``source`` does not carry it,
    e.g. an upload stored under another name or pasted text that came from a file; only the name is used.
    ``sink``: where a native file's memory section goes, and the format the file was read as (``open_layers``)."""
    if format is not None:
        _codec(format)
    src = open_source(source)
    if name:
        src.name = name
    try:
        head = read_head(src.stream, SMALL_INPUT + 1)
        if not head.strip():
            raise FormatError("input", "empty input: expected JSON or JSONL")
        if len(head) <= SMALL_INPUT:
            yield from _small(head, src.name, format, sink)
        else:
            if text_encoding(head[:4]) != "utf-8":
                raise FormatError("input", "UTF-16 text bigger than 8 MB: save it as UTF-8 to import it")
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:]  # the UTF-8 byte order mark, which the streaming parser would call invalid JSON
            if len(head) < PREVIEW_BYTES:
                head += read_head(src.stream, PREVIEW_BYTES - len(head))
            stream = io.BufferedReader(PrefixedStream(head, src.stream), 1 << 16)
            yield from _large(head, stream, src.name, format, sink)
    finally:
        if src.close:
            src.stream.close()


def _small(head: bytes, name: str, format: str | None, sink: MemorySink | None = None) -> Iterator[ConversationStream]:
    text = decode(head)
    if looks_like_jsonl(text, name):
        # Only "\n" ends a JSON line: str.splitlines would also split inside strings at U+0085, U+2028, ...
        yield from _jsonl(iter_jsonl(iter(text.split("\n"))), format)
        return
    # One JSON document (for openai_jsonl: one row, or an array of rows).
    data = parse_json(text)
    if sink is not None:
        check_depth(data, "input")
        format = format or detect_format(data)
        sink.format = format
        if format == "native" and isinstance(data, dict):
            sink.native_memory = data.get("memory")
    for conv in read_data(data, format):
        yield ConversationStream.whole(conv)


def _jsonl(rows: Iterator[tuple[int, Any]], format: str | None) -> Iterator[ConversationStream]:
    line_format = None if format in (None, "openai_jsonl") else format
    jsonl = openai_jsonl
    seen = False
    for number, row in rows:
        seen = True
        try:
            if line_format is None:
                if format == "openai_jsonl" or jsonl.detect_row(row):
                    line_format = "openai_jsonl"
                else:
                    line_format = detect_format(row)
            convs = [jsonl.read_row(row)] if line_format == "openai_jsonl" else _codec(line_format).read(row)
        except FormatError as exc:
            raise FormatError(f"line {number}", str(exc)) from None
        for conv in convs:
            yield ConversationStream.whole(conv)
    if not seen:
        raise FormatError("input", "empty input: no JSON lines")


def _large(head: bytes, stream: IO[bytes], name: str, format: str | None,
           sink: MemorySink | None = None) -> Iterator[ConversationStream]:
    """``head`` is what was read to tell small from big; ``stream`` gives it again, followed by the rest."""
    head_text = head[:PREVIEW_BYTES].decode("utf-8", errors="ignore")
    if format == "openai_jsonl" or looks_like_jsonl(head_text, name):
        yield from _jsonl(iter_jsonl(iter(stream)), format)
        return
    doc = preview(head[:PREVIEW_BYTES])
    if _nothing_whole(doc) and len(head) > PREVIEW_BYTES:
        doc = preview(head)  # a first item bigger than the preview (one huge message): look at all that was read
    if format is None:
        if _nothing_whole(doc):
            raise FormatError("input", f"cannot tell the format from the first {len(head) / 1e6:.1f} MB (the first "
                                       "message is bigger than that); name the format", choose_format=True)
        format = detect_format(doc)
    codec = _codec(format)
    if sink is not None:
        sink.format = format
    # Long strings go round ijson (whose parser is quadratic in a token's length) and come back as values.
    lifted = LiftedStrings(stream)
    events = Events(io.BufferedReader(lifted, 1 << 16), lifted.values)
    if hasattr(codec, "stream"):
        if format == "native" and sink is not None:
            yield from native.stream(events, sink.keep_native_memory)
        else:
            yield from codec.stream(events)
        return
    first = events.next_or_none()
    if first is None:
        raise FormatError("input", "empty input: expected JSON or JSONL")
    if first[1] == "start_array" and _documents(doc) is not None:
        # An array of documents (one conversation each): read and hand them over one at a time.
        for i, item in enumerate(events.array_items()):
            for conv in codec.read(item, f"[{i}]"):
                yield ConversationStream.whole(conv)
        events.expect_end()
        return
    data = events.value(first[1], first[2])
    events.expect_end()
    for conv in read_data(data, format):
        yield ConversationStream.whole(conv)


def _nothing_whole(doc: Any) -> bool:
    """A preview in which no list holds a whole item: detection would be guessing."""
    if isinstance(doc, list):
        return not doc
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        nested = [v for v in doc.values() if isinstance(v, dict)]
        return all(not v for v in lists) and all(_nothing_whole(v) for v in nested)
    return False


# --- every layer of a file -------------------------------------------------------------------------------------

@dataclass
class MemorySink:
    """What reading a file's conversations learns for its memory layers: the format it was read as, and a native
    file's ``memory`` section (read after its sessions, so kept until they are consumed)."""

    format: str | None = None
    native_memory: Any = None

    def keep_native_memory(self, value: Any) -> None:
        self.native_memory = value


# The message formats whose messages carry recalls (a framework put what it recalled into the list).
_RECALLS_IN_MESSAGES: dict[str, Callable[[Conversation], list[RecallIn]]] = {
    "autogen": autogen_memory.recalls_of,
    "agentscope": agentscope_session.recalls_of,
}


@dataclass
class Layers:
    """Every layer one file holds. Read ``streams`` first (conversations, streamed), then ``memory()``.

    Recalls, versions and snapshots name their conversation by ``external_id``, or as ``"#N"``: the N-th
    conversation of the file (0-based), for one that has no id of its own."""

    sink: MemorySink
    streams: Iterator[ConversationStream]
    _memory: Callable[[], MemoryDocument]
    _document: MemoryDocument | None = field(default=None, init=False)

    @property
    def format(self) -> str | None:
        """The file's format, known once its first conversation is read (or at once, for a memory format)."""
        return self.sink.format

    def memory(self) -> MemoryDocument:
        if self._document is None:
            self._document = self._memory()
        return self._document


@contextlib.contextmanager
def open_layers(
    source: str | os.PathLike[str] | IO[bytes], format: str | None = None, *, name: str | None = None
) -> Iterator[Layers]:
    """Every layer of one file (see ``Layers``). ``format``: any of ``ALL_FORMATS``, or None to detect it (a SQLite
    database by its tables, a memory format's JSON by its shape, else as ``open_stream`` detects)."""
    if format is not None and format not in ALL_FORMATS:
        raise FormatError("format", f"unknown format {format!r}; valid: {', '.join(sorted(ALL_FORMATS))}")
    src = open_source(source)
    if name:
        src.name = name
    try:
        head = read_head(src.stream, SMALL_INPUT + 1)
        if memory_files.is_sqlite(head):
            with _database_layers(source, src.stream, head, format) as layers:
                yield layers
        elif format in MEMORY_FORMATS or (format is None and _memory_json(head)):
            yield _memory_layers(head, src.stream, format, src.name)
        else:
            yield _message_layers(head, src.stream, format, src.name)
    finally:
        if src.close:
            src.stream.close()


def _document_layers(document: MemoryDocument) -> Layers:
    return Layers(MemorySink(format=document.format),
                  (ConversationStream.whole(c) for c in document.conversations), lambda: document)


@contextlib.contextmanager
def _database_layers(source: Any, stream: IO[bytes], head: bytes, format: str | None) -> Iterator[Layers]:
    """The database stays open (and a stream's copy on disk) while the layers are read: a big store's records
    are read from it as they are consumed."""
    if format is not None and format not in MEMORY_FORMATS:
        raise FormatError("input", f"a SQLite database, not a {format} file")
    with contextlib.ExitStack() as stack:
        given = isinstance(source, (str, os.PathLike)) and str(source) != "-"
        # A file with a write-ahead log beside it may still be written by a running agent: its log is read too.
        # Without one, it is opened immutable, and nothing is created beside it.
        live = given and os.path.exists(os.fspath(source) + "-wal")
        if given:
            path: str | os.PathLike[str] = source
        else:
            path = stack.enter_context(memory_files.database_file(stream, head))
        db = stack.enter_context(memory_files.open_database(path, live=live))
        yield _document_layers(memory_files.read_opened(db, format))


def _memory_json(head: bytes) -> bool:
    """Whether an input is one of the memory formats' JSON, by its shape: a small one parsed whole, a big one by
    the preview of its first megabyte (as ``open_stream`` detects a big message file)."""
    if len(head) > SMALL_INPUT:
        if text_encoding(head[:4]) != "utf-8" or looks_like_jsonl(head[:PREVIEW_BYTES].decode("utf-8", "ignore"), ""):
            return False
        return bool(memory_files.detect_memory(preview(head[:PREVIEW_BYTES].removeprefix(b"\xef\xbb\xbf"))))
    text = decode(head)
    if looks_like_jsonl(text, ""):
        return False
    try:
        data = parse_json(text)
    except FormatError:
        return False  # the message path reads it again and names the syntax error
    return bool(memory_files.detect_memory(data))


def _memory_layers(head: bytes, stream: IO[bytes], format: str | None, name: str) -> Layers:
    if len(head) > SMALL_INPUT:
        # A memory format's JSON is read whole; beyond the small size, through the streaming parser, whose memory
        # is bounded by the values it builds rather than by the text.
        lifted = LiftedStrings(io.BufferedReader(PrefixedStream(head, stream), 1 << 16))
        events = Events(io.BufferedReader(lifted, 1 << 16), lifted.values)
        first = events.next_or_none()
        if first is None:
            raise FormatError("input", "empty input: expected JSON")
        data = events.value(first[1], first[2])
        events.expect_end()
    else:
        data = parse_json(decode(head))
    check_depth(data, "input")
    if format is None:
        found = memory_files.detect_memory(data)
        if len(found) != 1:
            raise FormatError("input", f"ambiguous format: it reads as {' or '.join(found)}; name the format",
                              choose_format=True)
        format = found[0]
    try:
        return _document_layers(memory_files.read_memory_data(data, format, name=os.path.basename(name)))
    except RecursionError:
        raise FormatError("input", "nested too deeply") from None


def _message_layers(head: bytes, stream: IO[bytes], format: str | None, name: str) -> Layers:
    sink = MemorySink(format=format)
    source = io.BufferedReader(PrefixedStream(head, stream), 1 << 16)
    streams = open_stream(source, format, name=name, sink=sink)
    found: list[RecallIn] = []
    compacted: list[CompactionIn] = []

    def watched(messages: Iterator[Message], key: str) -> Iterator[Message]:
        """The messages as they go by, keeping the compactions they are (LangChain's summary messages)."""
        for seq, message in enumerate(messages):
            compaction = langchain.compaction_of(message, seq, key)
            if compaction is not None:
                compacted.append(compaction)
            yield message

    def conversations() -> Iterator[ConversationStream]:
        for index, stream in enumerate(streams):
            finder = _RECALLS_IN_MESSAGES.get(sink.format or "")
            if finder is None:
                if sink.format == langchain.NAME:
                    key = stream.conversation.external_id or f"#{index}"
                    stream = ConversationStream(stream.conversation, watched(stream.messages, key))
                yield stream
                continue
            # The framework's recalls are found in the messages as they go by: the conversation is kept whole
            # only for the formats that carry them (AutoGen's and AgentScope's files, read whole anyway).
            messages = list(stream.messages)
            conversation = stream.conversation.model_copy(update={"messages": messages})
            key = conversation.external_id or f"#{index}"
            found.extend(r.model_copy(update={"session": key}) for r in finder(conversation))
            yield ConversationStream(stream.conversation, iter(messages))

    def memory() -> MemoryDocument:
        document = MemoryDocument(format=sink.format or format or "")
        if sink.native_memory is not None:
            document = native.read_memory(sink.native_memory, "memory")
        document.recalls.extend(found)
        document.compactions.extend(compacted)
        return document

    return Layers(sink, conversations(), memory)


# --- writing ----------------------------------------------------------------------------------------------------

def write_chunks(
    conversations: Iterable[Conversation], format: str, report: WriteReport, *, on_invalid: str = "skip",
    memory: MemoryDocument | None = None,
) -> Iterator[str]:
    """The conversations in a format, as pieces of text produced while they are consumed (each conversation's
    messages are iterated once, in order, so a lazy sequence from the database streams through in bounded memory).
    ``report`` (a ``WriteReport`` of this format) fills in as they go: what the format could not hold and, for
    ``openai_jsonl``, which conversations were skipped for breaking the protocol (``on_invalid="stop"`` raises
    FormatError at the first one instead). ``memory``: the memory layers that go with them, which ``native``
    writes after the sessions and every other format reports as not held."""
    codec = _codec(format)
    if memory is not None and not memory.is_empty() and format != "native":
        _report_memory_dropped(report, memory)
    if format == "native":
        chunks: Iterator[str] = native.write(conversations, report, memory)
        return chunks
    if format != "openai_jsonl":
        chunks = codec.write(conversations, report)
        return chunks
    if on_invalid not in {"skip", "stop"}:
        raise FormatError("on_invalid", f"expected 'skip' or 'stop', got {on_invalid!r}")
    chunks = codec.write(conversations, report, on_invalid=on_invalid)
    return chunks


def _report_memory_dropped(report: WriteReport, memory: MemoryDocument) -> None:
    reason = f"{report.format} holds messages only; native keeps the memory layers"
    for what, count in (("memory stores", len(memory.stores)), ("recalls", len(memory.recalls)),
                        ("snapshots", len(memory.snapshots))):
        if count:
            report.lose(what, reason, unit="file", count=count)


def write_conversations(
    conversations: Iterable[Conversation], format: str, out: IO[str], *, on_invalid: str = "skip",
    memory: MemoryDocument | None = None,
) -> WriteReport:
    """``write_chunks`` into a text file object; returns the report."""
    report = WriteReport(format=format)
    for chunk in write_chunks(conversations, format, report, on_invalid=on_invalid, memory=memory):
        out.write(chunk)
    return report


def dumps(conversations: Iterable[Conversation], format: str, *, on_invalid: str = "skip",
          memory: MemoryDocument | None = None) -> tuple[str, WriteReport]:
    report = WriteReport(format=format)
    return "".join(write_chunks(conversations, format, report, on_invalid=on_invalid, memory=memory)), report


# --- the memory layers written as a library's file ----------------------------------------------------------------

# The formats whose library loads what ``write_memory`` writes (native: memoryviz's own, read back the same).
MEMORY_WRITE_FORMATS = ("native", "mem0", "autogen_memory", "langgraph_store")
# The memory formats whose files also hold message lists (mem0's history.db its messages table, an AutoGen
# TaskResult its messages, a checkpoint its thread's); the others hold memory layers only.
_MEMORY_FORMATS_WITH_MESSAGES = frozenset({"agentscope_session", "mem0", "letta_af", "autogen_memory",
                                           "langgraph_checkpoints", "openai_agents_session"})
_MEMORY_FORMATS_WITHOUT_MEMORY = frozenset({"openai_agents_session"})


def format_layers(name: str) -> tuple[list[str], list[str]]:
    """Which layers (``"messages"``, ``"memory"``) a format of ``ALL_FORMATS`` reads and writes."""
    if name in FORMATS:
        reads_memory = name == "native" or name in _RECALLS_IN_MESSAGES
        return (["messages", "memory"] if reads_memory else ["messages"],
                ["messages", "memory"] if name == "native" else ["messages"])
    if name not in MEMORY_FORMATS:
        raise FormatError("format", f"unknown format {name!r}; valid: {', '.join(sorted(ALL_FORMATS))}")
    reads = [layer for layer, held in (("messages", name in _MEMORY_FORMATS_WITH_MESSAGES),
                                       ("memory", name not in _MEMORY_FORMATS_WITHOUT_MEMORY)) if held]
    return reads, ["memory"] if name in MEMORY_WRITE_FORMATS else []


def write_memory(document: MemoryDocument, format: str, report: WriteReport) -> str:
    """``document``'s memory layers as a file of ``format`` (one of ``MEMORY_WRITE_FORMATS``), whose library loads it;
    ``report`` says what the format could not hold. FormatError for another format, or a document it cannot write
    at all (a ``ListMemory`` of no store)."""
    if format == "native":
        return "".join(native.write([], report, document))
    codec = memory_files.memory_codec(format)
    if codec is None or format not in MEMORY_WRITE_FORMATS:
        raise FormatError("format", f"{format!r} is not a memory format memoryviz writes; valid: "
                                    f"{', '.join(MEMORY_WRITE_FORMATS)}")
    return json.dumps(codec.write(document, report), ensure_ascii=False)
