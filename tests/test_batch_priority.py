"""Batch work (an import command, the background worker) runs at the niceness MEMORYVIZ_BATCH_NICE, so that the
server's requests get the CPU first."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP = "import django; django.setup(); from agents.jobs.queue import batch_priority; "


def _run(script: str, nice: str, *, start: int = 0) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryviz.settings", "MEMORYVIZ_BATCH_NICE": nice}
    command = [sys.executable, "-c", SETUP + script]
    if start:
        command = ["nice", "-n", str(start), *command]  # 19 at most, whatever the step
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()


def test_it_sets_the_niceness_once_and_never_lowers_a_higher_one():
    ours = os.nice(0)  # what the children inherit (an import run in this process may have raised it)
    target = min(ours + 3, 19)
    # Absolute, not a step: a second call (a second import in the same process) changes nothing.
    assert _run("print(batch_priority(), batch_priority())", str(target)) == [str(target)] * 2
    assert _run("print(batch_priority())", str(target), start=19) == ["19"]
    assert _run("print(batch_priority())", "0") == [str(ours)]


def _niceness(pid: int) -> int:
    # /proc/PID/stat: the 19th field is the niceness (the command name, field 2, is in parentheses).
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])


def test_import_history_runs_at_the_batch_niceness(tmp_path):
    ours = os.nice(0)
    target = min(ours + 5, 19)  # above what the process inherits from this one
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryviz.settings", "MEMORYVIZ_BATCH_NICE": str(target),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    # Reading standard input, it waits for the file: long enough to look at it.
    proc = subprocess.Popen([sys.executable, "manage.py", "import_history", "-"], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seen = []
        for _ in range(300):
            seen.append(_niceness(proc.pid))
            if seen[-1] == target:
                break
            time.sleep(0.05)
        assert seen[0] == ours and seen[-1] == target
    finally:
        proc.kill()
        proc.wait()
