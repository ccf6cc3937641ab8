"""Live memory over OpenTelemetry: the memory writes, reads and compactions that spans describe, and the model call
each read fed.

What is read (``extract_memory``), as the emitters in tests/otel_clients write it:

- **GenAI memory operations** (the conventions' ``gen_ai.operation.name`` values; latitude-telemetry 3.8.4's
  ``create_memory_telemetry`` emits them): ``create_memory``, ``update_memory``, ``upsert_memory`` and
  ``delete_memory`` are writes of records of the store ``gen_ai.memory.store.id`` (``gen_ai.memory.record.id``; the
  whole new bodies in ``gen_ai.memory.records``, an array of ``{content, id, metadata, score}``, only when the
  emitter captures content); ``create_memory_store`` and ``delete_memory_store`` writes of the store itself; a
  ``delete_memory`` without a record id empties the store. ``search_memory`` is a read: its query
  (``gen_ai.memory.query.text``) and the records it returned (``gen_ai.memory.records``, with their scores).
- **GenAI retrieval** (``retrieval``, span name ``retrieval {gen_ai.data_source.id}``): a read of a data source:
  ``gen_ai.retrieval.query.text``, ``gen_ai.request.top_k``, ``gen_ai.retrieval.documents`` (``id``, ``score``,
  the content where captured).
- **OpenInference** ``RETRIEVER`` spans (``input.value`` the query, ``retrieval.documents.{i}.document.id``,
  ``.content``, ``.score``, ``.metadata`` a JSON text) and ``RERANKER`` spans (``reranker.query``,
  ``reranker.top_k``, ``reranker.output_documents.{i}.document.*``). openinference-instrumentation-langchain 0.1.80
  writes content and metadata but neither id nor score (LangChain's retrievers drop the score); the document ids are
  then read from the span's ``output.value`` (the retriever's ``{"documents": [...]}``) where it holds the same
  documents in the same order.
- **Compaction**: ``gen_ai.conversation.compacted`` on an inference span, and parts of ``type: "compaction"`` in
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (``id``, ``content`` the summary when not encrypted).
  A compaction part passed back on every later call is one compaction (told by its id, else its summary).
- **openlit's mem0 searches** (openlit 1.45: span ``memory search``, ``gen_ai.operation.name`` = ``memory``,
  ``gen_ai.provider.name`` = ``mem0``): mem0's whole result is in ``gen_ai.output.messages`` (``{"results": [{"id",
  "memory", "score", "metadata", ...}]}``) when openlit captures content, the query in ``gen_ai.memory.search.query``
  only when it was passed by keyword, the limit only as mem0 1.x's ``limit``; neither ``top_k`` nor the filters
  that name mem0's scope. A read of no known store, its items carrying mem0's ids.

Not read: openlit's other mem0 spans (``memory add``, ``memory update``, ``memory delete``, ``memory get_all``,
``memory history``; ``invoke_workflow`` for mem0's internals, ``vectordb`` for the Qdrant calls under them). A write
carries the messages given to ``add`` (``gen_ai.input.messages``) and a count, never the records written or their
ids; ``update`` and ``delete`` carry the record id (``db.update.id``, ``db.delete.id``) but neither the store nor the
new text. They are named in ``notes``; nothing is guessed from them.

Bad input is named, never raised: a write with a record id (or records) and no store, records or documents that are
not JSON, an item without content, a ``gen_ai.memory.records`` too big to read (``max_records_chars``: the write is
kept, without its body) each give a ``Rejected`` entry (the receiver answers them in the OTLP partial-success
message); everything valid in the span and the batch is kept.

``link_reads`` finds the model call each read fed, by the span tree and times (``link_writes`` the call each write
followed: its version is placed at that call's reply); ``carrying_input`` the message of that call's input that
carried it; ``to_document`` turns an extraction (all the receiver holds for a trace, or one
batch) into the ledger's ``MemoryDocument``, keyed by span ids so that a batch sent twice adds nothing.

The receiver's part: ``extract_memory`` each request beside ``llm_calls.extract`` (both read the same decoded batch)
and answer ``rejected`` in the partial-success message; keep the extractions and calls of each trace; for the traces a
batch touched, ``merge_extractions`` of all it holds, ``link_reads`` with the trace's calls, ``to_document`` with
them, and store it with the importer's code. A version that arrives after a later one is placed by its time, not
appended; a recall's session and ``seq`` come from its ``llm_call``'s place in its session (``call_input`` is the
position in that call's input); a store emptied or deleted (``delete_memory`` without a record id,
``delete_memory_store``) deletes the stored records too, not only those of the document.
"""
from __future__ import annotations

import bisect
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from .ledger import (
    CompactionIn,
    MemoryDocument,
    Placement,
    RecallIn,
    RecallItemIn,
    RecordIn,
    RecordIndex,
    StoreIn,
    VersionIn,
    content_hash,
    folded,
    match_items,
    record_state,
    version_at,
)
from .llm_calls import SESSION_KEYS, CapturedCall, Rejected, first_str
from .otlp import Batch, Span, loads_attribute
from .schema import Message, content_text

FORMAT = "otel"
# gen_ai.operation.name of a write -> the op its versions carry (as written where the conventions say no more).
WRITE_OPS: dict[str, str] = {
    "create_memory": "ADD", "update_memory": "UPDATE", "upsert_memory": "UPSERT", "delete_memory": "DELETE",
    "create_memory_store": "CREATE_STORE", "delete_memory_store": "DELETE_STORE",
}
ReadKind = Literal["search_memory", "retrieval", "retriever", "reranker", "mem0_search"]
# What one span's records or documents may grow to: past it the span is kept without them, and said so.
MAX_RECORDS_CHARS = 1 << 20
MAX_ITEMS = 10_000
_OPENLIT_OPERATIONS = frozenset({"memory"})
_BODILESS_OPS = frozenset({"DELETE", "CREATE_STORE", "DELETE_STORE"})  # writes whose records, if sent, are not read


# Items, writes and reads are named tuples, made in the hot paths by tuple.__new__ (_new) with every field in order:
# 0.12 us, where a slotted dataclass of 15 fields takes 0.28 us and a frozen one 1.9 us; a request may hold thousands.
# ``as_data`` gives them as the JSON the receiver keeps; ``_replace`` replaces a field.
_new = tuple.__new__


class MemoryItem(NamedTuple):
    """One record of a write, or one item a read returned, as the span carries it. ``text`` is what a model reads:
    the content when it is text, else its JSON. Metadata that is not a JSON object stays as written, in
    ``metadata_text``."""

    rank: int
    content: Any
    text: str
    id: str | None = None
    score: float | None = None
    metadata: dict[str, Any] | None = None
    metadata_text: str | None = None


class MemoryWrite(NamedTuple):
    trace_id: str
    span_id: str
    parent_span_id: str | None
    operation: str  # gen_ai.operation.name
    op: str  # ADD, UPDATE, UPSERT, DELETE, CREATE_STORE, DELETE_STORE
    store_id: str | None
    record_id: str | None
    records: tuple[MemoryItem, ...]  # the whole new bodies; empty when not captured
    content_captured: bool
    record_count: int | None
    started_ns: int
    ended_ns: int  # the write's time
    provider: str | None = None
    error: str | None = None
    session_id: str | None = None


class MemoryRead(NamedTuple):
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: ReadKind
    name: str  # the span's name (an OpenInference retriever's class)
    store_id: str | None  # gen_ai.memory.store.id, or gen_ai.data_source.id for a retrieval
    query: str | None
    top_k: int | None
    items: tuple[MemoryItem, ...]  # empty: nothing found, or not captured (content_captured says which)
    content_captured: bool
    record_count: int | None
    started_ns: int
    ended_ns: int  # the read's time
    provider: str | None = None
    error: str | None = None
    session_id: str | None = None

    @property
    def store_kind(self) -> Literal["records", "knowledge"] | None:
        if self.store_id is None:
            return None
        return "records" if self.kind == "search_memory" else "knowledge"


def as_data(span: MemoryWrite | MemoryRead) -> dict[str, Any]:
    """A write or a read as plain JSON values (its items as objects), as the receiver keeps it; ``write_of`` and
    ``read_of`` make it again."""
    data = span._asdict()
    key = "records" if isinstance(span, MemoryWrite) else "items"
    data[key] = [item._asdict() for item in data[key]]
    return data


def write_of(data: Mapping[str, Any]) -> MemoryWrite:
    return MemoryWrite(**{**data, "records": tuple(MemoryItem(**item) for item in data["records"])})


def read_of(data: Mapping[str, Any]) -> MemoryRead:
    return MemoryRead(**{**data, "items": tuple(MemoryItem(**item) for item in data["items"])})


@dataclass(frozen=True)
class Compaction:
    trace_id: str
    span_id: str  # the inference span that carried it first
    parent_span_id: str | None
    at_ns: int
    source: Literal["flag", "input", "output"]
    summary: str | None = None
    part_id: str | None = None

    @property
    def key(self) -> str:
        """The same compaction seen on several calls (passed back on each) is one: by its id, else its summary,
        else the span that flagged it."""
        if self.part_id:
            return f"{self.trace_id}:part:{self.part_id}"
        if self.summary:
            return f"{self.trace_id}:summary:{self.summary}"
        return f"{self.trace_id}:span:{self.span_id}"


@dataclass
class MemoryExtraction:
    writes: list[MemoryWrite] = field(default_factory=list)
    reads: list[MemoryRead] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    # Every span's parent (span id -> parent span id): the tree link_reads walks, chains and agents included.
    parents: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.writes or self.reads or self.compactions or self.rejected)


# --- extraction ------------------------------------------------------------------------------------------------


def extract_memory(batch: Batch, *, max_records_chars: int = MAX_RECORDS_CHARS) -> MemoryExtraction:
    """The memory writes, reads and compactions in one decoded request, and what could not be read."""
    out = MemoryExtraction()
    parents = out.parents
    openlit: set[str] = set()
    for span in batch.spans:
        if not span.trace_id or not span.span_id:
            continue  # llm_calls.extract names it already; nothing here can place it
        parents[span.span_id] = span.parent_span_id
        attrs = span.attributes
        operation = attrs.get("gen_ai.operation.name")
        if operation is not None and operation.__class__ is str:
            if operation in WRITE_OPS:
                _write(span, operation, out, max_records_chars)
                continue
            if operation == "search_memory" or operation == "retrieval":
                _read(span, operation, out, max_records_chars)
                continue
            if operation in _OPENLIT_OPERATIONS:
                if span.name == "memory search" and attrs.get("gen_ai.provider.name") == "mem0":
                    _openlit_mem0_search(span, out, max_records_chars)
                    continue
                openlit.add(span.name)
        kind = attrs.get("openinference.span.kind")
        if kind == "RETRIEVER" or kind == "RERANKER":
            _openinference_read(span, "retriever" if kind == "RETRIEVER" else "reranker", out)
            continue
        if attrs.get("gen_ai.conversation.compacted") is True or _may_hold_compaction(attrs):
            _compactions(span, out)
    for name in sorted(openlit):
        out.notes.append(f"spans {name!r} with gen_ai.operation.name 'memory' (openlit's mem0 spans): not a GenAI "
                         "memory operation; they carry no store and no records written: not read")
    return out


def _reject(out: MemoryExtraction, span: Span, detail: str) -> None:
    out.rejected.append(Rejected(span.trace_id, span.span_id, f"span {span.span_id} ({span.name}): {detail}"))


def _str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if value.__class__ is str else str(value)


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if value.__class__ is int:  # the common case: an OTLP int_value
        return value if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if value == int(value) and value >= 0 else None


def _provenance(span: Span, get: Callable[[str], Any], provider_key: str) -> tuple[str | None, str | None, str | None]:
    """What every write and read names of its span, in one call (one is made for every memory span): the provider;
    the error (``error.type``, else an error status's message, else None); the session (the first of
    ``SESSION_KEYS``)."""
    provider = get(provider_key)
    if provider is not None:
        provider = None if provider == "" else str(provider)
    error = get("error.type")
    if error is None or error == "":
        error = (span.status_message or "error") if span.status_error else None
    else:
        error = str(error)
    return provider, error, first_str(span.attributes, SESSION_KEYS)


def _write(span: Span, operation: str, out: MemoryExtraction, max_chars: int) -> None:
    get = span.attributes.get
    # _str inline where the value is text already (every emitter's case): a write is read for every memory span.
    store_id = get("gen_ai.memory.store.id")
    if store_id.__class__ is not str or not store_id:
        store_id = _str(store_id)
    record_id = get("gen_ai.memory.record.id")
    if record_id.__class__ is not str or not record_id:
        record_id = _str(record_id)
    op = WRITE_OPS[operation]
    if store_id is None:
        what = f"gen_ai.memory.record.id {record_id!r}" if record_id else "a write"
        _reject(out, span, f"{what} without gen_ai.memory.store.id: no store to place it in")
        return
    records: tuple[MemoryItem, ...] = ()
    captured = False
    raw = get("gen_ai.memory.records")
    if raw is not None and op not in _BODILESS_OPS:
        parsed = _items(span, raw, "gen_ai.memory.records", out, max_chars, True)
        if parsed is not None:
            records, captured = parsed, True
    out.writes.append(_new(MemoryWrite, (
        span.trace_id, span.span_id, span.parent_span_id, operation, op, store_id, record_id, records, captured,
        _count(get("gen_ai.memory.record.count")), span.start_ns, span.end_ns,
        *_provenance(span, get, "gen_ai.provider.name"),
    )))


def _read(span: Span, operation: str, out: MemoryExtraction, max_chars: int) -> None:
    get = span.attributes.get
    if operation == "search_memory":
        kind: ReadKind = "search_memory"
        store_id = _str(get("gen_ai.memory.store.id"))
        query = _str(get("gen_ai.memory.query.text"))
        key = "gen_ai.memory.records"
    else:
        kind = "retrieval"
        store_id = _str(get("gen_ai.data_source.id"))
        query = _str(get("gen_ai.retrieval.query.text"))
        key = "gen_ai.retrieval.documents"
    count = _count(get("gen_ai.memory.record.count"))
    raw = get(key)
    items: tuple[MemoryItem, ...] = ()
    if raw is not None:
        parsed = _items(span, raw, key, out, max_chars, kind == "search_memory")
        captured = parsed is not None
        items = parsed or ()
    else:
        # Content capture on and nothing found (the query is there, no records, no count above zero), or off.
        captured = query is not None and not count
    out.reads.append(_new(MemoryRead, (
        span.trace_id, span.span_id, span.parent_span_id, kind, span.name, store_id, query,
        _count(get("gen_ai.request.top_k")), items, captured, count, span.start_ns, span.end_ns,
        *_provenance(span, get, "gen_ai.provider.name"),
    )))


def _items(span: Span, raw: Any, key: str, out: MemoryExtraction, max_chars: int,
           content_required: bool) -> tuple[MemoryItem, ...] | None:
    """The records or documents an attribute holds (a JSON text or a structured value), the bad ones rejected one by
    one; None when the attribute as a whole cannot be read (named in ``out.rejected``)."""
    if raw.__class__ is str:
        if len(raw) > max_chars:
            _reject(out, span, f"{key}: {len(raw):,} characters, more than the {max_chars:,} read: kept without "
                               "its records")
            return None
        try:
            raw = loads_attribute(raw)
        except json.JSONDecodeError as exc:
            _reject(out, span, f"{key}: not JSON ({exc.msg} at column {exc.colno}): kept without its records")
            return None
    if raw.__class__ is not list:
        _reject(out, span, f"{key}: expected an array of objects, got {type(raw).__name__}: kept without its records")
        return None
    if len(raw) > MAX_ITEMS:
        _reject(out, span, f"{key}: {len(raw):,} entries, the first {MAX_ITEMS:,} read")
        raw = raw[:MAX_ITEMS]
    items: list[MemoryItem] = []
    append = items.append
    rank = 0
    for i, entry in enumerate(raw):
        if entry.__class__ is not dict:
            _reject(out, span, f"{key}[{i}]: expected an object, got {type(entry).__name__}")
            continue
        get = entry.get
        content = get("content")
        if content is None and content_required and "content" not in entry:
            _reject(out, span, f"{key}[{i}]: no content (required)")
            continue
        metadata = get("metadata")
        metadata_text = None
        if metadata is not None and metadata.__class__ is not dict:
            metadata, metadata_text = _metadata(metadata)
        score = get("score")
        if score is not None and score.__class__ is not float:
            score = _float(score) if score.__class__ is int else None  # JSON gives int, float or neither
        record_id = get("id")
        if record_id is not None and record_id.__class__ is not str:
            record_id = str(record_id)
        rank += 1
        append(_new(MemoryItem, (rank, content, content if content.__class__ is str else _text(content),
                                 record_id or None, score, metadata, metadata_text)))
    return tuple(items)


def _float(value: int) -> float | None:
    try:
        return float(value)
    except OverflowError:  # an integer of more than 308 digits
        return None


# json.dumps(value, ensure_ascii=False), without making an encoder each call.
_json_text = json.JSONEncoder(ensure_ascii=False).encode


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else _json_text(content)


def _metadata(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Metadata as an object; a JSON text of one is read; anything else is kept as written (flagged by
    ``metadata_text``), never dropped."""
    if raw is None or isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = loads_attribute(raw)
        except json.JSONDecodeError:
            return None, raw
        if isinstance(value, dict):
            return value, None
        return None, raw
    return None, _json_text(raw)


def _openinference_read(span: Span, kind: ReadKind, out: MemoryExtraction) -> None:
    attrs = span.attributes
    if kind == "retriever":
        prefix, query, top_k = "retrieval.documents.", _str(attrs.get("input.value")), None
    else:
        prefix, query = "reranker.output_documents.", _str(attrs.get("reranker.query"))
        top_k = _count(attrs.get("reranker.top_k"))
    documents: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            place = _document_key(key, len(prefix))
            if place is not None:
                documents.setdefault(place[0], {})[place[1]] = value
    if len(documents) > MAX_ITEMS:
        _reject(out, span, f"{prefix}*: {len(documents):,} documents, the first {MAX_ITEMS:,} read")
    ordered = [documents[i] for i in sorted(documents)[:MAX_ITEMS]]
    ids = _ids_from_output(attrs, ordered) if ordered and not any("id" in d for d in ordered) else None
    items: list[MemoryItem] = []
    for i, document in enumerate(ordered):
        metadata, metadata_text = _metadata(document.get("metadata"))
        if metadata_text is not None:
            _reject(out, span, f"{prefix}{i}.document.metadata: not a JSON object: kept as text")
        score = document.get("score")
        content = document.get("content")
        items.append(MemoryItem(
            i + 1, content, _text(content), _str(document.get("id")) if ids is None else ids[i],
            float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            metadata, metadata_text,
        ))
    # No documents: nothing found, or outputs hidden (OPENINFERENCE_HIDE_OUTPUTS leaves output.value out or redacted).
    output = attrs.get("output.value")
    captured = bool(items) or (isinstance(output, str) and output != "__REDACTED__")
    out.reads.append(MemoryRead(
        span.trace_id, span.span_id, span.parent_span_id, kind, span.name, None, query, top_k, tuple(items), captured,
        len(items) if captured else None, span.start_ns, span.end_ns, *_provenance(span, attrs.get, "llm.provider"),
    ))


def _openlit_mem0_search(span: Span, out: MemoryExtraction, max_chars: int) -> None:
    attrs = span.attributes
    raw = attrs.get("gen_ai.output.messages")
    key = "gen_ai.output.messages"
    if isinstance(raw, str):
        if len(raw) > max_chars:
            _reject(out, span, f"{key}: {len(raw):,} characters, more than the {max_chars:,} read: kept without "
                               "its records")
            raw = None
        else:
            try:
                raw = loads_attribute(raw)
            except json.JSONDecodeError as exc:
                _reject(out, span, f"{key}: not JSON ({exc.msg} at column {exc.colno}): kept without its records")
                raw = None
    items: tuple[MemoryItem, ...] = ()
    if raw is not None:
        listed = raw.get("results") if isinstance(raw, dict) else raw
        if isinstance(listed, list):
            # mem0's result rows as the conventions' records: its text is "memory".
            entries = [{"id": e.get("id"), "content": e.get("memory"), "score": e.get("score"),
                        "metadata": e.get("metadata")} if isinstance(e, dict) else e for e in listed]
            items = _items(span, entries, f"{key}.results", out, max_chars, False) or ()
        else:
            _reject(out, span, f"{key}: not mem0's search result (results): kept without its records")
            raw = None
    out.reads.append(MemoryRead(  # gen_ai.provider.name is "mem0" (extract_memory reads no other here)
        span.trace_id, span.span_id, span.parent_span_id, "mem0_search", span.name, None,
        _str(attrs.get("gen_ai.memory.search.query")), _count(attrs.get("gen_ai.memory.search.limit")), items,
        raw is not None, _count(attrs.get("gen_ai.memory.operation.result_count")), span.start_ns, span.end_ns,
        *_provenance(span, attrs.get, "gen_ai.provider.name"),
    ))


_DOCUMENT_KEYS: dict[str, tuple[int, str] | None] = {}


def _document_key(key: str, after: int) -> tuple[int, str] | None:
    """``(3, "content")`` for ``<prefix>3.document.content`` (``after``: the prefix's length); None for another key
    under the prefix. Remembered: the same keys come in every retriever span (at most 4,096 kept)."""
    place = _DOCUMENT_KEYS.get(key, False)
    if place is not False:
        return place  # type: ignore[return-value]
    index, _, rest = key[after:].partition(".")
    place = (int(index), rest[len("document."):]) if index.isdigit() and rest.startswith("document.") else None
    if len(_DOCUMENT_KEYS) >= 4096:
        _DOCUMENT_KEYS.clear()
    _DOCUMENT_KEYS[key] = place
    return place


def _ids_from_output(attrs: Mapping[str, Any], documents: Sequence[dict[str, Any]]) -> list[str | None] | None:
    """The ids of a LangChain retriever's documents, from its ``output.value`` (``{"documents": [{"id",
    "page_content", ...}]}``), when it lists the same documents in the same order; None otherwise."""
    raw = attrs.get("output.value")
    if not isinstance(raw, str) or attrs.get("output.mime_type") != "application/json" or len(raw) > MAX_RECORDS_CHARS:
        return None
    try:
        value = loads_attribute(raw)
    except json.JSONDecodeError:
        return None
    listed = value.get("documents") if isinstance(value, dict) else None
    if not isinstance(listed, list) or len(listed) != len(documents):
        return None
    ids: list[str | None] = []
    for document, entry in zip(documents, listed, strict=True):
        if not isinstance(entry, dict) or entry.get("page_content") != document.get("content"):
            return None
        ids.append(_str(entry.get("id")))
    return ids


def _may_hold_compaction(attrs: Mapping[str, Any]) -> bool:
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        raw = attrs.get(key)
        if isinstance(raw, str):
            if '"compaction"' in raw:
                return True
        elif raw is not None and "compaction" in json.dumps(raw):
            return True
    return False


def _compactions(span: Span, out: MemoryExtraction) -> None:
    found: list[Compaction] = []
    for key, source, at in (("gen_ai.output.messages", "output", span.end_ns),
                            ("gen_ai.input.messages", "input", span.start_ns)):
        raw = span.attributes.get(key)
        if raw is None:
            continue
        if isinstance(raw, str):
            try:
                raw = loads_attribute(raw)
            except json.JSONDecodeError:
                continue  # llm_calls names a message list that is not JSON
        for message in raw if isinstance(raw, list) else ():
            parts = message.get("parts") if isinstance(message, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict) and part.get("type") == "compaction":
                    summary = part.get("content")
                    found.append(Compaction(
                        span.trace_id, span.span_id, span.parent_span_id, at, "output" if source == "output" else
                        "input", summary if isinstance(summary, str) and summary else None, _str(part.get("id"))))
    if not found and span.attributes.get("gen_ai.conversation.compacted") is True:
        found.append(Compaction(span.trace_id, span.span_id, span.parent_span_id, span.start_ns, "flag"))
    out.compactions.extend(found)


# --- joining what several batches told ---------------------------------------------------------------------------


def merge_extractions(extractions: Iterable[MemoryExtraction]) -> MemoryExtraction:
    """Everything several batches told, each span once, in one order whatever order the batches came in: writes and
    reads by time (end, start, span id), compactions by their key (the earliest sighting kept)."""
    writes: dict[str, MemoryWrite] = {}
    reads: dict[str, MemoryRead] = {}
    compactions: dict[str, Compaction] = {}
    rejected: dict[tuple[str, str, str], Rejected] = {}
    parents: dict[str, str | None] = {}
    notes: dict[str, None] = {}
    for extraction in extractions:
        for write in extraction.writes:
            writes.setdefault(write.span_id, write)
        for read in extraction.reads:
            reads.setdefault(read.span_id, read)
        for compaction in extraction.compactions:
            seen = compactions.get(compaction.key)
            if seen is None or _compaction_order(compaction) < _compaction_order(seen):
                compactions[compaction.key] = compaction
        for one in extraction.rejected:
            rejected.setdefault((one.trace_id, one.span_id, one.reason), one)
        for span_id, parent in extraction.parents.items():
            if parent is not None or span_id not in parents:
                parents[span_id] = parent
        notes.update(dict.fromkeys(extraction.notes))
    return MemoryExtraction(
        writes=sorted(writes.values(), key=lambda w: (w.ended_ns, w.started_ns, w.span_id)),
        reads=sorted(reads.values(), key=lambda r: (r.ended_ns, r.started_ns, r.span_id)),
        compactions=sorted(compactions.values(), key=_compaction_order),
        rejected=sorted(rejected.values(), key=lambda r: (r.trace_id, r.span_id, r.reason)),
        parents=dict(sorted(parents.items())), notes=sorted(notes),
    )


def _compaction_order(compaction: Compaction) -> tuple[int, int, str]:
    return compaction.at_ns, {"output": 0, "flag": 1, "input": 2}[compaction.source], compaction.span_id


# --- the model call a read fed -----------------------------------------------------------------------------------


def link_reads(reads: Iterable[MemoryRead], calls: Iterable[CapturedCall],
               parents: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """For each read, the span id of the model call it fed: the first call of its trace that starts at or after the
    read ends, nearest in the span tree. A call under the read's parent (a sibling's subtree) comes before one under
    the grandparent only (the parent's next child's subtree), and so on up; among calls as near, the earliest (then
    the lowest span id). A read that no call follows yet is left out.

    ``parents``: every span's parent as far as known (``MemoryExtraction.parents``, the agent and chain spans
    between a read and its call included); the reads' and calls' own parents are used too. The answer depends only
    on the set of spans given, not their order: the receiver calls it on all it holds for a trace each time a batch
    arrives, and a later batch that completes the tree may move a link to a nearer call."""
    tree: dict[str, str | None] = dict(parents or {})
    # One start per call, whichever of its sightings come (a span's start beats the time its log events were seen).
    starts_of: dict[tuple[str, str], tuple[int, int]] = {}
    for call in _in_tree(calls, tree):
        if call.started_ns is not None:
            sighting = (0, call.started_ns)
        elif call.observed_ns is not None:
            sighting = (1, call.observed_ns)
        else:
            continue
        call_key = (call.trace_id, call.span_id)
        starts_of[call_key] = min(starts_of.get(call_key, sighting), sighting)
    spans = {r.span_id: (r.parent_span_id, r.trace_id, r.ended_ns) for r in reads}
    return _nearest_calls(spans, {key: start for key, (_, start) in starts_of.items()}, tree, forward=True)


def link_writes(writes: Iterable[MemoryWrite], calls: Iterable[CapturedCall],
                parents: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """For each write, the span id of the model call whose reply it followed: the last call of its trace that ends at
    or before the write starts (the reply that asked for it, a tool call of the agent, or the turn's end), nearest in
    the span tree as ``link_reads`` reckons it; among calls as near, the latest (then the highest span id). A write
    that no call precedes is left out. Like ``link_reads``, it depends only on the set of spans given."""
    tree: dict[str, str | None] = dict(parents or {})
    ends_of: dict[tuple[str, str], int] = {}
    for call in _in_tree(calls, tree):
        end = call.ended_ns if call.ended_ns is not None else (
            call.started_ns if call.started_ns is not None else call.observed_ns)
        if end is not None:
            call_key = (call.trace_id, call.span_id)
            ends_of[call_key] = max(ends_of.get(call_key, end), end)
    spans = {w.span_id: (w.parent_span_id, w.trace_id, w.started_ns) for w in writes}
    return _nearest_calls(spans, ends_of, tree, forward=False)


def _in_tree(calls: Iterable[CapturedCall], tree: dict[str, str | None]) -> Iterable[CapturedCall]:
    """The calls, each call's own parent put in ``tree`` where it names none."""
    for call in calls:
        if call.parent_span_id is not None and tree.get(call.span_id) is None:
            tree[call.span_id] = call.parent_span_id
        yield call


def _nearest_calls(spans: Mapping[str, tuple[str | None, str, int]], call_times: Mapping[tuple[str, str], int],
                   tree: dict[str, str | None], *, forward: bool) -> dict[str, str]:
    """For each span (its id -> its parent, trace and time), the call of its trace nearest in the span tree among
    those timed at or after it (``forward``: the earliest of the nearest, then the lowest span id) or at or before it
    (the latest of the nearest, then the highest span id)."""
    by_trace: dict[str, list[tuple[int, str]]] = {}
    for (trace_id, call_id), at in call_times.items():
        by_trace.setdefault(trace_id, []).append((at, call_id))
    for listed in by_trace.values():
        listed.sort()
    times = {trace: [entry[0] for entry in listed] for trace, listed in by_trace.items()}
    links: dict[str, str] = {}
    for span_id, (parent, trace_id, at) in sorted(spans.items()):
        if parent is not None and tree.get(span_id) is None:
            tree[span_id] = parent
        in_trace = by_trace.get(trace_id)
        if not in_trace:
            continue
        ancestors = _ancestors(span_id, tree)
        level_of = {ancestor: level for level, ancestor in enumerate(ancestors)}
        # In the order of preference among calls as near: a call as near seen later never replaces the first.
        candidates = (in_trace[bisect.bisect_left(times[trace_id], at):] if forward
                      else reversed(in_trace[:bisect.bisect_right(times[trace_id], at)]))
        best: tuple[int, str] | None = None
        for _, call_id in candidates:
            level = _meeting_level(call_id, tree, level_of, len(ancestors))
            if best is None or level < best[0]:
                best = (level, call_id)
            if level == 0:
                break  # a sibling's subtree, and the first such: nothing can be nearer
        if best is not None:
            links[span_id] = best[1]
    return links


def _ancestors(span_id: str, tree: Mapping[str, str | None]) -> list[str]:
    out: list[str] = []
    seen = {span_id}
    parent = tree.get(span_id)
    while parent is not None and parent not in seen:
        out.append(parent)
        seen.add(parent)
        parent = tree.get(parent)
    return out


def _meeting_level(span_id: str, tree: Mapping[str, str | None], level_of: Mapping[str, int], unknown: int) -> int:
    """How far up from the read the call's branch meets the read's: 0 under its parent, 1 under its grandparent
    only, ...; ``unknown`` when no common ancestor is known (yet)."""
    seen = {span_id}
    parent = tree.get(span_id)
    while parent is not None and parent not in seen:
        level = level_of.get(parent)
        if level is not None:
            return level
        seen.add(parent)
        parent = tree.get(parent)
    return unknown


def carrying_input(read: MemoryRead, call: CapturedCall) -> tuple[int, Placement] | None:
    """Where the read's items went in the call it fed: the position, in the call's input as ``llm_calls`` reads it,
    of the newest system, user or tool message holding one of their texts (whitespace folded), and the placement its
    role says (``system``, ``tool_result``, else ``message``). None when none holds any: content not captured, or
    the application reworded what it found."""
    texts = [folded(item.text) for item in read.items if item.text.strip()]
    if not texts or not call.inputs:
        return None
    for index in range(len(call.inputs) - 1, -1, -1):
        message: Message = call.inputs[index]
        if message.role == "assistant":
            continue
        held = folded(content_text(message.content))
        if any(text in held for text in texts):
            if message.role in ("system", "developer"):
                return index, "system"
            return index, "tool_result" if message.role == "tool" else "message"
    return None


# --- into the ledger ----------------------------------------------------------------------------------------------


def store_key(store_id: str, kind: Literal["records", "knowledge"]) -> str:
    """A store's key in a document: a memory store by its id, a retrieval data source apart from them."""
    return store_id if kind == "records" else f"data_source:{store_id}"


def to_document(extraction: MemoryExtraction, links: Mapping[str, str] | None = None,
                calls: Iterable[CapturedCall] = (), write_links: Mapping[str, str] | None = None) -> MemoryDocument:
    """The ledger's view of an extraction (merge several batches first with ``merge_extractions``).

    Stores: one per ``gen_ai.memory.store.id`` (kind ``records``, scope ``{"store_id": ...}``) and per retrieval
    data source (kind ``knowledge``, scope ``{"data_source_id": ...}``), so that the receiver joins them to the
    same stored store batch after batch. Records: each write of a record is a version (``external_id`` the span id,
    with ``#i`` for the i-th record of a span that wrote several), in time order, with the whole new body, or
    ``captured=False`` when the span carried none; an emptied or deleted store deletes the records it held then. A
    failed write (an error status or ``error.type``) changes nothing and is noted. Recalls: one per read
    (``external_id`` its span id, ``llm_call`` the call ``links`` gives), its items matched to the records of its
    store in this document by id, then by text, at the version current then; with ``calls`` (those ``links`` names),
    each recall's ``call_input`` and ``placement``: the input message of its call that carries the recalled text
    (``carrying_input``). ``write_links`` (``link_writes``): each version's ``llm_call``, the call its write
    followed."""
    links = links or {}
    write_links = write_links or {}
    by_span = {call.span_id: call for call in calls}
    doc = MemoryDocument(format=FORMAT, notes=list(extraction.notes))
    stores: dict[str, StoreIn] = {}
    records: dict[str, dict[str, RecordIn]] = {}

    def store_for(store_id: str, kind: Literal["records", "knowledge"]) -> str:
        key = store_key(store_id, kind)
        if key not in stores:
            scope = {"store_id": store_id} if kind == "records" else {"data_source_id": store_id}
            stores[key] = StoreIn(key=key, name=store_id, kind=kind, source_format=FORMAT, scope=scope,
                                  external_id=store_id)
            records[key] = {}
        return key

    def version_of(key: str, record_id: str, version: VersionIn, item: MemoryItem | None) -> None:
        record = records[key].get(record_id)
        if record is None:
            record = records[key][record_id] = RecordIn(external_id=record_id)
        record.versions.append(version)
        if item is not None and version.op != "DELETE":
            record.value = item.content
            record.metadata = item.metadata or ({"metadata_text": item.metadata_text} if item.metadata_text else {})

    for write in sorted(extraction.writes, key=lambda w: (w.ended_ns, w.started_ns, w.span_id)):
        assert write.store_id is not None  # extract_memory rejects a write without a store
        if write.error is not None:
            doc.notes.append(f"{write.operation} (span {write.span_id}) failed ({write.error}): no version written")
            continue
        key = store_for(write.store_id, "records")
        at = _time(write.ended_ns)
        after = write_links.get(write.span_id)
        if write.op == "CREATE_STORE":
            continue
        if write.op == "DELETE_STORE" or (write.op == "DELETE" and write.record_id is None):
            gone = [r for r in records[key].values() if r.versions and r.versions[-1].op != "DELETE"]
            for record in sorted(gone, key=lambda r: r.external_id):
                version_of(key, record.external_id, VersionIn(
                    op="DELETE", at=at, llm_call=after, external_id=f"{write.span_id}:{record.external_id}"), None)
            doc.notes.append(f"{write.operation} (span {write.span_id}) emptied store {write.store_id!r}: "
                             f"{len(gone)} record(s) of this document deleted; records stored before it are the "
                             "receiver's to delete")
            continue
        if write.op == "DELETE":
            assert write.record_id is not None
            if write.record_id not in records[key]:
                doc.notes.append(f"{write.operation} (span {write.span_id}) of record {write.record_id!r}, not "
                                 "written in this document: known as deleted until the receiver joins it to a "
                                 "stored record")
            version_of(key, write.record_id, VersionIn(op="DELETE", at=at, llm_call=after, external_id=write.span_id),
                       None)
            continue
        if not write.content_captured or not write.records:
            if write.record_id is None:
                doc.notes.append(f"{write.operation} (span {write.span_id}) of {write.record_count or 'some'} "
                                 "record(s) without their bodies or ids: nothing to place")
                continue
            version_of(key, write.record_id, VersionIn(op=write.op, at=at, llm_call=after, external_id=write.span_id,
                                                       captured=False), None)
            continue
        single = len(write.records) == 1
        for i, item in enumerate(write.records):
            record_id = item.id or (write.record_id if single else None)
            if record_id is None:
                record_id = f"{write.span_id}#{i}"
                doc.notes.append(f"{write.operation} (span {write.span_id}): record {i} has no id; keyed "
                                 f"{record_id!r}")
            version_of(key, record_id, VersionIn(
                op=write.op, text=item.text, value=item.content, at=at, llm_call=after,
                external_id=write.span_id if single else f"{write.span_id}#{i}"), item)

    for key, by_id in records.items():
        finished = []
        for record in by_id.values():
            ordered = record.ordered_versions()
            last = ordered[-1]
            # What the record holds now: the last body written (a deleted record keeps the one it had); unknown,
            # not the one before, when that write was seen without its body.
            body = next((v for v in reversed(ordered) if v.op != "DELETE"), None) if last.op == "DELETE" else last
            known = body is not None and body.captured
            finished.append(record.model_copy(update={
                "versions": ordered, "text": (body.text or "") if known and body else "",
                "value": body.value if known and body else None, "state": record_state(ordered),
                "created_at": ordered[0].at, "updated_at": last.at,
                "content_hash": content_hash(body.text) if known and body and body.text is not None else None,
            }))
        stores[key].records = sorted(finished, key=lambda r: r.external_id)

    indexes: dict[str, RecordIndex] = {}
    for read in sorted(extraction.reads, key=lambda r: (r.ended_ns, r.started_ns, r.span_id)):
        if read.error is not None:
            doc.notes.append(f"{read.kind} (span {read.span_id}) failed ({read.error}): not a recall")
            continue
        recall_store = store_for(read.store_id, read.store_kind or "records") if read.store_id is not None else None
        params: dict[str, Any] = {}
        if read.top_k is not None:
            params["top_k"] = read.top_k
        if read.record_count is not None:
            params["record_count"] = read.record_count
        if not read.content_captured:
            params["content_captured"] = False
        if read.kind in ("retriever", "reranker"):
            params[read.kind] = read.name
        if read.kind == "mem0_search":
            params["source"] = "openlit mem0"
        at = _time(read.ended_ns)
        items = [RecallItemIn(
            text=item.text, rank=item.rank, score=item.score, ref={"id": item.id} if item.id else {},
            metadata=item.metadata or ({"metadata_text": item.metadata_text} if item.metadata_text else {}),
        ) for item in read.items]
        if recall_store is not None and stores[recall_store].records:
            if recall_store not in indexes:
                indexes[recall_store] = RecordIndex.of(stores[recall_store].records)
            held = {r.external_id: r for r in stores[recall_store].records}
            items = [item if item.record is None else item.model_copy(update={
                "version": version_at(held[item.record].versions, at, item.text)})
                for item in match_items(items, indexes[recall_store])]
        linked = links.get(read.span_id)
        carried = carrying_input(read, by_span[linked]) if linked in by_span else None
        doc.recalls.append(RecallIn(
            llm_call=linked, store=recall_store, query=read.query, params=params, at=at, items=items,
            external_id=read.span_id, call_input=carried[0] if carried else None,
            placement=carried[1] if carried else "message",
        ))

    doc.stores = [stores[key] for key in sorted(stores)]
    for compaction in sorted(extraction.compactions, key=_compaction_order):
        doc.compactions.append(CompactionIn(
            external_id=compaction.key, at=_time(compaction.at_ns), summary=compaction.summary,
            llm_call=compaction.span_id, source=compaction.source,
        ))
    return doc


def _time(ns: int) -> datetime | None:
    """A span's time to the microsecond (integer arithmetic: a float of nanoseconds since 1970 is not that exact)."""
    if not ns:
        return None
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC).replace(microsecond=ns // 1000 % 1_000_000)
