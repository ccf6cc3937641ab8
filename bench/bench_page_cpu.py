"""CPU per request of the session page and the native export, in-process (Django's test client, no server).

    DATABASE_URL=sqlite:////tmp/x.sqlite3 python bench/bench_page_cpu.py            # migrate + seed_demo first
    DATABASE_URL=... python bench/bench_page_cpu.py --rounds 25 --profile page       # + cProfile of one kind

Against a database with the demo data (``manage.py migrate`` and ``manage.py seed_demo``), logged in as the demo
user, on the demo's longest session: the session page (``GET /sessions/<id>/``) and its native export (``POST
/api/sessions/<id>/export/``, the whole file read), ``--rounds`` times each after two warm-up requests.
Printed per request: the process's CPU time (``time.process_time``, which other processes on the machine do not
inflate the way they do wall time), median and p95 in ms, and the answer's size. ``DEBUG`` is forced off, as in
production (the cached template loader, no query log).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
os.environ["DEBUG"] = "false"
os.environ.setdefault("SECRET_KEY", "bench-page-cpu-" + "x" * 40)
os.environ.setdefault("SECURE_COOKIES", "false")
os.environ["ALLOWED_HOSTS"] = "testserver"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--profile", choices=("page", "export"), help="print a cProfile of one request of this kind")
    parser.add_argument("--only", choices=("page", "export"), help="time only this kind")
    args = parser.parse_args()

    import django

    django.setup()
    from django.test import Client

    from agents.models import Session

    session = Session.objects.order_by("-message_count").first()
    assert session is not None, "no sessions: run manage.py seed_demo first"
    client = Client()
    assert client.login(username="demo", password="memoryviz-demo")

    def page() -> int:
        r = client.get(f"/sessions/{session.pk}/")
        assert r.status_code == 200, r.status_code
        return len(r.content)

    def export() -> int:
        r = client.post(f"/api/sessions/{session.pk}/export/", data={"format": "native"})
        assert r.status_code == 200, r.status_code
        body = b"".join(r.streaming_content) if r.streaming else r.content  # type: ignore[attr-defined]
        assert body.startswith(b"{")
        return len(body)

    kinds = {"page": page, "export": export}
    if args.only:
        kinds = {args.only: kinds[args.only]}
    print(f"session {session.pk}: {session.message_count:,} messages; {args.rounds} rounds; load average "
          f"{os.getloadavg()[0]:.1f}")
    for name, request in kinds.items():
        request(), request()  # warm-up: templates compiled, caches filled
        cpu: list[float] = []
        size = 0
        for _ in range(args.rounds):
            started = time.process_time()
            size = request()
            cpu.append((time.process_time() - started) * 1000)
        print(f"{name:7} CPU median {statistics.median(cpu):6.0f} ms  p95 {p95(cpu):6.0f} ms  ({size:,} bytes)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(3):
            kinds.get(args.profile, page if args.profile == "page" else export)()
        profiler.disable()
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        stats.print_stats(45)
        stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
