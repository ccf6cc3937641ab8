"""The lab's parameter form for the 2026 strategies' shapes: an optional number, tool names, true/false or tool
names, a number or all."""
from __future__ import annotations

import re

from agents.lab.forms import _kind
from agents.memory.trimming import get_strategy
from tests.reference.canonical import CANONICAL_DICTS


def kind(strategy: str, param: str) -> str:
    return _kind(get_strategy(strategy).params_model.model_fields[param])[0]


def test_it_gives_each_new_parameter_shape_its_input() -> None:
    assert kind("langchain_summarization", "trigger_tokens") == "optional_number"
    assert kind("maf_summarization", "max_summary_input_tokens") == "optional_number"
    assert kind("langchain_clear_tool_uses", "exclude_tools") == "names"
    assert kind("openai_tool_output_trimmer", "trimmable_tools") == "names"
    assert kind("anthropic_clear_tool_uses", "clear_tool_inputs") == "bool_or_names"
    assert kind("anthropic_clear_thinking", "keep_thinking_turns") == "number_or_all"
    assert kind("langchain_summarization", "summarize_with") == "choices"


def test_it_shows_and_reads_the_new_shapes(alice_client, make_session):
    session = make_session(CANONICAL_DICTS)
    url = f"/sessions/{session.pk}/lab/"
    html = alice_client.get(url, {"strategy": "anthropic_clear_tool_uses", "trigger_tool_uses": "1",
                                  "keep_tool_uses": "0", "clear_tool_inputs": "get_weather",
                                  "exclude_tools": "search_hotels"}).content.decode()
    assert 'name="exclude_tools" value="search_hotels" placeholder="none"' in html
    assert 'name="clear_tool_inputs" value="get_weather" list="choices-clear_tool_inputs"' in html
    assert (
        '<datalist id="choices-clear_tool_inputs"><option value="true"></option><option value="false"></option>' in html
    )
    assert 'inputmode="numeric" id="p-trigger_tool_uses" name="trigger_tool_uses" value="1"' in html
    # The calls of get_weather lost their inputs, search_hotels' result stays: marked edited beside the originals.
    edited = sorted(int(i) for i in re.findall(r'id="lm-(\d+)" class="msg role-\w+ lab-msg lab-edited', html))
    assert edited == [2, 3, 4]
    html = alice_client.get(
        url, {"strategy": "anthropic_clear_thinking", "keep_thinking_turns": "all"}
    ).content.decode()
    assert 'name="keep_thinking_turns" value="all" list="choices-keep_thinking_turns" inputmode="numeric"' in html
    html = alice_client.get(url, {"strategy": "anthropic_clear_thinking", "keep_thinking_turns": "0"}).content.decode()
    assert re.search(r'id="error-keep_thinking_turns" role="alert">[^<]*\S', html)  # named next to its field
    html = alice_client.get(url, {"strategy": "langchain_clear_tool_uses", "exclude_tools": "a, b"}).content.decode()
    assert 'name="exclude_tools" value="a, b"' in html
