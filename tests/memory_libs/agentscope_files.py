"""AgentScope 1.0.21 writes JSONSession files here (in .venv-mem-agentscope), for the agentscope_session reader's
tests; adapted from tests/samples/memory/agentscope/make_agentscope.py, with the same offline stubs: a scripted
ChatModelBase subclass (it also answers mem0 1.0.11's fact-extraction and update prompts), a word-hash embedder,
Qdrant in local mode, mem0's telemetry off.

Beyond the sample: the same session saved after each turn under one name (``user_1_trip.json``, copied into
``turn1/`` and ``turn2/``, as a user's folder would hold it at those two moments), and a second agent in the same
file (Saturday, no long-term memory nor knowledge). Besides the files, ``api.json`` holds what the library's own
calls returned: each agent's ``state_dict()`` and ``memory.get_memory()`` after each turn, every ``retrieve`` of the
long-term memory (the string it returned and the mem0 records its search found), every knowledge retrieval (the
documents with their doc_id and chunk_id), the knowledge base's chunks, mem0's ``get_all`` and ``history``, and the
messages every model call received.

Run: python agentscope_files.py OUT_DIR
"""
import asyncio
import hashlib
import json
import os
import re
import shutil
import sys

OUT = os.path.abspath(sys.argv[1])
WORK = os.path.join(OUT, "work")
os.makedirs(WORK, exist_ok=True)
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", os.path.join(WORK, ".mem0"))

from agentscope.agent import ReActAgent  # noqa: E402
from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope.memory import InMemoryMemory, Mem0LongTermMemory  # noqa: E402
from agentscope.message import Msg, TextBlock, ToolUseBlock  # noqa: E402
from agentscope.model import ChatModelBase, ChatResponse  # noqa: E402
from agentscope.plan import PlanNotebook  # noqa: E402
from agentscope.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge  # noqa: E402
from agentscope.session import JSONSession  # noqa: E402
from agentscope.tool import Toolkit, ToolResponse  # noqa: E402

DIMS = 8
CHUNKS = [
    "West Lake is the main sight of Hangzhou.",
    "Trains from Shanghai to Hangzhou take about one hour.",
    "Longjing tea is grown in the hills west of Hangzhou.",
    "Hangzhou's high-speed rail station is Hangzhou East.",
]


class FakeEmbedding(EmbeddingModelBase):
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


class StubModel(ChatModelBase):
    """Scripted model; every prompt it receives is kept in self.calls."""

    def __init__(self, label, script):
        super().__init__(model_name=f"stub-{label}", stream=False)
        self.calls = []
        self.script = script

    async def __call__(self, messages, tools=None, tool_choice=None, structured_model=None, **kw):
        self.calls.append({"messages": messages, "tools": [t["function"]["name"] for t in (tools or [])]})
        first = str(messages[0].get("content", "")) if messages else ""
        if "Information Organizer" in first:  # mem0 1.0.x fact extraction
            return ChatResponse(content=[TextBlock(type="text", text=json.dumps(
                {"facts": ["User is planning a trip to Hangzhou next week", "User prefers trains over flights"]}))])
        if "smart memory manager" in first or "smart memory manager" in str(messages[-1].get("content", "")):
            prompt = " ".join(str(m.get("content", "")) for m in messages)
            existing = re.findall(r"""['"]id['"]: ['"](\d+)['"],\s*['"]text['"]: ['"]([^'"]*)['"]""", prompt)
            if not existing:
                events = [{"id": "0", "text": "User is planning a trip to Hangzhou next week", "event": "ADD"},
                          {"id": "1", "text": "User prefers trains over flights", "event": "ADD"}]
            else:
                events = [{"id": i, "text": "User prefers high-speed trains over flights", "event": "UPDATE",
                           "old_memory": t} if "train" in t else {"id": i, "text": t, "event": "NONE"}
                          for i, t in existing]
            return ChatResponse(content=[TextBlock(type="text", text=json.dumps({"memory": events}))])
        if structured_model is not None and not tools:  # the knowledge query rewrite: keep the query
            return ChatResponse(content=[TextBlock(type="text", text="")], metadata=None)
        n = sum(1 for c in self.calls if c["tools"])
        return ChatResponse(content=self.script(n))


def friday_script(n):
    if n == 1:
        return [TextBlock(type="text", text="Let me check the weather first."),
                ToolUseBlock(type="tool_use", id="call_weather_1", name="get_weather", input={"city": "Hangzhou"})]
    if n == 2:
        return [TextBlock(type="text", text="It will be sunny, 24°C in Hangzhou.")]
    if n == 3:
        return [ToolUseBlock(type="tool_use", id="call_plan_1", name="create_plan", input={
            "name": "Hangzhou trip", "description": "Prepare the Hangzhou trip",
            "expected_outcome": "Train booked and hotel reserved",
            "subtasks": [{"name": "Book train", "description": "Book a train to Hangzhou",
                          "expected_outcome": "Ticket confirmation"},
                         {"name": "Reserve hotel", "description": "Reserve a hotel near West Lake",
                          "expected_outcome": "Hotel booking"}]})]
    return [TextBlock(type="text", text="Plan created. First step: book the train.")]


def saturday_script(n):
    return [TextBlock(type="text", text=f"Saturday's answer {n}.")]


async def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city (str): The city name.
    """
    return ToolResponse(content=[TextBlock(type="text", text=f"weather in {city}: sunny, 24C")])


def doc_dict(d):
    return {"score": d.score, "doc_id": d.metadata.doc_id, "chunk_id": d.metadata.chunk_id,
            "text": d.metadata.content["text"]}


async def main():
    from mem0.configs.base import MemoryConfig
    from mem0.vector_stores.configs import VectorStoreConfig

    api = {"retrieve": [], "knowledge": [], "states": {}, "memories": {}}
    model, saturday_model, ltm_model, emb = (StubModel("agent", friday_script), StubModel("sat", saturday_script),
                                             StubModel("mem0", None), FakeEmbedding())
    kb = SimpleKnowledge(embedding_store=QdrantStore(location=":memory:", collection_name="kb", dimensions=DIMS),
                         embedding_model=emb)
    await kb.add_documents([Document(metadata=DocMetadata(
        content=TextBlock(type="text", text=t), doc_id="hangzhou_guide.md", chunk_id=i, total_chunks=len(CHUNKS)))
        for i, t in enumerate(CHUNKS)])
    api["chunks"] = [{"doc_id": "hangzhou_guide.md", "chunk_id": i, "text": t} for i, t in enumerate(CHUNKS)]
    kb_retrieve = kb.retrieve

    async def recording_retrieve(query, limit=5, score_threshold=None, **kw):
        docs = await kb_retrieve(query, limit=limit, score_threshold=score_threshold, **kw)
        api["knowledge"].append({"query": query, "limit": limit, "docs": [doc_dict(d) for d in docs]})
        return docs
    kb.retrieve = recording_retrieve

    ltm = Mem0LongTermMemory(
        agent_name="Friday", user_name="user_1", model=ltm_model, embedding_model=emb,
        mem0_config=MemoryConfig(history_db_path=os.path.join(WORK, "mem0_history.db")),
        vector_store_config=VectorStoreConfig(provider="qdrant", config={
            "collection_name": "ltm", "path": os.path.join(WORK, "qdrant"), "embedding_model_dims": DIMS,
            "on_disk": True}))
    search = ltm.long_term_working_memory.search
    found = []

    async def recording_search(*args, **kw):
        result = await search(*args, **kw)
        found.append([{"id": r["id"], "memory": r["memory"]} for r in result.get("results", [])])
        return result
    ltm.long_term_working_memory.search = recording_search
    ltm_retrieve = ltm.retrieve

    async def recording_ltm_retrieve(msg, limit=5, **kw):
        found.clear()
        text = await ltm_retrieve(msg, limit=limit, **kw)
        api["retrieve"].append({"returned": text, "records": [r for batch in found for r in batch]})
        return text
    ltm.retrieve = recording_ltm_retrieve

    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    friday = ReActAgent(name="Friday", sys_prompt="You are Friday, a travel assistant.", model=model,
                        formatter=OpenAIChatFormatter(), toolkit=toolkit, memory=InMemoryMemory(),
                        long_term_memory=ltm, long_term_memory_mode="static_control", knowledge=kb,
                        plan_notebook=PlanNotebook())
    saturday = ReActAgent(name="Saturday", sys_prompt="You are Saturday, who answers briefly.",
                          model=saturday_model, formatter=OpenAIChatFormatter(), toolkit=Toolkit(),
                          memory=InMemoryMemory())
    session = JSONSession(save_dir=WORK)
    questions = ["What's the weather in Hangzhou? I'm going there next week, by train.",
                 "Make me a plan for the trip."]
    for turn, question in enumerate(questions, 1):
        await friday(Msg("user", question, "user"))
        await saturday(Msg("user", f"Turn {turn}: anything to add?", "user"))
        await session.save_session_state(session_id="trip", user_id="user_1", friday=friday, saturday=saturday)
        os.makedirs(os.path.join(OUT, f"turn{turn}"), exist_ok=True)
        shutil.copyfile(os.path.join(WORK, "user_1_trip.json"), os.path.join(OUT, f"turn{turn}", "user_1_trip.json"))
        api["states"][f"turn{turn}"] = {"friday": friday.state_dict(), "saturday": saturday.state_dict()}
        api["memories"][f"turn{turn}"] = {
            name: [[m.to_dict(), marks] for m, marks in agent.memory.content]
            for name, agent in (("friday", friday), ("saturday", saturday))}
        assert [m.id for m in await friday.memory.get_memory()] == [m["id"] for m, _ in
                                                                     api["memories"][f"turn{turn}"]["friday"]]
    api["model_calls"] = model.calls
    mem = ltm.long_term_working_memory
    everything = await mem.get_all(user_id="user_1", agent_id="Friday")
    api["mem0_get_all"] = everything
    api["mem0_history"] = {r["id"]: await mem.history(r["id"]) for r in everything.get("results", [])}
    with open(os.path.join(OUT, "api.json"), "w", encoding="utf-8") as f:
        json.dump(api, f, ensure_ascii=False, indent=1, default=str)
    print("wrote turn1/user_1_trip.json turn2/user_1_trip.json api.json")


if __name__ == "__main__":
    asyncio.run(main())
