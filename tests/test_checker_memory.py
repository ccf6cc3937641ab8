"""ProtocolChecker's bounded memory: same violations as before, a fraction of the memory per call.

The checker keeps, for every call id of a history, only what its later reporting needs (a packed int once the
call is answered) and frees each exchange once it is closed and has nothing left to report. Two proofs:

- its output equals that of the previous implementation (kept below, verbatim but renamed, as the oracle) on
  generated lists full of late results, duplicates, reused ids, orphans and results before their calls, under
  both provider profiles, after every message fed (``finish`` may be called mid-stream and feeding go on);
- a long valid tool loop of 200,000 messages stays under a tracemalloc bound the previous one exceeds.
"""
from __future__ import annotations

import gc
import tracemalloc
from typing import Iterable, Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory.chain import (
    _ANTHROPIC_ORPHAN,
    _ANTHROPIC_UNANSWERED,
    _OPENAI_ORPHAN,
    _OPENAI_UNANSWERED,
    PROVIDERS,
    WARNING_KINDS,
    ProtocolChecker,
    Violation,
    _arguments_problem,
    _has_content,
    find_violations,
)
from agents.memory.schema import SYSTEM_ROLES, FunctionCall, Message, ToolCall
from tests.strategies_messages import valid_conversations

PROPS = settings(max_examples=150, deadline=None)


# --------------------------------------------------------------------------------------------------------------
# The previous implementation (agents/memory/chain.py before the change that bounded its memory), kept as the
# oracle: it held a _Call object per call ever seen, each referencing its _Exchange. Do not "fix" it: it defines
# the expected output.

class _OldCall:
    __slots__ = ("id", "name", "index", "exchange", "answered_at")

    def __init__(self, call_id: str, name: str, index: int, exchange: _OldExchange) -> None:
        self.id = call_id
        self.name = name
        self.index = index
        self.exchange = exchange
        self.answered_at: int | None = None


class _OldExchange:
    __slots__ = ("index", "calls", "answered", "closed_by", "closed_by_role", "turn")

    def __init__(self, index: int, turn: int) -> None:
        self.index = index
        self.calls: list[_OldCall] = []
        self.answered = 0
        self.closed_by: int | None = None
        self.closed_by_role = ""
        self.turn = turn  # Anthropic messages index of the assistant turn (for its error text)


class PreviousProtocolChecker:
    """Checks a message list one message at a time, so a streaming import can check as it reads.

    ``feed`` each message in order, then ``finish`` for all violations sorted by index. ``finish`` does not
    change the state: feeding more and finishing again is allowed.
    """

    def __init__(self, provider: str = "openai", *, pending_severity: str = "warning") -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}; valid: {', '.join(PROVIDERS)}")
        if pending_severity not in ("warning", "error"):
            raise ValueError(f"pending_severity must be 'warning' or 'error', not {pending_severity!r}")
        self.provider = provider
        # A list about to be sent (a trimmed view) cannot be "in the middle of a tool loop": callers that know
        # that make a trailing unanswered call an error, keeping its kind.
        self._pending_severity = pending_severity
        self._anthropic = provider == "anthropic"
        self._next = 0
        self._seen_dialogue = False  # a user or assistant message seen: the leading part is over
        self._seen_non_system = False  # the leading run of system messages is over
        self._open: _OldExchange | None = None
        self._calls: dict[str, _OldCall] = {}  # the latest call for each id
        self._incomplete: list[_OldExchange] = []  # closed exchanges that had unanswered calls when closed
        self._found: list[tuple[int, int, Violation]] = []  # (index, sequence, violation)
        self._orphans: list[tuple[int, int, str]] = []  # (index, position in _found, id): reworded at finish
        # Anthropic turns: the role of the last turn (tool results are user turns) and how many turns so far.
        self._turn_role: str | None = None
        self._turn_count = 0

    # -- reporting -------------------------------------------------------------------------------------------

    def _add(self, kind: str, index: int, call_id: str | None, message: str, provider_error: str = "") -> None:
        severity = "warning" if kind in WARNING_KINDS else "error"
        self._found.append((index, len(self._found), Violation(kind, index, call_id, message, severity, provider_error)))

    def _orphan_error(self, call_id: str) -> str:
        return _ANTHROPIC_ORPHAN.format(id=call_id) if self._anthropic else _OPENAI_ORPHAN

    def _unanswered_error(self, call: _OldCall) -> str:
        if self._anthropic:
            return _ANTHROPIC_UNANSWERED.format(turn=call.exchange.turn, id=call.id)
        return _OPENAI_UNANSWERED.format(id=call.id)

    # -- feeding ---------------------------------------------------------------------------------------------

    def feed(self, message: Message) -> None:
        i = self._next
        self._next += 1
        role = message.role
        if role in SYSTEM_ROLES:
            self._feed_system(i, role)
        elif role == "tool":
            self._feed_tool(i, message.tool_call_id or "")
        else:
            self._feed_dialogue(i, message)

    def feed_many(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.feed(message)

    def _close(self, i: int, role: str) -> None:
        ex = self._open
        if ex is not None:
            if ex.answered < len(ex.calls):
                ex.closed_by = i
                ex.closed_by_role = role
                self._incomplete.append(ex)
            self._open = None

    def _feed_system(self, i: int, role: str) -> None:
        if self._anthropic:
            # The system prompt leaves the list: it neither interrupts an exchange nor makes a turn.
            if self._seen_non_system:
                self._add(
                    "system_not_first", i, None,
                    f"Message {i} is a {role} message after the conversation has started; Anthropic takes the "
                    "system prompt only as the top-level system parameter, so it cannot stay here.",
                )
            return
        if self._seen_non_system:
            self._close(i, role)

    def _feed_tool(self, i: int, call_id: str) -> None:
        self._seen_non_system = True
        if self._anthropic and self._turn_role != "user":
            self._turn_role = "user"
            self._turn_count += 1
        if not self._seen_dialogue:
            self._orphans.append((i, len(self._found), call_id))
            self._add(
                "leading_tool_result", i, call_id,
                f"Message {i} is a tool result (call {call_id}) at the start of the list, with no assistant call "
                "before it; trimming probably cut its call away.",
                self._orphan_error(call_id),
            )
            return
        call = self._calls.get(call_id)
        if call is None:
            self._orphans.append((i, len(self._found), call_id))
            self._add(
                "orphan_tool_result", i, call_id,
                f"Message {i} is the result of call {call_id}, but no assistant message before it made that call.",
                self._orphan_error(call_id),
            )
        elif call.answered_at is not None:
            self._add(
                "duplicate_tool_call_id", i, call_id,
                f"Message {i} is a second result for call {call_id} ({call.name}); its first result is message "
                f"{call.answered_at}.",
            )
        else:
            call.answered_at = i
            call.exchange.answered += 1
            if call.exchange is not self._open:
                ex = call.exchange
                assert ex.closed_by is not None  # an exchange that is not open was closed by a message
                self._add(
                    "interrupted_exchange", ex.closed_by, call_id,
                    f"Message {ex.closed_by} ({ex.closed_by_role}) comes between call {call_id} ({call.name}) at message {call.index} and "
                    f"its result at message {i}; results must follow their call directly.",
                    self._unanswered_error(call),
                )

    def _feed_dialogue(self, i: int, message: Message) -> None:
        role = message.role
        previous_open = self._open
        # Anthropic: an assistant message right after a tool_use turn, before any result, joins that turn, so the
        # results may still come in the next (user) turn.
        merge = (
            self._anthropic and role == "assistant" and self._turn_role == "assistant"
            and previous_open is not None and previous_open.answered == 0
        )
        if not merge:
            self._close(i, role)
        self._seen_dialogue = True
        self._seen_non_system = True
        if self._anthropic:
            if self._turn_role == role:
                # After an assistant whose calls went unanswered, the unanswered kinds already say it.
                calls_unanswered = previous_open is not None and previous_open.answered < len(previous_open.calls)
                if merge or not calls_unanswered:
                    made_of = "tool results" if role == "user" and previous_open is not None else f"a {role} message"
                    self._add(
                        "consecutive_same_role", i, None,
                        f"Message {i} ({role}) makes a second {role} turn in a row after {made_of}, once tool "
                        "results are mapped to user turns; Anthropic combines them into one turn.",
                    )
            else:
                self._turn_role = role
                self._turn_count += 1
        if role != "assistant":
            return
        if not message.tool_calls:
            if not _has_content(message.content):
                self._add(
                    "empty_assistant", i, None,
                    f"Message {i} is an assistant message with neither content nor tool calls.",
                )
            return
        ex = previous_open if merge and previous_open is not None else _OldExchange(i, self._turn_count - 1)
        in_this_message: set[str] = set()
        for tc in message.tool_calls:
            call_id, name = tc.id, tc.function.name
            problem = _arguments_problem(tc.function.arguments)
            if problem is not None:
                self._add(
                    "invalid_tool_arguments", i, call_id,
                    f"Call {call_id} ({name}) at message {i} has arguments that are not a JSON object: {problem}.",
                )
            if call_id in in_this_message:
                self._add(
                    "duplicate_tool_call_id", i, call_id,
                    f"Call id {call_id} ({name}) is used twice in message {i}.",
                )
                continue
            in_this_message.add(call_id)
            earlier = self._calls.get(call_id)
            if earlier is not None:
                self._add(
                    "duplicate_tool_call_id", i, call_id,
                    f"Call id {call_id} ({name}) at message {i} was already used by a call at message "
                    f"{earlier.index} ({earlier.name}).",
                )
            call = _OldCall(call_id, name, i, ex)
            ex.calls.append(call)
            self._calls[call_id] = call
        self._open = ex

    # -- results ---------------------------------------------------------------------------------------------

    def finish(self) -> list[Violation]:
        found = list(self._found)
        seq = len(found)
        # A result that came before its call: say so rather than "no call".
        for index, position, call_id in self._orphans:
            call = self._calls.get(call_id)
            if call is not None and call.index > index:
                old = found[position][2]
                text = (
                    f"Message {index} is the result of call {call_id} ({call.name}), but it comes before its call "
                    f"at message {call.index}; a result must follow its call."
                )
                found[position] = (index, position, Violation(old.kind, old.index, old.tool_call_id, text,
                                                              old.severity, old.provider_error))
        for ex in self._incomplete:
            answered = sum(1 for c in ex.calls if c.answered_at is not None)
            for call in ex.calls:
                if call.answered_at is not None:
                    continue
                if len(ex.calls) > 1 and answered:
                    kind = "partial_parallel_results"
                    text = (
                        f"Call {call.id} ({call.name}) at message {call.index} never gets a result, though other "
                        f"calls of the same message do ({answered} of {len(ex.calls)} answered)."
                    )
                else:
                    kind = "unanswered_tool_call"
                    text = (
                        f"Call {call.id} ({call.name}) at message {call.index} never gets a result, and the "
                        f"conversation goes on at message {ex.closed_by}."
                    )
                found.append((call.index, seq, Violation(kind, call.index, call.id, text, "error",
                                                       self._unanswered_error(call))))
                seq += 1
        ex = self._open
        if ex is not None:
            for call in ex.calls:
                if call.answered_at is None:
                    text = (
                        f"Call {call.id} ({call.name}) at message {call.index} is still waiting for its result at "
                        "the end of the list: fine while the agent runs the tool, an error if sent as is."
                    )
                    found.append((call.index, seq, Violation("pending_tool_call", call.index, call.id, text, self._pending_severity,
                                                           self._unanswered_error(call))))
                    seq += 1
        found.sort(key=lambda item: (item[0], item[1]))
        return [v for _, _, v in found]


# --------------------------------------------------------------------------------------------------------------
# Generated lists with every defect the table of calls is consulted for

_IDS = ["a", "b", "c", "d", "e"]  # a tiny pool: ids are reused, answered twice, answered before their call
_NAMES = ["get_weather", "search", "read_file"]


@st.composite
def tangled_messages(draw: st.DrawFn) -> list[Message]:
    """Any roles in any order, call ids drawn from a pool of five, some arguments broken, some answers empty."""
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 40))):
        role = draw(st.sampled_from(["system", "developer", "user", "assistant", "assistant", "tool", "tool", "tool"]))
        if role == "tool":
            messages.append(Message(role="tool", tool_call_id=draw(st.sampled_from(_IDS)), content="r"))
        elif role == "assistant":
            calls = [
                ToolCall(id=draw(st.sampled_from(_IDS)), function=FunctionCall(
                    name=draw(st.sampled_from(_NAMES)), arguments=draw(st.sampled_from(["{}", '{"x": 1}', "[1]"]))))
                for _ in range(draw(st.integers(0, 3)))
            ]
            content = draw(st.sampled_from([None, "", "answer"]))
            messages.append(Message(role="assistant", content=content, tool_calls=calls))
        else:
            messages.append(Message(role=role, content="text"))
    return messages


@st.composite
def damaged_conversations(draw: st.DrawFn) -> list[Message]:
    """A valid tool loop, then results moved later (late or orphan), repeated, dropped, and ids reused."""
    messages = list(draw(valid_conversations(pending=None, max_turns=5, max_calls=3)))
    for _ in range(draw(st.integers(1, 6))):
        if not messages:
            break
        action = draw(st.sampled_from(["move", "repeat", "drop", "reuse", "interrupt"]))
        at = draw(st.integers(0, len(messages) - 1))
        if action == "move":  # a result after a later message: late, or before its call if moved backwards
            moved = messages.pop(at)
            messages.insert(draw(st.integers(0, len(messages))), moved)
        elif action == "repeat":
            messages.insert(draw(st.integers(at, len(messages))), messages[at])
        elif action == "drop":
            del messages[at]
        elif action == "reuse" and messages[at].tool_calls:  # a later assistant makes a call with an old id
            old = messages[at].tool_calls[0]
            again = Message(role="assistant", tool_calls=[ToolCall(id=old.id, function=FunctionCall(
                name="again", arguments="{}"))])
            messages.insert(draw(st.integers(at, len(messages))), again)
        elif action == "interrupt":
            messages.insert(at, Message(role=draw(st.sampled_from(["user", "system"])), content="wait"))
    return messages


def _same_as_before_after_every_message(messages: list[Message], provider: str, pending_severity: str) -> None:
    new = ProtocolChecker(provider, pending_severity=pending_severity)
    old = PreviousProtocolChecker(provider, pending_severity=pending_severity)
    for i, message in enumerate(messages):
        new.feed(message)
        old.feed(message)
        # finish leaves the state alone, so the streaming import may check after any message and go on.
        assert new.finish() == old.finish(), f"after message {i}"
    assert new.finish() == old.finish()


@PROPS
@given(tangled_messages(), st.sampled_from(PROVIDERS), st.sampled_from(["warning", "error"]))
def test_it_reports_exactly_what_the_previous_checker_did_on_tangled_lists(
    messages: list[Message], provider: str, pending_severity: str
) -> None:
    _same_as_before_after_every_message(messages, provider, pending_severity)


@PROPS
@given(damaged_conversations(), st.sampled_from(PROVIDERS))
def test_it_reports_exactly_what_the_previous_checker_did_on_damaged_tool_loops(
    messages: list[Message], provider: str
) -> None:
    _same_as_before_after_every_message(messages, provider, "warning")
    # The whole-list path is the same checker with the cyclic collector paused.
    old = PreviousProtocolChecker(provider)
    for message in messages:
        old.feed(message)
    assert find_violations(messages, provider) == old.finish()


def _call(call_id: str, name: str = "get_weather") -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))])


def _result(call_id: str) -> Message:
    return Message(role="tool", tool_call_id=call_id, content="ok")


def test_it_keeps_the_facts_of_an_answered_call_beyond_the_packed_range_of_indices() -> None:
    # Four billion messages cannot be fed in a test; starting both checkers' counters there reaches the fallback.
    messages = [Message(role="user", content="q"), _call("x", "far"), _result("x"), _result("x"), _call("x")]
    new, old = ProtocolChecker(), PreviousProtocolChecker()
    new._next = old._next = 2**33
    for message in messages:
        new.feed(message)
        old.feed(message)
    found = new.finish()
    assert found == old.finish()
    assert [v.kind for v in found] == ["duplicate_tool_call_id", "duplicate_tool_call_id", "pending_tool_call"]
    assert f"its first result is message {2**33 + 2}" in found[0].message


def test_it_keeps_the_name_of_an_answered_call_beyond_the_packed_range_of_names() -> None:
    # More distinct function names than the packed int has room for: the last ones are kept as tuples.
    messages = [Message(role="user", content="q")]
    for k in range(70_000):
        messages += [_call(f"c{k}", f"tool_{k}"), _result(f"c{k}")]
    messages += [_result("c69999"), _call("c69998", "again"), _result("c0")]
    found = find_violations(messages)
    old = PreviousProtocolChecker()
    for message in messages:
        old.feed(message)
    assert found == old.finish()
    assert [v.message for v in found][:2] == [
        "Message 140001 is a second result for call c69999 (tool_69999); its first result is message 140000.",
        "Call id c69998 (again) at message 140002 was already used by a call at message 139997 (tool_69998).",
    ]


# --------------------------------------------------------------------------------------------------------------
# Memory


def _long_tool_loop(n: int) -> Iterator[Message]:
    """n messages of a valid agent loop (user, assistant with one or two calls, their results, an answer),
    made one at a time so that only what the checker keeps stays alive."""
    yield Message(role="system", content="You are a travel assistant.")
    sent, k = 1, 0
    while True:
        k += 1
        calls = [ToolCall(id=f"call_{k}_{j}", function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}'))
                 for j in range(1 + k % 2)]
        block = [Message(role="user", content=f"Question {k}"), Message(role="assistant", tool_calls=calls)]
        block += [Message(role="tool", tool_call_id=c.id, content="18C") for c in calls]
        block.append(Message(role="assistant", content=f"Answer {k}"))
        for message in block:
            if sent >= n:
                return
            yield message
            sent += 1


def _peak_bytes(checker: ProtocolChecker | PreviousProtocolChecker, n: int) -> tuple[int, list[Violation]]:
    gc.collect()
    tracemalloc.start()
    try:
        for message in _long_tool_loop(n):
            checker.feed(message)
        found = checker.finish()
        return tracemalloc.get_traced_memory()[1], found
    finally:
        tracemalloc.stop()


# 200,000 messages hold 66,667 calls. Measured (Python 3.11): the previous checker peaks at 21.8 MB (about 330
# bytes per call), this one at 8.1 MB (about 120: the id string itself, its dict slot and one packed int; every id
# must be remembered, as any later reuse is a violation). The bound leaves 50 % of margin above the new figure
# and is far below the old one.
_BOUND = 12_000_000


def test_it_keeps_a_long_valid_tool_loop_under_a_memory_bound_the_previous_checker_exceeds() -> None:
    peak, found = _peak_bytes(ProtocolChecker(), 200_000)
    assert found == []
    assert peak < _BOUND, f"peak {peak / 1e6:.1f} MB"
    old_peak, old_found = _peak_bytes(PreviousProtocolChecker(), 200_000)
    assert old_found == []
    assert old_peak > _BOUND, f"the bound no longer tells the two apart: old peak {old_peak / 1e6:.1f} MB"
