"""How people name the strategies: the framework each follows, a human name, the version it was read from.

The lab's picker groups strategies by framework ("AutoGen: buffered context") and shows, before one is picked,
its description, parameters and the framework version it follows. Stable names (DESIGN.md) stay what URLs, the
API and the commands use; these names are for reading. A strategy registered without an entry here is still
listed, under the framework named first in its ``emulates`` text (tests/test_strategy_catalog.py asks every
strategy of DESIGN.md's tables to have one).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from agents.memory.trimming.registry import STRATEGIES, Strategy

MEMORYVIZ = "memoryviz"
# safe_window and clear_non_system: an agent loop written by hand, without a framework (the article memoryviz grew from
# builds one).
HAND_WRITTEN = "Hand-written agent loop"


@dataclass(frozen=True)
class StrategyEntry:
    name: str  # the stable name
    framework: str
    label: str  # what the strategy is called within its framework, in words
    version: str  # the framework version the emulation follows ("" when it is not a framework's)

    @property
    def title(self) -> str:
        """``AutoGen: buffered context``."""
        return f"{self.framework}: {self.label}"

    @property
    def strategy(self) -> Strategy:
        return STRATEGIES[self.name]

    @property
    def description(self) -> str:
        return self.strategy.description

    def parameters(self) -> list[dict[str, str]]:
        """Each parameter with its default, as the picker lists them before one is picked."""
        out = []
        for row in self.strategy.parameters():
            default = row["default"]
            text = "none" if default is None else (default if isinstance(default, str) else json.dumps(default))
            out.append({"name": row["name"], "default_text": text, "help": row["help"]})
        return out


_ENTRIES: dict[str, tuple[str, str, str]] = {
    "safe_token_budget": (MEMORYVIZ, "safe token budget (recommended)", ""),
    "unbounded": ("AutoGen", "unbounded context", "autogen-core 0.7.5"),
    "buffered": ("AutoGen", "buffered context", "autogen-core 0.7.5"),
    "head_and_tail": ("AutoGen", "head and tail context", "autogen-core 0.7.5"),
    "token_limited": ("AutoGen", "token-limited context", "autogen-core 0.7.5"),
    "strip_thoughts": ("AutoGen", "reasoning-model context (thoughts stripped)", "autogen-core 0.7.5"),
    "langchain_last": ("LangChain", "trim_messages, newest first", "langchain-core 1.8.3"),
    "langchain_first": ("LangChain", "trim_messages, oldest first", "langchain-core 1.8.3"),
    "langchain_summarization": ("LangChain", "summarization middleware", "langchain 1.5.0"),
    "langchain_clear_tool_uses": ("LangChain", "context editing: clear tool uses", "langchain 1.5.0"),
    "llamaindex_buffer": ("LlamaIndex", "chat memory buffer", "llama-index-core 0.14"),
    "last_turns": ("OpenAI Agents SDK", "cookbook trimming session (last turns)", "openai-agents cookbook"),
    "openai_session_limit": ("OpenAI Agents SDK", "session limit", "openai-agents 0.24.0"),
    "openai_tool_output_trimmer": ("OpenAI Agents SDK", "tool output trimmer", "openai-agents 0.24.0"),
    "anthropic_clear_tool_uses": ("Anthropic API", "context editing: clear tool uses", "context-management-2025-06-27"),
    "anthropic_clear_thinking": ("Anthropic API", "context editing: clear thinking", "context-management-2025-06-27"),
    "strands_sliding_window": ("Strands Agents", "sliding window conversation manager", "strands-agents 1.62.0"),
    "strands_summarizing": ("Strands Agents", "summarizing conversation manager", "strands-agents 1.62.0"),
    "maf_sliding_window": ("Microsoft Agent Framework", "sliding window compaction", "agent-framework-core 1.23.0"),
    "maf_truncation": ("Microsoft Agent Framework", "truncation compaction", "agent-framework-core 1.23.0"),
    "maf_selective_tool_calls": ("Microsoft Agent Framework", "selective tool-call compaction",
                                 "agent-framework-core 1.23.0"),
    "maf_tool_result_compaction": ("Microsoft Agent Framework", "tool result compaction",
                                   "agent-framework-core 1.23.0"),
    "maf_summarization": ("Microsoft Agent Framework", "summarization compaction", "agent-framework-core 1.23.0"),
    "adk_compaction": ("Google ADK", "events compaction (sliding window)", "google-adk 2.13.0"),
    "openmanus_window": ("OpenManus", "memory window", "OpenManus snapshot 52a13f2a"),
    "sk_truncation": ("Semantic Kernel", "truncation reducer", "semantic-kernel 1.45 (Python)"),
    "safe_window": (HAND_WRITTEN, "safe window (the loop's _trim)", ""),
    "clear_non_system": (HAND_WRITTEN, "/clear command", ""),
}

# Frameworks in the picker's order: memoryviz's own first, then alphabetical; unknown ones after.
_FRAMEWORK_ORDER = [MEMORYVIZ, "Anthropic API", "AutoGen", "Google ADK", "LangChain", "LlamaIndex",
                    "Microsoft Agent Framework", "OpenAI Agents SDK", "OpenManus", "Semantic Kernel", "Strands Agents",
                    HAND_WRITTEN]


def strategy_entry(strategy: str | Strategy) -> StrategyEntry:
    strat = STRATEGIES[strategy] if isinstance(strategy, str) else strategy
    known = _ENTRIES.get(strat.name)
    if known is not None:
        return StrategyEntry(strat.name, *known)
    # Not catalogued yet: the framework is the first word of what it emulates ("Strands SlidingWindow...").
    framework = strat.emulates.split(" ", 1)[0] if strat.emulates else "Other"
    return StrategyEntry(strat.name, framework, strat.name.replace("_", " "), "")


def strategies_by_framework() -> list[tuple[str, list[StrategyEntry]]]:
    """Every registered strategy, grouped by framework in the picker's order (registry order within a group)."""
    groups: dict[str, list[StrategyEntry]] = {}
    for strat in STRATEGIES.values():
        entry = strategy_entry(strat)
        groups.setdefault(entry.framework, []).append(entry)

    def rank(framework: str) -> tuple[int, str]:
        order = _FRAMEWORK_ORDER.index(framework) if framework in _FRAMEWORK_ORDER else len(_FRAMEWORK_ORDER)
        return order, framework

    return [(framework, groups[framework]) for framework in sorted(groups, key=rank)]
