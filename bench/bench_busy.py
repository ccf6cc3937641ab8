"""Logins and page views while a big import runs, against the same requests on an idle server.

    python bench/bench_busy.py                       # 100,000 messages, SQLite
    python bench/bench_busy.py --messages 1000000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python bench/bench_busy.py --messages 200000

A fresh database (a SQLite file in a temporary folder, or a new database on the PostgreSQL server that
``DATABASE_URL`` names) is migrated and given the demo data; gunicorn serves it as in production
(``DEBUG=false``, 2 workers of 4 threads). After 5 s of warm-up, clients, each with a session of its own, repeat:
open the login page, log in, open the session list, open the demo's longest session, trim it through the API
(``GET /api/sessions/<id>/trim/?strategy=langchain_last``), export it through the API (``POST
/api/sessions/<id>/export/``, native JSON, the whole file read). Each client waits ``--think`` seconds (default 1)
after each answer, as a person reads a page, so that the load is a team's rather than a flood (``--think 0``: no
pause). First for ``--idle`` seconds on the idle server (the baseline), then while ``manage.py import_history``
imports one ``--messages``-message conversation (bench_import.generate) into the same database, at the niceness
``MEMORYVIZ_BATCH_NICE`` as in production. Printed: the import's time, the 1-minute load average through each
phase (median and max, sampled every 5 s), and per phase and request: count, errors (any answer but the expected
one, or no answer within 30 s), median and p95 milliseconds; and the ratios busy/idle of the median and p95.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import import generate  # noqa: E402  (the one generator of a realistic tool loop)

STEPS = ("login page", "log in", "session list", "session page", "trim", "export")


@dataclass
class Timings:
    ms: dict[str, list[float]] = field(default_factory=lambda: {step: [] for step in STEPS})
    errors: dict[str, list[str]] = field(default_factory=lambda: {step: [] for step in STEPS})
    loads: list[float] = field(default_factory=list)  # the 1-minute load average, every 5 s of the phase

    def add(self, step: str, started: float, problem: str | None) -> None:
        if problem is None:
            self.ms[step].append((time.perf_counter() - started) * 1000)
        else:
            self.errors[step].append(problem)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database(tmp: Path) -> tuple[str, Any]:
    """A fresh database URL, and what drops it afterwards (None for a file in the temporary folder)."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith("postgres"):
        return f"sqlite:///{tmp / 'busy.sqlite3'}", None
    import psycopg

    name = f"memoryviz_busy_{os.getpid()}"
    parts = urlsplit(given)
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(parts._replace(path=f"/{name}")), drop


def client_loop(base: str, session_id: int, think: float, stop: threading.Event, timings: Timings) -> None:
    while not stop.is_set():
        http = requests.Session()
        for step in STEPS:
            started = time.perf_counter()
            problem: str | None = None
            try:
                if step == "login page":
                    r = http.get(f"{base}/login/", timeout=30)
                    ok = r.status_code == 200
                elif step == "log in":
                    token = http.cookies.get("csrftoken", "")
                    r = http.post(f"{base}/login/", data={"username": "demo", "password": "memoryviz-demo",
                                                          "csrfmiddlewaretoken": token},
                                  headers={"Referer": f"{base}/login/"}, timeout=30, allow_redirects=False)
                    ok = r.status_code == 302
                elif step == "session list":
                    r = http.get(f"{base}/", timeout=30)
                    ok = r.status_code == 200 and "session-table" in r.text
                elif step == "session page":
                    r = http.get(f"{base}/sessions/{session_id}/", timeout=30)
                    ok = r.status_code == 200
                elif step == "trim":
                    r = http.get(f"{base}/api/sessions/{session_id}/trim/", params={"strategy": "langchain_last"},
                                 timeout=30)
                    ok = r.status_code == 200 and "kept" in r.json()
                else:
                    r = http.post(f"{base}/api/sessions/{session_id}/export/", data={"format": "native"},
                                  headers={"X-CSRFToken": http.cookies.get("csrftoken", ""),
                                           "Referer": f"{base}/"}, timeout=30)
                    ok = r.status_code == 200 and r.content.startswith(b"{")
                if not ok:
                    problem = f"HTTP {r.status_code}"
            except requests.RequestException as exc:
                problem = type(exc).__name__
            timings.add(step, started, problem)
            if problem is not None or stop.wait(think):
                break  # a failure: start again with a new client


def run_phase(base: str, session_id: int, think: float, clients: int, until: Any) -> Timings:
    timings = Timings()
    stop = threading.Event()
    threads = [threading.Thread(target=client_loop, args=(base, session_id, think, stop, timings), daemon=True)
               for _ in range(clients)]
    for t in threads:
        t.start()

    def sample_load() -> None:
        while not stop.wait(5):
            timings.loads.append(os.getloadavg()[0])

    threading.Thread(target=sample_load, daemon=True).start()
    until()
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return timings


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else float("nan"))


def load(timings: Timings) -> str:
    """The phase's 1-minute load average: median (max)."""
    if not timings.loads:
        return "n/a"
    return f"{statistics.median(timings.loads):.1f} (max {max(timings.loads):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000, help="messages in the imported conversation")
    parser.add_argument("--clients", type=int, default=4, help="clients requesting at once (default 4)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of the idle baseline (default 30)")
    parser.add_argument("--think", type=float, default=1.0,
                        help="seconds each client waits after each answer, reading it (default 1; 0: none)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memoryviz-busy-"))
    url, drop = database(tmp)
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "false", "SECRET_KEY": "bench-busy-" + "x" * 40,
           "SECURE_COOKIES": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "ERROR",
           "DJANGO_SETTINGS_MODULE": "memoryviz.settings"}
    python = sys.executable
    server = None
    try:
        subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        subprocess.run([python, "manage.py", "seed_demo"], cwd=ROOT, env=env, check=True, capture_output=True)
        subprocess.run([python, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT,
                       env=env, check=True)
        found = subprocess.run(
            [python, "-c", "import django; django.setup(); from agents.models import Session; "
                           "print(Session.objects.order_by('-message_count').first().pk)"],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        session_id = int(found.stdout.strip())
        conversation = tmp / "conversation.json"
        generate(conversation, args.messages)

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([python, "-m", "gunicorn", "memoryviz.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2",
                                   "--threads", "4", "--timeout", "60", "--log-level", "error"],
                                  cwd=ROOT, env=env)
        for _ in range(100):
            try:
                requests.get(f"{base}/login/", timeout=5)
                break
            except requests.RequestException:
                time.sleep(0.2)
        # Warm up: each worker's first requests.
        run_phase(base, session_id, args.think, args.clients, lambda: time.sleep(5))
        idle = run_phase(base, session_id, args.think, args.clients, lambda: time.sleep(args.idle))

        importing: dict[str, Any] = {}

        def import_and_wait() -> None:
            started = time.perf_counter()
            done = subprocess.run([python, "manage.py", "import_history", str(conversation),
                                   "--project", "acme-customer", "--agent", "busy-bench", "--member", "demo"],
                                  cwd=ROOT, env=env, capture_output=True, text=True)
            importing.update(seconds=time.perf_counter() - started, rc=done.returncode,
                             tail=(done.stdout + done.stderr).strip()[-300:])

        busy = run_phase(base, session_id, args.think, args.clients, import_and_wait)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if drop is not None:
            drop()
        shutil.rmtree(tmp, ignore_errors=True)

    vendor = "PostgreSQL" if drop is not None else "SQLite"
    print(f"{vendor}, {args.messages:,} messages imported in {importing['seconds']:.1f} s "
          f"(exit {importing['rc']}, niceness {os.environ.get('MEMORYVIZ_BATCH_NICE', '10 (default)')}), "
          f"{args.clients} clients thinking {args.think:g} s, "
          f"load average idle {load(idle)}, busy {load(busy)}")
    if importing["rc"] != 0:
        print(re.sub(r"\s+", " ", importing["tail"]))
    print("| request | idle: n | errors | median ms | p95 ms | busy: n | errors | median ms | p95 ms | × median "
          "| × p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for step in STEPS:
        a, b = idle.ms[step], busy.ms[step]
        ma, mb = (statistics.median(v) if v else float("nan") for v in (a, b))
        pa, pb = p95(a), p95(b)
        print(f"| {step} | {len(a)} | {len(idle.errors[step])} | {ma:.0f} | {pa:.0f} | {len(b)} | "
              f"{len(busy.errors[step])} | {mb:.0f} | {pb:.0f} | {mb / ma:.1f} | {pb / pa:.1f} |")
    for name, timings in (("idle", idle), ("busy", busy)):
        for step in STEPS:
            if timings.errors[step]:
                kinds = sorted(set(timings.errors[step]))
                print(f"{name} {step}: {len(timings.errors[step])} errors ({', '.join(kinds)})")


if __name__ == "__main__":
    main()
