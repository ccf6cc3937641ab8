"""Running the instrumented agent scripts in their own virtualenvs, against the scripted model on loopback."""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .stub_llm import StubLlm

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENVS = {"current": ROOT / ".venv-otel", "legacy": ROOT / ".venv-otel-legacy",
         "retriever": ROOT / ".venv-otel-retriever", "latitude": ROOT / ".venv-otel-latitude",
         "openlit": ROOT / ".venv-otel-openlit"}


def ensure_venvs() -> dict[str, Path]:
    """The reference virtualenvs, made by ``make otel-clients`` (a no-op once they are up to date)."""
    subprocess.run(["make", "-s", "otel-clients"], cwd=ROOT, check=True, capture_output=True, timeout=1800)
    return {name: venv / "bin" / "python" for name, venv in VENVS.items()}


@dataclass
class AgentRun:
    history: list[dict[str, Any]]  # the conversation as the agent holds it at the end
    requests: list[dict[str, Any]]  # what the model server received, call by call


# How each instrumentation is switched on: (virtualenv, script arguments, environment).
INSTRUMENTATIONS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    # GenAI semantic conventions, current attributes, content on the span only.
    "otel-genai": ("current", ["agent_openai.py", "otel-genai"], {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    }),
    # GenAI semantic conventions, older: one log record per message.
    "otel-genai-events": ("legacy", ["agent_openai.py", "otel-genai-events"], {
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }),
    "openinference": ("current", ["agent_openai.py", "openinference"], {}),
    "openllmetry": ("current", ["agent_openai.py", "openllmetry"], {}),
    "openllmetry-legacy": ("legacy", ["agent_openai.py", "openllmetry"], {}),
    "langchain-openinference": ("current", ["agent_langchain.py"], {}),
}


def run_agent(pythons: dict[str, Path], instrumentation: str, *, endpoint: str, headers: str = "",
              args: list[str] = (), env: dict[str, str] | None = None) -> AgentRun:
    """Run one agent to the end with its exporter pointed at ``endpoint`` (an ``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
    venv, script, extra_env = INSTRUMENTATIONS[instrumentation]
    with StubLlm() as llm:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        environment.update(extra_env)
        environment.update({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": headers,
                            "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BLRP_SCHEDULE_DELAY": "200"})
        environment.update(env or {})
        command = [str(pythons[venv]), str(HERE / script[0]), *script[1:], llm.base_url, *args]
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"{instrumentation} agent failed:\n{done.stderr[-4000:]}")
        return AgentRun(history=json.loads(done.stdout.strip().splitlines()[-1]), requests=list(llm.requests))


# The memory and retrieval span emitters (issue 26): (virtualenv, script, the model's replies, environment). The
# exporters' endpoint is given as each reads it: OTEL_EXPORTER_OTLP_ENDPOINT, or Latitude's LATITUDE_TELEMETRY_URL
# (its own processor posts to <url>/v1/traces with the API key as a bearer token).
MEMORY_CLIENTS: dict[str, tuple[str, str, list[dict[str, Any]], dict[str, str]]] = {
    "langchain-retriever": ("retriever", "agent_retriever.py", [
        {"tool_calls": [("call_n1", "search_notes", {"query": "vegetarian dinner recipe"})]},
        {"content": "Try the lentil curry tonight."},
        {"tool_calls": [("call_n2", "search_notes", {"query": "running plan"})]},
        {"content": "Long run on Sunday, intervals on Wednesday."},
    ], {}),
    "latitude-memory": ("latitude", "memory_latitude.py", [
        {"content": "A lentil curry."}, {"content": "Oat porridge with banana."}, {"content": "Tuesdays and Sundays."},
    ], {}),
    "openlit-mem0": ("openlit", "memory_openlit_mem0.py", [], {"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}),
}


@dataclass
class ClientRun:
    done: dict[str, Any]  # what the client printed as its last line: what it did, read from the library itself
    requests: list[dict[str, Any]]  # what the model server received, call by call


def run_memory_client(pythons: dict[str, Path], client: str, *, endpoint: str, api_key: str, work: Path) -> ClientRun:
    """Run one memory client to the end against the scripted model, exporting to ``endpoint`` (an
    ``OTEL_EXPORTER_OTLP_ENDPOINT``) with ``api_key`` as its bearer token; ``work`` is its working folder and HOME."""
    venv, script, replies, extra_env = MEMORY_CLIENTS[client]
    work.mkdir(parents=True, exist_ok=True)
    with StubLlm(replies or [{"content": "unused"}]) as llm:
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith("OTEL_") and not k.lower().endswith("_proxy")}
        environment.update(extra_env)
        environment.update({
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{api_key}",
            "OTEL_BSP_SCHEDULE_DELAY": "200", "LATITUDE_TELEMETRY_URL": endpoint, "LATITUDE_API_KEY": api_key,
            "HOME": str(work), "NO_PROXY": "*",
        })
        argument = str(work) if client == "openlit-mem0" else llm.base_url
        done = subprocess.run([str(pythons[venv]), str(HERE / script), argument], cwd=work, env=environment,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise AssertionError(f"{client} failed:\n{done.stderr[-4000:]}")
        return ClientRun(done=json.loads(done.stdout.strip().splitlines()[-1]), requests=list(llm.requests))
