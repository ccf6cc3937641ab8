"""Run the 2026 reference oracle (tests/reference/oracle_2026.py) in its virtualenv and compare with ``trim``.

A test collects its cases first (``collect`` draws hypothesis examples without running anything), sends them to
the oracle in one subprocess call (``oracle``), then compares each answer with memoryviz's result (``mismatch``):
the same messages from the same input messages in the same order, with the same (edited) text and arguments,
and summaries at the same places. No library is mocked: the oracle runs the real ones.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.trimming import TrimResult, strategy_spec, trim
from agents.memory.trimming.summaries import placeholder_text

ROOT = Path(__file__).resolve().parents[2]
REF_PYTHON = ROOT / ".venv-ref-2026" / "bin" / "python"
ORACLE = Path(__file__).with_name("oracle_2026.py")
SUMMARY_MARK = "<<SUMMARY>>"


def collect(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """``n`` examples of ``strategy`` (fewer when hypothesis runs out of distinct ones).

    The same examples on every run, so that a suite run (CI) checks the cases already found exact, and a
    difference is a change in memoryviz, not a new draw; ``MEMORYVIZ_REFERENCE_EXPLORE=1`` draws new ones (to
    look for differences on purpose)."""
    out: list[Any] = []

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=not os.environ.get("MEMORYVIZ_REFERENCE_EXPLORE"))
    @given(strategy)
    def gather(example: Any) -> None:
        out.append(example)

    gather()
    return out


def pinned(messages: Sequence[Message], strategy: str, params: dict[str, Any]) -> int:
    if not strategy_spec(strategy, params).params.pin_system:
        return 0
    n = 0
    while n < len(messages) and messages[n].role in SYSTEM_ROLES:
        n += 1
    return n


def case(messages: Sequence[Message], strategy: str, params: dict[str, Any], counter: str) -> dict[str, Any]:
    """What the oracle is sent: the view (pinned system messages are outside the framework's memory)."""
    k = pinned(messages, strategy, params)
    return {
        "strategy": strategy, "params": params, "counter": counter,
        "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in messages[k:]],
    }


def oracle(cases: list[dict[str, Any]], timeout: float = 900) -> list[dict[str, Any]]:
    if not REF_PYTHON.exists():
        pytest.fail(f"{REF_PYTHON.relative_to(ROOT)} is missing: `make test-setup` creates it from "
                    "requirements-ref-2026.txt")
    done = subprocess.run(
        [str(REF_PYTHON), str(ORACLE)], input=json.dumps(cases), capture_output=True, text=True, timeout=timeout,
        cwd=ROOT,
    )
    if done.returncode != 0:
        pytest.fail(f"the oracle failed ({done.returncode}):\n{done.stderr[-4000:]}")
    answers = json.loads(done.stdout)
    assert len(answers) == len(cases)
    for c, a in zip(cases, answers, strict=True):
        if a.get("crash"):
            pytest.fail(f"the oracle crashed on {json.dumps(c)[:3000]}\n{a['crash']}")
    return answers


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {"id": tc["id"], "name": tc["function"]["name"], "args": _parsed(tc["function"]["arguments"])}
            for tc in out["tool_calls"]
        ]
    return out


def _parsed(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def expected_list(messages: Sequence[Message], c: dict[str, Any], answer: dict[str, Any],
                  summaries: Sequence[int]) -> list[tuple[int | None, dict[str, Any]]]:
    """The library's list in memoryviz's terms: (input index or None, message), pinned messages first; the
    summary mark replaced by the placeholder of as many messages as memoryviz's summary at that place covers."""
    k = len(messages) - len(c["messages"])
    out: list[tuple[int | None, dict[str, Any]]] = [(i, messages[i].to_openai()) for i in range(k)]
    covers = iter(summaries)
    for item in answer["messages"]:
        message = dict(item["message"])
        if item["source"] is None and isinstance(message.get("content"), str) and SUMMARY_MARK in message["content"]:
            message["content"] = message["content"].replace(SUMMARY_MARK, placeholder_text(next(covers, -1)))
        out.append((None if item["source"] is None else item["source"] + k, message))
    return out


def mismatch(messages: Sequence[Message], c: dict[str, Any], answer: dict[str, Any], result: TrimResult) -> str | None:
    """None when memoryviz's result is the library's; else what differs, with the case to replay it."""
    ours = [(src, _comparable(m.to_openai())) for src, m in zip(result.sources, result.messages, strict=False)]
    if answer.get("error") is not None or answer["messages"] is None:
        # The library raised: nothing is dropped, and the notes quote its error.
        problem = None
        if result.kept != list(range(len(messages))) or result.inserted or result.edited:
            problem = "the library raised but memoryviz changed the list"
        elif not any(answer["error"] in note for note in result.notes):
            problem = f"the notes do not quote the library's error {answer['error']!r}"
    else:
        theirs = [(src, _comparable(m)) for src, m in
                  expected_list(messages, c, answer, [len(x.summarizes) for x in result.inserted])]
        problem = None
        if [s for s, _ in ours] != [s for s, _ in theirs]:
            problem = f"sources: ours {[s for s, _ in ours]} != library {[s for s, _ in theirs]}"
        else:
            for (src, a), (_, b) in zip(ours, theirs, strict=True):
                if a != b:
                    problem = f"message from {src}: ours {a} != library {b}"
                    break
    if problem is None:
        return None
    return f"{problem}\ncase: {json.dumps(c, ensure_ascii=False)}\nnotes: {result.notes}"


def check_all(cases_and_inputs: list[tuple[list[Message], dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
    """Trim every case with memoryviz, ask the oracle once, and fail on the first difference. Returns
    (result, answer) pairs for further checks."""
    answers = oracle([c for _, c in cases_and_inputs])
    pairs = []
    problems = []
    for (messages, c), answer in zip(cases_and_inputs, answers, strict=False):
        result = trim(messages, strategy_spec(c["strategy"], c["params"]), counter=c["counter"])
        problem = mismatch(messages, c, answer, result)
        if problem:
            problems.append(problem)
        pairs.append((result, answer))
    assert not problems, f"{len(problems)} of {len(answers)} cases differ; the first:\n{problems[0]}"
    return pairs


def result_from_command_json(data: dict[str, Any], messages: Sequence[Message]) -> TrimResult:
    """The ``trim`` command's JSON as a TrimResult, enough for ``mismatch``: the trimmed list, where each message
    came from, what summaries stand for, and the notes."""
    from agents.memory.schema import parse_messages
    from agents.memory.trimming.registry import Inserted

    trimmed = parse_messages(data["messages"])
    inserted_at = {x["position"]: x for x in data["inserted"]}
    kept = iter(data["kept"])
    sources = [None if pos in inserted_at else next(kept) for pos in range(len(trimmed))]
    inserted = [Inserted(x["position"], trimmed[x["position"]], x["reason"], tuple(x.get("summarizes", ())))
                for x in data["inserted"]]
    return TrimResult(
        strategy=data["strategy"], params=data["params"], counter=data["counter"], kept=data["kept"],
        dropped=[], inserted=inserted, messages=trimmed, tokens_before=data["tokens_before"],
        tokens_after=data["tokens_after"], violations=[], notes=data["notes"], sources=sources, edited=[],
    )
