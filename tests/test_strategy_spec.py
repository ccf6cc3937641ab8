"""The one reader of a strategy and its parameters: a query string, key=value pairs, a spec's text, Python values."""
from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict

from agents.memory.trimming import (
    FALSE_WORDS,
    STRATEGIES,
    TRUE_WORDS,
    StrategyError,
    spec_from_pairs,
    spec_from_query,
    spec_from_text,
    split_pairs,
    strategy_spec,
    trim,
)
from agents.memory.trimming.langchain import LangChainLastParams


def query(text: str) -> QueryDict:
    return QueryDict(text)


def test_it_reads_the_same_spec_however_it_is_written() -> None:
    expected = strategy_spec("langchain_last", {"max_tokens": 60, "start_on": ["human", "ai"], "include_system": True})
    written = [
        spec_from_query("langchain_last", query("max_tokens=60&start_on=human&start_on=ai&include_system=on")),
        spec_from_query("langchain_last", query('max_tokens=60&start_on=["human","ai"]&include_system=true')),
        spec_from_pairs("langchain_last", ["max_tokens=60", "start_on=human,ai", "include_system=yes"]),
        spec_from_pairs("langchain_last", ["max_tokens=60", "start_on=human", "start_on=ai", "include_system=1"]),
        spec_from_text('langchain_last:max_tokens=60, start_on=["human", "ai"], include_system=true'),
        spec_from_text(expected.text),
    ]
    assert all(spec == expected for spec in written)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_it_writes_a_spec_that_reads_back_to_itself(name: str) -> None:
    defaults = strategy_spec(name)
    assert defaults.text == name and spec_from_text(name) == defaults
    changed = {}
    for field, info in defaults.strategy.params_model.model_fields.items():
        if info.annotation is bool:
            changed[field] = not info.default
        elif info.annotation is int:
            changed[field] = (info.default or 0) + 7
    spec = strategy_spec(name, changed)
    assert spec_from_text(spec.text) == spec
    assert spec_from_query(name, QueryDict(spec.lab_query)) == spec


@pytest.mark.parametrize(
    ("word", "value"), [*((w, True) for w in sorted(TRUE_WORDS)), *((w, False) for w in sorted(FALSE_WORDS))]
)
def test_it_reads_one_set_of_yes_no_words_everywhere(word: str, value: bool) -> None:
    for spelled in (word, word.upper()):
        assert spec_from_pairs("buffered", [f"pin_system={spelled}"]).params.pin_system is value
        assert spec_from_query("buffered", query(f"pin_system={spelled}")).params.pin_system is value
        assert strategy_spec("buffered", {"pin_system": spelled}).params.pin_system is value


def test_it_refuses_a_yes_no_word_outside_the_set() -> None:
    for word in ("t", "y", "maybe", "2"):
        with pytest.raises(StrategyError, match=f"pin_system={word}: pin_system must be true or false"):
            spec_from_pairs("buffered", [f"pin_system={word}"])


def test_it_takes_the_last_value_of_a_scalar_as_a_checkbox_after_its_hidden_false_sends_it() -> None:
    assert spec_from_query("buffered", query("pin_system=false&pin_system=true")).params.pin_system is True
    assert spec_from_query("buffered", query("pin_system=false")).params.pin_system is False
    assert spec_from_pairs("buffered", ["buffer_size=3", "buffer_size=4"]).params.buffer_size == 4


def test_it_reads_a_blank_value_as_the_default() -> None:
    assert spec_from_query("buffered", query("buffer_size=&pin_system=")) == strategy_spec("buffered")
    assert spec_from_pairs("langchain_last", ["end_on= "]).params.end_on is None


def test_it_reads_only_the_strategy_parameters_of_a_page_query_and_every_key_of_an_api_query() -> None:
    page = query("strategy=buffered&buffer_size=3&params_for=buffered&q=paris")
    assert spec_from_query("buffered", page).params.buffer_size == 3
    with pytest.raises(StrategyError, match="params_for=buffered: unknown parameter 'params_for'"):
        spec_from_query("buffered", page, other_keys={"strategy", "q"})


def test_it_names_each_invalid_parameter_as_written_and_lists_the_valid_ones() -> None:
    with pytest.raises(StrategyError) as err:
        spec_from_pairs("buffered", ["buffer_size=0", "size=3", "garbage"])
    exc = err.value
    assert [(p.param, p.written, p.reason) for p in exc.problems] == [
        ("garbage", "'garbage'", "expected key=value"),
        ("size", "size=3", "unknown parameter 'size'"),
        ("buffer_size", "buffer_size=0", "buffer_size must be greater than 0"),
    ]
    text = str(exc)
    assert text.startswith("invalid parameters for strategy 'buffered': 'garbage': expected key=value; size=3:")
    assert "Valid parameters: pin_system (boolean, default true), buffer_size (integer > 0" in text
    assert "--set" not in text
    # An interface puts its own way of naming a parameter in front of each.
    assert "--set buffer_size=0: buffer_size must be greater than 0" in exc.text(flag="--set ")


def test_it_keeps_the_values_as_read_for_a_form_to_show_again() -> None:
    with pytest.raises(StrategyError) as err:
        spec_from_query("langchain_last", query("max_tokens=many&start_on=human&start_on=ai&include_system=on"))
    assert err.value.given == {"max_tokens": "many", "start_on": ["human", "ai"], "include_system": True}
    assert [p.param for p in err.value.problems] == ["max_tokens"]


def test_it_says_when_parameters_come_without_a_strategy() -> None:
    assert spec_from_pairs(None, []) is None and spec_from_pairs("", [" "]) is None
    with pytest.raises(StrategyError, match="parameters were given without a strategy"):
        spec_from_pairs("", ["buffer_size=3"])
    with pytest.raises(StrategyError, match="unknown strategy 'nope'; valid: unbounded, "):
        spec_from_text("nope:buffer_size=3")


def test_it_splits_pairs_before_each_key_and_keeps_json_values_whole() -> None:
    assert split_pairs(' buffer_size=5,  start_on=["human", "ai"],end_on=ai ') == [
        "buffer_size=5", 'start_on=["human", "ai"]', "end_on=ai"
    ]
    assert split_pairs("") == [] and split_pairs("buffer_size=5") == ["buffer_size=5"]


def test_it_reads_a_long_text_in_linear_time() -> None:
    # A regular expression that looked ahead from every separator took 24 s on 10,000 ", " (issue 9: a 60 KB
    # query took 20 s); quadratic, these 2 MB runs would take hours. Read in one pass, a fraction of a second.
    run = ", " * 1_000_000
    assert split_pairs(f"buffer_size=5{run}pin_system=false") == ["buffer_size=5", "pin_system=false"]
    assert split_pairs(f"buffer_size=5{run}x") == [f"buffer_size=5{run}x"]
    assert spec_from_text(f"buffered:buffer_size=5{run}pin_system=false").params.pin_system is False
    with pytest.raises(StrategyError, match="buffer_size=5, , , "):
        spec_from_query("buffered", QueryDict(f"buffer_size=5{run}x".replace(",", "%2C").replace(" ", "+")))


class _Counted:
    """A compiled pattern that records the work asked of it: where each match starts and how much it read."""

    def __init__(self, pattern: Any) -> None:
        self.pattern, self.starts, self.read = pattern, [], 0

    def finditer(self, text: str) -> Any:
        for found in self.pattern.finditer(text):
            self.starts.append(found.start())
            self.read += found.end() - found.start()
            yield found

    def match(self, text: str, pos: int) -> Any:
        self.starts.append(pos)
        found = self.pattern.match(text, pos)
        self.read += found.end() - pos if found else 1
        return found


def test_it_splits_a_60_kb_query_in_one_pass_counting_its_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 9: a 60 KB params= took 20 s. Counted, not timed: every run of separators is found once, the key after
    # it is tried once, from left to right, and the patterns read each character a bounded number of times.
    from agents.memory.trimming import spec as spec_module

    separators = _Counted(spec_module._SEPARATORS)
    keys = _Counted(spec_module._KEY)
    monkeypatch.setattr(spec_module, "_SEPARATORS", separators)
    monkeypatch.setattr(spec_module, "_KEY", keys)
    text = "buffer_size=5" + ", x" * 12_000 + ", " * 12_000 + ",pin_system=false"
    assert len(text) > 60_000
    pairs = split_pairs(text)
    assert pairs == ["buffer_size=5" + ", x" * 12_000, "pin_system=false"]
    assert len(separators.starts) == 12_001 and separators.read <= len(text)
    assert len(keys.starts) == len(separators.starts)  # one key tried per run of separators
    assert keys.starts == sorted(set(keys.starts))  # never the same place twice, never backwards
    assert keys.read <= len(text)


def test_it_validates_once_and_trim_runs_the_spec_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    validate = LangChainLastParams.model_validate

    def counting(value: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(value)
        return validate(value, *args, **kwargs)

    monkeypatch.setattr(LangChainLastParams, "model_validate", counting)
    spec = spec_from_pairs("langchain_last", ["max_tokens=50"])
    assert len(calls) == 1
    from agents.memory.schema import Message

    for _ in range(3):
        trim([Message(role="user", content="hi")], spec)
    assert len(calls) == 1


def test_it_reads_the_yes_no_words_where_yes_no_is_one_choice_among_others() -> None:
    # anthropic_clear_tool_uses' clear_tool_inputs: true, false, or the names of the tools whose inputs to clear.
    for word, value in (("on", True), ("NO", False), ("yes", True)):
        spec = spec_from_pairs("anthropic_clear_tool_uses", [f"clear_tool_inputs={word}"])
        assert spec.params.clear_tool_inputs is value
    names = spec_from_query("anthropic_clear_tool_uses", query("clear_tool_inputs=search&clear_tool_inputs=read_file"))
    assert names.params.clear_tool_inputs == ["search", "read_file"]


def test_it_names_the_parameters_a_rule_across_them_was_checked_on() -> None:
    with pytest.raises(StrategyError) as err:
        spec_from_pairs("maf_truncation", ["max_n=5", "compact_to=6"])
    assert "max_n=5, compact_to=6: compact_to must be less than or equal to max_n" in str(err.value)


@pytest.mark.parametrize(("text", "says"), [
    ("buffered:buffer_size=0", "buffer_size=0: buffer_size must be greater than 0"),
    ("buffered:buffer_size=abc", "buffer_size=abc: buffer_size must be a whole number"),
    ("buffered:buffer_size=1.5", "buffer_size=1.5: buffer_size must be a whole number"),
    ("langchain_last:max_tokens=-1", "max_tokens=-1: max_tokens must be 0 or more"),
    ("langchain_last:end_on=human,bob", "end_on=human,bob: end_on must be one of 'system', 'human', 'ai' or 'tool'"),
    ("buffered:pin_system=maybe", "pin_system=maybe: pin_system must be true or false"),
])
def test_it_says_what_is_wrong_as_a_sentence_about_the_parameter(text: str, says: str) -> None:
    # Not pydantic's "Input should be a valid integer, unable to parse string as an integer".
    with pytest.raises(StrategyError) as err:
        spec_from_text(text)
    assert says in str(err.value)
    assert "Input should" not in str(err.value) and "unable to parse" not in str(err.value)
