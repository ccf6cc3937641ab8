"""Memory import speed and memory: `import_file` of mem0's own history.db holding N versions over N/10 records,
against plain sqlite3 executemany of the same rows.

    python bench/bench_memory_import.py            # 100k and 300k versions
    python bench/bench_memory_import.py --full     # 1M versions over 100k records (issue 24's goal: within 3x,
                                                   # peak memory under 200 MB)

The input is generated as mem0 2.x writes its `history` table (an ADD, then UPDATEs of each memory, with the event
time in updated_at) into a temporary folder and deleted afterwards. Each measurement runs in a fresh child process
with its own SQLite file, so that peak RSS belongs to that one import. The baseline inserts the same store, record
and version rows (streamed from the imported database) into a fresh copy of the schema with plain sqlite3
executemany in one transaction, the records' full-text index maintained by its triggers as for the import.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_import import baseline_executemany, rss_now_kb

ROOT = Path(__file__).resolve().parents[1]
MEMORY_TABLES = ("agents_project", "agents_agent", "agents_memorystore", "agents_memoryrecord",
                 "agents_recordversion")


def generate(path: Path, versions: int, records: int) -> None:
    """mem0's history table: each memory ADDed once, then UPDATEd, rows in the order mem0 inserts them."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, "
               "event TEXT, created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)")
    texts: dict[int, str] = {}
    rows: list[tuple[Any, ...]] = []
    for i in range(versions):
        r = i % records
        old = texts.get(r)
        new = f"User {r} prefers option {i // records} for topic {(i * 7919) % 1000}"
        created = f"2026-12-06T00:00:{r % 60:02d}.{r % 1000:03d}000+00:00"
        updated = f"2026-12-{6 + i // records:02d}T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"
        rows.append((f"h{i}", f"00000000-0000-4000-8000-{r:012d}", old, new, "ADD" if old is None else "UPDATE",
                     created, updated, 0, None, "user"))
        texts[r] = new
        if len(rows) >= 50_000:
            db.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
            rows = []
    db.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()


def child(path: Path, db: Path) -> dict[str, Any]:
    """Runs in a fresh process: migrate an empty database, import the file, then the sqlite3 baseline."""
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents.transfer import imports

    rss_before = rss_now_kb()
    start = time.perf_counter()
    report = imports.import_file(path, project="bench", agent="bench")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert report.memory is not None
    baseline = baseline_executemany(db, MEMORY_TABLES)
    return {
        "records": report.memory["records"],
        "versions": report.memory["versions"],
        "seconds": round(seconds, 2),
        "baseline_seconds": round(baseline, 2),
        "ratio": round(seconds / baseline, 1),
        "rss_before_mb": round(rss_before / 1024, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "file_mb": round(path.stat().st_size / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="1M versions over 100k records")
    parser.add_argument("--sizes", help="comma-separated version counts (records: a tenth of each)")
    parser.add_argument("--child", nargs=2, metavar=("FILE", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), Path(args.child[1]))))
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [1_000_000] if args.full else [100_000, 300_000])
    print("import of mem0's history.db; baseline: sqlite3 executemany of the same store, record and version rows")
    print(f"{'versions':>10} {'records':>8} {'file MB':>8} {'import s':>9} {'baseline s':>11} {'ratio':>6} "
          f"{'RSS before':>11} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory(prefix="memoryviz-bench-memory-") as tmp:
        for n in sizes:
            path = Path(tmp) / f"history-{n}.db"
            generate(path, n, max(1, n // 10))
            db = Path(tmp) / f"db-{n}.sqlite3"
            done = subprocess.run([sys.executable, __file__, "--child", str(path), str(db)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"size {n}: the child failed:\n{done.stderr}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{r['versions']:>10,} {r['records']:>8,} {r['file_mb']:>8} {r['seconds']:>9} "
                  f"{r['baseline_seconds']:>11} {r['ratio']:>5}x {r['rss_before_mb']:>9} MB {r['peak_rss_mb']:>6} MB",
                  flush=True)
            for f in Path(tmp).iterdir():
                f.unlink()


if __name__ == "__main__":
    main()
