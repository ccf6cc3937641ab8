"""The snapshot diff page of two long snapshots, side by side with the session page of the same session (issue 25).

    python bench/bench_snapshot_diff_page.py                       # two 10,000-message snapshots
    python bench/bench_snapshot_diff_page.py --messages 2000 --repeat 3   # quicker

A child process fills a fresh SQLite database: bench_export.fill's tool loop of ``--messages`` messages, and two
LangGraph checkpoints of a thread of as many messages (bench_snapshot_diff's: the value the langgraph_checkpoints
reader gives a SqliteSaver checkpoint; the later one with one message removed at a quarter, one edited at half and
one added at three quarters), stored as two snapshots of the agent, the second the child of the first, both pointing
at the session's last message. Not measured.

Then, as a logged-in member, through Django's test client, interleaved in each repetition (medians), with each
request's queries: the session page as it opens (the baseline), the snapshots page with the two compared
(``?a=&b=``) when first opened (the page's kept diff cleared before each request: the two digests read, then the
parts of the values that changed) and opened again (the diff kept), the snapshot diff API, and one snapshot opened as
a tree; then what the digest costs a write of the later snapshot (the digest, the insert without it, both). Prints
each median and its ratio to the session page; the goal (issue 25, Speed): the diff page of two 10,000-message
snapshots within 2× the session page of the same session.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def fill(db: Path, n: int) -> dict[str, int]:
    from bench_export import fill as fill_messages
    from bench_snapshot_diff import checkpoint_blob, later, message, snapshot_value

    session_id = fill_messages(db, n)
    from agents import models

    session = models.Session.objects.get(pk=session_id)
    first = [message(i) for i in range(n)]
    values = [snapshot_value(checkpoint_blob(first, 7), 7), snapshot_value(checkpoint_blob(later(first), 8), 8)]
    made = []
    for k, value in enumerate(values):
        made.append(models.Snapshot.written(
            agent=session.agent, session=session, seq=n - 1, external_id=f"cp-{k}", step=7 + k,
            parent=made[-1] if made else None, taken_at=T0 + dt.timedelta(minutes=k),
            source_format="langgraph_checkpoints", value=value))
    return {"session": session.pk, "a": made[0].pk, "b": made[1].pk}


def measure(db: Path, ids: dict[str, int], repeat: int) -> dict[str, Any]:
    from bench_export import setup_django

    setup_django(db)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.cache import caches
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from agents import models
    from agents.ledger.snapshots import COMPARE_CACHE

    settings.ALLOWED_HOSTS = ["*"]
    session = models.Session.objects.get(pk=ids["session"])
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=session.agent.project, user=user, role="viewer")
    client = Client()
    client.force_login(user)
    snapshots = f"/agents/{session.agent_id}/snapshots/"
    compare = f"{snapshots}?a={ids['a']}&b={ids['b']}"
    # label: (url, whether the page's kept diff (snapshots.COMPARE_CACHE) is cleared first)
    cases: dict[str, tuple[str, bool]] = {
        "session page (baseline)": (f"/sessions/{session.pk}/", False),
        "diff page, first opened (diff computed)": (compare, True),
        "diff page, opened again (diff kept)": (compare, False),
        "snapshot diff API": (f"/api/snapshots/{ids['a']}/diff/{ids['b']}/", False),
        "one snapshot opened as a tree": (f"{snapshots}?snapshot={ids['b']}", False),
    }

    def get(url: str, cold: bool) -> Any:
        if cold:
            caches[COMPARE_CACHE].clear()
        return client.get(url)

    queries: dict[str, int] = {}
    for label, (url, cold) in cases.items():  # warm, and count the queries
        with CaptureQueriesContext(connection) as ctx:
            response = get(url, cold)
        # The diff page must show the diff: the edited message's new text.
        if response.status_code != 200 or (url == compare and "(edited)" not in response.content.decode()):
            raise SystemExit(f"{url}: {response.status_code} {response.content[:300]!r}")
        queries[label] = len(ctx.captured_queries)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeat):
        for label, (url, cold) in cases.items():
            start = time.perf_counter()
            get(url, cold)
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(t) * 1000 for label, t in times.items()}
    page = medians["session page (baseline)"]
    return {"messages": session.message_count,
            "rows": {label: {"ms": ms, "x_page": ms / page, "queries": queries[label]}
                     for label, ms in medians.items()},
            "write": write_cost(ids, repeat)}


def write_cost(ids: dict[str, int], repeat: int) -> dict[str, float]:
    """What the digest adds to writing a snapshot of the thread: ``snapshot_digest`` of the value, against the
    insert of the row without it and ``Snapshot.written`` (both; rolled back), medians in ms."""
    from django.db import transaction

    from agents import models
    from agents.memory.snapshot_diff import snapshot_digest

    source = models.Snapshot.objects.get(pk=ids["b"])
    fields = {"agent_id": source.agent_id, "session_id": source.session_id, "seq": source.seq, "step": 9,
              "source_format": source.source_format, "value": source.value}
    times: dict[str, list[float]] = {"digest": [], "insert": [], "written": []}

    class Undone(Exception):
        pass

    for k in range(repeat):
        start = time.perf_counter()
        snapshot_digest(source.value)
        times["digest"].append(time.perf_counter() - start)
        for label in ("insert", "written"):
            try:
                with transaction.atomic():
                    start = time.perf_counter()
                    if label == "insert":
                        models.Snapshot.objects.create(external_id=f"w-{k}", **fields)
                    else:
                        models.Snapshot.written(external_id=f"w-{k}", **fields)
                    times[label].append(time.perf_counter() - start)
                    raise Undone
            except Undone:
                pass
    return {label: statistics.median(t) * 1000 for label, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("DB", "N", "REPEAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db = Path(args.child[0])
        ids = fill(db, int(args.child[1]))
        print(json.dumps(measure(db, ids, int(args.child[2]))))
        return
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-snapshot-page-") as tmp:
        db = Path(tmp) / "db.sqlite3"
        done = subprocess.run([sys.executable, __file__, "--child", str(db), str(args.messages), str(args.repeat)],
                              stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            sys.exit("the child failed (its errors above)")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['messages']:,} messages, two snapshots of as many (medians of {args.repeat}):")
    print(f"  {'request':36} {'time':>10} {'x page':>7} {'queries':>8}")
    for label, r in result["rows"].items():
        print(f"  {label:36} {r['ms']:8.1f}ms {r['x_page']:6.2f}x {r['queries']:8}")
    write = result["write"]
    print(f"Writing the later snapshot: its digest {write['digest']:.1f}ms, the row's insert without it "
          f"{write['insert']:.1f}ms, Snapshot.written (both) {write['written']:.1f}ms")


if __name__ == "__main__":
    main()
