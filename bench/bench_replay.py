"""How much a replay and an aligned comparison cost, next to one plain preview of the same session.

    python bench/bench_replay.py [--messages 10000] [--repeat 3] [--json]

1. bench_chain's agent history of ``--messages`` messages with stored cl100k counts. Baseline: one plain
   preview, ``trim`` of the whole list (the lab's single strategy), for the strategy of each row. Then:
   - compare, four columns: four trims (buffered, head_and_tail, safe_token_budget, langchain_last) and
     ``compare_aligned`` over them, against one plain preview of safe_token_budget;
   - the replay of every strategy (every call of the run, and the next), against that strategy's preview.
2. Growth: the replay at a quarter, half and all of ``--messages``, in microseconds per message (flat when the
   replay is O(n) or O(n log n)), and the per-call reference (each call's input trimmed from scratch, what an
   obvious replay does) at 1,000 and 2,000 messages, which grows with the square.

    python bench/bench_replay.py --pages 10000,200000 [--pad 0,2000] [--repeat 3]

3. The pages over a stored session (``--pages``, comma-separated sizes; ``--pad``, characters added to each text):
   per size a child fills a fresh SQLite database (bench_export.fill: a tool loop, rows written with plain sqlite3)
   and another child serves, through Django's test client as a logged-in member, the session page (the baseline),
   the lab's preview (langchain_last at a tenth of the tokens; first: the first trim of the session, which reads its
   rows and keeps its structure, store.outlines.session_structure; cold: no trim of the session cached; and again,
   cached; past MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES without its replay, and the replay that the page then asks
   for, ``?part=replay``), compare of four strategies, and the trim API (the result; with its messages). Each
   request's time (median of ``--repeat``) as a multiple of the session page's, and its peak memory growth
   (tracemalloc, one more run of each).
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.memory.compare import compare_aligned  # noqa: E402
from agents.memory.replay import replay  # noqa: E402
from agents.memory.tokens import count_messages  # noqa: E402
from agents.memory.trimming import STRATEGIES, strategy_spec, trim  # noqa: E402
from bench_chain import build_history  # noqa: E402


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parameters(total_tokens: int) -> dict[str, dict[str, Any]]:
    budget = total_tokens // 10  # keeps about a tenth of the history, as bench_trimming
    return {
        "openmanus_window": {"max_messages": 100},
        "buffered": {"buffer_size": 40},
        "head_and_tail": {"head_size": 2, "tail_size": 40},
        "token_limited": {"token_limit": budget},
        "langchain_last": {"max_tokens": budget},
        "langchain_first": {"max_tokens": budget},
        "safe_window": {"max_messages": 100},
        "last_turns": {"max_turns": 8},
        "sk_truncation": {"target_count": 100, "threshold_count": 20},
        "llamaindex_buffer": {"token_limit": budget},
        "safe_token_budget": {"max_tokens": budget},
    }


def pages_child(db: str, session_id: int, n: int, repeat: int) -> dict[str, Any]:
    """The page requests over the filled database (see the module docstring, 3.)."""
    import os
    import tracemalloc

    os.environ["MEMORYVIZ_EXPENSIVE_RATE"] = ""  # one user asks many times: no per-user rate here
    from bench_export import setup_django

    setup_django(Path(db))
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.cache import caches
    from django.test import Client

    from agents import models

    settings.ALLOWED_HOSTS = ["*"]
    session = models.Session.objects.get(pk=session_id)
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=session.agent.project, user=user, role="admin")
    client = Client()
    client.force_login(user)
    budget = session.message_count * 12 // 10  # bench_export.fill stores 12 tokens a message
    base = f"/sessions/{session.pk}/"
    # label: (url, what is cleared first: False nothing, True the trims cache, "first" the session's kept structure
    # too, as after an import or a change: the rows are read)
    cases: dict[str, tuple[str, bool | str]] = {
        "session page": (base, False),
        "lab preview, langchain_last (first trim: rows read)": (
            f"{base}lab/?strategy=langchain_last&max_tokens={budget}", "first"),
        "lab preview, langchain_last (cold)": (f"{base}lab/?strategy=langchain_last&max_tokens={budget}", True),
        "lab preview, langchain_last (cached)": (f"{base}lab/?strategy=langchain_last&max_tokens={budget}", False),
        "lab preview, buffered (cold)": (f"{base}lab/?strategy=buffered&buffer_size=40", True),
        # Past MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES the preview comes without its replay, which the page then asks
        # for by itself: this request (at or under it, the preview includes the replay already).
        "lab replay part, langchain_last (cold)": (
            f"{base}lab/?strategy=langchain_last&max_tokens={budget}&part=replay", True),
        "compare, 4 strategies (cold)": (
            f"{base}lab/compare/?s=buffered:buffer_size=40&s=langchain_last:max_tokens={budget}"
            f"&s=safe_token_budget:max_tokens={budget}&s=token_limited:token_limit={budget}", True),
        "trim API, langchain_last (cold)": (
            f"/api/sessions/{session.pk}/trim/?strategy=langchain_last&max_tokens={budget}", True),
        "trim API with messages (cold)": (
            f"/api/sessions/{session.pk}/trim/?strategy=langchain_last&max_tokens={budget}&messages=1", True),
    }

    def get(url: str, cold: bool | str) -> None:
        if cold:
            caches["trims"].clear()
        if cold == "first":
            models.SessionStructure.objects.all().delete()
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code} {response.content[:300]!r}")
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)

    rows: dict[str, Any] = {}
    for label, (url, cold) in cases.items():
        get(url, cold)  # warms what a first request loads (templates, the counter); the cached case its cache
        seconds = median_seconds(lambda url=url, cold=cold: get(url, cold), repeat)
        gc.collect()
        tracemalloc.start()
        get(url, cold)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows[label] = {"ms": seconds * 1000, "peak_mb": peak / 2**20}
        print(f"  {n:,} messages, {label}: {seconds * 1000:.1f} ms, peak {peak / 2**20:.1f} MB", file=sys.stderr,
              flush=True)  # as it goes: a long session's row can take minutes
    page = rows["session page"]["ms"]
    for row in rows.values():
        row["x_page"] = row["ms"] / page
    return {"messages": n, "rows": rows}


def report_child(db: str, repeat: int) -> dict[str, Any]:
    """The lab's report over every session of the filled database, three strategies, as the page starts it (a
    background job past MEMORYVIZ_BACKGROUND_REPORT_MESSAGES) and a worker runs it; against the session page."""
    import os

    os.environ["MEMORYVIZ_EXPENSIVE_RATE"] = ""
    from bench_export import setup_django

    setup_django(Path(db))
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from agents import models
    from agents.jobs import queue

    settings.ALLOWED_HOSTS = ["*"]
    first = models.Session.objects.order_by("pk").first()
    assert first is not None
    user = User.objects.create_user("bench", password="x")
    models.Membership.objects.create(project=first.agent.project, user=user, role="admin")
    client = Client()
    client.force_login(user)
    page = median_seconds(lambda: client.get(f"/sessions/{first.pk}/"), repeat)
    budget = first.message_count * 12 // 10
    specs = ["buffered:buffer_size=40", f"langchain_last:max_tokens={budget}",
             f"safe_token_budget:max_tokens={budget}"]
    updates: list[tuple[float, int]] = []
    original = queue._Progress.__call__

    def recording(self: Any, done: int, *, force: bool = False) -> None:
        before = self.last
        original(self, done, force=force)
        if self.last != before:
            updates.append((time.perf_counter() - start, done))

    queue._Progress.__call__ = recording  # type: ignore[method-assign]
    start = time.perf_counter()
    response = client.get("/lab/report/", {"s": specs})
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 302, response.status_code
    queue.run_job.call(job.pk)
    seconds = time.perf_counter() - start
    job.refresh_from_db()
    messages = sum(models.Session.objects.values_list("message_count", flat=True))
    return {"sessions": models.Session.objects.count(), "messages": messages, "status": job.status,
            "covered": len(job.result["rows"]), "seconds": seconds, "page_ms": page * 1000,
            "progress_updates": len(updates), "first_update_s": updates[0][0] if updates else None,
            "messages_per_second": messages / seconds}


def pages(sizes: list[int], pads: list[int], repeat: int) -> list[dict[str, Any]]:
    import subprocess
    import tempfile

    out = []
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-pages-") as tmp:
        for pad in pads:
            for n in sizes:
                db = Path(tmp) / f"db-{n}-{pad}.sqlite3"
                filled = subprocess.run([sys.executable, __file__, "--fill", str(db), str(n), str(pad), "1"],
                                        capture_output=True, text=True, check=True)
                session_id = filled.stdout.strip().splitlines()[-1]
                done = subprocess.run([sys.executable, __file__, "--pages-child", str(db), session_id, str(n),
                                       str(repeat)], stdout=subprocess.PIPE, text=True, check=False)
                if done.returncode != 0:
                    sys.exit(f"{n} messages: the child failed (its errors above)")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                result["pad"] = pad
                out.append(result)
                print(f"\n{n:,} messages, {pad} more characters per text (median of {repeat}):", flush=True)
                print(f"  {'request':40} {'time':>10} {'x page':>7} {'peak':>9}")
                for label, r in result["rows"].items():
                    print(f"  {label:40} {r['ms']:8.1f}ms {r['x_page']:6.1f}x {r['peak_mb']:6.1f} MB", flush=True)
                db.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pages", help="comma-separated session sizes: the pages over a stored session (3.)")
    parser.add_argument("--pad", default="0", help="with --pages: comma-separated characters added to each text")
    parser.add_argument("--report", help="SESSIONS,MESSAGES: the report over that many sessions of that size")
    parser.add_argument("--fill", nargs="+", metavar="DB N PAD [SESSIONS]", help=argparse.SUPPRESS)
    parser.add_argument("--report-child", nargs=2, metavar=("DB", "REPEAT"), help=argparse.SUPPRESS)
    parser.add_argument("--pages-child", nargs=4, metavar=("DB", "SESSION", "N", "REPEAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        from bench_export import fill

        sessions = int(args.fill[3]) if len(args.fill) > 3 else 1
        print(fill(Path(args.fill[0]), int(args.fill[1]), pad=int(args.fill[2]), sessions=sessions))
        return
    if args.report_child:
        print(json.dumps(report_child(args.report_child[0], int(args.report_child[1]))))
        return
    if args.report:
        import subprocess
        import tempfile

        count, size = (int(x) for x in args.report.split(","))
        with tempfile.TemporaryDirectory(prefix="memoryviz-bench-report-") as tmp:
            db = Path(tmp) / "db.sqlite3"
            subprocess.run([sys.executable, __file__, "--fill", str(db), str(size), "0", str(count)], check=True,
                           capture_output=True)
            done = subprocess.run([sys.executable, __file__, "--report-child", str(db), str(args.repeat)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"the child failed:\n{done.stderr[-3000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(r, indent=2) if args.json else
              f"report, 3 strategies, {r['sessions']:,} sessions, {r['messages']:,} messages: {r['status']}, "
              f"{r['covered']:,} sessions covered in {r['seconds']:.1f} s ({r['messages_per_second']:,.0f} msg/s; "
              f"{r['seconds'] * 1000 / r['page_ms']:.0f}x the session page's {r['page_ms']:.0f} ms), "
              f"{r['progress_updates']} progress updates, the first after {r['first_update_s'] or 0:.1f} s")
        return
    if args.pages_child:
        db, session_id, n, repeat = args.pages_child
        print(json.dumps(pages_child(db, int(session_id), int(n), int(repeat))))
        return
    if args.pages:
        result = pages([int(x) for x in args.pages.split(",")], [int(x) for x in args.pad.split(",")], args.repeat)
        if args.json:
            print(json.dumps(result, indent=2))
        return

    history = build_history(args.messages)
    counts = count_messages(history, "cl100k")
    params = parameters(sum(counts) + 3)
    out: dict[str, Any] = {"messages": len(history), "calls": sum(m.role == "assistant" for m in history) + 1}

    def preview(name: str) -> Callable[[], Any]:
        spec = strategy_spec(name, params.get(name, {}))
        return lambda: trim(history, spec, counter="cl100k", token_counts=counts)

    columns = ["buffered", "head_and_tail", "safe_token_budget", "langchain_last"]

    specs = [strategy_spec(n, params[n]) for n in columns]

    def compare() -> Any:
        results = [trim(history, spec, counter="cl100k", token_counts=counts) for spec in specs]
        return compare_aligned(history, results)

    base = median_seconds(preview("safe_token_budget"), args.repeat)
    took = median_seconds(compare, args.repeat)
    out["compare"] = {"columns": columns, "preview_ms": base * 1000, "compare_ms": took * 1000,
                      "ratio": took / base, "items": compare().total_items}

    rows = []
    for name in STRATEGIES:
        p = params.get(name, {})
        base = median_seconds(preview(name), args.repeat)
        took = median_seconds(partial(replay, history, name, p, counter="cl100k", token_counts=counts), args.repeat)
        method = replay(history, name, p, counter="cl100k", token_counts=counts).method
        rows.append({"strategy": name, "method": method, "preview_ms": base * 1000, "replay_ms": took * 1000,
                     "ratio": took / base})
    out["replay"] = rows

    growth = []
    for name in ("buffered", "langchain_last", "safe_token_budget", "sk_truncation", "token_limited"):
        row: dict[str, Any] = {"strategy": name}
        for size in (args.messages // 4, args.messages // 2, args.messages):
            h = build_history(size)
            c = count_messages(h, "cl100k")
            p = parameters(sum(c) + 3).get(name, {})
            t = median_seconds(partial(replay, h, name, p, counter="cl100k", token_counts=c), args.repeat)
            row[f"us_per_message_{size}"] = t / size * 1e6
        for size in (1_000, 2_000):
            h = build_history(size)
            c = count_messages(h, "cl100k")
            p = parameters(sum(c) + 3).get(name, {})
            t = median_seconds(
                partial(replay, h, name, p, counter="cl100k", token_counts=c, incremental=False, work_limit=10**12), 1
            )
            row[f"per_call_ms_{size}"] = t * 1000
        growth.append(row)
    out["growth"] = growth

    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['messages']:,} messages, {out['calls']:,} calls")
    cmp = out["compare"]
    print(f"compare, 4 columns: {cmp['compare_ms']:.1f} ms against one preview {cmp['preview_ms']:.1f} ms "
          f"({cmp['ratio']:.1f} x), {cmp['items']} items on the page")
    print(f"{'strategy':20} {'method':18} {'preview':>10} {'replay':>10} {'ratio':>7}")
    for r in rows:
        print(
            f"{r['strategy']:20} {r['method']:18} {r['preview_ms']:8.1f}ms {r['replay_ms']:8.1f}ms {r['ratio']:6.1f}x"
        )
    for r in growth:
        print(r)


if __name__ == "__main__":
    main()
