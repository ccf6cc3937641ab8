"""Detection looks at the shape (keys) of a document; validation is the reader's. A chat-shaped list with a bad
value in it is detected as its format and the reader names the place (QA #4)."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from agents.memory.formats import FormatError, detect_format, read_data, read_input
from tests.paths import SAMPLES

ROLES_TEXT = "expected one of system, developer, user, assistant, tool"

# (document, the format it is detected as, the error the reader gives).
BAD_MESSAGES: dict[str, tuple[Any, str, str]] = {
    "an unknown role": (
        [{"role": "wizard", "content": "hi"}],
        "openai",
        f"messages[0].role: {ROLES_TEXT}, got 'wizard'",
    ),
    "a number as role": ([{"role": 5, "content": "hi"}], "openai", f"messages[0].role: {ROLES_TEXT}, got 5"),
    "a null role": ([{"role": None, "content": "hi"}], "openai", f"messages[0].role: {ROLES_TEXT}, got null"),
    "no role at all": ([{"content": "hi"}], "openai", f"messages[0].role: {ROLES_TEXT}, got null"),
    "a number as second item": (
        [{"role": "user", "content": "hi"}, 5],
        "openai",
        "messages[1]: expected an object, got a number",
    ),
    "a tool message without tool_call_id": (
        [{"role": "user", "content": "hi"}, {"role": "tool", "content": "18C"}],
        "openai",
        "messages[1]: a tool message needs the tool_call_id of the call it answers",
    ),
    "an object with messages and an unknown role": (
        {"messages": [{"role": "wizard", "content": "hi"}]},
        "openai",
        f"messages[0].role: {ROLES_TEXT}, got 'wizard'",
    ),
    "an object with messages and a number in them": (
        {"messages": [{"role": "user", "content": "hi"}, 5], "tools": []},
        "openai",
        "messages[1]: expected an object, got a number",
    ),
    "an OpenManus list with an unknown role": (
        [{"role": "user", "content": "hi", "base64_image": "aGk="}, {"role": "wizard", "content": "x"}],
        "openmanus",
        f"messages[1].role: {ROLES_TEXT}, got 'wizard'",
    ),
    "an Anthropic request with an unknown role": (
        {"system": "Be brief.", "messages": [{"role": "tool", "content": "x"}]},
        "anthropic",
        "messages[0].role: expected user or assistant, got 'tool'",
    ),
    "Anthropic blocks and an unknown role": (
        [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
            {"role": "wizard", "content": "x"},
        ],
        "anthropic",
        "messages[1].role: expected user or assistant, got 'wizard'",
    ),
    "an array of documents, one with an unknown role": (
        [[{"role": "user", "content": "hi"}], [{"role": "wizard", "content": "hi"}]],
        "openai",
        f"[1].messages[0].role: {ROLES_TEXT}, got 'wizard'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_MESSAGES))
def test_it_detects_a_chat_shaped_document_by_its_keys_and_the_reader_names_the_place(case: str) -> None:
    doc, fmt, expected = BAD_MESSAGES[case]
    assert detect_format(doc) == fmt
    with pytest.raises(FormatError) as read:
        read_data(doc)
    assert str(read.value) == expected
    with pytest.raises(FormatError) as named:
        read_data(doc, fmt)
    assert str(named.value) == expected  # the same error as when the format is named
    with pytest.raises(FormatError) as streamed:
        read_input(io.BytesIO(json.dumps(doc).encode()))
    assert str(streamed.value) == expected


def test_it_names_the_line_and_place_of_a_bad_message_in_jsonl() -> None:
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    for lines, expected in [
        ([json.dumps({"messages": [{"role": "wizard", "content": "hi"}]}), good],
         f"line 1: messages[0].role: {ROLES_TEXT}, got 'wizard'"),
        ([good, json.dumps({"messages": [{"role": "user", "content": "hi"}, 5]})],
         "line 2: messages[1]: expected an object, got a number"),
    ]:
        with pytest.raises(FormatError) as info:
            read_input(io.BytesIO("\n".join(lines).encode()))
        assert str(info.value) == expected


def test_it_still_reads_good_documents_as_before() -> None:
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    assert detect_format({"messages": [{"role": "user", "content": "hi"}]}) == "openai"
    [conv] = read_data([{"role": "user", "content": "hi"}])
    assert conv.source_format == "openai" and conv.messages[0].content == "hi"


@pytest.mark.parametrize(("doc", "seen"), [
    ({"hello": "world"}, "an object with keys hello"),
    ([1, 2, 3], "an array whose first item is a number"),
    (["hello", "world"], "an array whose first item is a string"),
    ([{"hello": 1}], "an array whose first item is an object with keys hello"),
    ([{"name": "x"}], "an array whose first item is an object with keys name"),  # no role, content or calls
    ([{"role": "user", "type": "robot"}], "an array whose first item is an object with keys role, type"),
])
def test_it_still_says_what_it_saw_when_nothing_looks_like_messages(doc: Any, seen: str) -> None:
    with pytest.raises(FormatError) as info:
        detect_format(doc)
    assert info.value.place == "input"
    assert info.value.detail.startswith(f"unknown format: {seen}, which matches none of ")


def test_it_still_lists_the_candidates_of_an_ambiguous_shape() -> None:
    """A list of AgentScope Msg dicts reads as openai or agentscope, with a good role or a bad one alike."""
    msg = {"id": "a", "name": "u", "role": "user", "content": "x", "timestamp": "2024-01-01 00:00:00.000"}
    for doc in ([msg], [{**msg, "role": "wizard"}]):
        with pytest.raises(FormatError) as info:
            detect_format(doc)
        assert str(info.value) == "input: ambiguous format: it reads as openai or agentscope; name the format"


def run_lint(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("lint", str(path), stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", sorted(BAD_MESSAGES))
def test_lint_exits_2_and_names_the_place_without_format(tmp_path: Path, case: str) -> None:
    doc, _fmt, expected = BAD_MESSAGES[case]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_lint(path)
    assert (code, out) == (2, "")
    assert err.startswith("lint: ") and expected in err
    assert "unknown format" not in err and "Traceback" not in err


def test_lint_names_messages_0_role_for_an_unknown_role(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text('[{"role":"wizard","content":"hi"}]')
    code, _out, err = run_lint(path)
    assert code == 2 and "messages[0].role" in err


# --- the file name (QA #12) -------------------------------------------------------------------------------------

JSONL_SAMPLE = SAMPLES / "openai_jsonl" / "travel.jsonl"


def test_it_reads_a_one_line_jsonl_file_by_its_name_given_as_a_hint() -> None:
    data = JSONL_SAMPLE.read_bytes()
    assert data.strip().count(b"\n") == 0  # one line: only the name tells it from an openai document
    [by_path] = read_input(JSONL_SAMPLE)
    assert by_path.source_format == "openai_jsonl"
    [unnamed] = read_input(io.BytesIO(data))  # pasted text with nothing to go by: a Chat Completions document
    assert unnamed.source_format == "openai"
    [named] = read_input(io.BytesIO(data), name="travel.jsonl")
    assert named.source_format == "openai_jsonl"
    assert named.messages == by_path.messages
    stored = JSONL_SAMPLE.parent / "travel.jsonl"  # a path keeps its own name unless a hint is given
    [hinted] = read_input(stored, name="upload.json")
    assert hinted.source_format == "openai"


def test_it_reads_a_list_of_whole_agentscope_msg_dicts_as_agentscope() -> None:
    """Msg.to_dict() gives id, name, role, content, metadata and timestamp: no Chat Completions list has those."""
    msgs = [{"id": "kAuRgjcC", "name": "user", "role": "user", "content": "Weather in Paris?", "metadata": {},
             "timestamp": "2026-11-29 11:55:17.456"},
            {"id": "fnngUFWj", "name": "Friday", "role": "assistant", "content": "Sunny.", "metadata": {},
             "timestamp": "2026-11-29 11:55:18.001"}]
    assert detect_format(msgs) == "agentscope"
    [conv] = read_data(msgs)
    assert [m.external_id for m in conv.messages] == ["kAuRgjcC", "fnngUFWj"]
    # A bad role is still agentscope's to name.
    with pytest.raises(FormatError) as info:
        read_data([{**msgs[0], "role": "wizard"}])
    assert info.value.place == "messages[0].role"
