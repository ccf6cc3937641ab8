"""An agent that keeps user preferences in a memory store, traced by latitude-telemetry's memory telemetry (its
``create_memory_telemetry``: spans of the OpenTelemetry GenAI memory operations) and its OpenAI instrumentation
(OpenInference). Runs in a reference virtualenv of its own (tests/otel_clients/requirements-latitude.txt).

    python memory_latitude.py BASE_URL

Latitude exports as it does for any user: its own span processor posts protobuf bodies to
``$LATITUDE_TELEMETRY_URL/v1/traces`` with ``Authorization: Bearer <api key>`` (the key is ``$LATITUDE_API_KEY``),
after its smart filter (only spans with gen_ai.* or llm.* attributes, and its own) and its default redaction.

Three turns, each a trace opened by ``capture()``: search the store, call the model (the scripted server at BASE_URL)
with what was found, then write. Creates (one record, then two in one span), an update, an upsert whose content is
an object, a delete; a turn with content capture off; a failing update; a second store wiped and deleted. Prints, as
its last line, what the store did operation by operation and what it holds at the end.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
from typing import Any

import openai
from latitude_telemetry import Latitude, capture, create_memory_telemetry

SESSION = "prefs-1"
DONE: list[dict[str, Any]] = []  # every operation, as the store did it


class PreferenceStore:
    """A small memory backend: records by id, searched by the words they share with the query."""

    def __init__(self) -> None:
        self.stores: dict[str, dict[str, dict[str, Any]]] = {}

    def create_store(self, store: str) -> None:
        self.stores[store] = {}
        DONE.append({"op": "create_store", "store": store})

    def write(self, op: str, store: str, records: list[dict[str, Any]]) -> None:
        for record in records:
            if op == "update" and record["id"] not in self.stores[store]:
                raise KeyError(f"no record {record['id']} in {store}")
            self.stores[store][record["id"]] = record
            DONE.append({"op": op, "store": store, "id": record["id"], "record": record})

    def delete(self, store: str, record_id: str | None = None) -> None:
        ids = [record_id] if record_id else sorted(self.stores[store])
        for one in ids:
            del self.stores[store][one]
            DONE.append({"op": "delete", "store": store, "id": one})

    def delete_store(self, store: str) -> None:
        del self.stores[store]
        DONE.append({"op": "delete_store", "store": store})

    def search(self, store: str, query: str, limit: int = 3) -> list[dict[str, Any]]:
        words = set(query.lower().split())
        found = []
        for record in self.stores[store].values():
            text = json.dumps(record["content"]) if not isinstance(record["content"], str) else record["content"]
            shared = words & set(text.lower().replace(".", "").split())
            if shared:
                found.append({**record, "score": round(len(shared) / len(words), 4)})
        found.sort(key=lambda r: (-r["score"], r["id"]))
        DONE.append({"op": "search", "store": store, "query": query, "results": found[:limit]})
        return found[:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    args = parser.parse_args()
    latitude = Latitude(api_key=os.environ["LATITUDE_API_KEY"], service_name="prefs-agent",
                        instrumentations={"openai": openai})
    memory = create_memory_telemetry(latitude, store_id="user-prefs", capture_content=True,
                                     context={"session_id": SESSION})
    client = openai.OpenAI(base_url=args.base_url, api_key="sk-stub", max_retries=0)
    backend = PreferenceStore()
    history: list[dict[str, Any]] = []

    def ask(question: str, found: list[dict[str, Any]]) -> None:
        known = "\n".join(f"- {r['content'] if isinstance(r['content'], str) else json.dumps(r['content'])}"
                          for r in found)
        messages = [{"role": "system", "content": f"You help Alice.\nMemories:\n{known or '(none)'}"},
                    *history, {"role": "user", "content": question}]
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        history.extend([{"role": "user", "content": question},
                        {"role": "assistant", "content": reply.choices[0].message.content}])

    def search(query: str, *, capture_content: bool | None = None, store: str = "user-prefs") -> Any:
        return memory.search(store_id=store, query=query, capture_content=capture_content,
                             execute=lambda: backend.search(store, query),
                             records_from_result=lambda found: [
                                 {"id": r["id"], "content": r["content"], "score": r["score"],
                                  **({"metadata": r["metadata"]} if "metadata" in r else {})} for r in found])

    def turn_1() -> None:
        memory.create_store(execute=lambda: backend.create_store("user-prefs"))
        found = search("what does alice eat")
        ask("What should I eat tonight? I am vegetarian.", found)
        first = {"id": "mem-1", "content": "Alice is vegetarian", "metadata": {"source": "chat", "turn": 1}}
        memory.create(record_id="mem-1", records=[first], execute=lambda: backend.write("create", "user-prefs",
                                                                                      [first]))
        two = [{"id": "mem-2", "content": "Alice runs every morning", "metadata": {"source": "chat"}},
               {"id": "mem-3", "content": "Alice lives in Lyon"}]
        memory.create(records=two, execute=lambda: backend.write("create", "user-prefs", two))

    def turn_2() -> None:
        found = search("what does alice eat every morning")
        ask("I went vegan. What about breakfast before my run?", found)
        vegan = {"id": "mem-1", "content": "Alice is vegan", "metadata": {"source": "chat", "turn": 2}}
        memory.update(record_id="mem-1", records=[vegan],
                      execute=lambda: backend.write("update", "user-prefs", [vegan]))
        runs = {"id": "mem-2", "content": {"preference": "morning runs", "days": ["Tue", "Sun"]}}
        memory.upsert(record_id="mem-2", records=[runs],
                      execute=lambda: backend.write("upsert", "user-prefs", [runs]))
        memory.delete(record_id="mem-3", execute=lambda: backend.delete("user-prefs", "mem-3"))

    def turn_3() -> None:
        # Content capture off for this turn: the spans say the operation, the store and the record, not the body.
        quiet = {"id": "mem-2", "content": "Alice runs on Tuesdays and Sundays"}
        memory.update(record_id="mem-2", records=[quiet], capture_content=False,
                      execute=lambda: backend.write("update", "user-prefs", [quiet]))
        found = search("when does alice run", capture_content=False)
        ask("When do I run again?", found)
        missing = {"id": "mem-404", "content": "never written"}
        with contextlib.suppress(KeyError):  # the store refuses it: the span says so, with an error status
            memory.update(record_id="mem-404", records=[missing],
                          execute=lambda: backend.write("update", "user-prefs", [missing]))
        memory.create_store(store_id="scratch", execute=lambda: backend.create_store("scratch"))
        scratch = [{"id": "s-1", "content": "temporary note"}]
        memory.create(store_id="scratch", records=scratch, execute=lambda: backend.write("create", "scratch",
                                                                                        scratch))
        memory.delete(store_id="scratch", execute=lambda: backend.delete("scratch"))
        memory.delete_store(store_id="scratch", execute=lambda: backend.delete_store("scratch"))

    for n, turn in enumerate([turn_1, turn_2, turn_3], 1):
        capture(f"turn-{n}", turn, {"session_id": SESSION})
    latitude.shutdown()
    print(json.dumps({"done": DONE, "stores": backend.stores, "history": history}))


if __name__ == "__main__":
    main()
