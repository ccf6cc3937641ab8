"""Memory spans (issue 26): the cost of reading them, against a bare protobuf parse of the same bodies.

    python bench/bench_memory_spans.py [--repeat 15] [--spans 512] [--bodies 8] [--no-clients] [--json]

Two sets of OTLP/HTTP protobuf bodies:

- ``clients``: what the real instrumented clients of tests/otel_clients send (latitude-telemetry's memory telemetry
  with its OpenAI instrumentation, openinference-instrumentation-langchain around LangChain retrievers, openlit on
  mem0), recorded in this run through the capture endpoint (their virtualenvs come from ``make otel-clients``;
  ``--no-clients`` leaves them out);
- ``agent``: ``--bodies`` bodies of ``--spans`` spans each (512 is the batch span processor's default batch), an
  agent's turns as Latitude writes them: a ``search_memory`` returning five records, the ``chat`` call it fed (GenAI
  attributes, the history growing to 20 messages), a ``create_memory`` and an ``update_memory`` of one record each,
  under a turn span.

For each set, medians of ``--repeat`` samples, each of as many passes over all its bodies as make the baseline last
5 ms (one pass for the ``agent`` set, hundreds for a client's one small body), counted per pass:
``ExportTraceServiceRequest.FromString`` (the baseline: a bare parse), ``otlp.decode`` (the parse into plain spans
that the receiver does for every request anyway; a floor below it: the parse and reaching each attribute's key from
Python, values unread), ``extract_memory(otlp.decode(body))`` (the goal: within 5x the baseline), the same two with
the protobuf library alone (``native=False``: where no C compiler built the native decoder), the receiver's whole
reading of a request (decode, ``llm_calls.extract`` and ``extract_memory``), and the per-trace work each time a
batch arrives: ``merge_extractions`` of all the trace's batches, ``link_reads`` and ``to_document``.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402

from agents.memory import otlp  # noqa: E402
from agents.memory.llm_calls import extract, merge_calls  # noqa: E402
from agents.memory.memory_spans import extract_memory, link_reads, merge_extractions, to_document  # noqa: E402
from agents.memory.otlp import decode  # noqa: E402


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _attributes(values: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in values.items()]


def agent_bodies(bodies: int, spans: int) -> list[bytes]:
    """An agent's turns as Latitude's memory telemetry and a GenAI chat instrumentation write them."""
    out = []
    n = 0
    for b in range(bodies):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(_attributes({"service.name": "prefs-agent",
                                                               "telemetry.sdk.language": "python"}))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = "so.latitude.instrumentation.memory"
        history: list[dict[str, Any]] = []
        while len(scope_spans.spans) < spans:
            trace_id = (b * 1_000_003 + n + 1).to_bytes(16, "big")
            turn_id = (4 * n + 1).to_bytes(8, "big")
            start = 1_796_000_000_000_000_000 + n * 10_000_000
            records = [{"id": f"mem-{(n + i) % 97}", "content": f"Alice fact {(n + i) % 97}: likes item {i}",
                        "score": round(0.9 - i / 10, 2), "metadata": {"source": "chat", "turn": n}}
                       for i in range(5)]
            history = (history + [{"role": "user", "parts": [{"type": "text", "content": f"question {n}"}]},
                                  {"role": "assistant", "parts": [{"type": "text", "content": f"answer {n}"}]}])[-20:]
            system = [{"type": "text", "content": "You help Alice.\nMemories:\n" + "\n".join(
                r["content"] for r in records)}]
            common = {"session.id": "prefs-1", "latitude.capture.name": f"turn-{n}"}
            for offset, (name, attributes) in enumerate([
                ("search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "user-prefs",
                                   "gen_ai.memory.query.text": f"what does alice like {n}",
                                   "gen_ai.memory.record.count": 5, "gen_ai.memory.records": json.dumps(records)}),
                ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                      "gen_ai.system_instructions": json.dumps(system),
                                      "gen_ai.input.messages": json.dumps(history[:-1]),
                                      "gen_ai.output.messages": json.dumps(history[-1:]),
                                      "gen_ai.usage.input_tokens": 100 + n, "gen_ai.usage.output_tokens": 20}),
                ("create_memory", {"gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": "user-prefs",
                                   "gen_ai.memory.record.id": f"new-{n}", "gen_ai.memory.record.count": 1,
                                   "gen_ai.memory.records": json.dumps([{"id": f"new-{n}", "content": f"fact {n}",
                                                                         "metadata": {"turn": n}}])}),
                ("update_memory", {"gen_ai.operation.name": "update_memory", "gen_ai.memory.store.id": "user-prefs",
                                   "gen_ai.memory.record.id": f"mem-{n % 97}", "gen_ai.memory.record.count": 1,
                                   "gen_ai.memory.records": json.dumps([{
                                       "id": f"mem-{n % 97}", "content": f"Alice fact {n % 97}, updated"}])}),
            ], 1):
                span = scope_spans.spans.add()
                span.trace_id, span.span_id, span.parent_span_id = trace_id, (4 * n + 1 + offset).to_bytes(8, "big"), \
                    turn_id
                span.name = name
                span.kind = 3
                span.start_time_unix_nano = start + offset * 1_000_000
                span.end_time_unix_nano = start + offset * 1_000_000 + 500_000
                span.attributes.extend(_attributes({**attributes, **common}))
            turn = scope_spans.spans.add()
            turn.trace_id, turn.span_id, turn.name = trace_id, turn_id, f"turn-{n}"
            turn.start_time_unix_nano, turn.end_time_unix_nano = start, start + 9_000_000
            turn.attributes.extend(_attributes({"latitude.capture.root": True, **common}))
            n += 1
        out.append(request.SerializeToString())
    return out


def client_bodies() -> dict[str, list[bytes]]:
    """The protobuf bodies each real client sends, recorded now."""
    from tests.otel_clients.capture import OtlpCapture
    from tests.otel_clients.runner import ensure_venvs, run_memory_client

    pythons = ensure_venvs()
    out = {}
    with tempfile.TemporaryDirectory() as work:
        for client in ("latitude-memory", "langchain-retriever", "openlit-mem0"):
            with OtlpCapture() as capture:
                run_memory_client(pythons, client, endpoint=capture.endpoint, api_key="mk_bench",
                                  work=Path(work) / client)
            out[client] = [r.body for r in capture.requests if r.content_type == "application/x-protobuf"]
    return out


def _decoded(body: bytes, native: bool = True) -> Any:
    return decode(body, signal="traces", content_type="application/x-protobuf", native=native)


def _receiver(body: bytes) -> Any:
    batch = _decoded(body)
    return extract(batch), extract_memory(batch)


SAMPLE_SECONDS = 0.005


def measure(bodies: list[bytes], repeat: int) -> dict[str, float]:
    held = [_receiver(body) for body in bodies]
    extractions = [memory for _, memory in held]
    calls = merge_calls(c for extraction, _ in held for c in extraction.calls)

    def per_trace() -> None:
        merged = merge_extractions(extractions)
        links = link_reads(merged.reads, calls, merged.parents)
        to_document(merged, links, calls)

    def keys_only() -> None:
        for body in bodies:
            for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        for kv in span.attributes:
                            kv.key  # noqa: B018 (the cost of reaching each attribute from Python is what is measured)

    cases: dict[str, Callable[[], Any]] = {
        "FromString (baseline)": lambda: [ExportTraceServiceRequest.FromString(b) for b in bodies],
        "FromString + every attribute's key": keys_only,
        "otlp.decode": lambda: [_decoded(b) for b in bodies],
        "extract_memory(otlp.decode)": lambda: [extract_memory(_decoded(b)) for b in bodies],
        "otlp.decode, library only": lambda: [_decoded(b, native=False) for b in bodies],
        "extract_memory(that)": lambda: [extract_memory(_decoded(b, native=False)) for b in bodies],
        "decode + llm_calls + memory": lambda: [_receiver(b) for b in bodies],
        "merge + link_reads + to_document": per_trace,
    }
    # A sample of a set of one small body would be tens of microseconds, as long as the timer's own noise: each
    # sample runs every case `loops` times, enough for the baseline to take SAMPLE_SECONDS, and counts one pass.
    began = time.perf_counter()
    cases["FromString (baseline)"]()
    loops = max(1, round(SAMPLE_SECONDS / max(time.perf_counter() - began, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in cases}
    gc.collect()
    for _ in range(repeat):
        for name, case in cases.items():  # interleaved: a slow moment of the machine hits every case alike
            began = time.perf_counter()
            for _ in range(loops):
                case()
            samples[name].append((time.perf_counter() - began) / loops)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--spans", type=int, default=512)
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--no-clients", action="store_true", help="only the generated agent bodies")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    sets: dict[str, list[bytes]] = {}
    if not args.no_clients:
        sets.update(client_bodies())
    sets["agent"] = agent_bodies(args.bodies, args.spans)
    results = {}
    for name, bodies in sets.items():
        spans = sum(len(_decoded(b).spans) for b in bodies)
        memory = extract_memory(_decoded(bodies[0]))
        results[name] = {"bodies": len(bodies), "spans": spans, "bytes": sum(map(len, bodies)),
                         "memory_spans_first_body": len(memory.writes) + len(memory.reads),
                         "median_seconds": measure(bodies, args.repeat)}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"native decoder: {'built' if otlp._otlp_wire is not None else 'NOT BUILT (make native)'}")
    for name, result in results.items():
        figures = result["median_seconds"]
        base = figures["FromString (baseline)"]
        print(f"\n{name}: {result['bodies']} bodies, {result['spans']:,} spans, {result['bytes']:,} bytes "
              f"(medians of {args.repeat})")
        print(f"{'':34} {'median':>10} {'x FromString':>13} {'us per span':>12}")
        for case, seconds in figures.items():
            print(f"{case:34} {seconds * 1000:8.2f}ms {seconds / base:12.2f}x {seconds / result['spans'] * 1e6:11.2f}")


if __name__ == "__main__":
    main()
