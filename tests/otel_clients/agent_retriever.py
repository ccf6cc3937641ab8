"""A LangChain agent that reads from a retriever, instrumented with openinference-instrumentation-langchain. Runs in
a reference virtualenv of its own (tests/otel_clients/requirements-retriever.txt).

    python agent_retriever.py BASE_URL [--session ID]

Each turn is one trace: a ``rag_turn`` chain reads the user's profile from a stock ``VectorStoreRetriever``
(``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``), puts the documents into the system prompt and runs a
``create_agent`` agent on ``ChatOpenAI`` (the scripted model server at BASE_URL), which calls a ``search_notes`` tool
that reads a second retriever. LangChain's retrievers drop the similarity score, so the notes retriever is a
``BaseRetriever`` that puts it in each document's metadata, as LangChain's how-to on retriever scores does.

Every batch is exported twice, by the stock OTLP/HTTP protobuf exporter and by the OTLP/HTTP JSON exporter, both to
``OTEL_EXPORTER_OTLP_ENDPOINT``. Prints, as its last line, what the agent did: every retrieval with the documents
the retriever returned, and the conversation.
"""
from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage, SystemMessage, convert_to_openai_messages
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import chain
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_openai import ChatOpenAI
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SYSTEM = "You are a cooking and training assistant."
PROFILE = [
    Document(id="profile-diet", page_content="Alice is vegetarian and allergic to peanuts.",
             metadata={"source": "onboarding", "topic": "diet"}),
    Document(id="profile-sport", page_content="Alice is training for a half marathon in October.",
             metadata={"source": "chat", "topic": "sport"}),
    Document(id="profile-city", page_content="Alice lives in Lyon.", metadata={"source": "onboarding"}),
]
NOTES = [
    Document(id="note-curry", page_content="Lentil curry: lentils, coconut milk, spinach; 40 minutes.",
             metadata={"kind": "recipe", "tags": ["vegetarian", "dinner"]}),
    Document(id="note-salad", page_content="Chickpea salad with lemon and parsley; no nuts.",
             metadata={"kind": "recipe", "tags": ["vegetarian", "lunch"]}),
    Document(id="note-plan", page_content="Long run on Sundays, intervals on Wednesdays.",
             metadata={"kind": "plan"}),
    Document(id="note-shoes", page_content="New running shoes bought in September.", metadata={}),
]
QUESTIONS = ["What should I cook for dinner tonight?", "How should I plan my runs this week?"]
DONE: list[dict[str, Any]] = []  # every retrieval, as the retrievers returned it


def documents(docs: list[Document]) -> list[dict[str, Any]]:
    return [{"id": d.id, "content": d.page_content, "metadata": d.metadata} for d in docs]


class ScoredNotesRetriever(BaseRetriever):
    """The notes store's top ``k``, each with its similarity score in its metadata."""

    vectorstore: InMemoryVectorStore
    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        found = [doc.model_copy(update={"metadata": {**doc.metadata, "score": score}})
                 for doc, score in self.vectorstore.similarity_search_with_score(query, k=self.k)]
        DONE.append({"retriever": "notes", "query": query, "documents": documents(found)})
        return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--session")
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-agent-langchain"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    provider.add_span_processor(BatchSpanProcessor(JsonSpanExporter()))
    LangChainInstrumentor().instrument(tracer_provider=provider)

    embedding = DeterministicFakeEmbedding(size=8)
    profile_store = InMemoryVectorStore(embedding)
    profile_store.add_documents(PROFILE)
    notes_store = InMemoryVectorStore(embedding)
    notes_store.add_documents(NOTES)
    profile = profile_store.as_retriever(search_kwargs={"k": 2})
    notes = ScoredNotesRetriever(vectorstore=notes_store, k=2)

    @tool
    def search_notes(query: str) -> str:
        """Search the user's notes (recipes, training plans)."""
        return "\n".join(f"- {d.page_content}" for d in notes.invoke(query))

    model = ChatOpenAI(model="gpt-4o-mini", base_url=args.base_url, api_key="sk-stub", max_retries=0)
    agent = create_agent(model, tools=[search_notes])
    history: list = []

    @chain
    def rag_turn(question: str) -> dict:
        known = profile.invoke(question)
        DONE.append({"retriever": "profile", "query": question, "documents": documents(known)})
        system = SystemMessage(SYSTEM + "\nKnown about the user:\n" + "\n".join(d.page_content for d in known))
        return agent.invoke({"messages": [system, *history, HumanMessage(question)]})

    with using_session(args.session) if args.session else contextlib.nullcontext():
        for question in QUESTIONS:
            state = rag_turn.invoke(question)
            history = [m for m in state["messages"] if not isinstance(m, SystemMessage)]
    provider.shutdown()
    print(json.dumps({"retrievals": DONE, "history": convert_to_openai_messages(history)}))


if __name__ == "__main__":
    main()
