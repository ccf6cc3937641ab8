"""The strategies as the picker names them: grouped by framework, with human names and versions."""
from __future__ import annotations

from agents.memory.trimming import STRATEGIES
from agents.memory.trimming.catalog import MEMORYVIZ, strategies_by_framework, strategy_entry

# DESIGN.md's tables, and the 2026 strategies registered so far: each has a name a person reads.
CATALOGUED = [
    "unbounded", "openmanus_window", "buffered", "head_and_tail", "token_limited", "langchain_last",
    "langchain_first", "safe_window", "last_turns", "sk_truncation", "llamaindex_buffer", "safe_token_budget",
    "clear_non_system", "strip_thoughts", "langchain_summarization", "langchain_clear_tool_uses",
    "openai_session_limit", "openai_tool_output_trimmer", "anthropic_clear_tool_uses", "anthropic_clear_thinking",
    "strands_sliding_window", "strands_summarizing", "maf_sliding_window", "maf_truncation",
    "maf_selective_tool_calls", "maf_tool_result_compaction", "maf_summarization", "adk_compaction",
]


def test_it_names_every_strategy_of_the_design_tables_by_framework_and_version() -> None:
    for name in CATALOGUED:
        entry = strategy_entry(name)
        assert entry.framework and entry.label and entry.label != name.replace("_", " "), name
    assert strategy_entry("buffered").title == "AutoGen: buffered context"
    assert strategy_entry("buffered").version == "autogen-core 0.7.5"
    assert strategy_entry("sk_truncation").version == "semantic-kernel 1.45 (Python)"


def test_it_groups_every_registered_strategy_once_memoryviz_first() -> None:
    groups = strategies_by_framework()
    assert groups[0][0] == MEMORYVIZ and [e.name for e in groups[0][1]] == ["safe_token_budget"]
    listed = [e.name for _, entries in groups for e in entries]
    assert sorted(listed) == sorted(STRATEGIES)
    autogen = dict(groups)["AutoGen"]
    assert [e.name for e in autogen] == ["unbounded", "buffered", "head_and_tail", "token_limited", "strip_thoughts"]


def test_it_still_lists_a_strategy_registered_without_an_entry_under_its_framework() -> None:
    from agents.memory.trimming.registry import NoParams, keep_all, register

    register("strands_demo_window", NoParams, "Keeps everything.", "Strands SlidingWindowConversationManager")(
        lambda view, p: keep_all(view, "kept")
    )
    try:
        entry = strategy_entry("strands_demo_window")
        assert (entry.framework, entry.label, entry.version) == ("Strands", "strands demo window", "")
        assert any(f == "Strands" for f, _ in strategies_by_framework())
    finally:
        del STRATEGIES["strands_demo_window"]


def test_the_help_that_users_read_names_what_a_strategy_is_and_agrees_with_itself() -> None:
    # "the seed article's" meant nothing to a user: safe_window and clear_non_system are a hand-written agent loop's.
    for name in ("safe_window", "clear_non_system"):
        strategy = STRATEGIES[name]
        assert "hand-written agent loop" in strategy.emulates, strategy.emulates
        assert strategy_entry(name).framework == "Hand-written agent loop"
    for strategy in STRATEGIES.values():
        assert "seed" not in f"{strategy.emulates} {strategy.description} {strategy_entry(strategy).title}".lower()
    # safe_token_budget budgets everything sent: its pin_system help must not say the pinned messages are not counted.
    fields = STRATEGIES["safe_token_budget"].params_model.model_fields
    pin, budget = fields["pin_system"].description, fields["max_tokens"].description
    assert "pinned system messages" in budget and "included" in budget
    assert "does not count" not in pin and "count against max_tokens" in pin
