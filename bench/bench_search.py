"""The session list's text search at volume, against one plain scan of the messages.

    python bench/bench_search.py                          # 200 sessions of 1,000 messages (200,000)
    python bench/bench_search.py --sessions 1000 --messages 1000   # 1,000,000
    DATABASE_URL=postgres://postgres@127.0.0.1:55481/postgres python bench/bench_search.py ...   # PostgreSQL

A child process fills a fresh SQLite database (bench_export.fill: tool loops, the search index kept by its
triggers; not measured) or, with a PostgreSQL ``DATABASE_URL``, a fresh database created on that server for the
run and dropped after (the same rows written with COPY, the pg_trgm GIN index kept as they go in, then VACUUM
ANALYZE, as autovacuum would leave it), then, as a logged-in admin of the project, times through Django's test
client:
- the list searched for a word in one turn of each session (``?q=day 125.`` for 1,000 messages a session: one
  message of each session matches),
  and for a word in no message (the worst case of a scan: it reads everything);
- the list without a search (for scale);
- the baseline: one plain scan, ``SELECT COUNT(DISTINCT session_id) FROM agents_message WHERE content LIKE ?``,
  the least any search without an index does once per request.
Medians of ``--repeat`` runs; the ratios are against the plain scan of the same word.

With ``--memory`` (issue 25, search across the layers) the database also holds memory for every session, written
through the ORM (the recalls' and records' trigram indexes kept by their triggers or GIN indexes; not measured):
one store, ``--records`` records per session each with its first version written by the session, ``--recalls``
recalls per session of three items each (the records' texts as sent, linked to them). Then the same requests, and
the list searched for a word only in memory (``window seat 3.``: one record of each session, and the items that
read it). Compare a run with and without ``--memory``: what memory adds to a search.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def is_postgres(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def fill_postgres(n: int, sessions: int) -> None:
    """bench_export.fill's sessions and rows in the (fresh) PostgreSQL database of DATABASE_URL, with COPY."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    from agents import models
    from bench_export import bench_sessions, message_rows

    created = bench_sessions(n, sessions)
    columns = [f.column for f in models.Message._meta.concrete_fields if not f.primary_key]
    connection.ensure_connection()  # in autocommit: the COPY is its own transaction
    with connection.connection.cursor() as raw, raw.copy(
            f"COPY agents_message ({', '.join(columns)}) FROM STDIN") as copy:
        for session in created:
            for row in message_rows(columns, session.pk, n):
                copy.write_row(row)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE agents_message")
        cursor.execute("VACUUM ANALYZE agents_session")


def fill_memory(records: int, recalls: int) -> dict[str, int]:
    """Per bench session: ``records`` records (version 1 written by the session at message k) and ``recalls``
    recalls of three items (the session's records, as sent). Returns the rows' counts."""
    from agents import models

    agent = models.Agent.objects.get(project__slug="bench")
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="bench", kind="records")
    sessions = list(models.Session.objects.order_by("pk").values_list("pk", flat=True))
    counts = {"records": 0, "versions": 0, "recalls": 0, "items": 0}
    for start in range(0, len(sessions), 100):
        batch = sessions[start:start + 100]
        made = models.MemoryRecord.objects.bulk_create([
            models.MemoryRecord(store=store, external_id=f"r{s}-{k}", text=f"note {k}: window seat {k}. (run {s})",
                                version_count=1) for s in batch for k in range(records)])
        by_session = {s: made[i * records:(i + 1) * records] for i, s in enumerate(batch)}
        models.RecordVersion.objects.bulk_create([
            models.RecordVersion(record=r, number=1, op="ADD", text=r.text, session_id=s, seq=k)
            for s, rows in by_session.items() for k, r in enumerate(rows)])
        calls = models.Recall.objects.bulk_create([
            models.Recall(session_id=s, seq=2 * k + 1, store=store, query=f"what does the user prefer, {k}?",
                          item_count=3) for s in batch for k in range(recalls)])
        models.RecallItem.objects.bulk_create([
            models.RecallItem(recall=call, record=rec, rank=j + 1, text=rec.text, version=1)
            for i, call in enumerate(calls)
            for j, rec in enumerate(by_session[call.session_id][(i + m) % records] for m in range(3))])
        counts["records"] += len(made)
        counts["versions"] += len(made)
        counts["recalls"] += len(calls)
        counts["items"] += 3 * len(calls)
    return counts


def child(db: str, sessions: int, messages: int, repeat: int, records: int = 0, recalls: int = 0) -> dict[str, Any]:
    os.environ["MEMORYVIZ_EXPENSIVE_RATE"] = ""
    started = time.perf_counter()
    if is_postgres(os.environ.get("DATABASE_URL", "")):
        fill_postgres(messages, sessions)
    else:
        from bench_export import fill

        fill(Path(db), messages, sessions=sessions)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from agents import models

    memory = fill_memory(records, recalls) if records or recalls else {}
    if memory and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for table in ("agents_memoryrecord", "agents_recordversion", "agents_recall", "agents_recallitem"):
                cursor.execute(f"VACUUM ANALYZE {table}")
    filled = time.perf_counter() - started
    settings.ALLOWED_HOSTS = ["*"]
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=models.Project.objects.get(slug="bench"), user=user, role="admin")
    client = Client()
    client.force_login(user)

    def timed(fn: Any) -> float:
        fn()  # warm
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return statistics.median(runs) * 1000

    def page(query: str) -> Any:
        def get() -> None:
            response = client.get("/", {"q": query} if query else {})
            assert response.status_code == 200, response.status_code
        return get

    def scan(word: str) -> Any:
        def run() -> int:
            with connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(DISTINCT session_id) FROM agents_message WHERE content LIKE %s",
                               [f"%{word}%"])
                return int(cursor.fetchone()[0])
        return run

    hit, miss = f"day {max(1, messages // 8)}.", "no such words"  # turn n/8 of n/4: mid-session
    found = scan(hit)()
    assert found == sessions, (found, sessions)  # the word is in one turn of every session
    rows = {
        "list, no search": timed(page("")),
        f"list search {hit!r} ({found} sessions)": timed(page(hit)),
        f"plain scan {hit!r}": timed(scan(hit)),
        f"list search {miss!r} (none)": timed(page(miss)),
        f"plain scan {miss!r}": timed(scan(miss)),
    }
    if memory and records > 3:
        word = "window seat 3."
        listed = client.get("/api/sessions/", {"q": word}).json()["count"]
        assert listed == sessions, (listed, sessions)  # one record of each session, no message
        rows[f"list search {word!r} ({listed} sessions, in memory only)"] = timed(page(word))
        rows[f"plain scan {word!r}"] = timed(scan(word))
    return {"sessions": sessions, "messages": sessions * messages, "fill_s": round(filled, 1), "rows": rows,
            "memory": memory,
            "vendor": connection.vendor, "plans": plans(connection, hit) if connection.vendor == "postgresql" else {}}


def plans(connection: Any, word: str) -> dict[str, str]:
    """PostgreSQL's plans of the search's index lookup and of the plain scan (EXPLAIN ANALYZE), for the record."""
    out = {}
    queries = {
        "index lookup": ("SELECT DISTINCT session_id FROM agents_message WHERE UPPER(content) LIKE UPPER(%s)",
                         [f"%{word}%"]),
        "plain scan": ("SELECT COUNT(DISTINCT session_id) FROM agents_message WHERE content LIKE %s", [f"%{word}%"]),
    }
    with connection.cursor() as cursor:
        for label, (sql, params) in queries.items():
            cursor.execute("EXPLAIN ANALYZE " + sql, params)
            out[label] = "\n".join(row[0] for row in cursor.fetchall())
    return out


BENCH_DB = "memoryviz_bench_search"


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def fresh_postgres(url: str) -> str:
    """A new, empty database on the server of ``url`` (dropped first if a run left it); its URL."""
    from urllib.parse import urlsplit, urlunsplit

    with _admin(url) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return urlunsplit(urlsplit(url)._replace(path="/" + BENCH_DB))


def drop_postgres(url: str) -> None:
    with _admin(url) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1000, help="messages per session")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory", action="store_true", help="memory for every session too (issue 25)")
    parser.add_argument("--records", type=int, default=10, help="with --memory: records per session")
    parser.add_argument("--recalls", type=int, default=20, help="with --memory: recalls per session (3 items)")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, sessions, messages, repeat, records, recalls = args.child
        print(json.dumps(child(db, int(sessions), int(messages), int(repeat), int(records), int(recalls))))
        return
    records, recalls = (args.records, args.recalls) if args.memory else (0, 0)
    url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory(prefix="memoryviz-search-") as tmp:
        db = str(Path(tmp) / "search.sqlite3")
        env = dict(os.environ)
        if is_postgres(url):
            env["DATABASE_URL"] = fresh_postgres(url)
        try:
            out = subprocess.run([sys.executable, __file__, "--child", db, str(args.sessions), str(args.messages),
                                  str(args.repeat), str(records), str(recalls)], cwd=ROOT, capture_output=True,
                                 text=True, env=env)
        finally:
            if is_postgres(url):
                drop_postgres(url)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rows = result["rows"]
    vendor = "PostgreSQL" if result["vendor"] == "postgresql" else "SQLite"
    print(f"{vendor}, {result['sessions']:,} sessions, {result['messages']:,} messages "
          f"(filled in {result['fill_s']} s), median of {args.repeat}, load average {os.getloadavg()[0]:.1f}")
    if result["memory"]:
        print("memory: " + ", ".join(f"{n:,} {what}" for what, n in result["memory"].items()))
    for label, plan in result["plans"].items():
        print(f"-- {label}:\n{plan}")
    print("| request | ms | × plain scan of the same word |")
    print("|---|---:|---:|")
    labels = list(rows)
    for label in labels:
        ms = rows[label]
        if label.startswith("list search"):
            word = label.split("'")[1]
            base = rows[f"plain scan {word!r}"]
            print(f"| {label} | {ms:,.1f} | {ms / base:.3f} |")
        else:
            print(f"| {label} | {ms:,.1f} | |")


if __name__ == "__main__":
    main()
