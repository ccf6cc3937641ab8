"""``manage.py trim FILE --strategy NAME --counter messages|approx`` gives the library's result for every 2026
strategy that has a library (random conversations written to files, read back by the command, compared with the
reference oracle), and explains every drop, edit and summary."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from django.core.management import call_command
from hypothesis import strategies as st

from agents.memory.schema import Message
from tests.reference.conversations import conversations_unique_calls
from tests.reference.harness import case, collect, mismatch, oracle, result_from_command_json

WITH_LIBRARY = {
    "langchain_summarization": {"trigger_messages": 4, "keep_messages": 3, "trim_tokens_to_summarize": 30},
    "langchain_clear_tool_uses": {"trigger": 5, "keep": 1, "clear_tool_inputs": True},
    "openai_session_limit": {"limit": 6},
    "openai_tool_output_trimmer": {"recent_turns": 1, "max_output_chars": 20, "preview_chars": 5},
    "strands_sliding_window": {"window_size": 4},
    "strands_summarizing": {"preserve_recent_messages": 2},
    "maf_sliding_window": {"keep_last_groups": 3},
    "maf_truncation": {"max_n": 6, "compact_to": 3},
    "maf_selective_tool_calls": {},
    "maf_tool_result_compaction": {},
    "maf_summarization": {"target_count": 2, "threshold": 1},
    "adk_compaction": {"compaction_interval": 1, "overlap_size": 1},
}


def run_trim(path: Path, name: str, params: dict[str, Any], counter: str) -> dict[str, Any]:
    out = io.StringIO()
    sets = [f"{k}={json.dumps(v)}" for k, v in params.items()]
    call_command("trim", str(path), "--strategy", name, *[a for s in sets for a in ("--set", s)],
                 "--counter", counter, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_it_gives_the_librarys_result_from_the_command_line(tmp_path: Path) -> None:
    drawn = collect(st.tuples(conversations_unique_calls.filter(lambda m: len(m) > 0),
                              st.sampled_from(sorted(WITH_LIBRARY)), st.sampled_from(["messages", "approx"])), 120)
    inputs: list[tuple[list[Message], dict[str, Any], Path]] = []
    for k, (messages, name, counter) in enumerate(drawn):
        path = tmp_path / f"c{k}.json"
        path.write_text(json.dumps([m.to_openai() for m in messages]))
        inputs.append((messages, case(messages, name, WITH_LIBRARY[name], counter), path))
    answers = oracle([c for _, c, _ in inputs])
    problems = []
    for (messages, c, path), answer in zip(inputs, answers, strict=False):
        data = run_trim(path, c["strategy"], c["params"], c["counter"])
        # Every input message explained: kept, edited or dropped, and why.
        assert [row["index"] for row in data["explanation"]] == list(range(len(messages)))
        assert all(row["reason"] for row in data["explanation"])
        assert {e["index"] for e in data["edited"]} == {
            r["index"] for r in data["explanation"] if r["status"] == "edited"
        }
        assert all(x["reason"] for x in data["inserted"])
        problem = mismatch(messages, c, answer, result_from_command_json(data, messages))
        if problem:
            problems.append(problem)
    assert not problems, f"{len(problems)} of {len(inputs)} differ; the first:\n{problems[0]}"
