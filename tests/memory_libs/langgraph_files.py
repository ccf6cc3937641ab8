"""LangGraph's own checkpoints, for the langgraph_checkpoints reader's tests (run in .venv-mem by runner.py).

Adapted from tests/samples/memory/langgraph/make_langgraph.py (the same offline stubs: langchain-core's
FakeMessagesListChatModel replays scripted AIMessages, the store embeds with a word-hash): a graph agent -> tools ->
agent over a state with more than messages (notes, a set, a pydantic model of a module that exists only here), run
by a SqliteSaver on several threads, several invokes each, with parallel tool calls, a failing tool, a subgraph (its
own checkpoint namespace), an interrupt left pending, and one thread of 10,000 messages. Writes into argv[1]:

  checkpoints.sqlite          the SqliteSaver database
  history_<thread>.json       get_state_history(thread) as JSON, newest first (as the sample state_history.json)
  checkpoints.json            every checkpoint as saver.list(None) gives it: ids, parent, metadata, ts, v, the
                              message ids, the channel values and the pending writes, as JSON
  pickled.sqlite              a SqliteSaver with pickle_fallback=True whose state held an object msgpack cannot
                              encode: LangGraph pickled the whole checkpoint (type "pickle")
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
import os
import sys
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

OUT = sys.argv[1]
# A module of the graph's own types, importable here and nowhere else: the reader must decode what the blob says
# about them without importing anything.
with open(os.path.join(OUT, "lg_custom_types.py"), "w", encoding="utf-8") as f:
    f.write(
        "from datetime import datetime\n"
        "from pydantic import BaseModel\n\n\n"
        "class Preference(BaseModel):\n    key: str\n    value: str\n    since: datetime\n\n\n"
        "class Opaque:\n    def __init__(self, token):\n        self.token = token\n"
    )
sys.path.insert(0, OUT)

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from lg_custom_types import Opaque, Preference  # noqa: E402

DIMS = 8
BIG = 10_000


def fake_embed(texts):
    out = []
    for t in texts:
        v = [0.0] * DIMS
        for w in t.lower().split():
            v[int(hashlib.md5(w.strip(".,!?").encode()).hexdigest(), 16) % DIMS] += 1.0
        n = sum(x * x for x in v) ** 0.5 or 1.0
        out.append([x / n for x in v])
    return out


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"It is 21C and sunny in {city}."


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return f"It is 10:00 in {city}."


@tool
def book_flight(city: str) -> str:
    """Book a flight to a city."""
    raise ValueError(f"no flights to {city}")


class Mood(Enum):
    CALM = "calm"


class State(MessagesState):
    notes: Annotated[list[str], operator.add]
    seen: set[str]
    prefs: list[Preference]
    mood: Mood


def call(name, args, call_id):
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


# Every model call of the run, in order (one model, the invokes run one after the other).
model = FakeMessagesListChatModel(responses=[
    # thread-1, invoke 1: a call, then the answer
    AIMessage(content="", id="t1-ai-1", tool_calls=[call("get_weather", {"city": "Lisbon"}, "call_w1")]),
    AIMessage(content="Sunny, 21C in Lisbon.", id="t1-ai-2"),
    # thread-1, invoke 2: two calls at once, then the answer
    AIMessage(content="Checking both.", id="t1-ai-3", tool_calls=[call("get_weather", {"city": "Porto"}, "call_w2"),
                                                                  call("get_time", {"city": "Porto"}, "call_t1")]),
    AIMessage(content="Porto: sunny, 10:00.", id="t1-ai-4"),
    # thread-2, invoke 1: no tool
    AIMessage(content="Hello! How can I help?", id="t2-ai-1"),
    # thread-2, invoke 2: a tool that fails
    AIMessage(content="", id="t2-ai-2", tool_calls=[call("book_flight", {"city": "Oslo"}, "call_b1")]),
    AIMessage(content="I could not book it: no flights to Oslo.", id="t2-ai-3"),
    # thread-3: the subgraph's model
    AIMessage(content="Research done: Lisbon is hilly.", id="t3-ai-1"),
    # thread-4: after the interrupt is resumed
    AIMessage(content="Approved, booking.", id="t4-ai-1"),
])


def agent(state: State, *, store: BaseStore):
    last_human = next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
    items = store.search(("users", "u-42", "memories"), query=last_human.content, limit=2)
    known = "\n".join(f"- {it.value['text']}" for it in items)
    prompt = [SystemMessage(content=f"You are a travel helper.\nKnown about the user:\n{known}"), *state["messages"]]
    reply = model.invoke(prompt)
    return {"messages": [reply], "notes": [f"answered {last_human.id}"], "seen": {last_human.id} | state.get(
        "seen", set()), "mood": Mood.CALM,
            "prefs": [Preference(key="luggage", value="carry-on", since=datetime(2026, 12, 1, 9, 30, tzinfo=UTC))]}


def build(saver, store):
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([get_weather, get_time, book_flight], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver, store=store)


def research_graph(saver):
    def research(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("research", research)
    sub.add_edge(START, "research")
    child = sub.compile()

    parent = StateGraph(MessagesState)
    parent.add_node("child", child)
    parent.add_edge(START, "child")
    return parent.compile(checkpointer=saver)


def approval_graph(saver):
    def ask(state: MessagesState):
        answer = interrupt({"question": "Book the flight?"})
        return {"messages": [HumanMessage(content=f"approval: {answer}", id="t4-approval")]}

    def act(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("ask", ask)
    g.add_node("act", act)
    g.add_edge(START, "ask")
    g.add_edge("ask", "act")
    return g.compile(checkpointer=saver)


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def dump(name, obj):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)


def history(app, thread):
    cfg = {"configurable": {"thread_id": thread}}
    out = []
    for snap in app.get_state_history(cfg):
        values = {k: jsonable(v) for k, v in snap.values.items()}
        out.append({"values": values, "next": list(snap.next), "config": snap.config, "metadata": snap.metadata,
                    "created_at": snap.created_at, "parent_config": snap.parent_config,
                    "tasks": [{"id": t.id, "name": t.name, "path": list(t.path), "error": jsonable(t.error),
                               "interrupts": jsonable(list(t.interrupts))} for t in snap.tasks]})
    dump(f"history_{thread}.json", out)


def main():
    store = InMemoryStore(index={"embed": fake_embed, "dims": DIMS, "fields": ["text"]})
    ns = ("users", "u-42", "memories")
    store.put(ns, "m1", {"text": "Prefers carry-on luggage only", "kind": "preference"})
    store.put(ns, "m2", {"text": "Is travelling to Lisbon in May", "kind": "plan"})

    with SqliteSaver.from_conn_string(os.path.join(OUT, "checkpoints.sqlite")) as saver:
        app = build(saver, store)
        t1 = {"configurable": {"thread_id": "thread-1"}}
        app.invoke({"messages": [HumanMessage(content="What's the weather in Lisbon?", id="t1-h-1")]}, t1)
        app.invoke({"messages": [HumanMessage(content="And in Porto, with the time?", id="t1-h-2")]}, t1)
        t2 = {"configurable": {"thread_id": "thread-2"}}
        app.invoke({"messages": [HumanMessage(content="Hi", id="t2-h-1")]}, t2)
        store.put(ns, "m3", {"text": "Wants to fly to Oslo", "kind": "plan"})
        app.invoke({"messages": [HumanMessage(content="Book me a flight to Oslo", id="t2-h-2")]}, t2)

        research = research_graph(saver)
        research.invoke({"messages": [HumanMessage(content="Research Lisbon", id="t3-h-1")]},
                        {"configurable": {"thread_id": "thread-3"}})

        approval = approval_graph(saver)
        t4 = {"configurable": {"thread_id": "thread-4"}}
        approval.invoke({"messages": [HumanMessage(content="Book Oslo", id="t4-h-1")]}, t4)
        approval.invoke(Command(resume="yes"), t4)
        # a second question, left waiting: its interrupt stays a pending write of the last checkpoint
        approval.invoke({"messages": [HumanMessage(content="Book Bergen too", id="t4-h-2")]}, t4)

        big = {"configurable": {"thread_id": "thread-big"}}
        plain = StateGraph(MessagesState)
        plain.add_node("noop", lambda state: {})
        plain.add_edge(START, "noop")
        big_app = plain.compile(checkpointer=saver)
        many = [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i} " + "x" * 40, id=f"big-{i}")
                for i in range(BIG)]
        big_app.update_state(big, {"messages": many})
        big_app.update_state(big, {"messages": [HumanMessage(content="one more", id=f"big-{BIG}")]})

        for thread, graph in (("thread-1", app), ("thread-2", app), ("thread-3", research), ("thread-4", approval),
                              ("thread-big", big_app)):
            history(graph, thread)

        every = []
        for tup in saver.list(None):
            cfg = tup.config["configurable"]
            checkpoint = tup.checkpoint
            values = checkpoint["channel_values"]
            every.append({
                "thread_id": cfg["thread_id"], "checkpoint_ns": cfg["checkpoint_ns"],
                "checkpoint_id": cfg["checkpoint_id"],
                "parent_checkpoint_id": (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                "metadata": tup.metadata, "ts": checkpoint["ts"], "v": checkpoint["v"],
                "message_ids": [m.id for m in values.get("messages", [])] if cfg["thread_id"] != "thread-big"
                else [values["messages"][0].id, values["messages"][-1].id, len(values["messages"])],
                "channel_values": {k: jsonable(v) for k, v in values.items()} if cfg["thread_id"] != "thread-big"
                else None,
                "pending_writes": [[task, channel, jsonable(value)]
                                   for task, channel, value in tup.pending_writes or []],
            })
        dump("checkpoints.json", every)

    pickled = SqliteSaver.from_conn_string(os.path.join(OUT, "pickled.sqlite"))
    with pickled as saver:
        saver.serde = JsonPlusSerializer(pickle_fallback=True)

        class Holder(MessagesState):
            thing: Any

        g = StateGraph(Holder)
        g.add_node("keep", lambda state: {"thing": Opaque("secret")})
        g.add_edge(START, "keep")
        g.compile(checkpointer=saver).invoke({"messages": [HumanMessage(content="hi", id="p-1")]},
                                             {"configurable": {"thread_id": "pickled"}})
        kinds = sorted({row[0] for row in saver.conn.execute("select type from checkpoints")})
        print("pickled checkpoint types:", kinds)
        assert "pickle" in kinds, kinds


if __name__ == "__main__":
    main()
