"""LangGraph store items as JSON: what a ``BaseStore`` (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``, the
LangGraph server's store API) gives back, dumped with ``item.dict()``.

Shapes read (``detect`` is true for these only):

- an ``Item``: ``{"namespace": ["users", "u-42", "memories"], "key": "m1", "value": {...}, "created_at",
  "updated_at"}``; a ``SearchItem`` adds ``"score"`` (a number, or null for a search without a query);
- a list of items (``store.search(...)``'s, dumped);
- an object of named dumps, as a script keeps several calls' results (tests/samples/memory/langgraph/
  store_items.json): each value an item, a list of items, or ``list_namespaces()``'s list of namespaces.

What becomes what:

- **a store per namespace** (kind ``records``, name the namespace's labels joined by dots, as LangGraph's SQL stores
  write its prefix; scope ``{"namespace": [...]}``): a namespace is where LangGraph puts and gets an item, and
  scopes are compared whole when a later file joins a store. A search runs over a namespace *prefix*, so one
  search may return items of several stores (its recall then names no store);
- **a record per item** (external id its ``key``; ``value`` the item's value verbatim). Its text, what a node puts
  into the prompt, is the value's ``text``, else ``content`` (a string, or LangMem's ``{"content": ...}``), else
  ``memory``, else ``data``, else the value as JSON. The store keeps **no history**: one version per item, an ADD
  at its ``updated_at`` (the record keeps ``created_at`` too; whether a ``put`` overwrote an earlier value cannot be
  told: ``InMemoryStore`` and ``SqliteStore`` reset ``created_at`` on every put, and ``InMemoryStore`` even sets
  the two a few microseconds apart). The same item met twice in one file with another body (two dumps taken at two
  moments) gives a version for each body, the later ones UPDATEs, in the order of their ``updated_at``;
- **a recall per search** (a list whose items carry ``score``): ranked as listed, each item matched to its record
  (``ref``: ``{"namespace", "key"}``) at the version it returned. The query is unknown (the dump holds none) and no
  message is known to carry it; in an object of named dumps, the name is the recall's ``external_id``. LangGraph
  injects nothing itself: a node builds the prompt from what it searched.

``write``: a list of items as ``item.dict()`` gives them, one per active record, which ``store.put(tuple(namespace),
key, value)`` takes back; a store of another library is written under a namespace made of its scope (the report
says so), its records' values as ``{"text", "metadata"}``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeGuard

from agents.memory.ledger import (
    MemoryDocument,
    RecallIn,
    RecallItemIn,
    RecordIn,
    StoreIn,
    VersionIn,
    content_hash,
    order_events,
    parse_time,
)

from .base import FormatError, FormatSpec, WriteReport, at, json_type
from .json_input import check_depth

NAME = "langgraph_store"
SPEC = FormatSpec(
    name=NAME,
    label="LangGraph store",
    description="LangGraph store items (namespace, key, value) as JSON",
    extension="json",
    media_type="application/json",
)
ITEM_KEYS = frozenset({"namespace", "key", "value", "created_at", "updated_at"})
SEARCH_ITEM_KEYS = ITEM_KEYS | {"score"}
_TEXT_KEYS = ("text", "content", "memory", "data")
_SAMPLE = 200


# --- detection --------------------------------------------------------------------------------------------------

def _is_namespace(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(label, str) for label in value)


def _is_item(value: Any) -> bool:
    return (isinstance(value, dict) and ITEM_KEYS <= set(value) <= SEARCH_ITEM_KEYS
            and _is_namespace(value["namespace"]) and isinstance(value["key"], str)
            and isinstance(value["value"], dict))


def _items_like(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_item(i) for i in value[:_SAMPLE])


def _namespaces_like(value: Any) -> bool:
    return isinstance(value, list) and all(_is_namespace(ns) for ns in value[:_SAMPLE])


def detect(data: Any) -> bool:
    if _is_item(data) or _items_like(data):
        return True
    if not isinstance(data, dict) or not data:
        return False
    values = list(data.values())
    return (any(_is_item(v) or _items_like(v) for v in values)
            and all(_is_item(v) or _items_like(v) or _namespaces_like(v) for v in values))


# --- reading ----------------------------------------------------------------------------------------------------

def _time(value: Any, place: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise FormatError(place, f"expected a time, got {json_type(value)}")
    try:
        return parse_time(value)
    except ValueError:
        raise FormatError(place, f"not a time: {value[:60]!r}") from None


def item_text(value: dict[str, Any]) -> str:
    """What a node puts into the prompt from an item's value (see the module's docstring)."""
    for key in _TEXT_KEYS:
        text = value.get(key)
        if isinstance(text, str):
            return text
        if key == "content" and isinstance(text, dict) and isinstance(text.get("content"), str):
            return str(text["content"])  # LangMem's {"kind": "Memory", "content": {"content": ...}}
    return json.dumps(value, ensure_ascii=False)


@dataclass
class _Seen:
    """One item as one dump showed it."""

    value: dict[str, Any]
    created_at: datetime | None
    updated_at: datetime | None
    order: int
    version: int | None = None


@dataclass
class _Item:
    namespace: tuple[str, ...]
    key: str
    seen: list[_Seen] = field(default_factory=list)


@dataclass
class _Search:
    name: str | None
    found: list[tuple[_Item, _Seen, float | None]]


class _Reading:
    def __init__(self) -> None:
        self.items: dict[tuple[tuple[str, ...], str], _Item] = {}  # in the order first met
        self.searches: list[_Search] = []
        self.listed: list[tuple[str, ...]] = []
        self.notes: list[str] = []
        self.order = 0

    def item(self, value: Any, place: str) -> tuple[_Item, _Seen, float | None]:
        if not isinstance(value, dict):
            raise FormatError(place, f"expected a store item (namespace, key, value), got {json_type(value)}")
        namespace = value.get("namespace")
        if not _is_namespace(namespace):
            raise FormatError(at(place, "namespace"), "expected a non-empty array of strings, got "
                                                      f"{json_type(namespace)}")
        key = value.get("key")
        if not isinstance(key, str):
            raise FormatError(at(place, "key"), f"expected a string, got {json_type(key)}")
        body = value.get("value")
        if not isinstance(body, dict):
            raise FormatError(at(place, "value"), f"expected an object, got {json_type(body)}")
        score = value.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise FormatError(at(place, "score"), f"expected a number or null, got {json_type(score)}")
        created = _time(value.get("created_at"), at(place, "created_at"))
        updated = _time(value.get("updated_at"), at(place, "updated_at"))
        ident = (tuple(namespace), key)
        item = self.items.get(ident)
        if item is None:
            item = self.items[ident] = _Item(ident[0], key)
        seen = next((s for s in item.seen if s.updated_at == updated and s.value == body), None)
        if seen is None:
            self.order += 1
            seen = _Seen(body, created, updated, self.order)
            item.seen.append(seen)
        return item, seen, score

    def dump(self, value: Any, place: str, name: str | None) -> None:
        """An item, a list of items (a search when they carry scores), or a list of namespaces."""
        if isinstance(value, dict):
            self.item(value, place)
            return
        if not isinstance(value, list):
            raise FormatError(place, f"expected a store item, a list of items or of namespaces, got "
                                     f"{json_type(value)}")
        if not value:
            self.notes.append(f"{place}: an empty list, nothing to read")
            return
        if all(isinstance(ns, list) for ns in value):
            for i, ns in enumerate(value):
                if not _is_namespace(ns):
                    raise FormatError(at(place, i), "expected a namespace (a non-empty array of strings)")
                self.listed.append(tuple(ns))
            return
        found = [self.item(v, at(place, i)) for i, v in enumerate(value)]
        if any(isinstance(v, dict) and "score" in v for v in value):
            self.searches.append(_Search(name, found))

    def document(self) -> MemoryDocument:
        stores: dict[tuple[str, ...], StoreIn] = {}
        for item in self.items.values():
            store = stores.get(item.namespace)
            if store is None:
                store = stores[item.namespace] = _store(item.namespace)
            store.records.append(_record(item))
        for ns in dict.fromkeys(self.listed):
            if ns not in stores:
                self.notes.append(f"list_namespaces: the namespace {'.'.join(ns)} is listed, but no item of it "
                                  "is in the file")
        recalls = [_recall(search) for search in self.searches]
        for recall in recalls:
            if recall.store is None:
                self.notes.append(f"{recall.external_id or 'input'}: a search over several namespaces (several "
                                  "stores): its items name their namespace and key")
        return MemoryDocument(format=NAME, stores=list(stores.values()), recalls=recalls, notes=self.notes)


def store_key(namespace: tuple[str, ...] | list[str]) -> str:
    # Labels joined by dots, as LangGraph writes a prefix, unless a label holds a dot (LangGraph refuses those on
    # put; a file may still hold one): then the labels as JSON, so that no two namespaces share a key.
    if any("." in label for label in namespace):
        return json.dumps(list(namespace), ensure_ascii=False)
    return ".".join(namespace)


def _store(namespace: tuple[str, ...]) -> StoreIn:
    key = store_key(namespace)
    return StoreIn(key=key, name=".".join(namespace), kind="records", source_format=NAME,
                   scope={"namespace": list(namespace)}, external_id=".".join(namespace))


def _record(item: _Item) -> RecordIn:
    built = [(seen, VersionIn(op="ADD", text=item_text(seen.value), value=seen.value, at=seen.updated_at,
                              order=seen.order)) for seen in item.seen]
    by_version = {id(version): seen for seen, version in built}
    ordered = order_events([version for _, version in built])
    versions = []
    for number, version in enumerate(ordered, 1):
        seen = by_version[id(version)]
        seen.version = number
        versions.append(version.model_copy(update={"number": number, "op": "ADD" if number == 1 else "UPDATE"}))
    last = by_version[id(ordered[-1])]
    text = item_text(last.value)
    return RecordIn(external_id=item.key, text=text, value=last.value, content_hash=content_hash(text),
                    created_at=last.created_at, updated_at=last.updated_at, versions=versions)


def _recall(search: _Search) -> RecallIn:
    namespaces = {item.namespace for item, _, _ in search.found}
    store = store_key(next(iter(namespaces))) if len(namespaces) == 1 else None
    items = [RecallItemIn(text=item_text(seen.value), rank=rank, score=score,
                          record=item.key if store is not None else None,
                          version=seen.version if store is not None else None,
                          ref={"namespace": list(item.namespace), "key": item.key})
             for rank, (item, seen, score) in enumerate(search.found, 1)]
    return RecallIn(store=store, items=items, external_id=search.name)


def read(data: Any, *, name: str | None = None) -> MemoryDocument:
    check_depth(data, "input")
    reading = _Reading()
    if isinstance(data, list) or (isinstance(data, dict) and "namespace" in data and "key" in data):
        reading.dump(data, "input", None)
    elif isinstance(data, dict):
        if not data:
            raise FormatError("input", "expected store items, got an empty object")
        for key, value in data.items():
            reading.dump(value, key, key)
    else:
        raise FormatError("input", f"expected store items, got {json_type(data)}")
    if not reading.items:
        raise FormatError("input", "no store item in the file")
    return reading.document()


# --- writing ----------------------------------------------------------------------------------------------------

def _label(text: str) -> str:
    # LangGraph refuses a label with a dot, a NUL or nothing in it.
    return text.replace(".", "_").replace("\x00", "_") or "_"


def _namespace(store: StoreIn | None, report: WriteReport) -> list[str]:
    if store is None:
        report.lose("store", "a record of no store is written under the namespace [\"memoryviz\"]", unit="record")
        return ["memoryviz"]
    scope = store.scope.get("namespace")
    if _is_namespace(scope) and [_label(label) for label in scope] == scope and scope[0] != "langgraph":
        return list(scope)
    labels = [_label(f"{key}={value}") for key, value in store.scope.items()] or [_label(store.name)]
    if labels[0] == "langgraph":
        labels.insert(0, "memoryviz")
    report.lose("scope", f"a LangGraph namespace is a list of labels: the store {store.name!r} is written under "
                         f"{labels}", unit="store")
    return labels


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def write(document: MemoryDocument, report: WriteReport) -> Any:
    """The active records as ``item.dict()`` lists them (``store.put(tuple(namespace), key, value)`` takes each)."""
    stores = {store.key: store for store in document.stores}
    namespaces: dict[str, list[str]] = {}
    out = []
    for store_key_, record in document.all_records():
        store = stores.get(store_key_)
        if store_key_ not in namespaces:
            namespaces[store_key_] = _namespace(store, report)
        if record.state != "active":
            report.lose(f"{record.state} record", "a LangGraph store keeps only its current items", unit="record")
            continue
        if len(record.versions) > 1:
            report.lose("version", "a LangGraph store keeps only an item's current value", unit="version",
                        count=len(record.versions) - 1)
        if store is not None and store.source_format == NAME and isinstance(record.value, dict):
            value = record.value
        else:
            value = {"text": record.text, **({"metadata": record.metadata} if record.metadata else {})}
            if record.value is not None and record.value != record.text:
                report.lose("value", "another library's value is written as {text, metadata}", unit="record")
        out.append({"namespace": namespaces[store_key_], "key": record.external_id, "value": value,
                    "created_at": _iso(record.created_at), "updated_at": _iso(record.updated_at)})
    if document.recalls:
        report.lose("recall", "a LangGraph store keeps no record of its reads", unit="recall",
                    count=len(document.recalls))
    if document.conversations:
        report.lose("conversation", "store items hold no messages", unit="conversation",
                    count=len(document.conversations))
    if document.snapshots:
        report.lose("snapshot", "store items hold no agent state", unit="snapshot", count=len(document.snapshots))
    return out
