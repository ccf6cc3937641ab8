"""python manage.py trim: DESIGN.md's JSON on stdout, clear errors with exit 2."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from agents.memory.schema import parse_messages
from agents.memory.trimming import strategy_spec, trim
from tests.paths import SAMPLES

TRAVEL = SAMPLES / "openai" / "travel.json"
CONTRACT = {"strategy", "params", "counter", "kept", "dropped", "inserted", "messages", "tokens_before",
            "tokens_after", "violations"}


def run(*args: str, stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    try:
        call_command("trim", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_it_prints_the_contract_json_for_a_sample_history() -> None:
    code, out, err = run(str(TRAVEL), "--strategy", "buffered", "--set", "buffer_size=3")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data) >= CONTRACT
    assert data["strategy"] == "buffered"
    assert data["params"] == {"pin_system": True, "buffer_size": 3}
    assert data["counter"] == "cl100k"
    assert data["kept"] == [0, 7, 8, 9]
    assert [d["index"] for d in data["dropped"]] == [1, 2, 3, 4, 5, 6]
    assert all(d["reason"] == "outside the last 3 messages of AutoGen's buffer" for d in data["dropped"])
    expected = trim(parse_messages(json.loads(TRAVEL.read_text())), strategy_spec("buffered", {"buffer_size": 3}))
    assert data["messages"] == [m.to_openai() for m in expected.messages]
    assert data["tokens_before"] == expected.tokens_before > data["tokens_after"] == expected.tokens_after
    assert data["violations"] == []


def test_it_parses_set_values_as_json_when_they_parse() -> None:
    code, out, _ = run(str(TRAVEL), "--strategy", "langchain_last", "--set", "max_tokens=60",
                       "--set", 'start_on=["human","ai"]', "--set", "include_system=true", "--set", "end_on=ai",
                       "--counter", "approx")
    assert code == 0
    data = json.loads(out)
    assert data["params"] == {"pin_system": False, "max_tokens": 60, "include_system": True,
                              "start_on": ["human", "ai"], "end_on": "ai"}
    assert data["counter"] == "approx"
    assert data["kept"][0] == 0  # include_system


def test_it_shows_the_head_and_tail_placeholder_where_it_goes() -> None:
    code, out, _ = run(str(TRAVEL), "--strategy", "head_and_tail", "--set", "head_size=1", "--set", "tail_size=2")
    data = json.loads(out)
    [inserted] = data["inserted"]
    assert inserted["message"] == {"role": "user", "content": "Skipped 5 messages.", "name": "System"}
    assert data["messages"][inserted["position"]] == inserted["message"]
    assert any("PR #8070" in n for n in data["notes"])


def test_it_reads_standard_input_in_another_format(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (SAMPLES / "langchain" / "travel.json").read_text()
    code, out, _ = run("-", "--strategy", "safe_token_budget", "--set", "max_tokens=80", stdin=text,
                       monkeypatch=monkeypatch)
    assert code == 0
    data = json.loads(out)
    assert data["violations"] == [] and data["tokens_after"] <= 80 and not data["budget_exceeded"]
    assert data["kept"][0] == 0


def test_it_trims_the_first_of_several_conversations_and_says_so(tmp_path: Path) -> None:
    history = json.loads(TRAVEL.read_text())
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps({"messages": history}) + "\n" + json.dumps({"messages": history[:2]}) + "\n")
    code, out, err = run(str(path), "--strategy", "unbounded")
    assert code == 0
    assert json.loads(out)["kept"] == list(range(10))
    assert "holds 2 conversations; trimming the first" in err
    code, out, err = run(str(path), "--strategy", "unbounded", "--conversation", "1")
    assert code == 0 and err == "" and json.loads(out)["kept"] == [0, 1]
    code, out, err = run(str(path), "--strategy", "unbounded", "--conversation", "2")
    assert code == 2 and out == "" and "the file holds 2" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--strategy", "newest"], "unknown strategy 'newest'; valid: unbounded, "),
        (["--strategy", "buffered", "--set", "size=3"], "unknown parameter 'size'"),
        (["--strategy", "buffered", "--set", "buffer_size=0"], "buffer_size=0: buffer_size must be greater than 0"),
        (["--strategy", "langchain_last", "--set", "start_on=user"], "start_on"),
        (["--strategy", "buffered", "--set", "buffer_size"], "expected key=value"),
        (["--strategy", "buffered", "--counter", "gpt2"], "unknown counter 'gpt2'; valid: approx, cl100k, messages"),
    ],
)
def test_it_rejects_bad_options_with_exit_2_and_what_is_valid(args: list[str], says: str) -> None:
    code, out, err = run(str(TRAVEL), *args)
    assert code == 2 and out == ""
    assert says in err
    assert "Traceback" not in err
    if "--set" in args and "key=value" not in says:
        assert "Valid parameters:" in err


def test_it_rejects_an_unreadable_file_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "tool", "content": "x"}]')
    code, out, err = run(str(bad), "--strategy", "unbounded")
    assert code == 2 and out == "" and "tool_call_id" in err
    code, out, err = run(str(tmp_path / "missing.json"), "--strategy", "unbounded")
    assert code == 2 and "No such file" in err


def test_it_reads_a_comma_separated_list_parameter_like_its_json_list() -> None:
    code, out, err = run(str(TRAVEL), "--strategy", "langchain_last", "--set", "max_tokens=60",
                         "--set", "start_on=human,ai", "--set", "end_on=human, ai")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["params"]["start_on"] == ["human", "ai"] and data["params"]["end_on"] == ["human", "ai"]
    as_json = json.loads(run(str(TRAVEL), "--strategy", "langchain_last", "--set", "max_tokens=60",
                             "--set", 'start_on=["human","ai"]', "--set", 'end_on=["human","ai"]')[1])
    assert data == as_json
