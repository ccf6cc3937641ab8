"""Running the memory libraries themselves (mem0, AgentScope, AutoGen, LangGraph, the Agents SDK) in their own
virtualenvs, so that each memory reader is tested on files the library wrote in this very run, and so that what
memoryviz writes is loaded back by the library.

A script ``tests/memory_libs/<name>.py`` runs in its virtualenv with the output folder as its working directory and
first argument; it writes its files there. Offline by construction: scripted stub models, deterministic fake
embedders, mem0's telemetry off before it is imported, no proxy, Hugging Face offline, and a HOME inside the output
folder (mem0 keeps its files under ~/.mem0).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENVS = {"mem": ROOT / ".venv-mem", "agentscope": ROOT / ".venv-mem-agentscope",
         "agentscope2": ROOT / ".venv-mem-agentscope2",
         "ref": ROOT / ".venv-ref-2026"}  # LangChain 1.x, made by `make test-setup` (requirements-ref-2026.txt)


class LibraryFailed(AssertionError):
    pass


def ensure_venvs() -> None:
    """The virtualenvs, made by ``make memory-libs`` (a no-op once they are up to date)."""
    subprocess.run(["make", "-s", "memory-libs"], cwd=ROOT, check=True, capture_output=True, timeout=1800)


def python_of(venv: str) -> Path:
    return VENVS[venv] / "bin" / "python"


def run_script(venv: str, script: str, out_dir: Path, *args: str, stdin: str | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``tests/memory_libs/<script>`` in ``venv`` with ``out_dir`` as its working folder and first argument.
    The working folder is not the checkout: the Agents SDK's package is named ``agents``, like memoryviz's app."""
    out_dir.mkdir(parents=True, exist_ok=True)
    home = out_dir / ".home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith(("OTEL_", "PYTHON", "DJANGO", "DATABASE"))}
    env.update({
        "HOME": str(home),
        "MEM0_TELEMETRY": "False",
        "MEM0_DIR": str(home / ".mem0"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OPENAI_API_KEY": "sk-offline-stub",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "NO_PROXY": "*",
    })
    command = [str(python_of(venv)), str(HERE / script), str(out_dir), *args]
    done = subprocess.run(command, cwd=out_dir, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise LibraryFailed(f"{script} in {venv} exited {done.returncode}:\n{done.stdout[-4000:]}\n"
                            f"{done.stderr[-8000:]}")
    return done


if __name__ == "__main__":  # python -m tests.memory_libs.runner VENV SCRIPT OUT_DIR: run one by hand
    ensure_venvs()
    print(run_script(sys.argv[1], sys.argv[2], Path(sys.argv[3])).stdout)
