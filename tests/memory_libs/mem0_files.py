"""mem0 2.2.1 writes its history.db here (in .venv-mem), for the mem0 reader's tests; adapted from
tests/samples/memory/mem0/make_mem0.py, with the same offline stubs: a word-hash embedder and a scripted LLM swapped
in right after ``Memory()`` is built, Qdrant in local mode, telemetry off before mem0 is imported.

Beyond the sample: three scopes (alice with an agent and a run, bob, an agent alone), raw and inferred adds in
each (an inferred fact already stored is dropped by mem0's hash check), two updates of one memory (one changing only
its metadata), an update of another, and deletes in two scopes. Besides ``history.db``, the script writes what
mem0's own API returned, as mem0 returns it:

- ``get_all.json``: ``{scope name: m.get_all(filters=scope, top_k=100)}``;
- ``history.json``: ``{memory id: m.history(id)}`` for every memory ever added (deleted ones too), in the order
  they were added;
- ``search.json``: ``{"query", "top_k", "threshold", "search": m.search(...)}`` (a combined object the reader reads);
- ``messages.json``: the rows of history.db's ``messages`` table; ``ids.json``: which id was updated or deleted.

Run: python mem0_files.py OUT_DIR
     python mem0_files.py OUT_DIR reload RECORDS.json: adds the records of a mem0 JSON file (memoryviz's write)
     into a fresh Memory with ``add(..., infer=False)`` and writes ``reloaded.json``: ``get_all`` of every scope.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import sys

OUT = os.path.abspath(sys.argv[1])
WORK = os.path.join(OUT, "work-reload" if sys.argv[2:3] == ["reload"] else "work")
os.makedirs(WORK, exist_ok=True)
os.environ["MEM0_TELEMETRY"] = "False"
os.environ["MEM0_DIR"] = os.path.join(WORK, ".mem0")

from mem0 import Memory  # noqa: E402
from mem0.configs.base import MemoryConfig  # noqa: E402
from mem0.configs.llms.base import BaseLlmConfig  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
from mem0.llms.base import LLMBase  # noqa: E402

DIMS = 8


class FakeEmbedder(EmbeddingBase):
    """Deterministic bag-of-words hash embedding (no model, no network)."""

    def embed(self, text, memory_action=None):
        v = [0.0] * DIMS
        for w in str(text).lower().split():
            h = int(hashlib.md5(w.strip(".,!?").encode()).hexdigest(), 16)
            v[h % DIMS] += 1.0
        n = sum(x * x for x in v) ** 0.5 or 1.0
        return [x / n for x in v]


class FakeLLM(LLMBase):
    """Answers mem0's single extraction call (the V3 additive pipeline) with the next scripted facts."""

    script = []

    def generate_response(self, messages, response_format=None, tools=None, tool_choice="auto", **kw):
        return json.dumps({"memory": FakeLLM.script.pop(0)})


def memory():
    cfg = MemoryConfig(
        vector_store={"provider": "qdrant", "config": {
            "collection_name": "memoryviz_tests", "path": os.path.join(WORK, "qdrant"),
            "embedding_model_dims": DIMS, "on_disk": True}},
        # mem0's config accepts built-in provider names only: "openai" with a dummy key, both clients swapped for
        # the fakes before any call (nothing is sent).
        embedder={"provider": "openai", "config": {"embedding_dims": DIMS, "api_key": "not-used"}},
        llm={"provider": "openai", "config": {"model": "fake-llm", "api_key": "not-used"}},
        history_db_path=os.path.join(WORK, "history.db"),
    )
    m = Memory(cfg)
    m.embedding_model = FakeEmbedder()
    m.llm = FakeLLM(BaseLlmConfig(model="fake-llm"))
    return m


def dump(name, value):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False, default=str)


SCOPES = {
    "alice": {"user_id": "alice", "agent_id": "chef-bot", "run_id": "run-001"},
    "alice_chat": {"user_id": "alice"},
    "bob": {"user_id": "bob"},
    "planner": {"agent_id": "planner"},
}


def write_files():
    m = memory()
    added = []

    def add(messages, scope, **kw):
        out = m.add(messages, **SCOPES[scope], **kw)
        added.extend(r["id"] for r in out["results"] if r["id"] not in added)
        return out["results"]

    diet = add([{"role": "user", "content": "I am vegetarian and allergic to peanuts", "name": "alice"},
                {"role": "assistant", "content": "Noted, no meat and no peanuts."}],
               "alice", metadata={"source": "onboarding", "category": "diet"}, infer=False)
    FakeLLM.script = [
        [{"text": "Alice is training for a half marathon in October", "attributed_to": "user"},
         {"text": "Alice prefers morning runs", "attributed_to": "user"}],
        [{"text": "Bob works night shifts", "attributed_to": "user"},
         {"text": "Bob lives in Porto", "attributed_to": "user"}],
        [{"text": "Bob lives in Porto", "attributed_to": "user"},  # stored already: mem0 drops it by its hash
         {"text": "Bob is learning the cello", "attributed_to": "user"}],
    ]
    add([{"role": "user", "content": "I'm training for a half marathon in October, I run every morning."}],
        "alice_chat", metadata={"source": "chat"})
    bob = add([{"role": "user", "content": "Remind me that my sister's birthday is on 3 May", "name": "bob"},
               {"role": "user", "content": "I take the 7:40 train on weekdays", "name": "bob"},
               {"role": "assistant", "content": "I will remind you on 2 May."}],
              "bob", metadata={"topic": "reminders"}, infer=False)
    add([{"role": "user", "content": "I work nights and live in Porto."},
         {"role": "assistant", "content": "Got it."}], "bob")
    add([{"role": "user", "content": "Still in Porto; I started cello lessons."}], "bob", metadata={"source": "chat"})
    add([{"role": "system", "content": "not stored"},
         {"role": "assistant", "content": "Plan trips by train when they take under four hours."}],
        "planner", metadata={"kind": "procedure"}, infer=False)

    m.update(diet[0]["id"], "I am vegan and allergic to peanuts")
    m.update(diet[0]["id"], metadata={"category": "diet", "checked": True})  # the text unchanged: an UPDATE still
    m.update(bob[1]["id"], "I take the 7:10 train on weekdays")
    m.delete(diet[1]["id"])
    m.delete(bob[2]["id"])

    dump("get_all.json", {name: m.get_all(filters=scope, top_k=100) for name, scope in SCOPES.items()})
    dump("history.json", {memory_id: m.history(memory_id) for memory_id in added})
    query = "what should alice eat for dinner, she is vegetarian"
    dump("search.json", {"query": query, "top_k": 3, "threshold": 0.0,
                         "search": m.search(query, filters={"user_id": "alice"}, top_k=3, threshold=0.0)})
    dump("ids.json", {"updated": [diet[0]["id"], bob[1]["id"]], "deleted": [diet[1]["id"], bob[2]["id"]],
                      "added": added})
    m.close() if hasattr(m, "close") else None
    db = sqlite3.connect(os.path.join(WORK, "history.db"))
    db.row_factory = sqlite3.Row
    dump("messages.json", [dict(r) for r in db.execute("SELECT rowid, * FROM messages ORDER BY rowid")])
    db.close()
    shutil.copy(os.path.join(WORK, "history.db"), os.path.join(OUT, "history.db"))


def reload(path):
    with open(path, encoding="utf-8") as f:
        written = json.load(f)
    m = memory()
    ids = {}
    scopes = []
    for record in written["results"]:
        scope = {key: record[key] for key in ("user_id", "agent_id", "run_id") if record.get(key)}
        message = {"role": record.get("role") or "user", "content": record["memory"]}
        if record.get("actor_id"):
            message["name"] = record["actor_id"]
        metadata = dict(record.get("metadata") or {})
        if record.get("attributed_to"):
            metadata["attributed_to"] = record["attributed_to"]
        out = m.add([message], **scope, metadata=metadata, infer=False)
        ids[out["results"][0]["id"]] = record["id"]
        if scope not in scopes:
            scopes.append(scope)
    found = {}
    for scope in scopes:
        for record in m.get_all(filters=scope, top_k=1000)["results"]:
            found[ids[record["id"]]] = record  # by the id it had in the file
    dump("reloaded.json", found)


if __name__ == "__main__":
    if sys.argv[2:3] == ["reload"]:
        reload(sys.argv[3])
    else:
        write_files()
