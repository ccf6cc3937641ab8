"""The pieces every strategy shares: parameters, the registry, what a strategy sees and returns, the result, and
``trim``, which sets pinned system messages aside, runs a strategy and explains the result.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.memory.chain import Violation, _gc_paused, find_violations
from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.stored import StoredMessages, TrimmedMessages, outlines_of
from agents.memory.tokens import DEFAULT_COUNTER, TokenCounter, count_messages, get_counter
from agents.memory.trimming.runs import (
    DroppedRuns,
    ReadLater,
    ReasonRuns,
    Span,
    gaps_of,
    later,
    later_fields,
    merged,
    once,
    spans_of,
    spans_of_kept,
)
from agents.memory.trimming.tool_runs import Grouped, codes, last_units_start, unit_count, units_end


class ParamProblem(NamedTuple):
    """One invalid parameter: its name, how it was written (``buffer_size=0``), and what is wrong with it."""

    param: str
    written: str
    reason: str


class StrategyError(ValueError):
    """An unknown strategy or invalid parameters; the text lists what is valid.

    For invalid parameters, ``problems`` names each one, ``text(flag)`` writes the error with an interface's own
    way of naming a parameter in front of each (the commands: ``--set``), and ``given`` holds the values as read
    (a form shows them again)."""

    def __init__(
        self,
        message: str = "",
        *,
        strategy: str = "",
        problems: Sequence[ParamProblem] = (),
        valid: str = "",
        given: Mapping[str, Any] | None = None,
    ) -> None:
        self.strategy = strategy
        self.problems = tuple(problems)
        self.valid = valid
        self.given = dict(given or {})
        self.message = message
        super().__init__(message or self.text())

    def text(self, flag: str = "") -> str:
        if not self.problems:
            return self.message
        listed = "; ".join(f"{flag}{p.written}: {p.reason}" for p in self.problems)
        return f"invalid parameters for strategy '{self.strategy}': {listed}. Valid parameters: {self.valid}"


# ---------------------------------------------------------------------------------------------------------------
# Results


class Dropped(NamedTuple):
    # A tuple, not a dataclass: a 100,000-message trim makes one per dropped message, and tuples are cheap.
    index: int  # type: ignore[assignment]  # a field may shadow tuple.index; typeshed's tuple stub says it may not
    reason: str


class Inserted(NamedTuple):
    position: int  # index in the trimmed list
    message: Message
    reason: str
    summarizes: tuple[int, ...] = ()  # a summary: the input indices it stands for (empty for other placeholders)
    tokens: int | None = None  # what it counts in tokens_after (a placeholder summary: summary_tokens)


class Edited(NamedTuple):
    index: int  # type: ignore[assignment]  # (as Dropped.index)
    # input index of a kept message that the strategy changed (a cleared result, cleared arguments...)
    reason: str  # what was changed and why


# What ``trim`` leaves to be made when first read (runs.later_fields): everything but the trimmed list itself (what a
# framework returns), the dropped runs and the notes a strategy wrote out. A window of 10,000 messages costs AutoGen
# a slice; building the indices, reasons, sources and token lists of every kept message cost ours ten times that.
LATER_FIELDS = ("kept", "inserted", "tokens_before", "tokens_after", "notes", "kept_reasons", "sources",
                "message_tokens")


@later_fields(*LATER_FIELDS)
@dataclass
class TrimResult:
    strategy: str
    params: dict[str, Any]
    counter: str
    kept: list[int]
    # In input order; built from the strategy's runs when first read (runs.DroppedRuns), so that a trim that drops
    # most of a long session for one reason makes no object per dropped message.
    dropped: Sequence[Dropped]
    inserted: list[Inserted]
    # The trimmed list (a list, or over a stored list ``stored.TrimmedMessages``, which reads contents when read).
    messages: Sequence[Message]
    tokens_before: int
    tokens_after: int
    # The trimmed list's violations, checked the first time they are read (runs.ReadLater).
    violations: Sequence[Violation]
    notes: list[str] = field(default_factory=list)
    budget_exceeded: bool = False
    # Why each kept input message was kept (and what was changed in it, for strip_thoughts).
    kept_reasons: dict[int, str] = field(default_factory=dict)
    # For each message of the trimmed list, the input message it came from (None for an inserted placeholder).
    sources: list[int | None] = field(default_factory=list)
    # Kept input messages that go out changed (their new form is in ``messages``), in input order.
    edited: list[Edited] = field(default_factory=list)
    # The tokens of each message of ``messages`` as counted here (an inserted summary may count summary_tokens):
    # what a framework that keeps the trimmed list carries into its next call (replay.py).
    message_tokens: list[int] = field(default_factory=list)

    def input_index(self, position: int) -> int | None:
        """The input index of the trimmed list's message at ``position`` (None: a placeholder, or no message)."""
        return self.sources[position] if 0 <= position < len(self.sources) else None

    def violation_dict(self, v: Violation) -> dict[str, Any]:
        """A violation of the trimmed list: ``index`` is its position in the trimmed list (what the provider calls
        messages[index]), ``input_index`` the input message it came from (None for an inserted placeholder)."""
        return {**v.to_dict(), "input_index": self.input_index(v.index)}

    def explanation(self) -> list[dict[str, Any]]:
        """One entry per input message, in input order: kept or dropped, and why; ``status`` says kept, edited
        (kept, but sent changed) or dropped."""
        rows: dict[int, dict[str, Any]] = {}
        edited = {e.index for e in self.edited}
        for i in self.kept:
            status = "edited" if i in edited else "kept"
            rows[i] = {"index": i, "kept": True, "status": status, "reason": self.kept_reasons.get(i, "kept")}
        for start, stop, reason in self._dropped_runs():
            for i in range(start, stop):
                rows[i] = {"index": i, "kept": False, "status": "dropped", "reason": reason}
        return [rows[i] for i in sorted(rows)]

    def _dropped_runs(self) -> list[tuple[int, int, str]]:
        if isinstance(self.dropped, DroppedRuns):
            return self.dropped.runs()
        return merged((d.index, d.index + 1, d.reason) for d in self.dropped)

    def inserted_dicts(self) -> list[dict[str, Any]]:
        out = []
        for x in self.inserted:
            row: dict[str, Any] = {"position": x.position, "message": x.message.to_openai(), "reason": x.reason}
            if x.summarizes:
                row["summarizes"] = list(x.summarizes)
            out.append(row)
        return out

    def edited_dicts(self) -> list[dict[str, Any]]:
        return [{"index": e.index, "reason": e.reason} for e in self.edited]

    def dropped_runs(self) -> list[dict[str, Any]]:
        """``dropped`` as runs of consecutive input indices with the same reason: ``{"from", "to", "reason"}``
        (both ends included). A long session trimmed to a short window drops most of its messages for one reason,
        so this stays small where the per-index list has one entry per input message."""
        return [{"from": start, "to": stop - 1, "reason": reason} for start, stop, reason in self._dropped_runs()]

    def to_compact_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """The result in a size bounded by what is kept, not by the input: ``dropped`` as runs
        (``dropped_runs``), no ``explanation``, and the trimmed ``messages`` only when asked for."""
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "params": self.params,
            "counter": self.counter,
            "kept": list(self.kept),
            "dropped": self.dropped_runs(),
            "edited": self.edited_dicts(),
            "inserted": self.inserted_dicts(),
        }
        if messages:
            out["messages"] = [m.to_openai() for m in self.messages]
        out.update(
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            violations=[self.violation_dict(v) for v in self.violations],
            notes=list(self.notes),
            budget_exceeded=self.budget_exceeded,
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``trim`` command's JSON (DESIGN.md), plus notes, budget_exceeded and the per-message explanation."""
        return {
            "strategy": self.strategy,
            "params": self.params,
            "counter": self.counter,
            "kept": list(self.kept),
            "dropped": [{"index": d.index, "reason": d.reason} for d in self.dropped],
            "edited": self.edited_dicts(),
            "inserted": self.inserted_dicts(),
            "messages": [m.to_openai() for m in self.messages],
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "violations": [self.violation_dict(v) for v in self.violations],
            "notes": list(self.notes),
            "budget_exceeded": self.budget_exceeded,
            "explanation": self.explanation(),
        }


# ---------------------------------------------------------------------------------------------------------------
# What a strategy sees and returns


@dataclass
class View:
    """The part of the list a strategy runs on (pinned system messages set aside), with its token counts."""

    messages: Sequence[Message]  # a list, or a tuple trim shares (immutable: the input itself when nothing is pinned)
    counts: Sequence[int]
    per_list: int
    pinned_tokens: int  # tokens of the pinned messages (only safe_token_budget counts them)
    counter: TokenCounter
    offset: int = 0  # input index of the view's first message (the number of pinned messages)
    # One character per message (tool_runs.codes): given by a Grouped input, else read when first asked for.
    known_codes: str | None = None

    def __len__(self) -> int:
        return len(self.messages)

    # The input's unit starts when it is Grouped (its units past the pinned ones: the pinned messages are system or
    # developer messages, one unit each, so the view's unit u is the input's unit offset + u).
    known_starts: Sequence[int] | None = None

    def codes(self) -> str:
        """The roles of the view's messages, one character each (tool_runs.codes), read at most once."""
        if self.known_codes is None:
            self.known_codes = codes(self.messages)
        return self.known_codes

    # AutoGen's and Strands' units (a run of tool results is one): found in a Grouped input's starts without reading
    # a role, else in the roles' codes at C speed (tool_runs).

    def unit_count(self) -> int:
        if self.known_starts is not None:
            return len(self.known_starts) - self.offset
        return unit_count(self.codes())

    def units_end(self, count: int) -> int | None:
        """Where the view's first ``count`` units end (None: it has fewer)."""
        starts = self.known_starts
        if starts is None:
            return units_end(self.codes(), count)
        at = self.offset + count
        if at < len(starts):
            return starts[at] - self.offset
        return len(self) if at == len(starts) else None

    def last_units_start(self, count: int) -> int:
        """Where the view's last ``count`` units start (0 when it has fewer)."""
        starts = self.known_starts
        if starts is None:
            return last_units_start(self.known_codes or self.messages, count)
        if count <= 0:
            return len(self)
        at = max(self.offset, len(starts) - count)
        return starts[at] - self.offset if at < len(starts) else 0  # an empty view


class Insert(NamedTuple):
    """A message a strategy inserts: a placeholder, or a summary of some of the view's messages."""

    position: int  # in the strategy's output (its kept messages with the inserts)
    message: Message
    reason: str
    summarizes: Sequence[int] = ()  # view positions a summary stands for (a tuple, or a range)
    tokens: int | None = None  # its count when not the counter's: a placeholder summary counts summary_tokens


@dataclass
class Outcome:
    # View positions, ascending: a list, a range, or spans (runs.Positions) when a few ranges are kept.
    kept: Sequence[int]
    # view position -> reason, for every position not kept: a dict, or the same held as runs (runs.ReasonRuns),
    # which a strategy that drops whole ranges builds with nothing per message
    dropped: dict[int, str] | ReasonRuns
    kept_reason: str
    # Kept messages with a reason of their own (an edited message: what changed and why); ReasonRuns for ranges.
    kept_reasons: dict[int, str] | ReasonRuns = field(default_factory=dict)
    inserted: list[Insert | tuple[int, Message, str]] = field(default_factory=list)
    replaced: dict[int, Message] = field(default_factory=dict)  # view position -> changed copy (an edit)
    notes: list[str] = field(default_factory=list)
    budget_exceeded: bool = False
    # When set, the notes are ``later_notes()``, made the first time the result's notes are read (``notes`` is not
    # used): for a note that needs what deciding did not read (AutoGen's count of its messages over the whole list).
    later_notes: Callable[[], list[str]] | None = None


def keep_all(view: View, reason: str) -> Outcome:
    return Outcome(kept=range(len(view)), dropped={}, kept_reason=reason)


def outcome(
    view: View, kept: Sequence[int], drop_reason: str | Callable[[int], str], kept_reason: str
) -> Outcome:
    """Keep ``kept`` (view positions, any order) and drop every other position for ``drop_reason``: one text for
    all (held as runs, nothing built per message), or a function of the position."""
    ordered = sorted(set(kept))
    gaps = gaps_of(spans_of(ordered), len(view))
    if isinstance(drop_reason, str):
        return Outcome(kept=ordered, dropped=ReasonRuns.over(gaps, drop_reason), kept_reason=kept_reason)
    # A reason per position, held as runs of the same reason: a long session's drops are a few runs, not an entry
    # (and, in the result, a ``Dropped``) per message.
    runs: list[tuple[int, int, str]] = []
    for start, stop in gaps:
        run_start, why = start, drop_reason(start)
        for i in range(start + 1, stop):
            reason = drop_reason(i)
            if reason != why:
                runs.append((run_start, i, why))
                run_start, why = i, reason
        runs.append((run_start, stop, why))
    return Outcome(kept=ordered, dropped=ReasonRuns(runs), kept_reason=kept_reason)


# ---------------------------------------------------------------------------------------------------------------
# Parameters


class StrategyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pin_system: bool = Field(
        default=False,
        description="Set leading system/developer messages aside, trim the rest, put them back in front "
        "(the framework keeps its system prompt outside memory, so its budget does not count it).",
    )


def pin_field(default: bool, description: str | None = None) -> Any:
    """``pin_system`` with its default; ``description`` where the strategy counts the pinned messages differently
    from a framework that keeps its system prompt outside memory."""
    return Field(default=default, description=description or StrategyParams.model_fields["pin_system"].description)


class NoParams(StrategyParams):
    pass


# ---------------------------------------------------------------------------------------------------------------
# Registry


# How a framework keeps what it trimmed, which decides what each later call of a run starts from (replay.py).
MEMORY_VIEW = "view"
MEMORY_IDEMPOTENT = "idempotent"
MEMORY_CARRIED = "carried"
MEMORY_AFTER_TURN = "after_turn"
MEMORY_KINDS: dict[str, str] = {
    MEMORY_VIEW: "a view: every call trims the whole stored history, which never changes",
    MEMORY_IDEMPOTENT: "deletes what it trims from the framework's memory, but trimming what was kept again gives "
    "the same as trimming the whole history, so every call is as if it trimmed everything",
    MEMORY_CARRIED: "replaces the framework's history by what it kept: the next call trims that, plus the "
    "messages added since",
    MEMORY_AFTER_TURN: "trims the framework's history when a turn (an agent invocation) ends and keeps the result: "
    "the calls inside a turn send what it kept plus the turn's messages, untrimmed",
}


@dataclass(frozen=True)
class Strategy:
    name: str
    params_model: type[StrategyParams]
    description: str
    emulates: str
    run: Callable[[View, Any], Outcome]
    memory: str = MEMORY_VIEW
    # False: it decides from roles, names, tool calls, token counts and whether a message has content, never from
    # what a text says, so ``trim`` may run it on a stored list's outlines (stored.py) and read no text to decide.
    reads_text: bool = True

    @property
    def pin_system(self) -> bool:
        return bool(self.params_model.model_fields["pin_system"].default)

    def parameters(self) -> list[dict[str, Any]]:
        """The parameters as a form shows them: name, type, default, bounds, help."""
        return [dict(row) for row in _parameters(self.params_model)]


@functools.cache
def _parameters(params_model: type[StrategyParams]) -> tuple[dict[str, Any], ...]:
    # Built once per model: pydantic's JSON schema costs milliseconds, and the lab's picker lists every strategy.
    schema = params_model.model_json_schema()
    out = []
    for name, info in params_model.model_fields.items():
        prop = schema["properties"][name]
        row: dict[str, Any] = {"name": name, "default": info.default, "help": info.description or ""}
        row["type"] = prop.get("type") or _choice_text(prop)
        for bound in ("minimum", "exclusiveMinimum"):
            if bound in prop:
                row[bound] = prop[bound]
        out.append(row)
    return tuple(out)


def _choice_text(prop: dict[str, Any]) -> str:
    """A union's JSON schema in words: ``system, human, ai or tool, a list of them, or null``."""
    options = prop.get("anyOf", [])
    enum: list[str] = next((o["enum"] for o in options if "enum" in o), [])
    words = [" or ".join([", ".join(enum[:-1]), enum[-1]]) if len(enum) > 1 else "".join(enum)] if enum else []
    if any(o.get("type") == "array" for o in options):
        words.append("a list of them")
    if any(o.get("type") == "null" for o in options):
        words.append("null")
    if len(words) > 1:
        return ", ".join(words[:-1]) + ", or " + words[-1]
    return words[0] if words else "value"


STRATEGIES: dict[str, Strategy] = {}
StrategyRun = Callable[[View, Any], Outcome]


def register(
    name: str, params_model: type[StrategyParams], description: str, emulates: str, *, memory: str = MEMORY_VIEW,
    reads_text: bool = True,
) -> Callable[[StrategyRun], StrategyRun]:
    """``memory``: how the framework keeps what it trimmed (MEMORY_KINDS); a view unless it deletes or replaces.
    ``reads_text=False``: the strategy never reads what a text says (``Strategy.reads_text``; a test runs each such
    strategy on outlines and on whole messages and compares)."""
    if memory not in MEMORY_KINDS:
        raise ValueError(f"memory must be one of {', '.join(MEMORY_KINDS)}, not {memory!r}")

    def wrap(fn: StrategyRun) -> StrategyRun:
        STRATEGIES[name] = Strategy(name, params_model, description, emulates, fn, memory, reads_text)
        return fn

    return wrap


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise StrategyError(f"unknown strategy '{name}'; valid: {', '.join(STRATEGIES)}") from None


# ---------------------------------------------------------------------------------------------------------------
# The entry point


class Spec(Protocol):
    """What ``trim`` runs: a strategy with its parameters already validated (``spec.StrategySpec``, which every
    interface reads its parameters into, once)."""

    @property
    def strategy(self) -> Strategy: ...

    @property
    def params(self) -> StrategyParams: ...


def trim(
    messages: Sequence[Message],
    spec: Spec,
    *,
    counter: str = DEFAULT_COUNTER,
    token_counts: Sequence[int] | None = None,
    pinned: int | None = None,
) -> TrimResult:
    """``pinned``: for a caller that knows what the framework holds outside its memory (replay.py, whose later
    calls trim what was kept): when the strategy pins, exactly the first ``pinned`` messages are set aside (all
    system or developer messages), rather than whatever system messages lead the list.

    The strategy decides and the trimmed list is made here; the rest of the result (``LATER_FIELDS`` and the
    violations) is made the first time it is read, from copies taken here (of the list and the counts), so a
    caller changing its list afterwards changes nothing in the result."""
    strat, resolved = spec.strategy, spec.params
    tc = get_counter(counter)
    # A tuple of counts (like a Grouped list) is shared as it is: nothing can change it afterwards.
    counts: Sequence[int] = (
        token_counts if isinstance(token_counts, tuple)
        else list(token_counts) if token_counts is not None else count_messages(messages, tc)
    )
    if len(counts) != len(messages):
        raise ValueError(f"token_counts has {len(counts)} entries for {len(messages)} messages")
    # A stored list whose counts are given, under a strategy that reads no text: decide on the outlines, and read
    # the kept messages' contents only when the trimmed list is read.
    outlines = outlines_of(messages) if token_counts is not None and not strat.reads_text else None
    source: Sequence[Message] = outlines if outlines is not None else messages

    n_pinned = 0
    if resolved.pin_system and pinned is not None:
        n_pinned = pinned
        if not 0 <= n_pinned <= len(source) or any(m.role not in SYSTEM_ROLES for m in source[:n_pinned]):
            raise ValueError(f"pinned={pinned}: the first {pinned} messages must be system or developer messages")
    elif resolved.pin_system:
        while n_pinned < len(source) and source[n_pinned].role in SYSTEM_ROLES:
            n_pinned += 1
    view = View(
        messages=_own_copy(source, n_pinned),
        counts=counts[n_pinned:] if n_pinned else counts,
        per_list=tc.per_list,
        pinned_tokens=sum(counts[:n_pinned]),
        counter=tc,
        offset=n_pinned,
        known_codes=source.codes[n_pinned:] if isinstance(source, Grouped) else None,
        known_starts=source.starts if isinstance(source, Grouped) else None,
    )
    # Like chain.py's whole-list passes: many small objects, none garbage; full collections would rescan the heap.
    with _gc_paused():
        out = strat.run(view, resolved)
        if outlines is not None and out.replaced:  # it edited a text it says it does not read: decide on the texts
            return trim(list(messages), spec, counter=counter, token_counts=counts, pinned=pinned)
        trimmed, inserts = _trimmed_list(view, out, source[:n_pinned])
        parts = _Parts(view, out, inserts, counts, n_pinned)
        # An edit that changes nothing (arguments already {}, a result already the placeholder) is not an edit.
        edited = [
            Edited(n_pinned + i, parts.kept_reasons()[n_pinned + i])
            for i in out.kept if i in out.replaced and out.replaced[i] != view.messages[i]
        ] if out.replaced else []
        # The trimmed list is what gets sent, so a call still waiting for its result is an error here. Checked when
        # first read (the outlines of a stored list are what is checked, as before).
        checked, sources = trimmed, parts.sources
        violations = ReadLater(
            lambda: [_in_input_terms(v, sources()) for v in find_violations(checked, pending_severity="error")]
        )
        sent: Sequence[Message] = trimmed
        if outlines is not None:
            assert isinstance(messages, StoredMessages)
            sent = TrimmedMessages(messages, sources(), {n_pinned + x.position: x.message for x in inserts})

    per_list = tc.per_list
    later_notes = out.later_notes
    return TrimResult(
        strategy=strat.name,
        params=resolved.model_dump(),
        counter=tc.name,
        kept=later(parts.kept),
        dropped=parts.dropped(),
        inserted=later(parts.inserted),
        messages=sent,
        tokens_before=later(lambda: sum(counts) + per_list),
        tokens_after=later(lambda: view.pinned_tokens + sum(parts.body_tokens()) + per_list),
        violations=violations,
        notes=out.notes if later_notes is None else later(later_notes),
        budget_exceeded=out.budget_exceeded,
        kept_reasons=later(parts.kept_reasons),
        sources=later(sources),
        edited=edited,
        message_tokens=later(lambda: [*counts[:n_pinned], *parts.body_tokens()]),
    )


def _own_copy(source: Sequence[Message], n_pinned: int) -> Sequence[Message]:
    """What follows the pinned messages, as trim's own: a tuple is immutable, so when nothing is pinned it is
    shared as it is (a long Grouped session is not copied per strategy); anything else is copied (a list's slice
    is a copy already)."""
    if isinstance(source, tuple) and not n_pinned:
        return source
    rest = source[n_pinned:]
    return rest if isinstance(rest, (list, tuple)) else list(rest)


def _trimmed_list(view: View, out: Outcome, pinned: Sequence[Message]) -> tuple[Sequence[Message], list[Insert]]:
    """The trimmed list (pinned, then the kept messages with the strategy's inserts at their positions): what a
    framework returns, made now; a window's kept ranges are sliced, not gathered message by message."""
    inserts = [Insert(*item) for item in sorted(out.inserted, key=lambda x: x[0])]
    if not pinned and not inserts and not out.replaced and len(out.kept) == len(view):
        return view.messages, inserts  # everything kept: the view is trim's own copy already
    body: list[Message] = list(pinned)
    if out.replaced:
        get = out.replaced.get
        body += [get(i, view.messages[i]) for i in out.kept]
    else:
        for a, b in spans_of_kept(out.kept):
            body += view.messages[a:b]
    for x in inserts:
        body.insert(len(pinned) + x.position, x.message)
    return body, inserts


class _Parts:
    """What ``trim`` explains about each kept message, made the first time each is read (every one at most once)."""

    def __init__(self, view: View, out: Outcome, inserts: list[Insert], counts: Sequence[int], n_pinned: int) -> None:
        self.view, self.out, self.inserts, self.counts, self.n_pinned = view, out, inserts, counts, n_pinned
        self.spans: list[Span] | None = None if out.replaced else spans_of_kept(out.kept)
        self.kept = once(self._kept)
        self.inserted = once(self._inserted)
        self.kept_reasons = once(self._kept_reasons)
        self.sources = once(self._sources)
        self.body_tokens = once(self._body_tokens)

    def dropped(self) -> Sequence[Dropped]:
        n_pinned, dropped = self.n_pinned, self.out.dropped
        if isinstance(dropped, ReasonRuns):
            return DroppedRuns([(n_pinned + a, n_pinned + b, why) for a, b, why in dropped.runs()], Dropped)
        return [Dropped(n_pinned + i, reason) for i, reason in sorted(dropped.items())]

    def _kept(self) -> list[int]:
        n_pinned = self.n_pinned
        kept = list(range(n_pinned))
        if self.spans is None:
            kept += [n_pinned + i for i in self.out.kept] if n_pinned else self.out.kept
        else:
            for a, b in self.spans:
                kept += range(n_pinned + a, n_pinned + b)
        return kept

    def _kept_reasons(self) -> dict[int, str]:
        n_pinned, out = self.n_pinned, self.out
        kept = self.kept()
        kept_reasons = dict.fromkeys(range(n_pinned), "pinned system message: set aside before trimming and put back "
                                     "in front")
        kept_reasons.update(dict.fromkeys(kept[n_pinned:], out.kept_reason))
        own = out.kept_reasons
        if isinstance(own, ReasonRuns):
            for a, b, why in own.runs():
                kept_reasons.update(dict.fromkeys(range(n_pinned + a, n_pinned + b), why))
        else:
            for i, why in own.items():
                if n_pinned + i in kept_reasons:
                    kept_reasons[n_pinned + i] = why
        return kept_reasons

    def _inserted(self) -> list[Inserted]:
        n_pinned, tc = self.n_pinned, self.view.counter
        inserted: list[Inserted] = []
        for x in self.inserts:
            tokens = tc.count(x.message) if x.tokens is None else x.tokens
            summarizes = tuple(map(n_pinned.__add__, x.summarizes)) if n_pinned else tuple(x.summarizes)
            inserted.append(Inserted(n_pinned + x.position, x.message, x.reason, summarizes, tokens))
        return inserted

    def _sources(self) -> list[int | None]:
        sources: list[int | None] = list(self.kept())
        for placed in self.inserted():
            sources.insert(placed.position, None)
        return sources

    def _body_tokens(self) -> list[int]:
        view, out = self.view, self.out
        if out.replaced:
            body_tokens = [
                view.counter.count(out.replaced[i]) if i in out.replaced else view.counts[i] for i in out.kept
            ]
        else:
            body_tokens = []
            assert self.spans is not None
            for a, b in self.spans:
                body_tokens += view.counts[a:b]
        for x, placed in zip(self.inserts, self.inserted(), strict=True):
            body_tokens.insert(x.position, placed.tokens if placed.tokens is not None else 0)
        return body_tokens


_MESSAGE_AT = re.compile(r"\b([Mm]essage) (\d+)\b")


def _in_input_terms(v: Violation, sources: Sequence[int | None]) -> Violation:
    """The violation with each "message N" of its sentence naming both lists: "Message 1 of the trimmed list
    (input message 8)". Its index stays the trimmed position (what the provider reports), but a reader of a trim
    result thinks in input indices, and the two differ as soon as anything before is dropped or inserted.
    (chain.py's sentences stay as they are for plain lint, where the two are the same.)"""

    def name(match: re.Match[str]) -> str:
        position = int(match.group(2))
        if not 0 <= position < len(sources):
            return match.group(0)
        source = sources[position]
        origin = "an inserted placeholder" if source is None else f"input message {source}"
        return f"{match.group(1)} {position} of the trimmed list ({origin})"

    return dataclasses.replace(v, message=_MESSAGE_AT.sub(name, v.message))


# ---------------------------------------------------------------------------------------------------------------
# Shared pieces


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def is_call(m: Message) -> bool:
    return m.role == "assistant" and bool(m.tool_calls)


ORPHAN_AT_START = "a tool result without its call at the start"


def leading_tool_note(view: View, kept: Sequence[int], who: str, ref: str) -> list[str]:
    if kept and view.messages[kept[0]].role == "tool":
        return [f"{who} leaves {ORPHAN_AT_START} of the list; providers reject it ({ref})."]
    return []


def split_exchanges(view: View, kept: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where a cut went through a tool exchange (view positions): kept results whose call message was dropped,
    and kept call messages whose results (the tool messages right after them) were dropped."""
    kept_set = set(kept)
    orphans: list[int] = []
    cut_calls: list[int] = []
    call: int | None = None  # the call message the current run of tool messages follows
    for i, m in enumerate(view.messages):
        if m.role != "tool":
            call = i if is_call(m) else None
            continue
        if call is None:
            continue
        if i in kept_set and call not in kept_set:
            orphans.append(i)
        elif i not in kept_set and call in kept_set and (not cut_calls or cut_calls[-1] != call):
            cut_calls.append(call)
    return orphans, cut_calls
