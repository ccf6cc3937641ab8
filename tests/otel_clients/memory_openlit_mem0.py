"""mem0 2.2.1 instrumented by openlit, offline. Runs in a reference virtualenv of its own
(tests/otel_clients/requirements-openlit.txt).

    python memory_openlit_mem0.py OUT_DIR

The tracer provider is set before ``openlit.init``, which reuses it (its documented behaviour), so that every batch is
exported twice, by the stock OTLP/HTTP protobuf exporter and by the OTLP/HTTP JSON exporter, both to
``OTEL_EXPORTER_OTLP_ENDPOINT``. mem0 as in tests/samples/memory/mem0/make_mem0.py: telemetry off before import, a
deterministic word-hash embedder and a scripted LLM put in place of its clients, Qdrant embedded on disk under
OUT_DIR. Prints, as its last line, what mem0's own API returned for each call.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: it sends PostHog events otherwise

import openlit  # noqa: E402
from mem0 import Memory  # noqa: E402
from mem0.configs.base import MemoryConfig  # noqa: E402
from mem0.configs.llms.base import BaseLlmConfig  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
from mem0.llms.base import LLMBase  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonSpanExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

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
    """Answers mem0's single extraction call (the V3 additive pipeline) with fixed facts."""

    def generate_response(self, messages, response_format=None, tools=None, tool_choice="auto", **kw):
        return json.dumps({"memory": [
            {"text": "Alice is training for a half marathon in October", "attributed_to": "user"},
            {"text": "Alice prefers morning runs", "attributed_to": "user"},
        ]})


def main() -> None:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    provider = TracerProvider(resource=Resource.create({"service.name": "mem0-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    provider.add_span_processor(BatchSpanProcessor(JsonSpanExporter()))
    trace.set_tracer_provider(provider)
    pricing = os.path.join(out_dir, "pricing.json")  # openlit fetches its price list from the network otherwise
    with open(pricing, "w") as f:
        json.dump({}, f)
    openlit.init(application_name="mem0-app", environment="test", disable_metrics=True, pricing_json=pricing,
                 capture_message_content=True)

    config = MemoryConfig(
        vector_store={"provider": "qdrant", "config": {
            "collection_name": "openlit_demo", "path": os.path.join(out_dir, "qdrant"),
            "embedding_model_dims": DIMS, "on_disk": True}},
        embedder={"provider": "openai", "config": {"embedding_dims": DIMS, "api_key": "not-used"}},
        llm={"provider": "openai", "config": {"model": "fake-llm", "api_key": "not-used"}},
        history_db_path=os.path.join(out_dir, "history.db"),
    )
    m = Memory(config)
    m.embedding_model = FakeEmbedder()
    m.llm = FakeLLM(BaseLlmConfig(model="fake-llm"))

    out = {}
    out["add_infer_false"] = m.add(
        [{"role": "user", "content": "I am vegetarian and allergic to peanuts"},
         {"role": "assistant", "content": "Noted, no meat and no peanuts."}],
        user_id="alice", agent_id="chef-bot", metadata={"source": "onboarding"}, infer=False)
    out["add_infer_true"] = m.add(
        [{"role": "user", "content": "I'm training for a half marathon in October, I run every morning."}],
        user_id="alice")
    # The query by position (as mem0's README) and by keyword: openlit records it only from keywords.
    out["search"] = m.search("what should alice eat, she is vegetarian", filters={"user_id": "alice"}, top_k=3)
    first, second = (r["id"] for r in out["add_infer_false"]["results"])
    out["update"] = m.update(memory_id=first, data="I am vegan and allergic to peanuts")
    out["search_by_keyword"] = m.search(query="is alice vegan", filters={"user_id": "alice"}, top_k=2)
    out["delete"] = m.delete(memory_id=second)
    out["get_all"] = m.get_all(filters={"user_id": "alice"})
    out["history"] = {first: m.history(memory_id=first), second: m.history(memory_id=second)}
    provider.shutdown()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
