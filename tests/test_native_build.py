"""The native decoder's build (agents/memory/native_build.py): `make run` goes on without a C compiler, `make test`
stops with a sentence that says what to install; with one, the module it builds is the one otlp imports."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agents.memory import _otlp_wire, native_build, otlp

ROOT = Path(__file__).resolve().parent.parent


def run_build(*args: str) -> subprocess.CompletedProcess[str]:
    # No compiler on PATH: the interpreter is named by its full path, gcc is found nowhere.
    env = {**os.environ, "PATH": "/nonexistent"}
    return subprocess.run([sys.executable, "-m", "agents.memory.native_build", "--force", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_without_a_compiler_make_run_goes_on_and_says_why():
    done = run_build("--optional")
    assert done.returncode == 0, done.stderr
    assert "native decoder not built (no C compiler" in done.stdout
    assert "read by the protobuf library alone" in done.stdout


def test_without_a_compiler_make_test_stops_and_names_what_to_install():
    done = run_build()
    assert done.returncode == 1
    assert "native decoder not built: no C compiler" in done.stderr and "install gcc" in done.stderr


def test_the_module_otlp_uses_is_the_one_built_here():
    assert otlp._otlp_wire is _otlp_wire
    assert Path(_otlp_wire.__file__ or "") == native_build.target()
    assert native_build.target().stat().st_mtime >= native_build.SOURCE.stat().st_mtime  # not a stale build
