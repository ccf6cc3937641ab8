"""The demo's memory layers: files the libraries wrote (``memory_files/``, its README says where each comes from), which
``seed_demo`` imports through the one import path, one project per library, so that a new user sees every layer at
once: stores of each kind (records, blocks, list, knowledge), records with their versions, recalls matched to them
(one of them stale), and snapshots with their parents.

Pure Python: the files, in the order they are imported, and the knowledge base behind AgentScope's
``<retrieved_knowledge>`` recalls, which AgentScope keeps in a vector store and never writes to a file: it is written
here as a native file (``knowledge_file_text``) of the chunks ``make_agentscope.py`` gave its ``SimpleKnowledge``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agents.demo.catalog import DemoProject
from agents.memory import formats
from agents.memory.ledger import MemoryDocument, RecordIn, StoreIn, VersionIn

FILES = Path(__file__).resolve().parent / "memory_files"


@dataclass(frozen=True)
class MemoryFile:
    project: str
    path: str  # under FILES
    agent: str | None = None  # the agent of its conversations, where the file names none


PROJECTS: tuple[DemoProject, ...] = (
    DemoProject("memory-agentscope", "Memory: AgentScope"),
    DemoProject("memory-letta", "Memory: Letta"),
    DemoProject("memory-autogen", "Memory: AutoGen"),
    DemoProject("memory-langgraph", "Memory: LangGraph"),
)

# In the order they are imported: the three saves of one session, each the child of the one before; then what
# their recalls read (mem0's records and history, joining the long-term memory store the saves point to, and the
# knowledge base's chunks, joining their knowledge store), so that the recalls find their records.
FILES_IN_ORDER: tuple[MemoryFile, ...] = (
    MemoryFile("memory-agentscope", "agentscope/turn1/user_1_trip.json"),
    MemoryFile("memory-agentscope", "agentscope/turn2/user_1_trip.json"),
    MemoryFile("memory-agentscope", "agentscope/turn3/user_1_trip.json"),
    MemoryFile("memory-agentscope", "agentscope/ltm_mem0_records.json"),
    MemoryFile("memory-agentscope", "agentscope/hangzhou_guide.knowledge.json"),
    MemoryFile("memory-letta", "letta/memgpt_agent_with_convo.v1.af"),
    MemoryFile("memory-autogen", "autogen/list_memory_component.json"),
    MemoryFile("memory-autogen", "autogen/assistant_state_after_run2.json", agent="assistant"),
    MemoryFile("memory-langgraph", "langgraph/state_history.json", agent="travel helper"),
    MemoryFile("memory-langgraph", "langgraph/store_items.json"),
)

# make_agentscope.py's knowledge base: one document in three chunks (SimpleKnowledge.add_documents).
KNOWLEDGE_DOCUMENT = "hangzhou_guide.md"
KNOWLEDGE_CHUNKS = (
    "West Lake is the main sight of Hangzhou.",
    "Trains from Shanghai to Hangzhou take about one hour.",
    "Longjing tea is grown in the hills west of Hangzhou.",
)


def knowledge_document() -> MemoryDocument:
    """The knowledge store that AgentScope's reader makes for Friday's ``<retrieved_knowledge>`` recalls (kind
    ``knowledge``, source ``agentscope_session``, no scope, agent Friday: ``agentscope_session._knowledge_store``),
    so that importing it joins that store, with a record per chunk: its text, AgentScope's ``DocMetadata`` as the
    value, and the document and chunk in the metadata, by which a chunk is known (never by the per-retrieval
    ``Document.id``). One ADD each, without a time: the vector store keeps none."""
    records = []
    for chunk_id, text in enumerate(KNOWLEDGE_CHUNKS):
        metadata = {"doc_id": KNOWLEDGE_DOCUMENT, "chunk_id": chunk_id, "total_chunks": len(KNOWLEDGE_CHUNKS)}
        value = {"content": {"type": "text", "text": text}, **metadata}
        records.append(RecordIn(external_id=f"{KNOWLEDGE_DOCUMENT}#{chunk_id}", text=text, value=value,
                                metadata=metadata, versions=[VersionIn(op="ADD", text=text, value=value)]))
    store = StoreIn(key="knowledge:Friday", name="knowledge of Friday", kind="knowledge",
                    source_format="agentscope_session", agent="Friday", records=records)
    return MemoryDocument(format="native", stores=[store])


def knowledge_file_text() -> str:
    """``memory_files/agentscope/hangzhou_guide.knowledge.json`` as it is kept (a test checks that it still is)."""
    text, _ = formats.dumps([], "native", memory=knowledge_document())
    return text
