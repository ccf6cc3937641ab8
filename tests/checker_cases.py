"""Fixed message lists full of protocol defects, for the checker's golden outputs (tests/golden/checker.json).

Each case is drawn from its own seed with ``random.Random`` (the same lists on every machine and Python version):

- ``tangled``: any roles in any order, call ids from a pool of five (reused, answered twice, answered before their
  call), some arguments broken, some answers empty;
- ``damaged``: a valid tool loop, then results moved later or earlier, repeated, dropped, ids reused by a later
  call, and messages inserted between a call and its results.

``python -m tests.checker_cases`` writes the golden file from the checker as it is: run it only when a change of
the checker's output is intended, and say so in the commit.
"""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from agents.memory.schema import FunctionCall, Message, ToolCall

GOLDEN = Path(__file__).resolve().parent / "golden" / "checker.json"
CASES = 160  # seeds 0..159: even seeds tangled, odd seeds damaged
_IDS = ["a", "b", "c", "d", "e"]
_NAMES = ["get_weather", "search", "read_file"]


def _call(call_id: str, name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


def tangled(rng: random.Random) -> list[Message]:
    messages: list[Message] = []
    for _ in range(rng.randint(0, 40)):
        role = rng.choice(["system", "developer", "user", "assistant", "assistant", "tool", "tool", "tool"])
        if role == "tool":
            messages.append(Message(role="tool", tool_call_id=rng.choice(_IDS), content="r"))
        elif role == "assistant":
            calls = [_call(rng.choice(_IDS), rng.choice(_NAMES), rng.choice(["{}", '{"x": 1}', "[1]"]))
                     for _ in range(rng.randint(0, 3))]
            messages.append(Message(role="assistant", content=rng.choice([None, "", "answer"]), tool_calls=calls))
        else:
            messages.append(Message(role=role, content="text"))
    return messages


def _valid_loop(rng: random.Random) -> list[Message]:
    messages: list[Message] = []
    if rng.random() < 0.5:
        messages.append(Message(role="system", content="You are a travel assistant."))
    k = 0
    for turn in range(rng.randint(0, 5)):
        messages.append(Message(role="user", content=f"question {turn}"))
        for _ in range(rng.randint(0, 2)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                k += 1
                calls.append(_call(f"call_{k}", rng.choice(_NAMES)))
            messages.append(Message(role="assistant", tool_calls=calls))
            order = list(calls)
            rng.shuffle(order)
            messages += [Message(role="tool", tool_call_id=c.id, content="ok") for c in order]
        messages.append(Message(role="assistant", content=f"answer {turn}"))
    return messages


def damaged(rng: random.Random) -> list[Message]:
    messages = _valid_loop(rng)
    for _ in range(rng.randint(1, 6)):
        if not messages:
            break
        action = rng.choice(["move", "repeat", "drop", "reuse", "interrupt"])
        at = rng.randint(0, len(messages) - 1)
        if action == "move":  # a result after a later message: late, or before its call if moved backwards
            moved = messages.pop(at)
            messages.insert(rng.randint(0, len(messages)), moved)
        elif action == "repeat":
            messages.insert(rng.randint(at, len(messages)), messages[at])
        elif action == "drop":
            del messages[at]
        elif action == "reuse" and messages[at].tool_calls:  # a later assistant makes a call with an old id
            again = Message(role="assistant", tool_calls=[_call(messages[at].tool_calls[0].id, "again")])
            messages.insert(rng.randint(at, len(messages)), again)
        elif action == "interrupt":
            messages.insert(at, Message(role=rng.choice(["user", "system"]), content="wait"))
    return messages


def case(seed: int) -> list[Message]:
    rng = random.Random(seed)
    return tangled(rng) if seed % 2 == 0 else damaged(rng)


def checks(seed: int) -> list[tuple[str, str]]:
    """(provider, pending_severity) each case is checked under: both providers, and the severity the seed picks."""
    return [("openai", "warning" if seed % 4 < 2 else "error"), ("anthropic", "warning")]


def key(seed: int, provider: str, pending_severity: str) -> str:
    return f"{seed}/{provider}/{pending_severity}"


def summary(violations: list[dict[str, Any]]) -> dict[str, Any]:
    """What the golden file keeps of one check: each violation as ``kind index call_id`` (a readable diff), and
    a digest of the whole of every violation (its sentence and provider error included)."""
    whole = json.dumps(violations, ensure_ascii=False, sort_keys=True).encode()
    return {"found": [f"{v['kind']} {v['index']} {v['tool_call_id']}" for v in violations],
            "sha256": hashlib.sha256(whole).hexdigest()}


def outputs() -> dict[str, dict[str, Any]]:
    from agents.memory.chain import find_violations

    out = {}
    for seed in range(CASES):
        for provider, severity in checks(seed):
            found = find_violations(case(seed), provider, pending_severity=severity)
            out[key(seed, provider, severity)] = summary([v.to_dict() for v in found])
    return out


def write(golden: dict[str, dict[str, Any]]) -> None:
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(golden.items())]  # one check a line
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    write(outputs())
    print(f"{GOLDEN}: {GOLDEN.stat().st_size:,} bytes")
