"""LangGraph 1.2.24's stores give their items here (in .venv-mem), for the langgraph_store reader's tests; adapted
from the store part of tests/samples/memory/langgraph/make_langgraph.py, with the same word-hash fake embedding.

Beyond the sample: four namespaces (two users' memories, a profile, a shared one), an item overwritten (dumped before
and after), one deleted, a LangMem-shaped value (``{"content": {"content": ...}}``), a value with no text field, a
search over a namespace prefix (items of two namespaces), a search without a query (scores null), and a
``SqliteStore`` (times without a zone: SQLite's CURRENT_TIMESTAMP). Files, each as ``item.dict()`` gives items:

- ``items.json``: named dumps, as the sample's store_items.json (searches, gets, ``list_namespaces``);
- ``expected.json``: ``{namespace joined by dots: store.search(namespace, limit=100)}``, what each namespace holds
  at the end by the store's own API; ``search_u7.json``: a bare list (a search); ``sqlite_items.json``.

Run: python langgraph_store_files.py OUT_DIR
     python langgraph_store_files.py OUT_DIR reload ITEMS.json: puts the items of a JSON list (memoryviz's write)
     into a fresh InMemoryStore and writes ``reloaded.json``: ``{namespace: store.search(namespace)}``.
"""
import hashlib
import json
import os
import sys

from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

OUT = os.path.abspath(sys.argv[1])
WORK = os.path.join(OUT, "work")
os.makedirs(WORK, exist_ok=True)
DIMS = 8


def fake_embed(texts):
    out = []
    for t in texts:
        v = [0.0] * DIMS
        for w in t.lower().split():
            v[int(hashlib.md5(w.strip(".,!?").encode()).hexdigest(), 16) % DIMS] += 1.0
        n = sum(x * x for x in v) ** 0.5 or 1.0
        out.append([x / n for x in v])
    return out


def dump(name, value):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False, default=str)


def write_files():
    store = InMemoryStore(index={"embed": fake_embed, "dims": DIMS, "fields": ["text"]})
    u42, u7 = ("users", "u-42", "memories"), ("users", "u-7", "memories")
    profile, shared = ("users", "u-42", "profile"), ("app", "shared")
    store.put(u42, "m1", {"text": "Prefers carry-on luggage only", "kind": "preference"})
    store.put(u42, "m2", {"text": "Is travelling to Lisbon in May", "kind": "plan"})
    store.put(u42, "m3", {"text": "Allergic to cats", "kind": "health"})
    before = store.get(u42, "m1").dict()
    store.put(u42, "m1", {"text": "Prefers carry-on luggage only, never checks bags", "kind": "preference"})
    store.delete(u42, "m3")
    store.put(u7, "m1", {"text": "Vegetarian, eats fish in Lisbon", "kind": "diet"})
    store.put(u7, "n1", {"kind": "Memory", "content": {"content": "Works in Lisbon"}})  # LangMem's shape
    store.put(profile, "name", {"name": "Ana", "age": 41})  # no text field
    store.put(shared, "faq-1", {"text": "Check-in closes 40 minutes before departure"})

    dump("items.json", {
        "search_lisbon": [it.dict() for it in store.search(u42, query="weather in Lisbon", limit=2)],
        "search_users": [it.dict() for it in store.search(("users",), query="Lisbon", limit=4)],
        "get_m1_before": before,
        "get_m1": store.get(u42, "m1").dict(),
        "profile": [it.dict() for it in store.search(profile)],
        "list_namespaces": [list(ns) for ns in store.list_namespaces()],
    })
    dump("expected.json", {".".join(ns): [it.dict() for it in store.search(ns, limit=100)]
                           for ns in store.list_namespaces()})
    dump("search_u7.json", [it.dict() for it in store.search(u7, query="lisbon", limit=5)])

    with SqliteStore.from_conn_string(os.path.join(WORK, "store.sqlite")) as sql_store:
        sql_store.setup()
        sql_store.put(shared, "faq-1", {"text": "Check-in closes 40 minutes before departure"})
        sql_store.put(shared, "faq-2", {"text": "One cabin bag of 8 kg"})
        dump("sqlite_items.json", [it.dict() for it in sql_store.search(shared, limit=10)])


def reload(path):
    with open(path, encoding="utf-8") as f:
        items = json.load(f)
    store = InMemoryStore()
    for item in items:
        store.put(tuple(item["namespace"]), item["key"], item["value"])
    dump("reloaded.json", {".".join(ns): [it.dict() for it in store.search(ns, limit=1000)]
                           for ns in store.list_namespaces()})


if __name__ == "__main__":
    if sys.argv[2:3] == ["reload"]:
        reload(sys.argv[3])
    else:
        write_files()
