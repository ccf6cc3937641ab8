"""The cost of HTTP Basic on an API request, against the same request logged in by session.

    python bench/bench_basic_auth.py [--requests 20] [--repeat 5]

A fresh SQLite database in a temporary folder (migrated, one user with the project's password hasher: Argon2id,
memoryviz.hashers; Django's default PBKDF2 before), then, in this process through Django's test client, ``GET
/api/`` (the API root: the view itself costs almost nothing, so the figures are the authentication's) in rounds of
``--requests`` requests:

- ``session``: logged in by session cookie, the baseline;
- ``basic, first request``: the verified-credentials cache is emptied before every request, so each one checks the
  password, as every Basic request did before the cache;
- ``basic, repeated``: the same credentials again, remembered after the first check.

Each case runs once per repetition, in turn; the medians per request are printed, with their ratio to the session.
"""
from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
        os.environ.setdefault("ALLOWED_HOSTS", "testserver")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.core.cache import caches
        from django.core.management import call_command
        from django.test import Client

        call_command("migrate", verbosity=0)
        user = User.objects.create_user("bench", password="bench-password-123")
        credentials = "Basic " + base64.b64encode(b"bench:bench-password-123").decode()
        from django.conf import settings

        # Absent before the cache existed: run this script on an older checkout to measure it as it was.
        remembered = caches["verified-credentials"] if "verified-credentials" in settings.CACHES else caches["default"]
        by_session = Client()
        by_session.force_login(user)
        basic = Client()

        def session_request() -> None:
            assert by_session.get("/api/").status_code == 200

        def basic_first() -> None:
            remembered.clear()
            assert basic.get("/api/", HTTP_AUTHORIZATION=credentials).status_code == 200

        def basic_repeated() -> None:
            assert basic.get("/api/", HTTP_AUTHORIZATION=credentials).status_code == 200

        cases = {"session (baseline)": session_request, "basic, first request": basic_first,
                 "basic, repeated": basic_repeated}
        for case in cases.values():
            case()  # warm up: imports, connections, the first check
        timings: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, case in cases.items():
                start = time.perf_counter()
                for _ in range(args.requests):
                    case()
                timings[name].append((time.perf_counter() - start) / args.requests)

    baseline = statistics.median(timings["session (baseline)"])
    print(f"GET /api/, {args.requests} requests a round, medians of {args.repeat} rounds")
    print("| case | per request | × session |")
    print("|---|---:|---:|")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"| {name} | {median * 1000:.2f} ms | {median / baseline:.1f} |")


if __name__ == "__main__":
    main()
