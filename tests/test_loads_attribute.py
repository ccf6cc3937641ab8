"""``otlp.loads_attribute``: the JSON texts spans carry read by orjson, with exactly what ``json.loads`` gives (the
same value, of the same types, in the same order) or the same error, on every text."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory import otlp
from agents.memory.otlp import loads_attribute


def outcome(load, text: str) -> tuple[str, str]:
    try:
        return "value", repr(load(text))  # repr: 1 and 1.0, nan, key order and types all tell
    except json.JSONDecodeError as exc:
        return "error", f"{exc.msg} at {exc.pos}"
    except RecursionError:
        return "error", "recursion"


def same(text: str) -> None:
    got, expected = outcome(loads_attribute, text), outcome(json.loads, text)
    assert got == expected, text[:200]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 40), max_value=10 ** 40) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans())
def test_every_json_value_reads_as_json_loads_reads_it(value, ascii_only):
    same(json.dumps(value, ensure_ascii=ascii_only))


@settings(max_examples=300, deadline=None)
@given(json_values, st.data())
def test_every_broken_text_fails_or_reads_as_json_loads_does(value, data):
    text = json.dumps(value, ensure_ascii=False)
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    cut = data.draw(st.integers(min_value=0, max_value=3))
    insert = data.draw(st.sampled_from(["", ",", "]", "}", '"', "\\", "\x00", "\x1f", "\ud800", "NaN", "-", "e9",
                                        "\ufeff", " ", "1" * 25, "\\ud800", "\\udc00\\ud800", "0x1"]))
    same(text[:at] + insert + text[at + cut:])


EDGES = [
    "NaN", "-Infinity", "[Infinity]", "1e400", "-1e400", "1e-400", '"\\ud800"', '"\\udfff x"', '"\\ud83d\\ude00"',
    "123456789012345678901234567890", "-12345678901234567890", "18446744073709551615", "18446744073709551616",
    "9223372036854775808", "-9223372036854775809", "1.00000000000000000000001", "0." + "0" * 30 + "1",
    '{"a": 1, "a": 2}', '{"b": 1, "a": 2}', "\ufeff[1]", " [1] ", "[1,]", "[01]", "-0", "-0.0", '"a\\u0000b"',
    '"tab\there"', "", " ", "[" * 5000 + "]" * 5000, '{"x": "\U0001f600"}', "true false", "[1] x",
]


@pytest.mark.parametrize("text", EDGES)
def test_the_edges_read_as_json_loads_reads_them(text):
    same(text)


def test_long_numbers_inside_texts_stay_exact():
    for _ in range(200):
        n = random.Random(_).randrange(10 ** 18, 10 ** 60)
        text = json.dumps({"records": [{"id": "m", "score": 0.5, "metadata": {"n": n, "m": -n}}]})
        assert loads_attribute(text) == json.loads(text)
        assert loads_attribute(text)["records"][0]["metadata"]["n"] == n


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["1", "0", "9", "a", " ", "-", ".", "é", "\u0663", "😀", "\ud800", "12345678901"]),
                max_size=40).map("".join))
def test_the_native_check_of_long_numbers_agrees_with_python(text):
    from agents.memory import _otlp_wire  # built by `make test`; a missing module fails here
    assert _otlp_wire.has_long_number(text) is otlp._has_long_number(text)
    assert otlp.has_long_number is _otlp_wire.has_long_number  # the receiver uses the native one


def test_the_python_check_reads_as_json_loads_does(monkeypatch):
    """Where no compiler built the native module, the same values and errors."""
    monkeypatch.setattr(otlp, "has_long_number", otlp._has_long_number)
    for text in EDGES:
        same(text)
