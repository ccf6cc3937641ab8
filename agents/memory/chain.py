"""The chain a person reads, and the protocol checks a provider applies to it.

Definitions (the words the pages, the trimmer and the checks share):

- **leading run**: the system/developer messages at the very start of the list, before any other message.
- **exchange**: an assistant message with ``tool_calls`` followed by the ``tool`` messages that answer its calls.
  The exchange is *open* from the assistant message until the next non-tool message, which *closes* it. Results
  must arrive while it is open; their order among themselves is free (OpenAI and Anthropic accept any order).
- **block** (``group_blocks``): what a person reads as one unit. ``system``, ``user`` and ``assistant`` blocks
  hold one message; a ``tool_exchange`` block holds the assistant message and every result paired with its calls,
  by id, in call order, including results that come late (``CallResult.late``) or twice; a ``tool_result`` block
  holds a result that no earlier call asked for. Every message is in exactly one block; blocks are ordered by
  their first message, so a late result is shown with its call rather than where it sits.
- **turn** (``group_turns``): a user message and everything up to the next user message. Messages before the
  first user message form a turn of their own (``user_index`` is None), so no message is left out.

Violation kinds (one pass, in order; which kind wins when one defect could be read two ways):

- ``leading_tool_result``: a tool message before any user or assistant message (after the leading run). It wins
  over ``orphan_tool_result``: trimming a window's head is the usual cause and deserves its own name.
- ``orphan_tool_result``: a tool message whose id no earlier call used. If a call with that id comes later the
  sentence says so (a result before its call).
- ``interrupted_exchange``: a non-tool message closes an exchange while some of its calls are unanswered, and
  their results come later. Reported once per late call, at the index of the interrupting message. The late
  result is then *not* also reported as an orphan, and the call is not unanswered.
- ``unanswered_tool_call``: a call that never gets a result although the list goes on after its exchange.
  Reported at the assistant message, once per call.
- ``partial_parallel_results``: as ``unanswered_tool_call``, but in an exchange with several calls of which at
  least one was answered. It replaces ``unanswered_tool_call`` for those calls (never both).
- ``pending_tool_call`` (warning): an unanswered call in the last exchange when nothing but results follows it:
  an agent in the middle of its tool loop looks exactly like that. It is an error only if sent as is, so a caller
  that checks a list about to be sent (a trimmed view) passes ``pending_severity="error"``.
- ``duplicate_tool_call_id``: a call id used by an earlier call (reported at the later assistant message; later
  results pair with the later call, and the earlier call is judged on its own), or a second result for a call
  that already has one (reported at the second result). A repeated id inside one assistant message is reported
  once and counts as one call.
- ``invalid_tool_arguments``: arguments that are not a JSON object string. Decision: an empty or whitespace-only
  string counts as ``{}`` (no arguments): it holds nothing malformed and converts unambiguously to an empty input
  object (what Anthropic's ``tool_use.input`` needs), whereas ``"[1]"``, ``"3"``, ``"null"`` or ``"{oops"`` cannot
  become an object and are reported.
- ``empty_assistant``: an assistant message with no tool calls and no content: None, ``""``, whitespace only,
  or a list of parts that are all empty text.

Provider profiles: ``openai`` (Chat Completions) applies the kinds above. ``anthropic`` maps the list to
Anthropic turns first: system/developer messages leave the list (so they neither close an exchange nor make a
turn), tool results become user turns and consecutive results merge into one, and an assistant message right
after a tool_use message (before any result) joins its turn, so the results still come "in the next message"
(its calls join the exchange). A user message between a call and its results still interrupts: merged into the
results' turn it would put text before tool_result blocks, which Anthropic refuses. It adds:

- ``system_not_first``: a system/developer message anywhere but the leading run (Anthropic takes the system prompt
  only as the top-level ``system`` parameter).
- ``consecutive_same_role`` (warning): a user or assistant message that makes a second user (or assistant) turn
  in a row after mapping; index of the second. Anthropic documents that it combines such turns (reference §1), so
  this is a warning. Tool messages never get it (where a result may stand is the exchange kinds' business), nor
  does a user message after the results of an exchange that still misses some (reported as partial or
  interrupted already).

Provider errors predicted (``Violation.provider_error``, texts from reference/trimming.md §1): orphan and
leading results predict OpenAI's "messages with role 'tool' must be a response to a preceeding message with
'tool_calls'" (Anthropic: "unexpected `tool_use_id` found in `tool_result` blocks"); unanswered, partial,
interrupted and pending calls predict "An assistant message with 'tool_calls' must be followed by tool messages
responding to each 'tool_call_id'" (Anthropic: "`tool_use` ids were found without `tool_result` blocks
immediately after"). §1 quotes no error for the other kinds, so theirs is "".

Everything is linear: one pass, dicts keyed by call id, no rescans.
"""
from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agents.memory.schema import SYSTEM_ROLES, Message, ToolCall

PROVIDERS: tuple[str, ...] = ("openai", "anthropic")

KINDS: tuple[str, ...] = (
    "orphan_tool_result",
    "unanswered_tool_call",
    "interrupted_exchange",
    "duplicate_tool_call_id",
    "leading_tool_result",
    "partial_parallel_results",
    "invalid_tool_arguments",
    "empty_assistant",
    "pending_tool_call",
    "system_not_first",
    "consecutive_same_role",
)
WARNING_KINDS: frozenset[str] = frozenset({"pending_tool_call", "consecutive_same_role"})

# One line per kind, for legends and help texts.
KIND_HELP: dict[str, str] = {
    "orphan_tool_result": "a tool result whose call no earlier assistant message made",
    "unanswered_tool_call": "a call that never gets its result, though the conversation goes on",
    "interrupted_exchange": "another message comes between a call and its result",
    "duplicate_tool_call_id": "a call id used twice, or a result given twice",
    "leading_tool_result": "a tool result at the start of the list, its call trimmed away",
    "partial_parallel_results": "some parallel calls of one message answered, others never",
    "invalid_tool_arguments": "call arguments that are not a JSON object",
    "empty_assistant": "an assistant message with neither content nor tool calls",
    "pending_tool_call": "a call still waiting for its result at the end (warning: an agent mid-loop)",
    "system_not_first": "a system message after the start (Anthropic: the system prompt is a separate parameter)",
    "consecutive_same_role": "two user or two assistant turns in a row once mapped to Anthropic turns (warning)",
}

# The error texts each provider answers with (reference/trimming.md §1). OpenAI misspells "preceeding".
_OPENAI_ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)
_OPENAI_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: {id}"
)
_ANTHROPIC_ORPHAN = (
    "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a "
    "corresponding `tool_use` block in the previous message."
)
_ANTHROPIC_UNANSWERED = (
    "messages.{turn}: `tool_use` ids were found without `tool_result` blocks immediately after: {id}. Each "
    "`tool_use` block must have a corresponding `tool_result` block in the next message."
)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a whole list is grouped or checked.

    The pass allocates a few objects per message (blocks, calls, lists), none of them garbage and none in a
    cycle, yet every few tens of thousands of allocations CPython runs a full collection that scans the whole
    heap, messages included: on 100,000 messages that made grouping five to eight times slower (bench/README.md).
    The previous state is restored, so a caller that disabled the collector keeps it disabled.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    index: int
    tool_call_id: str | None
    message: str
    severity: str = "error"
    provider_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "index": self.index,
            "tool_call_id": self.tool_call_id,
            "message": self.message,
            "severity": self.severity,
            "provider_error": self.provider_error,
        }


def errors_only(violations: Iterable[Violation]) -> list[Violation]:
    """The violations a provider would reject (warnings such as ``pending_tool_call`` left out)."""
    return [v for v in violations if v.severity == "error"]


# --------------------------------------------------------------------------------------------------------------
# Protocol checks


class _Call:
    """A call that has no result yet: what reporting it later needs (its exchange says when and by what it closed).

    Once answered, a call is folded into a packed int (``_pack``) and this object is dropped with its exchange.
    """

    __slots__ = ("id", "name", "index", "exchange", "answered_at")

    def __init__(self, call_id: str, name: str, index: int, exchange: _Exchange) -> None:
        self.id = call_id
        self.name = name
        self.index = index
        self.exchange = exchange
        self.answered_at: int | None = None


class _Exchange:
    __slots__ = ("index", "calls", "total", "answered", "closed_by", "closed_by_role", "turn")

    def __init__(self, index: int, turn: int) -> None:
        self.index = index
        # While open: every call, in call order. Once closed incomplete: only the calls unanswered at closing
        # (the answered ones are packed in the checker's table and all that is left of them is ``answered``).
        self.calls: list[_Call] = []
        self.total = 0  # how many calls the exchange has (len(calls) while open)
        self.answered = 0
        self.closed_by: int | None = None
        self.closed_by_role = ""
        self.turn = turn  # Anthropic messages index of the assistant turn (for its error text)


# An answered call is all the checker must remember for every call of a long history, so it is one int, not an
# object: what its later reporting needs (a reused id: its message and name; a second result: its name and first
# result; a result before its call, at finish: its message and name) packed as index | name number << 32 |
# (answered_at - index) << 48. A small int is 32 bytes where a _Call with its exchange, list and ints was ~300.
# Values out of the packing's range (4 billion messages, 65,536 distinct names) are kept as a plain tuple.
_INDEX_BITS = 32
_NAME_BITS = 16
_INDEX_MASK = (1 << _INDEX_BITS) - 1
_NAME_MASK = (1 << _NAME_BITS) - 1
_DELTA_SHIFT = _INDEX_BITS + _NAME_BITS

_Answered = int | tuple[int, int, str]  # packed int, or (index, answered_at, name)
_Entry = _Call | _Answered


def _has_content(content: str | list[dict[str, Any]] | None) -> bool:
    if content is None:
        return False
    if isinstance(content, str):
        return bool(content.strip())
    for part in content:
        # A non-text part (an image, a document) is content; a text part only if it has non-blank text.
        if not isinstance(part, dict):
            return True
        text = part.get("text")
        if part.get("type", "text") != "text" or (isinstance(text, str) and text.strip()):
            return True
    return False


_JSON = json.JSONDecoder()
_JSON_TYPES = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def _arguments_problem(arguments: str) -> str | None:
    """Why ``arguments`` is not a JSON object string, or None when it is (empty counts as ``{}``)."""
    stripped = arguments.strip()
    if not stripped:
        return None
    if stripped == "{}":
        return None
    try:
        # raw_decode skips json.loads' wrappers: a third of the checker's time went into them.
        value, end = _JSON.raw_decode(stripped)
    except ValueError as exc:
        return f"they are not valid JSON ({exc})"
    except RecursionError:
        return "they are not valid JSON (nested too deeply)"
    if end != len(stripped):
        return f"they are not valid JSON (extra data after the value at char {end})"
    if not isinstance(value, dict):
        return f"they are JSON but {_JSON_TYPES.get(type(value), 'a number')}, not an object"
    return None


class ProtocolChecker:
    """Checks a message list one message at a time, so a streaming import can check as it reads.

    ``feed`` each message in order, then ``finish`` for all violations sorted by index. ``finish`` does not
    change the state: feeding more and finishing again is allowed.

    Memory: the open exchange is held whole; a closed exchange is freed unless it still has unanswered calls
    (those are reported later, so they stay until answered or reported); of every answered call only its id and
    one packed int remain (about 120 bytes per call instead of the ~330 of a call object with its exchange).
    Every id must stay: a reuse or a second result is a violation however old the first call is.
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
        self._open: _Exchange | None = None
        # The latest call for each id: a _Call while unanswered, a packed int (_pack) once answered. Every id of
        # the history stays (a reused id is a violation however old), but in ~130 bytes with the id itself.
        self._calls: dict[str, _Entry] = {}
        # Closed exchanges that had unanswered calls when closed and still have some (insertion-ordered set: an
        # exchange whose late results have all come is removed, as it has nothing left to report).
        self._incomplete: dict[_Exchange, None] = {}
        self._names: dict[str, int] = {}  # function name -> its number in the packed ints
        self._name_list: list[str] = []
        self._found: list[tuple[int, int, Violation]] = []  # (index, sequence, violation)
        self._orphans: list[tuple[int, int, str]] = []  # (index, position in _found, id): reworded at finish
        # Anthropic turns: the role of the last turn (tool results are user turns) and how many turns so far.
        self._turn_role: str | None = None
        self._turn_count = 0

    # -- reporting -------------------------------------------------------------------------------------------

    def _add(self, kind: str, index: int, call_id: str | None, message: str, provider_error: str = "") -> None:
        severity = "warning" if kind in WARNING_KINDS else "error"
        self._found.append(
            (index, len(self._found), Violation(kind, index, call_id, message, severity, provider_error))
        )

    def _orphan_error(self, call_id: str) -> str:
        return _ANTHROPIC_ORPHAN.format(id=call_id) if self._anthropic else _OPENAI_ORPHAN

    def _unanswered_error(self, call: _Call) -> str:
        if self._anthropic:
            return _ANTHROPIC_UNANSWERED.format(turn=call.exchange.turn, id=call.id)
        return _OPENAI_UNANSWERED.format(id=call.id)

    # -- the table of calls -----------------------------------------------------------------------------------

    def _pack(self, call: _Call, answered_at: int) -> _Answered:
        """What must be remembered of an answered call, as one int (a tuple when out of the packing's range)."""
        name = call.name
        number = self._names.get(name)
        if number is None:
            number = len(self._name_list)
            if number > _NAME_MASK:
                return (call.index, answered_at, name)
            self._names[name] = number
            self._name_list.append(name)
        if call.index > _INDEX_MASK:
            return (call.index, answered_at, name)
        return call.index | number << _INDEX_BITS | (answered_at - call.index) << _DELTA_SHIFT

    def _unpack(self, entry: _Entry) -> tuple[int, int | None, str]:
        """(index, answered_at, name) of a table entry, whatever its form."""
        if type(entry) is int:
            index = entry & _INDEX_MASK
            return index, index + (entry >> _DELTA_SHIFT), self._name_list[(entry >> _INDEX_BITS) & _NAME_MASK]
        if type(entry) is tuple:
            return entry
        assert isinstance(entry, _Call)
        return entry.index, entry.answered_at, entry.name

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
            if ex.answered < ex.total:
                ex.closed_by = i
                ex.closed_by_role = role
                # Only the unanswered calls are reported later; the answered ones live on as packed ints.
                ex.calls = [c for c in ex.calls if c.answered_at is None]
                self._incomplete[ex] = None
            else:
                # Nothing left to report: emptying the list breaks the call <-> exchange cycles, so reference
                # counting frees them at once, even while find_violations has the cyclic collector paused.
                ex.calls.clear()
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
        entry = self._calls.get(call_id)
        if entry is None:
            self._orphans.append((i, len(self._found), call_id))
            self._add(
                "orphan_tool_result", i, call_id,
                f"Message {i} is the result of call {call_id}, but no assistant message before it made that call.",
                self._orphan_error(call_id),
            )
        elif type(entry) is not _Call:
            _, answered_at, name = self._unpack(entry)
            self._add(
                "duplicate_tool_call_id", i, call_id,
                f"Message {i} is a second result for call {call_id} ({name}); its first result is message "
                f"{answered_at}.",
            )
        else:
            call = entry
            call.answered_at = i
            ex = call.exchange
            ex.answered += 1
            self._calls[call_id] = self._pack(call, i)
            if ex is not self._open:
                assert ex.closed_by is not None  # an exchange that is not open was closed by a message
                self._add(
                    "interrupted_exchange",
                    ex.closed_by,
                    call_id,
                    f"Message {ex.closed_by} ({ex.closed_by_role}) comes between call {call_id} ({call.name}) "
                    f"at message {call.index} and its result at message {i}; results must follow their call directly.",
                    self._unanswered_error(call),
                )
                if ex.answered == ex.total:
                    # Its last late result: nothing of it is reported at finish any more.
                    del self._incomplete[ex]
                    ex.calls.clear()

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
                calls_unanswered = previous_open is not None and previous_open.answered < previous_open.total
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
        ex = previous_open if merge and previous_open is not None else _Exchange(i, self._turn_count - 1)
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
                earlier_index, _, earlier_name = self._unpack(earlier)
                self._add(
                    "duplicate_tool_call_id", i, call_id,
                    f"Call id {call_id} ({name}) at message {i} was already used by a call at message "
                    f"{earlier_index} ({earlier_name}).",
                )
            call = _Call(call_id, name, i, ex)
            ex.calls.append(call)
            ex.total += 1
            self._calls[call_id] = call
        self._open = ex

    # -- results ---------------------------------------------------------------------------------------------

    def finish(self) -> list[Violation]:
        found = list(self._found)
        seq = len(found)
        # A result that came before its call: say so rather than "no call".
        for index, position, call_id in self._orphans:
            entry = self._calls.get(call_id)
            if entry is None:
                continue
            call_index, _, call_name = self._unpack(entry)
            if call_index > index:
                old = found[position][2]
                text = (
                    f"Message {index} is the result of call {call_id} ({call_name}), but it comes before its call "
                    f"at message {call_index}; a result must follow its call."
                )
                found[position] = (index, position, Violation(old.kind, old.index, old.tool_call_id, text,
                                                              old.severity, old.provider_error))
        for ex in self._incomplete:
            answered = ex.answered  # every call answered so far, including those no longer in ex.calls
            for call in ex.calls:
                if call.answered_at is not None:
                    continue
                if ex.total > 1 and answered:
                    kind = "partial_parallel_results"
                    text = (
                        f"Call {call.id} ({call.name}) at message {call.index} never gets a result, though other "
                        f"calls of the same message do ({answered} of {ex.total} answered)."
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
        still_open = self._open
        if still_open is not None:
            for call in still_open.calls:
                if call.answered_at is None:
                    text = (
                        f"Call {call.id} ({call.name}) at message {call.index} is still waiting for its result at "
                        "the end of the list: fine while the agent runs the tool, an error if sent as is."
                    )
                    found.append(
                        (
                            call.index,
                            seq,
                            Violation(
                                "pending_tool_call",
                                call.index,
                                call.id,
                                text,
                                self._pending_severity,
                                self._unanswered_error(call),
                            ),
                        )
                    )
                    seq += 1
        found.sort(key=lambda item: (item[0], item[1]))
        return [v for _, _, v in found]


def find_violations(
    messages: Sequence[Message], provider: str = "openai", *, pending_severity: str = "warning"
) -> list[Violation]:
    checker = ProtocolChecker(provider, pending_severity=pending_severity)
    with _gc_paused():
        for message in messages:
            checker.feed(message)
        return checker.finish()


# --------------------------------------------------------------------------------------------------------------
# Grouping


@dataclass(slots=True)
class CallResult:
    call_index: int  # position of the call in its assistant message's tool_calls
    tool_call: ToolCall
    result_indices: list[int] = field(default_factory=list)  # normally one; empty when missing; more if repeated
    late: bool = False  # the first result came after a non-tool message interrupted the exchange

    @property
    def result_index(self) -> int | None:
        return self.result_indices[0] if self.result_indices else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_index": self.call_index,
            "tool_call_id": self.tool_call.id,
            "name": self.tool_call.function.name,
            "result_indices": list(self.result_indices),
            "late": self.late,
        }


@dataclass(slots=True)
class Block:
    kind: str  # "system" | "user" | "assistant" | "tool_exchange" | "tool_result"
    indices: list[int]
    start: int
    calls: list[CallResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "start": self.start,
            "indices": list(self.indices),
            "calls": [c.to_dict() for c in self.calls],
        }


_BLOCK_KIND = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def group_blocks(messages: Sequence[Message]) -> list[Block]:
    """Every message in exactly one block; blocks in the order of their first message."""
    with _gc_paused():
        return _group_blocks(messages)


def _group_blocks(messages: Sequence[Message]) -> list[Block]:
    blocks: list[Block] = []
    open_block: Block | None = None
    latest: dict[str, tuple[CallResult, Block]] = {}
    for i, message in enumerate(messages):
        role = message.role
        if role == "tool":
            call_id = message.tool_call_id or ""
            found = latest.get(call_id)
            if found is None:
                blocks.append(Block("tool_result", [i], i))
                continue
            call, block = found
            if not call.result_indices and block is not open_block:
                call.late = True
            call.result_indices.append(i)
            block.indices.append(i)  # results arrive in index order, so indices stay sorted
            continue
        open_block = None
        if role == "assistant" and message.tool_calls:
            block = Block("tool_exchange", [i], i)
            in_this_message: set[str] = set()
            for position, tc in enumerate(message.tool_calls):
                call = CallResult(position, tc)
                block.calls.append(call)
                # A repeated id in one message: results pair with the first (the checker counts one call).
                if tc.id not in in_this_message:
                    in_this_message.add(tc.id)
                    latest[tc.id] = (call, block)
            blocks.append(block)
            open_block = block
        else:
            blocks.append(Block(_BLOCK_KIND[role], [i], i))
    return blocks


@dataclass(frozen=True, slots=True)
class ResultPlace:
    """Where the call that a tool result answers is, seen from a window of messages (a page of a long session)."""

    call_name: str  # the called tool's name ("" when no call with the result's id was found)
    in_exchange: bool  # right under its call: nothing but tool results between the call and it
    call_index: int | None  # the calling message, when the result is not right under it (None: in exchange, none)


def place_results(
    messages: Sequence[Message],
    *,
    start: int = 0,
    calls_outside: Callable[[set[str]], Mapping[str, Sequence[tuple[int, str]]]] | None = None,
) -> dict[int, ResultPlace]:
    """For each tool result of a window of a list (``messages`` are indices ``start``, ``start + 1``, ...), where
    its call is: right above it in the exchange, earlier in the window (a late result), or outside the window.

    Pairing is ``group_blocks``': by id, with the latest call before the result. For results whose id no call of
    the window made before them, ``calls_outside(ids)`` gives every call with those ids in the whole list as
    ``id -> [(index, tool name)]`` in index order (one lookup, and none when every result has its call in the
    window); a result is paired with the latest of them before it, else the first (a result before its call)."""
    placed: dict[int, ResultPlace] = {}
    stray: dict[int, str] = {}  # window position -> call id, for results without a call in the window
    for block in group_blocks(messages):
        if block.kind == "tool_result":
            stray[block.start] = messages[block.start].tool_call_id or ""
            continue
        if block.kind != "tool_exchange":
            continue
        run_end = block.start + 1  # the results right under the call: the run of tool messages after it
        while run_end < len(messages) and messages[run_end].role == "tool":
            run_end += 1
        for call in block.calls:
            for i in call.result_indices:
                under = i < run_end
                call_index = None if under else start + block.start
                placed[start + i] = ResultPlace(call.tool_call.function.name, under, call_index)
    wanted = {call_id for call_id in stray.values() if call_id}
    found = calls_outside(wanted) if wanted and calls_outside is not None else {}
    for i, call_id in stray.items():
        candidates = found.get(call_id) or []
        if not candidates:
            placed[start + i] = ResultPlace("", False, None)
            continue
        before = [c for c in candidates if c[0] < start + i]
        index, name = before[-1] if before else candidates[0]
        placed[start + i] = ResultPlace(name, False, index)
    return dict(sorted(placed.items()))


@dataclass(slots=True)
class Turn:
    index: int  # 0-based turn number
    indices: list[int]
    user_index: int | None  # the user message that opens the turn; None for messages before the first one

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "indices": list(self.indices), "user_index": self.user_index}


def group_turns(messages: Sequence[Message]) -> list[Turn]:
    """A user message and what follows it up to the next user message; what precedes the first is a turn too."""
    with _gc_paused():
        return _group_turns(messages)


def _group_turns(messages: Sequence[Message]) -> list[Turn]:
    turns: list[Turn] = []
    current: Turn | None = None
    for i, message in enumerate(messages):
        if message.role == "user" or current is None:
            current = Turn(len(turns), [], i if message.role == "user" else None)
            turns.append(current)
        current.indices.append(i)
    return turns
