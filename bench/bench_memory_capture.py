"""Live memory at the receiver: the OTLP receiver's latency while several agents export memory spans at once.

    python bench/bench_memory_capture.py                      # 8 clients, SQLite
    python bench/bench_memory_capture.py --think 0            # each client sends as fast as it is answered
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python bench/bench_memory_capture.py

A fresh database (a SQLite file in a temporary folder, or a new database on the PostgreSQL server ``DATABASE_URL``
names) is migrated and given a project and an API key; gunicorn serves it as in production (``DEBUG=false``, 2
workers of 4 threads). ``--clients`` agents, each in a thread of its own, export their turns as an OpenTelemetry
batch span processor does: each request (protobuf, ``POST /otlp/v1/traces``) holds ``--turns`` turns, each turn a
trace of five spans as Latitude's memory telemetry and a GenAI chat instrumentation write them (the turn, a
``search_memory`` returning five records of the agent's store, the ``chat`` call they fed, with a history of up to 20
messages and the records in its system prompt, a ``create_memory`` and an ``update_memory``). Each agent has its own
session and store; all are in one project. Each client waits ``--think`` seconds after each answer (the processor's
schedule: default 1 s; 0 floods the server).

Two phases, each ``--requests`` requests per client, on the same server: ``calls`` (the same turns without their
memory spans: what the receiver did before issue 26) and ``memory`` (all five spans). Printed per phase: requests,
errors (an answer other than 200 with nothing rejected), median, p95 and max milliseconds, the 1-minute load average,
and what the ledger holds at the end (versions and recalls: each turn's two writes and one read).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_busy import database, free_port, p95  # noqa: E402  (one fresh database and port, as the busy bench)


def _attributes(values: dict[str, Any]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        if isinstance(value, bool):
            any_value = AnyValue(bool_value=value)
        elif isinstance(value, int):
            any_value = AnyValue(int_value=value)
        else:
            any_value = AnyValue(string_value=str(value))
        out.append(KeyValue(key=key, value=any_value))
    return out


def agent_requests(client: int, requests_count: int, turns: int, memory: bool) -> list[bytes]:
    """One agent's export requests: ``turns`` turns each, a trace per turn."""
    bodies = []
    history: list[dict[str, Any]] = []
    start0 = 1_796_000_000_000_000_000 + client * 10_000_000_000_000
    store = f"prefs-{client}"
    for r in range(requests_count):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(_attributes({"service.name": f"agent-{client}"}))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = "bench"
        for t in range(turns):
            n = r * turns + t
            trace_id = (client * 1_000_000 + n + 1 + (0 if memory else 500_000)).to_bytes(16, "big")
            turn_id = (8 * n + 1).to_bytes(8, "big")
            start = start0 + n * 1_000_000_000
            records = [{"id": f"mem-{(n + i) % 50}", "content": f"Alice fact {(n + i) % 50}: likes item {i}",
                        "score": round(0.9 - i / 10, 2)} for i in range(5)]
            history = (history + [{"role": "user", "parts": [{"type": "text", "content": f"question {n}"}]},
                                  {"role": "assistant", "parts": [{"type": "text", "content": f"answer {n}"}]}])[-20:]
            system = [{"type": "text", "content": "You help Alice.\nMemories:\n" + "\n".join(
                r["content"] for r in records)}]
            session = {"session.id": f"agent-{client}-{'memory' if memory else 'calls'}"}
            spans: list[tuple[str, dict[str, Any]]] = [
                ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                      "gen_ai.system_instructions": json.dumps(system),
                                      "gen_ai.input.messages": json.dumps(history[:-1]),
                                      "gen_ai.output.messages": json.dumps(history[-1:]),
                                      "gen_ai.usage.input_tokens": 100 + n, "gen_ai.usage.output_tokens": 20})]
            if memory:
                spans = [
                    ("search_memory", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": store,
                                       "gen_ai.memory.query.text": f"what does alice like {n}",
                                       "gen_ai.memory.record.count": 5, "gen_ai.memory.records": json.dumps(records)}),
                    *spans,
                    ("create_memory", {"gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": store,
                                       "gen_ai.memory.record.id": f"new-{n}", "gen_ai.memory.records": json.dumps(
                                           [{"id": f"new-{n}", "content": f"fact {n}", "metadata": {"turn": n}}])}),
                    ("update_memory", {"gen_ai.operation.name": "update_memory", "gen_ai.memory.store.id": store,
                                       "gen_ai.memory.record.id": f"mem-{n % 50}", "gen_ai.memory.records":
                                           json.dumps([{"id": f"mem-{n % 50}",
                                                        "content": f"Alice fact {n % 50}: likes item 0, updated"}])}),
                ]
            for offset, (name, attributes) in enumerate(spans, 1):
                span = scope_spans.spans.add()
                span.trace_id, span.parent_span_id = trace_id, turn_id
                span.span_id = (8 * n + 1 + offset).to_bytes(8, "big")
                span.name = name
                span.start_time_unix_nano = start + offset * 1_000_000
                span.end_time_unix_nano = start + offset * 1_000_000 + 500_000
                span.attributes.extend(_attributes({**attributes, **session}))
            turn = scope_spans.spans.add()
            turn.trace_id, turn.span_id, turn.name = trace_id, turn_id, f"turn-{n}"
            turn.start_time_unix_nano, turn.end_time_unix_nano = start, start + 9_000_000
            turn.attributes.extend(_attributes(session))
        bodies.append(request.SerializeToString())
    return bodies


def send(base: str, key: str, bodies: list[bytes], think: float, times: list[float], errors: list[str]) -> None:
    http = requests.Session()
    for body in bodies:
        started = time.perf_counter()
        try:
            r = http.post(f"{base}/otlp/v1/traces", data=body, timeout=60,
                          headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {key}"})
            reply = ExportTraceServiceResponse.FromString(r.content) if r.status_code == 200 else None
            if reply is None or reply.partial_success.rejected_spans or reply.partial_success.error_message:
                errors.append(f"HTTP {r.status_code} {r.content[:200]!r}")
            else:
                times.append((time.perf_counter() - started) * 1000)
        except requests.RequestException as exc:
            errors.append(type(exc).__name__)
        time.sleep(think)


def phase(base: str, key: str, clients: int, count: int, turns: int, think: float, memory: bool) -> dict[str, Any]:
    bodies = [agent_requests(c, count, turns, memory) for c in range(clients)]
    times: list[float] = []
    errors: list[str] = []
    loads: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(2):
            loads.append(os.getloadavg()[0])

    threading.Thread(target=sample, daemon=True).start()
    threads = [threading.Thread(target=send, args=(base, key, b, think, times, errors)) for b in bodies]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    return {"requests": len(times) + len(errors), "errors": errors, "median": statistics.median(times),
            "p95": p95(times), "max": max(times), "seconds": time.perf_counter() - started,
            "load": f"{statistics.median(loads):.1f} (max {max(loads):.1f})" if loads else "n/a",
            "spans": len(ExportTraceServiceRequest.FromString(bodies[0][0]).resource_spans[0].scope_spans[0].spans)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=25, help="requests per client and phase (default 25)")
    parser.add_argument("--turns", type=int, default=4, help="turns per request (default 4: 20 spans)")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a client's requests (default 1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memoryviz-memory-capture-"))
    url, drop = database(tmp)
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "false", "SECRET_KEY": "bench-memory-" + "x" * 40,
           "SECURE_COOKIES": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "ERROR",
           "DJANGO_SETTINGS_MODULE": "memoryviz.settings"}
    python = sys.executable
    server = None
    try:
        subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        made = subprocess.run([python, "-c", (
            "import django; django.setup(); from agents.models import Project; "
            "from agents.projects.keys import api_key_create; "
            "p = Project.objects.create(name='Bench', slug='bench'); "
            "print(api_key_create(project=p, name='agents').key)")],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        key = made.stdout.strip().splitlines()[-1]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([python, "-m", "gunicorn", "memoryviz.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2",
                                   "--threads", "4", "--timeout", "60", "--log-level", "error"], cwd=ROOT, env=env)
        for _ in range(100):
            try:
                requests.get(f"{base}/otlp/v1/traces", timeout=5)  # 405: the server answers
                break
            except requests.RequestException:
                time.sleep(0.2)
        results = {}
        for name, memory in (("calls", False), ("memory", True)):
            results[name] = phase(base, key, args.clients, args.requests, args.turns, args.think, memory)
        counted = subprocess.run([python, "-c", (
            "import django; django.setup(); from agents import models; "
            "print(models.RecordVersion.objects.count(), models.Recall.objects.count(), "
            "models.LlmCall.objects.count())")], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        versions, recalls, calls = (int(x) for x in counted.stdout.split())
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if drop is not None:
            drop()
    backend = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    if args.json:
        print(json.dumps({"backend": backend, "args": vars(args), "results": results, "versions": versions,
                          "recalls": recalls, "calls": calls}))
        return
    print(f"{backend}: {args.clients} clients, {args.requests} requests each per phase, {args.turns} turns a "
          f"request, think {args.think} s")
    print("| phase | spans a request | requests | errors | median ms | p95 ms | max ms | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        print(f"| {name} | {r['spans']} | {r['requests']} | {len(r['errors'])} | {r['median']:.0f} | {r['p95']:.0f} | "
              f"{r['max']:.0f} | {r['load']} |")
    for name, r in results.items():
        for error in r["errors"][:3]:
            print(f"  {name}: {error}")
    expected = args.clients * args.requests * args.turns
    print(f"stored: {versions:,} versions (expected {2 * expected:,}), {recalls:,} recalls (expected {expected:,}), "
          f"{calls:,} calls (expected {2 * expected:,})")


if __name__ == "__main__":
    main()
