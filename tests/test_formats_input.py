"""Reading input: sources, JSON and JSONL, streaming of big files, and clear errors naming the place."""
from __future__ import annotations

import io
import json
import sys
import tracemalloc
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import agents.memory.formats as formats
from agents.memory.formats import (
    FormatError,
    detect_format,
    dumps,
    iter_conversations,
    open_stream,
    read_data,
    read_input,
)
from tests.paths import SAMPLES as SAMPLES_DIR

SAMPLES = sorted(SAMPLES_DIR.glob("*/travel.json*"))


class CountingReader(io.RawIOBase):
    """A file that remembers how many bytes were read from it."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 (the reader owns the file: close() closes it)
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._file.readinto(buffer)
        self.read_bytes += n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def error_of(call: Any) -> FormatError:
    with pytest.raises(FormatError) as info:
        call()
    return info.value


# --- big inputs stream -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_it_streams_a_200_mb_conversation_with_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    body = "x" * 10_000
    count = 20_000
    with open(path, "w") as f:
        f.write("[\n")
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            f.write(json.dumps({"role": role, "content": f"{i} {body}"}) + (",\n" if i < count - 1 else "\n"))
        f.write("]\n")
    assert path.stat().st_size > 200_000_000
    reader = CountingReader(path)
    tracemalloc.start()
    try:
        [stream] = list(_first_streams(reader))
        first = next(stream.messages)
        # The first message is there long before the file is read: a bounded head, then item by item.
        assert first.role == "user" and first.text.startswith("0 ")
        assert reader.read_bytes < 16_000_000
        seen = 1
        for _message in stream.messages:
            seen += 1
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        reader.close()
    assert seen == count
    assert peak < 40_000_000  # a 200 MB file, read in well under a fifth of its size


def _first_streams(reader: CountingReader) -> Any:
    for stream in open_stream(reader):  # type: ignore[arg-type]
        yield stream
        break


def test_it_streams_jsonl_one_conversation_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "SMALL_INPUT", 200)
    path = tmp_path / "many.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "answer"}]}
            for i in range(50)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = list(iter_conversations(path))
    assert [c.messages[0].text for c in got] == [f"question {i}" for i in range(50)]
    assert {c.source_format for c in got} == {"openai_jsonl"}


@pytest.mark.parametrize("path", SAMPLES, ids=[p.parent.name for p in SAMPLES])
def test_it_reads_big_inputs_the_same_way_as_small_ones(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = read_input(path)
    monkeypatch.setattr(formats, "SMALL_INPUT", 100)  # every input takes the streaming path
    assert read_input(path) == small


def test_it_streams_native_sessions_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    conversations = read_input(SAMPLES[0]) + read_input(SAMPLES[1]) + read_input(SAMPLES[2])
    text, _ = dumps(conversations, "native")
    monkeypatch.setattr(formats, "SMALL_INPUT", 100)
    streams = open_stream(io.BytesIO(text.encode()))
    first = next(streams)
    assert first.conversation.source_format == conversations[0].source_format
    assert first.conversation.messages == []
    assert next(first.messages) == conversations[0].messages[0]
    # The rest of the first session is skipped (and checked) when the next one is asked for.
    second = next(streams)
    assert list(second.messages) == conversations[1].messages
    assert read_input(io.BytesIO(text.encode())) == conversations


def test_it_applies_keys_that_follow_the_messages_once_they_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}],
           "model": "gpt-4o"}
    monkeypatch.setattr(formats, "SMALL_INPUT", 10)
    [stream] = list(open_stream(io.BytesIO(json.dumps(doc).encode())))
    assert stream.conversation.tools is None
    assert [m.text for m in stream.messages] == ["hi"]
    assert stream.conversation.tools == doc["tools"]
    assert stream.conversation.metadata["openai"]["fields"] == {"model": "gpt-4o"}


def test_it_reads_a_big_input_whose_preview_ends_inside_an_escape(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first bytes of a big input tell its format; a cut inside "\\n", "\\\\" or "\\u00e9" is a string cut
    # short, not broken JSON.
    messages = [{"role": "user", "content": 'say "hi"\\ then\nné\t✓'}, {"role": "assistant", "content": "ok\\"}] * 3
    data = json.dumps(messages).encode()  # ASCII escapes: \\u00e9, \\u2713
    expected = read_data(messages)
    monkeypatch.setattr(formats, "SMALL_INPUT", 10)
    start = data.index(b"say", data.index(b"ok"))  # inside the third message: the first two tell the format
    for cut in range(start, start + 40):
        monkeypatch.setattr(formats, "PREVIEW_BYTES", cut)
        assert read_input(io.BytesIO(data)) == expected, data[:cut]


def test_it_reports_broken_json_in_a_big_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "SMALL_INPUT", 10)
    data = b'[{"role": "user", "content": "hi"}, {"role": "user", "content": "oops"' + b" " * 100
    err = error_of(lambda: read_input(io.BytesIO(data)))
    assert err.place == "input" and err.detail.startswith("invalid JSON")


# --- sources ---------------------------------------------------------------------------------------------------

def test_it_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BytesIO(SAMPLES[4].read_bytes())

    monkeypatch.setattr(sys, "stdin", Stdin)
    [conv] = read_input("-")
    assert len(conv.messages) == 10


def test_it_says_when_a_file_is_missing(tmp_path: Path) -> None:
    err = error_of(lambda: read_input(tmp_path / "nope.json"))
    assert err.place.endswith("nope.json") and "No such file" in err.detail


def test_it_reads_a_file_that_holds_several_conversations() -> None:
    convs = read_input(SAMPLES[4]) * 3
    for fmt in ("openai", "anthropic", "autogen", "langchain", "agentscope", "openai_responses", "openmanus", "native"):
        text, report = dumps(convs, fmt)
        assert report.conversations == 3
        assert len(read_input(io.BytesIO(text.encode()), fmt)) == 3
        if fmt != "openmanus":  # three OpenManus lists of one kind are read as openai unless named
            assert len(read_input(io.BytesIO(text.encode()))) == 3


# --- errors that name the place --------------------------------------------------------------------------------

def test_it_names_line_and_column_of_malformed_json() -> None:
    err = error_of(lambda: read_input(io.BytesIO(b'{"messages": [\n  {"role": "user",, "content": "x"}\n]}')))
    assert err.place == "line 2 column 19"
    assert str(err) == "line 2 column 19: invalid JSON: Expecting property name enclosed in double quotes"


def test_it_names_the_line_of_a_broken_jsonl_row() -> None:
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    bad_shape = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]})
    lines = [good] * 6 + [bad_shape]
    err = error_of(lambda: read_input(io.BytesIO("\n".join(lines).encode()), "openai_jsonl"))
    assert str(err) == "line 7: messages[1].role: expected one of system, developer, user, assistant, tool, got 'robot'"
    lines = [good] * 2 + ['{"messages": [}']
    err = error_of(lambda: read_input(io.BytesIO("\n".join(lines).encode())))
    assert err.place == "line 3" and "invalid JSON" in err.detail


@pytest.mark.parametrize(("data", "place", "detail"), [
    ({"messages": "hello"}, "messages", "expected an array, got a string"),
    ([{"role": "user", "content": 3}], "messages[0].content",
     "expected a string or an array of content parts, got a number"),
    ([{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}],
     "messages[0].tool_calls[0].function.arguments", "expected a string (the arguments as JSON text), got null"),
    ([{"role": "tool", "content": "x"}], "messages[0]", "a tool message needs the tool_call_id of the call it answers"),
    ([{"role": "user", "content": "x", "tool_calls": []}, {"role": "user", "content": [1]}], "messages[1].content[0]",
     "expected an object, got a number"),
])
def test_it_names_the_place_of_wrong_shapes(data: Any, place: str, detail: str) -> None:
    err = error_of(lambda: read_data(data, "openai"))
    assert (err.place, err.detail) == (place, detail)


@pytest.mark.parametrize(
    ("fmt", "data", "expected"),
    [
        (
            "anthropic",
            {"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            "messages[0].content[0].tool_use_id: expected a string, got null",
        ),
        (
            "anthropic",
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}]}
                ]
            },
            "messages[0].content[0].input: expected an object, got a string",
        ),
        (
            "autogen",
            {"messages": [{"type": "FunctionExecutionResultMessage", "content": [{"content": "x", "call_id": 3}]}]},
            "messages[0].content[0].call_id: expected a string, got a number",
        ),
        (
            "autogen",
            {"messages": [{"type": "Robot"}]},
            "messages[0].type: expected one of SystemMessage, UserMessage, AssistantMessage, "
            "FunctionExecutionResultMessage, got 'Robot'",
        ),
        (
            "langchain",
            [{"type": "ai", "data": {"content": "x", "tool_calls": [{"name": "f", "args": "{}", "id": "c"}]}}],
            "messages[0].data.tool_calls[0].args: expected an object, got a string",
        ),
        (
            "agentscope",
            {"content": [[{"id": "a", "name": "u", "role": "user", "content": "x", "timestamp": 3}, []]]},
            "content[0][0].timestamp: expected a string, got a number",
        ),
        (
            "openai_responses",
            {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]},
            "input[0].arguments: expected a string (the arguments as JSON text), got an object",
        ),
        (
            "native",
            {"format": "memoryviz", "version": 4, "sessions": []},
            "version: version 4 is not supported; this memoryviz reads versions 1, 2 and 3",
        ),
        (
            "native",
            {
                "format": "memoryviz",
                "version": 2,
                "sessions": [
                    {"messages": [{"role": "user", "content": "x"}], "annotations": [{"seq": 1, "comment": "?"}]}
                ],
            },
            "sessions[0].annotations[0].seq: no message #1; the session has 1 (null: the whole session)",
        ),
        (
            "native",
            {"format": "memoryviz", "version": 2, "sessions": [{"messages": [], "annotations": [{"seq": 0}]}]},
            "sessions[0].annotations[0]: an annotation needs a label or a comment",
        ),
        (
            "native",
            {"format": "memoryviz", "version": 1, "sessions": [{"messages": [{"role": "user", "bogus": 1}]}]},
            "sessions[0].messages[0].bogus: Extra inputs are not permitted",
        ),
    ],
)
def test_it_names_the_place_in_every_format(fmt: str, data: Any, expected: str) -> None:
    assert str(error_of(lambda: read_data(data, fmt))) == expected


def test_it_refuses_binary_garbage_clearly() -> None:
    err = error_of(lambda: read_input(io.BytesIO(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd")))
    assert err.place == "input" and err.detail.startswith("not UTF-8 text")


def test_it_refuses_empty_input() -> None:
    assert error_of(lambda: read_input(io.BytesIO(b"  \n"))).detail.startswith("empty input")


def test_it_refuses_absurdly_deep_nesting() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert "nested too deeply" in error_of(lambda: read_input(io.BytesIO(deep.encode()))).detail
    content = {"type": "text", "text": "x"}
    for _ in range(300):
        content = {"type": "wrapper", "inner": content}
    err = error_of(lambda: read_input(io.BytesIO(json.dumps([{"role": "user", "content": [content]}]).encode())))
    assert "nested too deeply" in err.detail


def test_it_reads_duplicate_ids_and_results_without_calls() -> None:
    """Broken chains are lint's business, not read errors: they read, so that they can be inspected."""
    data = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "a result whose call is missing"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ]
    [conv] = read_data(data)
    assert len(conv.messages) == 5
    for fmt in formats.FORMATS:
        if fmt != "openai_jsonl":
            dumps([conv], fmt)


# --- detection -------------------------------------------------------------------------------------------------

def test_it_lists_the_candidates_when_a_document_is_ambiguous() -> None:
    doc = {"messages": [{"role": "user", "content": "hi"}],
           "content": [[{"id": "a", "name": "user", "role": "user", "content": "hi", "timestamp": None}, []]]}
    err = error_of(lambda: detect_format(doc))
    assert str(err) == "input: ambiguous format: it reads as openai or agentscope; name the format"
    assert read_data(doc, "agentscope")[0].source_format == "agentscope"


def test_it_says_what_it_saw_when_the_format_is_unknown() -> None:
    err = error_of(lambda: read_input(io.BytesIO(b'{"hello": "world"}')))
    assert "unknown format: an object with keys hello" in err.detail and err.detail.endswith("; name the format")
    assert err.choose_format and "--format" not in err.detail  # each interface says where the format is named


def test_it_reads_the_format_the_user_names() -> None:
    [conv] = read_input(SAMPLES[4], "openmanus")  # the openai sample, named as OpenManus
    assert conv.source_format == "openmanus"
    err = error_of(lambda: read_input(SAMPLES[4], "nonsense"))
    # Any format memoryviz reads: the memory formats' message lists are conversations too.
    assert str(err).startswith("format: unknown format 'nonsense'; valid: agentscope, agentscope_session, anthropic")


def test_it_tells_openmanus_from_openai_only_when_clear() -> None:
    manus = json.loads((SAMPLES_DIR / "openmanus/travel.json").read_text())
    assert detect_format(manus) == "openmanus"
    manus[1]["content"] = None  # OpenManus leaves None keys out: this is an OpenAI list with names on results
    assert detect_format(manus) == "openai"
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"


def test_it_pairs_autogen_results_with_empty_call_ids_by_position() -> None:
    doc = {"messages": [
        {"content": "q", "source": "user", "type": "UserMessage"},
        {"content": [{"id": "", "arguments": "{}", "name": "f"}, {"id": "", "arguments": "{\"a\": 1}", "name": "g"}],
         "thought": None, "source": "a", "type": "AssistantMessage"},
        {"content": [{"content": "r1", "name": "f", "call_id": "", "is_error": False},
                     {"content": "r2", "name": "g", "call_id": "", "is_error": False}],
         "type": "FunctionExecutionResultMessage"},
    ]}
    [conv] = read_data(doc)
    calls = [c.id for c in conv.messages[1].tool_calls]
    assert len(set(calls)) == 2 and all(calls)
    assert [m.tool_call_id for m in conv.messages[2:]] == calls
    assert json.loads(dumps([conv], "autogen")[0]) == doc


def test_it_asks_for_the_format_when_a_big_input_starts_with_a_message_too_big_to_judge(
        monkeypatch: pytest.MonkeyPatch) -> None:
    doc = [{"type": "human", "data": {"content": "x" * 3_000_000, "type": "human"}},
           {"type": "ai", "data": {"content": "y", "type": "ai"}}]
    data = json.dumps(doc).encode()
    monkeypatch.setattr(formats, "SMALL_INPUT", 2_000_000)
    err = error_of(lambda: read_input(io.BytesIO(data)))
    assert "cannot tell the format" in err.detail and err.detail.endswith("; name the format") and err.choose_format
    assert [m.role for m in read_input(io.BytesIO(data), "langchain")[0].messages] == ["user", "assistant"]


def test_it_keeps_an_agentscope_timestamp_it_cannot_read() -> None:
    doc = {"_compressed_summary": "", "content": [
        [{"id": "a", "name": "user", "role": "user", "content": "x", "metadata": {}, "timestamp": "yesterday"}, []]]}
    [conv] = read_data(doc)
    assert conv.messages[0].created_at is None
    assert json.loads(dumps([conv], "agentscope")[0]) == doc


def test_it_streams_an_array_of_documents_one_conversation_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conversations = read_input(SAMPLES_DIR / "anthropic/travel.json") * 2000
    path = tmp_path / "many.json"
    path.write_text(dumps(conversations, "anthropic")[0])
    monkeypatch.setattr(formats, "SMALL_INPUT", 100_000)
    reader = CountingReader(path)
    try:
        streams = open_stream(reader)  # type: ignore[arg-type]
        first = next(streams)
        assert len(list(first.messages)) == 10
        assert reader.read_bytes < path.stat().st_size / 2
        assert 1 + sum(1 for _ in streams) == 2000
    finally:
        reader.close()


@pytest.mark.parametrize("shift", range(3))
def test_it_previews_a_big_input_cut_inside_a_character(shift: int, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = [{"role": "user", "content": "x" * 60}, {"role": "assistant", "content": "€" * 28}]
    data = json.dumps(doc, ensure_ascii=False).encode()
    monkeypatch.setattr(formats, "SMALL_INPUT", 10)
    monkeypatch.setattr(formats, "PREVIEW_BYTES", data.index("€".encode()) + 1 + shift)  # inside a 3-byte "€"
    [conv] = read_input(io.BytesIO(data))
    assert conv.messages[1].text == "€" * 28


# --- what cannot be kept is refused, with its place ------------------------------------------------------------

def _streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "SMALL_INPUT", 64)  # every input takes the streaming path


def test_it_names_the_place_of_a_number_too_long_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "n": ' + "7" * 5000 + "}]")
    err = error_of(lambda: read_input(io.BytesIO(data.encode())))
    assert str(err) == "[1].n: a whole number of 5,000 digits; numbers of more than 4,300 digits are not read"
    line = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    long_line = '{"messages": [{"role": "user", "content": "hi", "n": -' + "7" * 4400 + "}]}"
    err = error_of(lambda: read_input(io.BytesIO(f"{line}\n{long_line}\n".encode()), name="rows.jsonl"))
    assert (
        str(err)
        == "line 2, messages[0].n: a whole number of 4,400 digits; numbers of more than 4,300 digits are not read"
    )
    _streamed(monkeypatch)
    err = error_of(lambda: read_input(io.BytesIO(data.encode()), "openai"))
    assert str(err).startswith("[1].n: a whole number beyond 64 bits")


def test_it_names_the_place_of_a_lone_surrogate(monkeypatch: pytest.MonkeyPatch) -> None:
    fine = '[{"role": "user", "content": "smile \\ud83d\\ude00, a backslash and u: \\\\ud800"}]'
    [conv] = read_input(io.BytesIO(fine.encode()))
    assert conv.messages[0].content == "smile \U0001F600, a backslash and u: \\ud800"
    broken = '[{"role": "user", "content": "ok"},\n {"role": "user", "content": "half \\ud83d of a smile"}]'
    err = error_of(lambda: read_input(io.BytesIO(broken.encode())))
    assert str(err) == ("[1].content: \\ud83d is half of a UTF-16 surrogate pair (a lone surrogate), not a character; "
                        "nothing can store it")
    err = error_of(lambda: read_input(io.BytesIO(b'[{"role": "user", "content": "x", "\\udc00": 1}]')))
    assert err.place == "[0].\\udc00 (a key)"
    _streamed(monkeypatch)
    err = error_of(lambda: read_input(io.BytesIO(broken.encode()), "openai"))
    assert err.place == "byte 72" and err.detail.startswith("\\ud83d is half of a UTF-16 surrogate pair")
    [again] = read_input(io.BytesIO(fine.encode()), "openai")
    assert again.messages[0].content == conv.messages[0].content


def test_it_refuses_utf32_and_reads_utf16_without_a_byte_order_mark() -> None:
    doc = [{"role": "user", "content": "héllo"}]
    for encoding in ("utf-32", "utf-32-le", "utf-32-be"):
        err = error_of(partial(read_input, io.BytesIO(json.dumps(doc).encode(encoding))))
        assert str(err) == "input: UTF-32 text; JSON is UTF-8 (or UTF-16): save the file as UTF-8"
    for encoding in ("utf-16", "utf-16-le", "utf-16-be"):
        [conv] = read_input(io.BytesIO(json.dumps(doc, ensure_ascii=False).encode(encoding)))
        assert conv.messages[0].content == "héllo"


def test_it_refuses_what_cannot_be_kept_on_the_command_line_with_exit_2(tmp_path: Path, db: Any) -> None:
    from django.core.management import call_command

    cases = {"surrogate.json": b'[{"role": "user", "content": "a\\ud800b"}]',
             "number.json": b'[{"role": "user", "content": "a", "n": ' + b"9" * 4301 + b"}]",
             "utf32.json": json.dumps([{"role": "user", "content": "a"}]).encode("utf-32")}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        for command in ("lint", "import_history"):
            err = io.StringIO()
            with pytest.raises(SystemExit) as exit_info:
                call_command(command, str(path), stdout=io.StringIO(), stderr=err)
            assert exit_info.value.code == 2, (command, name)
            text = err.getvalue()
            assert "Traceback" not in text and "internal error" not in text, text
            assert ("[0]." in text) or ("UTF-32" in text), text


# --- long strings: linear time, bounded memory ------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agents.memory.formats.json_input import Events, LiftedStrings  # noqa: E402

_TEXT = st.text(alphabet=st.sampled_from(['"', "\\", "a", "é", "\U0001F600", "\n", "u", "d", "8", " ", "/"]),
                max_size=60)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | _TEXT,  # within what ijson reads (64 bits)
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_TEXT, children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(doc=_JSON, ascii_only=st.booleans(), chunk=st.integers(1, 40), long_string=st.integers(0, 30))
def test_it_reads_every_string_exactly_whatever_is_lifted_and_wherever_chunks_end(
    doc: Any, ascii_only: bool, chunk: int, long_string: int
) -> None:
    data = json.dumps(doc, ensure_ascii=ascii_only).encode()
    lifted = LiftedStrings(io.BytesIO(data), long_string=long_string, chunk=chunk)
    events = Events(io.BufferedReader(lifted, 16), lifted.values)  # type: ignore[arg-type]
    first = next(events)
    assert events.value(first[1], first[2]) == doc
    assert lifted.values == {}  # every stand-in was put back


def test_it_hands_the_parser_a_short_stand_in_for_a_long_string() -> None:
    content = "Ω" * 3_000_000 + '"quoted" \\ and \U0001F600'
    data = json.dumps([{"role": "user", "content": content}], ensure_ascii=False).encode()
    lifted = LiftedStrings(io.BytesIO(data))
    given_to_parser = sum(len(b) for b in iter(lambda: lifted.read(1 << 16), b""))
    assert given_to_parser < 200  # the 6 MB string went round the parser
    [value] = lifted.values.values()
    assert value == content


def test_it_reads_a_single_huge_string_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    size = 24 * 1024 * 1024
    data = b'[{"role": "user", "content": "' + b"x" * size + b'"}]'
    _streamed(monkeypatch)
    tracemalloc.start()
    try:
        [conv] = read_input(io.BytesIO(data), "openai")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(conv.messages[0].content) == size
    assert peak < 2.5 * size  # the string's bytes and its text at once, never more copies


def test_it_reports_a_big_input_that_ends_inside_a_long_string(monkeypatch: pytest.MonkeyPatch) -> None:
    _streamed(monkeypatch)
    data = b'[{"role": "user", "content": "' + b"x" * 3_000_000
    err = error_of(lambda: read_input(io.BytesIO(data), "openai"))
    assert "invalid JSON" in err.detail
