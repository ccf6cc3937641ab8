"""Trimming strategies: what an agent really sends after its framework trims the message list.

Each strategy reproduces one framework's algorithm exactly, known bugs included (reference/trimming.md), and
explains every input message: kept or dropped, and why. A result is a view: the input is never changed.

Speed: strategies read per-message token counts (the stored ones when the caller passes ``token_counts``) and
never recount text, except for the few messages a strategy creates or changes (placeholders, stripped thoughts)
and LlamaIndex's own content-only count. Every strategy is O(n) or O(n log n) (bench/bench_trimming.py). A window
reads the roles of what it keeps, not of the whole list, where it can (tool_runs), and ``trim`` makes the trimmed
list but leaves every other part of the result (indices, reasons, token figures, notes, violations) to be made
when first read (runs.later_fields).

One module per framework registers its strategies; ``registry`` holds what they share and ``trim``; ``spec`` reads
a strategy and its parameters, however an interface writes them, into the ``StrategySpec`` that ``trim`` runs.
"""
from __future__ import annotations

from agents.memory.trimming import (  # noqa: F401  (importing a module registers its strategies)
    adk,
    agents_cookbook,
    agents_sdk,
    anthropic_context,
    autogen,
    langchain,
    langchain_middleware,
    llamaindex,
    maf,
    openmanus,
    safe_budget,
    seed_article,
    semantic_kernel,
    strands,
)
from agents.memory.trimming.llamaindex import LlamaIndexContentCount
from agents.memory.trimming.registry import (
    MEMORY_AFTER_TURN,
    MEMORY_CARRIED,
    MEMORY_IDEMPOTENT,
    MEMORY_KINDS,
    MEMORY_VIEW,
    STRATEGIES,
    Dropped,
    Edited,
    Inserted,
    ParamProblem,
    Strategy,
    StrategyError,
    StrategyParams,
    TrimResult,
    get_strategy,
    trim,
)
from agents.memory.trimming.spec import (
    FALSE_WORDS,
    TRUE_WORDS,
    StrategySpec,
    spec_from_pairs,
    spec_from_query,
    spec_from_text,
    split_pairs,
    strategy_spec,
)

# DESIGN.md's table order, which forms and error messages list.
_ORDER = (
    "unbounded", "openmanus_window", "buffered", "head_and_tail", "token_limited", "langchain_last",
    "langchain_first", "safe_window", "last_turns", "sk_truncation", "llamaindex_buffer", "safe_token_budget",
    "clear_non_system", "strip_thoughts",
    # The context managers of 2026's frameworks (reference/trimming-2026.md), grouped by framework.
    "langchain_summarization", "langchain_clear_tool_uses",
    "openai_session_limit", "openai_tool_output_trimmer",
    "anthropic_clear_tool_uses", "anthropic_clear_thinking",
    "strands_sliding_window", "strands_summarizing",
    "maf_sliding_window", "maf_truncation", "maf_selective_tool_calls", "maf_tool_result_compaction",
    "maf_summarization",
    "adk_compaction",
)
_registered = dict(STRATEGIES)
STRATEGIES.clear()
STRATEGIES.update({name: _registered.pop(name) for name in _ORDER})
STRATEGIES.update(_registered)  # any added later keep their own order

__all__ = [
    "FALSE_WORDS", "MEMORY_AFTER_TURN", "MEMORY_CARRIED", "MEMORY_IDEMPOTENT", "MEMORY_KINDS", "MEMORY_VIEW",
    "STRATEGIES", "TRUE_WORDS", "Dropped", "Edited", "Inserted", "LlamaIndexContentCount", "ParamProblem", "Strategy",
    "StrategyError", "StrategyParams", "StrategySpec", "TrimResult", "get_strategy", "spec_from_pairs",
    "spec_from_query", "spec_from_text", "split_pairs", "strategy_spec", "trim",
]
