from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.schema import parse_messages
from agents.memory.tokens import count_messages, total_tokens
from tests.commands import run
from tests.paths import SAMPLE_FILES, SAMPLES

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = SAMPLES / "openai" / "travel.json"
SAMPLE_MESSAGES: list[dict[str, Any]] = json.loads(SAMPLE.read_text())



def write(tmp_path: Path, data: Any, name: str = "history.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def broken() -> list[dict[str, Any]]:
    """The sample with its first call's assistant message cut away (the AutoGen middle-pop)."""
    return SAMPLE_MESSAGES[:2] + SAMPLE_MESSAGES[3:]


# ---- lint ------------------------------------------------------------------------------------------------------


def test_it_exits_0_with_no_violations_for_a_clean_history() -> None:
    code, out, err = run("lint", str(SAMPLE))
    assert (code, json.loads(out), err) == (0, {"violations": []}, "")


def test_it_exits_1_and_lists_each_violation(tmp_path: Path) -> None:
    code, out, _ = run("lint", write(tmp_path, broken()))
    assert code == 1
    violations = json.loads(out)["violations"]
    assert [(v["kind"], v["index"], v["tool_call_id"]) for v in violations] == [
        ("orphan_tool_result", 2, "call_a1"), ("orphan_tool_result", 3, "call_a2"),
    ]
    assert set(violations[0]) == {"kind", "index", "tool_call_id", "message", "severity", "provider_error"}
    assert "call_a1" in violations[0]["message"]


def test_it_does_not_fail_on_a_pending_call_alone(tmp_path: Path) -> None:
    code, out, _ = run("lint", write(tmp_path, SAMPLE_MESSAGES[:8]))
    assert code == 0
    assert [(v["kind"], v["severity"]) for v in json.loads(out)["violations"]] == [("pending_tool_call", "warning")]


def test_it_checks_anthropic_rules_when_asked(tmp_path: Path) -> None:
    late_system = SAMPLE_MESSAGES[:6] + [{"role": "system", "content": "Be brief."}] + SAMPLE_MESSAGES[6:]
    path = write(tmp_path, late_system)
    assert run("lint", path)[0] == 0
    code, out, _ = run("lint", path, "--provider", "anthropic")
    assert code == 1
    assert [(v["kind"], v["index"]) for v in json.loads(out)["violations"]] == [("system_not_first", 6)]


def test_it_names_the_conversation_when_a_file_holds_several(tmp_path: Path) -> None:
    lines = "\n".join(json.dumps({"messages": m}) for m in (SAMPLE_MESSAGES, broken(), SAMPLE_MESSAGES[:8]))
    code, out, _ = run("lint", write(tmp_path, lines + "\n", "histories.jsonl"))
    assert code == 1
    rows = [(v["conversation"], v["kind"], v["index"]) for v in json.loads(out)["violations"]]
    assert rows == [(1, "orphan_tool_result", 2), (1, "orphan_tool_result", 3), (2, "pending_tool_call", 7)]


def test_it_rejects_an_unknown_provider() -> None:
    code, out, err = run("lint", str(SAMPLE), "--provider", "gemini")
    assert (code, out) == (2, "")
    assert "valid: openai, anthropic" in err


# ---- tokens ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("counter", ["cl100k", "approx", "messages"])
def test_it_prints_each_message_count_and_the_total(counter: str) -> None:
    code, out, err = run("tokens", str(SAMPLE), "--counter", counter)
    expected = count_messages(parse_messages(SAMPLE_MESSAGES), counter)
    assert (code, err) == (0, "")
    assert json.loads(out) == {"counter": counter, "per_message": expected, "total": total_tokens(expected, counter)}


def test_it_counts_with_cl100k_by_default() -> None:
    assert json.loads(run("tokens", str(SAMPLE))[1])["counter"] == "cl100k"


def test_it_counts_each_conversation_of_a_file_holding_several(tmp_path: Path) -> None:
    lines = "".join(json.dumps({"messages": m}) + "\n" for m in (SAMPLE_MESSAGES, SAMPLE_MESSAGES[:2]))
    path = write(tmp_path, lines, "histories.jsonl")
    code, out, _ = run("tokens", path, "--counter", "messages")
    assert code == 0
    assert json.loads(out) == {
        "counter": "messages",
        "per_message": [1] * 12,
        "conversations": [{"per_message": [1] * 10, "total": 10}, {"per_message": [1, 1], "total": 2}],
        "total": 12,
    }


def test_it_lists_the_valid_counters_for_an_unknown_one() -> None:
    code, out, err = run("tokens", str(SAMPLE), "--counter", "gpt2")
    assert (code, out) == (2, "")
    assert "unknown counter 'gpt2'; valid: approx, cl100k, messages" in err


# ---- bad input -------------------------------------------------------------------------------------------------

BAD_INPUTS = {
    "malformed JSON": ('[{"role": "user", "content": "hi"}', "invalid JSON"),
    "empty file": ("", "empty"),
    "whitespace only": ("  \n ", "empty"),
    "a number": ("42", "history.json"),
    "a list of strings": ('["hello", "world"]', "history.json"),
    "an unknown role": ('[{"role": "robot", "content": "hi"}]', "messages[0].role"),  # detected as openai (QA #4)
    "an unknown role read as openai": ('[{"role": "robot", "content": "hi"}]', "[0].role"),
    "a number as content": ('[{"role": "user", "content": 7}]', "[0].content"),
    "tool_calls not a list": ('[{"role": "assistant", "tool_calls": "get_weather"}]', "[0].tool_calls"),
    "arguments not a string": (
        '[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", '
        '"function": {"name": "f", "arguments": 5}}]}]', "[0].tool_calls[0].function.arguments"),
    "a tool message without its id": ('[{"role": "tool", "content": "18C"}]', "[0]"),
}


@pytest.mark.parametrize("command", ["lint", "tokens"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_it_exits_2_with_a_clear_message_on_bad_input(tmp_path: Path, command: str, case: str) -> None:
    text, place = BAD_INPUTS[case]
    args = ["--format", "openai"] if case.endswith("read as openai") else []
    code, out, err = run(command, write(tmp_path, text), *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"{command}: ") and place in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["lint", "tokens"])
def test_it_exits_2_for_a_missing_file_or_a_directory(tmp_path: Path, command: str) -> None:
    for path in (tmp_path / "nope.json", tmp_path):
        code, out, err = run(command, str(path))
        assert (code, out) == (2, "")
        assert str(path) in err


def test_it_exits_2_for_bytes_that_are_not_text(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfa")
    code, out, err = run("lint", str(path))
    assert (code, out) == (2, "") and "UTF-8" in err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "function", "name", "arguments", "id",
                         "messages", "type", "x"]), inner, max_size=4),
    max_leaves=12,
)
message_like = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "bot"])},
    optional={"content": json_values, "tool_calls": json_values, "tool_call_id": json_values, "name": json_values},
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    json_values,
    st.lists(message_like, max_size=5),
    st.fixed_dictionaries({"messages": st.lists(message_like, max_size=4)}),
    # Items keyed by "type" reach the readers of the typed formats (Responses, AutoGen, LangChain, Anthropic).
    st.lists(st.fixed_dictionaries({"type": json_values}, optional={"id": json_values, "content": json_values,
                                                                    "data": json_values}), max_size=3),
))
def test_it_never_shows_a_traceback_whatever_the_file_holds(tmp_path: Path, data: Any) -> None:
    code, out, err = run("lint", write(tmp_path, data))
    assert code in (0, 1, 2)
    if code == 2:
        assert out == "" and err.startswith("lint: ")
        assert "internal error" not in err, err  # the reader must name what is wrong, not crash
    else:
        assert isinstance(json.loads(out)["violations"], list)


# ---- as a real process ------------------------------------------------------------------------------------------


def manage(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, input=stdin, capture_output=True,
                          timeout=120)


def test_it_reads_standard_input_and_sets_the_exit_status() -> None:
    done = manage("lint", "-", stdin=json.dumps(broken()).encode())
    assert done.returncode == 1
    assert [v["kind"] for v in json.loads(done.stdout)["violations"]] == ["orphan_tool_result"] * 2
    done = manage("tokens", "-", "--counter", "messages", stdin=SAMPLE.read_bytes())
    assert (done.returncode, json.loads(done.stdout)["total"]) == (0, 10)


def test_it_fails_cleanly_as_a_process_on_malformed_input() -> None:
    done = manage("lint", "-", stdin=b'{"messages": [')
    assert (done.returncode, done.stdout) == (2, b"")
    assert b"lint: " in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["lint", "tokens"])
def test_it_reports_a_reader_crash_without_a_traceback(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    from agents.memory import formats

    def crash(source: Any, format: str | None = None, **options: Any) -> Any:
        raise TypeError("unhashable type: 'list'")

    # Both commands read every layer of a file through open_layers.
    monkeypatch.setattr(formats, "open_layers", crash)
    code, out, err = run(command, str(SAMPLE))
    assert (code, out) == (2, "")
    assert "internal error (TypeError: unhashable type: 'list')" in err and "Traceback" not in err


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.parent.name)
def test_it_reads_every_sample_format_and_finds_it_clean(path: Path) -> None:
    code, out, err = run("lint", str(path), "--provider", "anthropic")
    assert (code, json.loads(out), err) == (0, {"violations": []}, "")
    per_message = json.loads(run("tokens", str(path), "--counter", "messages")[1])["per_message"]
    # Ten messages in OpenAI granularity, nine where the format keeps the system prompt outside (OpenManus).
    assert len(per_message) == (9 if path.parent.name == "openmanus" else 10)


def test_it_says_to_name_the_format_with_its_option_when_it_cannot_tell(tmp_path: Path) -> None:
    code, out, err = run("lint", write(tmp_path, [{"shape": "unknown"}]))
    assert code == 2 and out == ""
    assert "unknown format" in err and err.rstrip().endswith("; name the format with --format")
