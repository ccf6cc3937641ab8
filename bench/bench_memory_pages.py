"""The memory pages at volume, side by side with the same pages over a little memory (issue 25).

    python bench/bench_memory_pages.py                        # a store of 1,000,000 records against one of 100;
                                                              # a record of 10,000 versions and 100,000 reads
                                                              # against one of 10 and 10
    python bench/bench_memory_pages.py --records 100000 --versions 1000 --reads 10000 --repeat 5   # quicker
    DATABASE_URL=postgres://postgres@127.0.0.1:55481/postgres python bench/bench_memory_pages.py ...  # PostgreSQL

A child process fills a fresh SQLite database (or, with a PostgreSQL ``DATABASE_URL``, a fresh database created on
that server for the run and dropped after, rows written with COPY, then VACUUM ANALYZE): one agent with two stores,
``small`` (100 records) and ``big`` (``--records``), whose record i changed at T0 + i seconds, was read i % 7
times, is deleted every tenth, says ``fact number i about the trip``, each kept in the search index as an import
keeps it (SQLite's FTS5 triggers, PostgreSQL's GIN index); and two records, one with 10 versions and 10 reads and
one with ``--versions`` versions and ``--reads`` reads (one recall each). Not measured.

Then, as a logged-in member, through Django's test client, each request on the little memory and on the big one,
interleaved, medians of ``--repeat``:
- the store page as it opens (newest change first), the next page (the keyset link it gives), sorted by reads, by
  versions, never read, a search for one record's text, for a word in none, for a word in every record;
- the record page as it opens (the newest versions, the diff of the last two, the newest reads), its versions and
  reads paged to the middle, the diff of the first and the last version.
The ratio is big / little for the same request: 1 is flat in volume; the goal is within 2.
"""
from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
BENCH_DB = "memoryviz_bench_memory_pages"


def is_postgres(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def setup(db: str) -> None:
    if not is_postgres(os.environ.get("DATABASE_URL", "")):
        os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    os.environ["MEMORYVIZ_EXPENSIVE_RATE"] = ""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def insert(model: Any, rows: Iterator[dict[str, Any]]) -> None:
    """``rows`` (a value for each concrete field but the id) into ``model``'s table: executemany in one transaction
    on SQLite (its triggers keep the search index as they go), COPY on PostgreSQL."""
    from django.db import connection, transaction

    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(f.column for f in fields)

    def prepared(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(f.get_db_prep_save(row.get(f.attname, f.get_default()), connection) for f in fields)

    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with connection.connection.cursor() as raw, raw.copy(
                f"COPY {model._meta.db_table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([getattr(v, "adapted", v) for v in prepared(row)])
        return
    marks = ", ".join(["%s"] * len(fields))
    with transaction.atomic(), connection.cursor() as cursor:
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(prepared(row))
            if len(batch) == 20_000:
                cursor.executemany(f"INSERT INTO {model._meta.db_table} ({columns}) VALUES ({marks})", batch)
                batch = []
        if batch:
            cursor.executemany(f"INSERT INTO {model._meta.db_table} ({columns}) VALUES ({marks})", batch)


def fill(records: int, versions: int, reads: int) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.db import connection

    from agents import models
    from agents.memory.schema import Conversation, parse_messages
    from agents.store.writing import session_store

    project = models.Project.objects.create(name="Bench", slug="bench")
    agent = models.Agent.objects.create(project=project, name="Bench", slug="bench")
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=project, user=user, role="admin")
    session = session_store(agent=agent, conversation=Conversation(external_id="bench", messages=parse_messages(
        [{"role": "user", "content": "Plan my trip."}, {"role": "assistant", "content": "Here is a plan."}])))

    def store(name: str, n: int) -> Any:
        made = models.MemoryStore.objects.create(project=project, agent=agent, name=name, kind="records",
                                                 record_count=n, version_count=n, read_count=n * 3)
        insert(models.MemoryRecord, ({
            "store_id": made.pk, "external_id": f"{name}-{i:08d}", "text": f"fact number {i} about the trip",
            "metadata": {"user_id": f"u{i % 3}"}, "state": "deleted" if i % 10 == 9 else "active",
            "created_at": T0, "updated_at": T0 + dt.timedelta(seconds=i), "version_count": 1, "read_count": i % 7,
        } for i in range(n)))
        return made

    def record(name: str, n_versions: int, n_reads: int) -> Any:
        holder = models.MemoryStore.objects.create(project=project, agent=agent, name=name, kind="records",
                                                   record_count=1, version_count=n_versions, read_count=n_reads)
        made = models.MemoryRecord.objects.create(
            store=holder, external_id=name, text=f"the user likes version {n_versions} of the plan", created_at=T0,
            updated_at=T0 + dt.timedelta(seconds=n_versions - 1), version_count=n_versions, read_count=n_reads)
        insert(models.RecordVersion, ({
            "record_id": made.pk, "number": k, "op": "ADD" if k == 1 else "UPDATE",
            "text": f"the user likes version {k} of the plan", "at": T0 + dt.timedelta(seconds=k - 1),
            "actor": "mem0", "session_id": session.pk, "seq": 1,
        } for k in range(1, n_versions + 1)))
        first = (models.Recall.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
        insert(models.Recall, ({
            "session_id": session.pk, "seq": 1, "store_id": holder.pk, "query": f"what does the user like ({i})",
            "params": {}, "placement": "message", "at": T0 + dt.timedelta(seconds=i * n_versions / n_reads),
            "item_count": 1,
        } for i in range(n_reads)))
        recall_ids = list(models.Recall.objects.filter(store=holder).order_by("pk").values_list("pk", flat=True))
        assert recall_ids[0] >= first and len(recall_ids) == n_reads
        insert(models.RecallItem, ({
            "recall_id": recall_id, "record_id": made.pk, "rank": 1, "score": 0.5,
            "version": max(1, int(i * n_versions / n_reads)), "text": "the user likes it", "ref": {},
        } for i, recall_id in enumerate(recall_ids)))
        return made

    made = {
        "small": store("small", 100), "big": store("big", records),
        "few": record("few", 10, 10), "many": record("many", versions, reads),
    }
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for table in ("agents_memoryrecord", "agents_recordversion", "agents_recall", "agents_recallitem"):
                cursor.execute(f"VACUUM ANALYZE {table}")
    return {"agent": agent.pk, **{k: v.pk for k, v in made.items()}}


def child(db: str, records: int, versions: int, reads: int, repeat: int) -> dict[str, Any]:
    setup(db)
    started = time.perf_counter()
    ids = fill(records, versions, reads)
    filled = time.perf_counter() - started
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from agents import models

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    memory = f"/agents/{ids['agent']}/memory/"

    def get(url: str, query: dict[str, Any]) -> Any:
        response = client.get(url, query)
        assert response.status_code == 200, (url, query, response.status_code)
        return response

    def store_page(query: dict[str, Any]) -> Callable[[str], tuple[str, dict[str, Any]]]:
        return lambda which: (memory, {"store": ids[which], **query})

    def next_page(which: str) -> tuple[str, dict[str, Any]]:
        # The first page's "Next" link, after its last record (asked once, not timed).
        page = get(memory, {"store": ids[which]}).content.decode()
        found = re.search(r'<a href="([^"]+)"[^>]*id="records-next"', page)
        assert found, "no next page"
        return memory, dict(parse_qsl(html.unescape(found.group(1)).split("?", 1)[1]))

    sizes = {"few": (10, 10), "many": (versions, reads)}

    def record_page(part: str) -> Callable[[str], tuple[str, dict[str, Any]]]:
        def make(which: str) -> tuple[str, dict[str, Any]]:
            record = ids[which]
            n_versions, n_reads = sizes[which]
            query: dict[str, Any] = {}
            if part == "versions":
                query = {"versions_before": n_versions // 2}
            elif part == "reads":
                query = {"reads_after": models.RecallItem.objects.filter(record_id=record).order_by(
                    "-recall_id").values_list("pk", flat=True)[n_reads // 2]}
            elif part == "ends":
                query = {"from": 1, "to": n_versions}
            return f"/memory/records/{record}/", query
        return make

    cases: dict[str, tuple[Callable[[str], tuple[str, dict[str, Any]]], tuple[str, str]]] = {
        "store page, newest change first": (store_page({}), ("small", "big")),
        "its next page (keyset)": (next_page, ("small", "big")),
        "sorted by reads": (store_page({"sort": "-reads"}), ("small", "big")),
        "sorted by versions": (store_page({"sort": "-versions"}), ("small", "big")),
        "never read (counted up to 1,000)": (store_page({"read": "never"}), ("small", "big")),
        "search: one record's text": (store_page({"q": "fact number 42 about"}), ("small", "big")),
        "search: a word in none": (store_page({"q": "zebra crossing"}), ("small", "big")),
        "search: a word in every record": (store_page({"q": "trip"}), ("small", "big")),
        "record page as it opens": (record_page(""), ("few", "many")),
        "its versions paged to the middle": (record_page("versions"), ("few", "many")),
        "its reads paged to the middle": (record_page("reads"), ("few", "many")),
        "diff of the first and the last version": (record_page("ends"), ("few", "many")),
    }

    def request(make: Callable[[str], tuple[str, dict[str, Any]]], which: str) -> Callable[[], None]:
        url, query = make(which)
        return lambda: get(url, query) and None

    timings: dict[str, dict[str, list[float]]] = {label: {"little": [], "big": []} for label in cases}
    queries: dict[str, dict[str, int]] = {label: {} for label in cases}
    calls = {(label, side): request(make, which) for label, (make, pair) in cases.items()
             for side, which in zip(("little", "big"), pair, strict=True)}
    for (label, side), call in calls.items():  # warm, and count the queries once
        call()
        with CaptureQueriesContext(connection) as ctx:
            call()
        queries[label][side] = len(ctx.captured_queries)
    for _ in range(repeat):
        for (label, side), call in calls.items():
            start = time.perf_counter()
            call()
            timings[label][side].append(time.perf_counter() - start)
    rows = {label: {side: statistics.median(t) * 1000 for side, t in sides.items()} for label, sides in
            timings.items()}
    return {"records": records, "versions": versions, "reads": reads, "fill_s": round(filled, 1), "rows": rows,
            "queries": queries, "vendor": connection.vendor}


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def fresh_postgres(url: str) -> str:
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
    parser.add_argument("--records", type=int, default=1_000_000, help="records of the big store")
    parser.add_argument("--versions", type=int, default=10_000, help="versions of the busy record")
    parser.add_argument("--reads", type=int, default=100_000, help="reads of the busy record")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, records, versions, reads, repeat = args.child
        print(json.dumps(child(db, int(records), int(versions), int(reads), int(repeat))))
        return
    url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory(prefix="memoryviz-memory-pages-") as tmp:
        env = dict(os.environ)
        if is_postgres(url):
            env["DATABASE_URL"] = fresh_postgres(url)
        try:
            out = subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "memory.sqlite3"),
                                  str(args.records), str(args.versions), str(args.reads), str(args.repeat)],
                                 cwd=ROOT, capture_output=True, text=True, env=env)
        finally:
            if is_postgres(url):
                drop_postgres(url)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    vendor = "PostgreSQL" if result["vendor"] == "postgresql" else "SQLite"
    print(f"{vendor}: a store of 100 records against one of {result['records']:,}; a record of 10 versions and 10 "
          f"reads against one of {result['versions']:,} and {result['reads']:,} (filled in {result['fill_s']} s); "
          f"medians of {args.repeat}, load average {os.getloadavg()[0]:.1f}")
    print("| request | little: ms | big: ms | × little | queries (little, big) |")
    print("|---|---:|---:|---:|---:|")
    for label, sides in result["rows"].items():
        q = result["queries"][label]
        print(f"| {label} | {sides['little']:,.1f} | {sides['big']:,.1f} | {sides['big'] / sides['little']:.2f} "
              f"| {q['little']}, {q['big']} |")


if __name__ == "__main__":
    main()
