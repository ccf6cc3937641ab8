"""Live capture: the cost of ingesting each call of a long agent run, against what that call carries.

    python bench/bench_capture.py [--calls 500] [--keep 20] [--json]

Builds a 500-call agent run whose history grows every call (a user question or tool results, then the reply;
one to three parallel calls), and encodes each call as the OTLP/HTTP protobuf request an instrumented agent
sends (one ``chat`` span with ``gen_ai.input.messages`` / ``gen_ai.output.messages``, as
opentelemetry-instrumentation-openai-v2 writes them). Two runs of the same conversation:

- ``whole``: every call carries the whole history (what most frameworks send): call k carries ~k messages;
- ``trimmed``: every call carries the system prompt and the last ``--keep`` messages (a trimming framework):
  what a call carries stays the same while the stored chain grows to ~1,500 messages.

Each request goes through the real receiver (``POST /otlp/v1/traces`` with a project key, Django's test client,
a fresh SQLite database in a temporary folder), timed one by one. Side by side, the baseline: decoding the same
body and reading its call (``otlp.decode`` + ``llm_calls.extract``), which costs what the body's size costs.
Printed per decile of the run: the messages a call carries, the median ingest time, its ratio to the baseline,
and the ingest time per carried message. Linear in what a call carries means: in ``whole`` the time per carried
message stays flat while calls grow; in ``trimmed`` the time per call stays flat while the chain grows.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def build_run(calls: int) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """(history sent, reply) per call, in the GenAI ``parts`` shape; the history grows every call."""
    history: list[dict[str, Any]] = [
        {"role": "system", "parts": [{"type": "text", "content": "You are a travel assistant. Use the tools."}]}
    ]
    out = []
    pending: list[str] = []
    for k in range(calls):
        if pending:
            for j, call_id in enumerate(pending):
                history.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": call_id, "response": f"{18 + j}C, cloudy in city {j}"}
                        ],
                    }
                )
            pending = []
        else:
            history.append(
                {
                    "role": "user",
                    "parts": [{"type": "text", "content": f"Question {k}: the weather in Paris, Tokyo and Lima?"}],
                }
            )
        if k % 2 == 0:
            pending = [f"call_{k}_{j}" for j in range(1 + k % 3)]
            reply = {
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": c, "name": "get_weather", "arguments": {"city": f"c{j}"}}
                    for j, c in enumerate(pending)
                ],
            }
        else:
            reply = {
                "role": "assistant",
                "parts": [{"type": "text", "content": f"Answer {k}: 18C in Paris, 22C in Tokyo, 15C in Lima."}],
            }
        out.append((list(history), reply))
        history.append(reply)
    return out


def encode(k: int, sent: list[dict[str, Any]], reply: dict[str, Any], session: str) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "bench-agent"
    span = resource_spans.scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(f"{k + 1:032x}")
    span.span_id = bytes.fromhex(f"{k + 1:016x}")
    span.name = "chat gpt-4o"
    span.start_time_unix_nano = 1_767_225_600_000_000_000 + k * 1_000_000_000
    span.end_time_unix_nano = span.start_time_unix_nano + 500_000_000
    for key, value in (("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "gpt-4o"), ("session.id", session),
                       ("gen_ai.input.messages", json.dumps(sent)), ("gen_ai.output.messages", json.dumps([reply]))):
        span.attributes.add(key=key).value.string_value = value
    return request.SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--keep", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="memoryviz-bench-capture-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from agents import models
    from agents.memory.llm_calls import extract
    from agents.memory.otlp import decode
    from agents.projects import keys

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    project = models.Project.objects.create(name="Bench", slug="bench")
    key = keys.api_key_create(project=project, name="bench").key
    client = Client()
    run = build_run(args.calls)
    results: dict[str, Any] = {}
    for variant in ("whole", "trimmed"):
        rows = []
        for k, (history, reply) in enumerate(run):
            sent = history if variant == "whole" else history[:1] + history[1:][-args.keep:]
            body = encode(k, sent, reply, f"bench-{variant}")
            start = time.perf_counter()
            extract(decode(body, signal="traces", content_type="application/x-protobuf"))
            baseline = time.perf_counter() - start
            start = time.perf_counter()
            response = client.post("/otlp/v1/traces", data=body, content_type="application/x-protobuf",
                                   HTTP_AUTHORIZATION=f"Bearer {key}")
            ingest = time.perf_counter() - start
            assert response.status_code == 200, response.content
            rows.append({"carried": len(sent) + 1, "bytes": len(body), "ingest": ingest, "baseline": baseline})
        session = models.Session.objects.get(external_id=f"bench-{variant}")
        expected = len(run[-1][0]) + 1
        assert session.message_count == expected, (session.message_count, expected)
        deciles = []
        size = max(len(rows) // 10, 1)
        for d in range(0, len(rows), size):
            part = rows[d:d + size]
            ingest = statistics.median(r["ingest"] for r in part)
            baseline = statistics.median(r["baseline"] for r in part)
            carried = statistics.median(r["carried"] for r in part)
            deciles.append(
                {
                    "calls": f"{d + 1}-{d + len(part)}",
                    "carried": carried,
                    "kB": statistics.median(r["bytes"] for r in part) / 1024,
                    "ingest_ms": ingest * 1000,
                    "baseline_ms": baseline * 1000,
                    "ratio": ingest / baseline,
                    "us_per_carried": ingest / carried * 1e6,
                }
            )
        results[variant] = {"stored_messages": session.message_count, "deciles": deciles}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for variant, result in results.items():
        print(f"\n{variant}: {args.calls} calls, {result['stored_messages']} messages stored")
        print(
            f"{'calls':>9} {'carried':>8} {'kB':>7} {'ingest ms':>10} {'decode ms':>10} {'× decode':>9} "
            f"{'µs/carried msg':>15}"
        )
        for d in result["deciles"]:
            print(
                f"{d['calls']:>9} {d['carried']:>8.0f} {d['kB']:>7.1f} {d['ingest_ms']:>10.2f} "
                f"{d['baseline_ms']:>10.2f} {d['ratio']:>9.1f} {d['us_per_carried']:>15.1f}"
            )


if __name__ == "__main__":
    main()
