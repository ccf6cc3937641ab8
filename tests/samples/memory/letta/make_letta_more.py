"""More Letta agent files for the letta_af reader's tests, from a clone of letta-ai/agent-file.

pip install nothing (see make_letta.py: no runnable Letta package). Run:
    git clone https://github.com/letta-ai/agent-file /path/to/agent-file
    python make_letta_more.py /path/to/agent-file
Files made:
  memgpt_agent_with_convo.v1.af   verbatim, memgpt_agent/memgpt_agent_with_convo.af at commit 11b649a (Letta 0.6.47,
                                  older schema, all 91 messages: 6 system messages, core_memory_replace/append calls)
  customer_service.af             verbatim, customer_service_agent/customer_service.af at commit 2362a20 (= HEAD):
                                  current schema, JSON-encoded twice (the file is a JSON string)
  ezra.trimmed.af                 agents/@letta-ai/ezra/ezra.af at commit 6df36f7 (current schema; the agent Ezra and
                                  its sleep-time agent, which share blocks and edit them with memory_replace and
                                  memory_insert), made smaller: only 6 of the 7 blocks the sleep-time agent edits
                                  are kept (in blocks, in block_ids, and in the system messages, whose other
                                  rendered block sections are cut out whole), Ezra keeps its system message only,
                                  the sleep-time agent its system message and its last 44 messages (from its first
                                  memory_replace on), tools only those the kept messages call and the memory tools,
                                  and strings over 300 chars are cut, except in the system messages, the block
                                  values and the memory tool calls' arguments
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The blocks the sleep-time agent edits, but response_guidelines (13 KB, rendered twice): its edit stays in the
# messages, an edit of a block the file does not hold.
EDITED = ["api_integration_patterns", "common_issues", "documentation_links", "observations", "subconscious_channel",
          "/ezra/discord/users/295589927016726528"]
MEMORY_TOOLS = {"memory_replace", "memory_insert", "memory_rethink", "memory_finish_edits"}


def show(repo, rev, path):
    return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def cut(obj, n):
    if isinstance(obj, str) and len(obj) > n:
        return obj[:n] + f"... [cut by make_letta_more.py, {len(obj)} chars in all]"
    if isinstance(obj, list):
        return [cut(x, n) for x in obj]
    if isinstance(obj, dict):
        return {k: cut(v, n) for k, v in obj.items()}
    return obj


def without_sections(text, drop):
    """The system message without the rendered sections of the blocks in ``drop`` (each cut out whole, with the
    blank line that follows it)."""
    for label in drop:
        start = text.find(f"<{label}>\n<description>\n")
        if start < 0:
            continue
        end_tag = f"\n</value>\n</{label}>\n"
        end = text.find(end_tag, start)
        assert end > 0, label
        end += len(end_tag)
        if text.startswith("\n", end):
            end += 1
        text = text[:start] + text[end:]
    return text


def ezra(repo):
    data = json.loads(show(repo, "6df36f7", "agents/@letta-ai/ezra/ezra.af"))
    keep_ids = {b["id"] for b in data["blocks"] if b["label"] in EDITED}
    drop_labels = [b["label"] for b in data["blocks"] if b["id"] not in keep_ids]
    data["blocks"] = [b for b in data["blocks"] if b["id"] in keep_ids]
    main, sleeptime = data["agents"]
    main["messages"] = main["messages"][:1]
    # The sleep-time agent: its system message, then from its first memory_replace (2025-11-20 19:06) on.
    sleeptime["messages"] = sleeptime["messages"][:1] + sleeptime["messages"][32:]
    for agent in (main, sleeptime):
        agent["block_ids"] = [i for i in agent["block_ids"] if i in keep_ids]
        kept = {m["id"] for m in agent["messages"]}
        agent["in_context_message_ids"] = [i for i in agent["in_context_message_ids"] if i in kept]
        for m in agent["messages"]:
            if m["role"] == "system":
                for part in m["content"]:
                    part["text"] = without_sections(part["text"], drop_labels)
                continue
            calls = m.get("tool_calls") or []
            m.update(cut({k: v for k, v in m.items() if k not in ("id", "tool_calls")}, 300))
            for call in calls:
                if call["function"]["name"] not in MEMORY_TOOLS:
                    call["function"]["arguments"] = cut(call["function"]["arguments"], 300)
    called = {c["function"]["name"] for a in data["agents"] for m in a["messages"] for c in m.get("tool_calls") or []}
    data["tools"] = cut([t for t in data["tools"] if t["name"] in called | MEMORY_TOOLS], 300)
    for agent in data["agents"]:
        kept = {t["id"] for t in data["tools"]}
        agent["tool_ids"] = [i for i in agent["tool_ids"] if i in kept]
    return data


def main(repo):
    with open(os.path.join(HERE, "memgpt_agent_with_convo.v1.af"), "w", encoding="utf-8") as f:
        f.write(show(repo, "11b649a", "memgpt_agent/memgpt_agent_with_convo.af"))
    with open(os.path.join(HERE, "customer_service.af"), "w", encoding="utf-8") as f:
        f.write(show(repo, "2362a20", "customer_service_agent/customer_service.af"))
    with open(os.path.join(HERE, "ezra.trimmed.af"), "w", encoding="utf-8") as f:
        json.dump(ezra(repo), f, ensure_ascii=False)  # one line, like the originals
    for n in sorted(os.listdir(HERE)):
        print(n, os.path.getsize(os.path.join(HERE, n)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
