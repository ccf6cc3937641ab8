"""The 2026 strategies through every way in: the API's strategy list and trim endpoint, trimmed exports, the
lab's report across sessions."""
from __future__ import annotations

import io
import json

from django.core.management import call_command

from agents import models
from agents.lab import reports
from agents.memory.trimming import STRATEGIES, spec_from_text
from agents.memory.trimming.summaries import placeholder_text
from tests.conversations import TRAVEL

NEW = ("langchain_summarization", "langchain_clear_tool_uses", "openai_session_limit", "openai_tool_output_trimmer",
       "anthropic_clear_tool_uses", "anthropic_clear_thinking", "strands_sliding_window", "strands_summarizing",
       "maf_sliding_window", "maf_truncation", "maf_selective_tool_calls", "maf_tool_result_compaction",
       "maf_summarization", "adk_compaction")


def test_it_lists_the_2026_strategies_with_their_parameter_schemas(alice_client):
    strategies = {s["name"]: s for s in alice_client.get("/api/strategies/").json()["strategies"]}
    assert set(NEW) <= set(strategies)
    assert list(STRATEGIES)[-len(NEW):] == list(NEW)  # after DESIGN.md's table, grouped by framework
    inputs = strategies["anthropic_clear_tool_uses"]["params"]["properties"]["clear_tool_inputs"]
    assert {o.get("type") for o in inputs["anyOf"]} == {"boolean", "array"}
    turns = strategies["anthropic_clear_thinking"]["params"]["properties"]["keep_thinking_turns"]
    assert {"integer", "string"} <= {o.get("type") for o in turns["anyOf"]}
    assert strategies["langchain_summarization"]["params"]["properties"]["summary_tokens"]["default"] == 500


def test_it_trims_a_stored_session_through_the_api_with_summaries_and_edits(alice_client, make_session):
    session = make_session(TRAVEL)
    url = f"/api/sessions/{session.pk}/trim/"
    data = alice_client.get(url, {"strategy": "langchain_summarization", "trigger_messages": "2",
                                  "keep_messages": "2", "counter": "messages", "detail": "full"}).json()
    [summary] = data["inserted"]
    assert summary["message"]["role"] == "user" and summary["summarizes"]
    assert summary["message"]["content"].endswith(placeholder_text(len(summary["summarizes"])))
    assert all(row["status"] == "dropped" for row in data["explanation"] if row["index"] in summary["summarizes"])
    # Repeated or comma-separated tool names, and true/false or a list.
    data = alice_client.get(url, {"strategy": "anthropic_clear_tool_uses", "trigger_input_tokens": "0",
                                  "keep_tool_uses": "0", "clear_tool_inputs": "get_weather",
                                  "exclude_tools": ["a", "b"]}).json()
    assert data["params"]["clear_tool_inputs"] == ["get_weather"] and data["params"]["exclude_tools"] == ["a", "b"]
    assert data["edited"] and all(e["reason"] for e in data["edited"])
    bad = alice_client.get(url, {"strategy": "maf_truncation", "max_n": "3", "compact_to": "4"})
    assert bad.status_code == 400 and "compact_to must be less than or equal to max_n" in bad.json()["error"]


def test_it_exports_a_session_as_a_2026_strategy_sends_it(agent: models.Agent, make_session) -> None:
    make_session(TRAVEL)
    out, err = io.StringIO(), io.StringIO()
    call_command("export_history", "--format", "openai", "--strategy", "langchain_clear_tool_uses",
                 "--set", "trigger=0", "--set", "keep=0", stdout=out, stderr=err)
    exported = json.loads(out.getvalue())
    messages = exported["messages"] if isinstance(exported, dict) else exported
    tools = [m for m in messages if m["role"] == "tool"]
    assert tools and all(m["content"] == "[cleared]" for m in tools)


def test_it_reports_the_2026_strategies_across_sessions(alice_client, make_session):
    for _ in range(3):
        make_session(TRAVEL)
    specs = [spec_from_text(text) for text in (
        "adk_compaction:compaction_interval=1", "strands_summarizing:preserve_recent_messages=2",
        "maf_tool_result_compaction", "openai_session_limit:limit=3")]
    report = reports.trimming_report(models.Session.objects.all(), specs)
    assert all(not cell.error for row in report.rows for cell in row.cells)
    assert [s.sessions for s in report.summaries] == [3, 3, 3, 3]
    page = alice_client.get("/lab/report/", {"s": [spec.text for spec in specs]})
    assert page.status_code == 200
    assert all(spec.text in page.content.decode() for spec in specs)
