"""The summary prompts memoryviz sends to the endpoint are the frameworks' own, word for word."""
from __future__ import annotations

from agents.memory.trimming.adk import ADK_PROMPT, ADK_TOOL_CAP
from agents.memory.trimming.langchain_middleware import LANGCHAIN_SUMMARY_PROMPT
from agents.memory.trimming.maf import MAF_SUMMARY_PROMPT
from agents.memory.trimming.strands import STRANDS_SUMMARY_PROMPT
from tests.reference.harness import oracle


def test_it_sends_the_frameworks_own_summary_prompts() -> None:
    [answer] = oracle([{"strategy": "prompts", "messages": []}])
    library = answer["prompts"]
    assert library["langchain"] == LANGCHAIN_SUMMARY_PROMPT
    assert library["strands"] == STRANDS_SUMMARY_PROMPT
    assert library["maf"] == MAF_SUMMARY_PROMPT
    assert (library["adk"], library["adk_tool_cap"]) == (ADK_PROMPT, ADK_TOOL_CAP)
