"""A third turn of the session of make_agentscope.py, a day later, whose long-term memory recall is stale.

pip install "agentscope==1.0.21" "mem0ai==1.0.11" "qdrant-client==1.20.0" "mcp==1.19.0"   (as make_agentscope.py)

AgentScope itself writes session_user_1_turn3.json: JSONSession loads session_user_1_turn2.json into Friday (the same
ReActAgent, tools, plan notebook and knowledge base as make_agentscope.py), the agent answers one more user message
with a scripted stub model, and JSONSession saves it (session "trip" of user "user_1": the file is user_1_trip.json).

One part is ours, on purpose: the long-term memory. Mem0LongTermMemory would ask mem0, which since turn 2 holds
"User prefers high-speed trains over flights" (its UPDATE at 2026-12-06 00:51:32.726813, in ltm_mem0_records.json).
Here Friday reads a cache of what mem0 returned in turn 2 and was never told of that update (CachedLongTermMemory: a
LongTermMemoryBase that answers from the turn-2 <long_term_memory> message and records nothing), as a read-through
cache in front of a memory service does. So the <long_term_memory> message of turn 3 sends the older text after the
record changed: a stale recall, written by AgentScope's own ReActAgent. Its state_dict is {} as
Mem0LongTermMemory's is, so the saved file has the same shape.

Offline only: the stub model, the fake embedder and Qdrant in memory of make_agentscope.py. The timestamps are the
clock's: the file kept here was written on 2026-12-07.
Run:  python make_agentscope_turn3.py   (reads and writes next to this script)
"""
import asyncio
import hashlib
import json
import os
import shutil
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="as_turn3_")

from agentscope.agent import ReActAgent                       # noqa: E402
from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter         # noqa: E402
from agentscope.memory import InMemoryMemory, LongTermMemoryBase  # noqa: E402
from agentscope.message import Msg, TextBlock, ToolUseBlock  # noqa: E402
from agentscope.model import ChatModelBase, ChatResponse     # noqa: E402
from agentscope.plan import PlanNotebook                     # noqa: E402
from agentscope.rag import SimpleKnowledge, QdrantStore, Document, DocMetadata  # noqa: E402
from agentscope.session import JSONSession                   # noqa: E402
from agentscope.tool import Toolkit, ToolResponse            # noqa: E402

DIMS = 8
LTM_OPEN = "<long_term_memory>The content below are retrieved from long-term memory, which maybe useful:\n"
LTM_CLOSE = "</long_term_memory>"


class FakeEmbedding(EmbeddingModelBase):  # make_agentscope.py's
    supported_modalities = ["text"]

    def __init__(self):
        super().__init__(model_name="fake-hash-embedding", dimensions=DIMS)

    async def __call__(self, text, **kwargs):
        vecs = []
        for t in text:
            t = t["text"] if isinstance(t, dict) else str(t)
            v = [0.0] * DIMS
            for w in t.lower().split():
                v[int(hashlib.md5(w.strip('.,!?"').encode()).hexdigest(), 16) % DIMS] += 1.0
            n = sum(x * x for x in v) ** 0.5 or 1.0
            vecs.append([x / n for x in v])
        return EmbeddingResponse(embeddings=vecs)


class CachedLongTermMemory(LongTermMemoryBase):
    """What a read-through cache in front of mem0 answers: the text it kept when it was filled, until someone
    invalidates it (nobody does)."""

    def __init__(self, kept: str):
        super().__init__()
        self.kept = kept

    async def retrieve(self, msg, limit=5, **kwargs):
        return self.kept

    async def record(self, msgs, **kwargs):
        return None


class StubModel(ChatModelBase):
    """Scripted model; every prompt it receives is kept in self.calls."""

    def __init__(self):
        super().__init__(model_name="stub-agent", stream=False)
        self.calls = []

    async def __call__(self, messages, tools=None, tool_choice=None, structured_model=None, **kw):
        self.calls.append({"messages": messages, "tools": [t["function"]["name"] for t in (tools or [])]})
        n = sum(1 for c in self.calls if c["tools"])
        if n == 1:
            return ChatResponse(content=[
                TextBlock(type="text", text="You prefer trains: I'll book the cheapest one on Thursday morning."),
                ToolUseBlock(type="tool_use", id="call_train_1", name="book_train",
                             input={"origin": "Shanghai", "destination": "Hangzhou", "day": "Thursday",
                                    "time": "morning"})])
        if n == 2:
            return ChatResponse(content=[ToolUseBlock(
                type="tool_use", id="call_plan_2", name="finish_subtask",
                input={"subtask_idx": 0, "subtask_outcome": "Ticket confirmation: K1805, Thursday 07:12"})])
        return ChatResponse(content=[TextBlock(
            type="text", text="Booked: K1805 on Thursday, Shanghai 07:12, Hangzhou 09:40, seat 12B. "
                              "Next: a hotel near West Lake.")])


async def book_train(origin: str, destination: str, day: str, time: str) -> ToolResponse:
    """Book the cheapest train.

    Args:
        origin (str): Where from.
        destination (str): Where to.
        day (str): The day.
        time (str): morning, afternoon or evening.
    """
    return ToolResponse(content=[TextBlock(
        type="text", text=f"Booked K1805 {origin} 07:12 -> {destination} 09:40 on {day}, seat 12B, 24.5 CNY")])


def dump(name, obj):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, default=str)
    print("wrote", name, os.path.getsize(os.path.join(HERE, name)), "bytes")


async def main():
    with open(os.path.join(HERE, "session_user_1_turn2.json"), encoding="utf-8") as f:
        turn2 = json.load(f)
    ltm_texts = [m["content"] for m, _ in turn2["friday"]["memory"]["content"] if m["name"] == "long_term_memory"]
    kept = ltm_texts[-1][len(LTM_OPEN):-len(LTM_CLOSE)]  # what mem0 returned in turn 2, as the cache kept it

    emb = FakeEmbedding()
    kb = SimpleKnowledge(
        embedding_store=QdrantStore(location=":memory:", collection_name="kb", dimensions=DIMS),
        embedding_model=emb)
    chunks = ["West Lake is the main sight of Hangzhou.",
              "Trains from Shanghai to Hangzhou take about one hour.",
              "Longjing tea is grown in the hills west of Hangzhou."]
    await kb.add_documents([Document(metadata=DocMetadata(
        content=TextBlock(type="text", text=t), doc_id="hangzhou_guide.md",
        chunk_id=i, total_chunks=len(chunks))) for i, t in enumerate(chunks)])

    model = StubModel()
    toolkit = Toolkit()
    toolkit.register_tool_function(book_train)
    agent = ReActAgent(
        name="Friday", sys_prompt="You are Friday, a travel assistant.",
        model=model, formatter=OpenAIChatFormatter(), toolkit=toolkit,
        memory=InMemoryMemory(), long_term_memory=CachedLongTermMemory(kept),
        long_term_memory_mode="static_control", knowledge=kb,
        plan_notebook=PlanNotebook())

    # The turn-2 file under the name JSONSession gives session "trip" of user "user_1".
    shutil.copy(os.path.join(HERE, "session_user_1_turn2.json"), os.path.join(WORK, "user_1_trip.json"))
    session = JSONSession(save_dir=WORK)
    await session.load_session_state(session_id="trip", user_id="user_1", friday=agent)
    await agent(Msg("user", "Book the train for Thursday morning, please.", "user"))
    await session.save_session_state(session_id="trip", user_id="user_1", friday=agent)

    with open(os.path.join(WORK, "user_1_trip.json"), encoding="utf-8") as f:
        raw = f.read()
    with open(os.path.join(HERE, "session_user_1_turn3.json"), "w", encoding="utf-8") as f:
        f.write(raw)
    print("wrote session_user_1_turn3.json", len(raw), "bytes")
    dump("agent_model_calls_turn3.json", model.calls)


if __name__ == "__main__":
    asyncio.run(main())
