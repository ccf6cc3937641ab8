"""Trimming strategies: what an agent really sends after its framework trims the message list.

Each strategy reproduces one framework's algorithm exactly, known bugs included (reference/trimming.md), and
explains every input message: kept or dropped, and why. A result is a view: the input is never changed.

Speed: strategies read per-message token counts (the stored ones when the caller passes ``token_counts``) and
never recount text, except for the few messages a strategy creates or changes (placeholders, stripped thoughts)
and LlamaIndex's own content-only count. Every strategy is O(n) or O(n log n).
"""
from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.memory.chain import Violation, _gc_paused, find_violations
from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.tokens import DEFAULT_COUNTER, TokenCounter, cl100k_encoding, count_messages, get_counter


class StrategyError(ValueError):
    """An unknown strategy or invalid parameters; the text lists what is valid."""


# ---------------------------------------------------------------------------------------------------------------
# Results


class Dropped(NamedTuple):
    # A tuple, not a dataclass: a 100,000-message trim makes one per dropped message, and tuples are cheap.
    index: int
    reason: str


class Inserted(NamedTuple):
    position: int  # index in the trimmed list
    message: Message
    reason: str


@dataclass
class TrimResult:
    strategy: str
    params: dict[str, Any]
    counter: str
    kept: list[int]
    dropped: list[Dropped]
    inserted: list[Inserted]
    messages: list[Message]
    tokens_before: int
    tokens_after: int
    violations: list[Violation]
    notes: list[str] = field(default_factory=list)
    budget_exceeded: bool = False
    # Why each kept input message was kept (and what was changed in it, for strip_thoughts).
    kept_reasons: dict[int, str] = field(default_factory=dict)

    def explanation(self) -> list[dict[str, Any]]:
        """One entry per input message, in input order: kept or dropped, and why."""
        rows: dict[int, dict[str, Any]] = {}
        for i in self.kept:
            rows[i] = {"index": i, "kept": True, "reason": self.kept_reasons.get(i, "kept")}
        for d in self.dropped:
            rows[d.index] = {"index": d.index, "kept": False, "reason": d.reason}
        return [rows[i] for i in sorted(rows)]

    def to_dict(self) -> dict[str, Any]:
        """The ``trim`` command's JSON (DESIGN.md), plus notes, budget_exceeded and the per-message explanation."""
        return {
            "strategy": self.strategy,
            "params": self.params,
            "counter": self.counter,
            "kept": list(self.kept),
            "dropped": [{"index": d.index, "reason": d.reason} for d in self.dropped],
            "inserted": [
                {"position": x.position, "message": x.message.to_openai(), "reason": x.reason} for x in self.inserted
            ],
            "messages": [m.to_openai() for m in self.messages],
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "violations": [v.to_dict() for v in self.violations],
            "notes": list(self.notes),
            "budget_exceeded": self.budget_exceeded,
            "explanation": self.explanation(),
        }


# ---------------------------------------------------------------------------------------------------------------
# What a strategy sees and returns


@dataclass
class _View:
    """The part of the list a strategy runs on (pinned system messages set aside), with its token counts."""

    messages: list[Message]
    counts: list[int]
    per_list: int
    pinned_tokens: int  # tokens of the pinned messages (only safe_token_budget counts them)
    counter: TokenCounter
    offset: int = 0  # input index of the view's first message (the number of pinned messages)

    def __len__(self) -> int:
        return len(self.messages)


@dataclass
class _Outcome:
    kept: list[int]  # view positions, ascending
    dropped: dict[int, str]  # view position -> reason, for every position not kept
    kept_reason: str
    kept_reasons: dict[int, str] = field(default_factory=dict)
    inserted: list[tuple[int, Message, str]] = field(default_factory=list)  # (position in the strategy's output)
    replaced: dict[int, Message] = field(default_factory=dict)  # view position -> changed copy
    notes: list[str] = field(default_factory=list)
    budget_exceeded: bool = False


def _keep_all(view: _View, reason: str) -> _Outcome:
    return _Outcome(kept=list(range(len(view))), dropped={}, kept_reason=reason)


def _outcome(view: _View, kept: Sequence[int], drop_reason: Callable[[int], str], kept_reason: str) -> _Outcome:
    kept_set = set(kept)
    dropped = {i: drop_reason(i) for i in range(len(view)) if i not in kept_set}
    return _Outcome(kept=sorted(kept_set), dropped=dropped, kept_reason=kept_reason)


# ---------------------------------------------------------------------------------------------------------------
# Parameters


class StrategyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pin_system: bool = Field(
        default=False,
        description="Set leading system/developer messages aside, trim the rest, put them back in front "
        "(the framework keeps its system prompt outside memory, so its budget does not count it).",
    )


def _pin(default: bool) -> Any:
    return Field(default=default, description=StrategyParams.model_fields["pin_system"].description)


LangChainType = Literal["system", "human", "ai", "tool"]


class NoParams(StrategyParams):
    pass


class OpenManusParams(StrategyParams):
    pin_system: bool = _pin(True)
    max_messages: int = Field(
        default=100, ge=0,
        description="Keep messages[-max_messages:]; 0 means no trimming (OpenManus' slice of -0). OpenManus' "
        "default is 100. Negative values, which empty OpenManus' memory, are not offered.",
    )


class BufferedParams(StrategyParams):
    pin_system: bool = _pin(True)
    buffer_size: int = Field(
        default=10, gt=0,
        description="Messages AutoGen keeps, counting a run of tool results as one message. AutoGen has no "
        "default; memoryviz suggests 10.",
    )


class HeadAndTailParams(StrategyParams):
    pin_system: bool = _pin(True)
    head_size: int = Field(
        default=1, gt=0,
        description="Oldest messages kept. AutoGen has no default; memoryviz suggests 1 (the task).",
    )
    tail_size: int = Field(
        default=10, gt=0,
        description="Newest messages kept. AutoGen has no default; memoryviz suggests 10.",
    )


class TokenLimitedParams(StrategyParams):
    pin_system: bool = _pin(True)
    token_limit: int = Field(
        default=4000, gt=0,
        description="Token budget in the counter's units. AutoGen's default (None) means the model's whole "
        "context window; memoryviz needs a number and suggests 4000.",
    )


class LangChainLastParams(StrategyParams):
    max_tokens: int = Field(
        default=4000, ge=0,
        description="Token budget in the counter's units (required by LangChain; memoryviz suggests 4000).",
    )
    include_system: bool = Field(
        default=False,
        description="Always keep a system message at index 0, even when it alone exceeds max_tokens.",
    )
    start_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="Drop the oldest kept messages until the first one is of this type: system, human, ai, tool "
        "(or a list). ['human', 'ai'] removes leading tool results.",
    )
    end_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="First drop trailing messages until the last one is of this type: system, human, ai, tool "
        "(or a list).",
    )


class LangChainFirstParams(StrategyParams):
    max_tokens: int = Field(
        default=4000, ge=0,
        description="Token budget in the counter's units (required by LangChain; memoryviz suggests 4000).",
    )
    end_on: LangChainType | list[LangChainType] | None = Field(
        default=None,
        description="Drop trailing kept messages until the last one is of this type: system, human, ai, tool "
        "(or a list).",
    )


class SafeWindowParams(StrategyParams):
    max_messages: int = Field(
        default=40, ge=1,
        description="Most messages kept, system messages included; the oldest non-system message goes first, "
        "with the tool messages right after it.",
    )


class LastTurnsParams(StrategyParams):
    pin_system: bool = _pin(True)
    max_turns: int = Field(
        default=8, ge=1,
        description="User turns kept (a user message and everything after it up to the next one). The cookbook "
        "clamps smaller values to 1.",
    )


class SKTruncationParams(StrategyParams):
    target_count: int = Field(
        default=20, gt=0,
        description="Messages to keep, the first system message included. Semantic Kernel requires it; memoryviz "
        "suggests 20.",
    )
    threshold_count: int = Field(
        default=0, ge=0,
        description="Extra messages tolerated before reducing; the cut prefers a user message within them.",
    )


class LlamaIndexParams(StrategyParams):
    pin_system: bool = _pin(True)
    token_limit: int = Field(
        default=3000, ge=1,
        description="Budget in LlamaIndex's own units: cl100k tokens of the message contents joined with spaces "
        "(roles, tool calls and per-message overhead are not counted).",
    )


class SafeTokenBudgetParams(StrategyParams):
    pin_system: bool = _pin(True)
    max_tokens: int = Field(
        default=4000, gt=0,
        description="Budget for everything sent, pinned system messages and reply priming included, in the "
        "counter's units.",
    )


# ---------------------------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True)
class Strategy:
    name: str
    params_model: type[StrategyParams]
    description: str
    emulates: str
    run: Callable[[_View, Any], _Outcome]

    @property
    def pin_system(self) -> bool:
        return bool(self.params_model.model_fields["pin_system"].default)

    def parameters(self) -> list[dict[str, Any]]:
        """The parameters as a form shows them: name, type, default, bounds, help."""
        schema = self.params_model.model_json_schema()
        out = []
        for name, info in self.params_model.model_fields.items():
            prop = schema["properties"][name]
            row: dict[str, Any] = {"name": name, "default": info.default, "help": info.description or ""}
            row["type"] = prop.get("type") or _choice_text(prop)
            for bound in ("minimum", "exclusiveMinimum"):
                if bound in prop:
                    row[bound] = prop[bound]
            out.append(row)
        return out


def _choice_text(prop: dict[str, Any]) -> str:
    """A union's JSON schema in words: ``system, human, ai or tool, a list of them, or null``."""
    options = prop.get("anyOf", [])
    enum = next((o["enum"] for o in options if "enum" in o), [])
    words = [" or ".join([", ".join(enum[:-1]), enum[-1]]) if len(enum) > 1 else "".join(enum)] if enum else []
    if any(o.get("type") == "array" for o in options):
        words.append("a list of them")
    if any(o.get("type") == "null" for o in options):
        words.append("null")
    if len(words) > 1:
        return ", ".join(words[:-1]) + ", or " + words[-1]
    return words[0] if words else "value"


STRATEGIES: dict[str, Strategy] = {}


def _register(name: str, params_model: type[StrategyParams], description: str, emulates: str) -> Callable:
    def wrap(fn: Callable[[_View, Any], _Outcome]) -> Callable[[_View, Any], _Outcome]:
        STRATEGIES[name] = Strategy(name, params_model, description, emulates, fn)
        return fn

    return wrap


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise StrategyError(f"unknown strategy '{name}'; valid: {', '.join(STRATEGIES)}") from None


def _describe_params(strategy: Strategy) -> str:
    parts = []
    for row in strategy.parameters():
        bound = ""
        if "exclusiveMinimum" in row:
            bound = f" > {row['exclusiveMinimum']}"
        elif "minimum" in row:
            bound = f" >= {row['minimum']}"
        parts.append(f"{row['name']} ({row['type']}{bound}, default {json.dumps(row['default'])})")
    return ", ".join(parts)


def resolve_params(strategy: str | Strategy, params: Mapping[str, Any] | None = None) -> StrategyParams:
    """Validate parameters against the strategy's model; StrategyError says what is wrong and what is valid."""
    strat = get_strategy(strategy) if isinstance(strategy, str) else strategy
    try:
        return strat.params_model.model_validate(dict(params or {}))
    except ValidationError as exc:
        problems: dict[str, str] = {}  # the first error of each parameter (a union reports one per member)
        given = dict(params or {})
        for err in exc.errors(include_url=False):
            name = str(err["loc"][0]) if err.get("loc") else "params"
            if name in problems:
                continue
            if err["type"] == "extra_forbidden":
                problems[name] = f"unknown parameter '{name}'"
            else:
                value = json.dumps(given.get(name, err.get("input")), default=str)
                problems[name] = f"{name}={value}: {err['msg']}"
        raise StrategyError(
            f"invalid parameters for strategy '{strat.name}': {'; '.join(problems.values())}. "
            f"Valid parameters: {_describe_params(strat)}"
        ) from None


def parse_param_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs from a command line; a value is read as JSON when it parses (``5``, ``true``,
    ``"human"``, ``["human","ai"]``), else kept as text (``human``). StrategyError on a pair without ``=``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise StrategyError(f"--set {pair!r}: expected key=value")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


# ---------------------------------------------------------------------------------------------------------------
# The entry point


def trim(
    messages: Sequence[Message],
    strategy: str,
    params: Mapping[str, Any] | None = None,
    *,
    counter: str = DEFAULT_COUNTER,
    token_counts: Sequence[int] | None = None,
) -> TrimResult:
    strat = get_strategy(strategy)
    resolved = resolve_params(strat, params)
    tc = get_counter(counter)
    counts = list(token_counts) if token_counts is not None else count_messages(messages, tc)
    if len(counts) != len(messages):
        raise ValueError(f"token_counts has {len(counts)} entries for {len(messages)} messages")

    n_pinned = 0
    if resolved.pin_system:
        while n_pinned < len(messages) and messages[n_pinned].role in SYSTEM_ROLES:
            n_pinned += 1
    view = _View(
        messages=list(messages[n_pinned:]),
        counts=counts[n_pinned:],
        per_list=tc.per_list,
        pinned_tokens=sum(counts[:n_pinned]),
        counter=tc,
        offset=n_pinned,
    )
    # Like chain.py's whole-list passes: many small objects, none garbage; full collections would rescan the heap.
    with _gc_paused():
        out = strat.run(view, resolved)

        kept = list(range(n_pinned)) + [n_pinned + i for i in out.kept]
        kept_reasons = {i: "pinned system message: set aside before trimming and put back in front" for i in range(n_pinned)}
        for i in out.kept:
            kept_reasons[n_pinned + i] = out.kept_reasons.get(i, out.kept_reason)
        dropped = [Dropped(n_pinned + i, reason) for i, reason in sorted(out.dropped.items())]

        # Assemble: pinned, then the strategy's kept messages with its placeholders at their positions.
        body: list[Message] = [out.replaced.get(i, view.messages[i]) for i in out.kept]
        body_tokens = [
            view.counter.count(out.replaced[i]) if i in out.replaced else view.counts[i] for i in out.kept
        ]
        inserted: list[Inserted] = []
        for pos, msg, reason in sorted(out.inserted, key=lambda x: x[0]):
            body.insert(pos, msg)
            body_tokens.insert(pos, tc.count(msg))
            inserted.append(Inserted(n_pinned + pos, msg, reason))
        trimmed = list(messages[:n_pinned]) + body

    return TrimResult(
        strategy=strat.name,
        params=resolved.model_dump(),
        counter=tc.name,
        kept=kept,
        dropped=dropped,
        inserted=inserted,
        messages=trimmed,
        tokens_before=sum(counts) + tc.per_list,
        tokens_after=view.pinned_tokens + sum(body_tokens) + tc.per_list,
        # The trimmed list is what gets sent, so a call still waiting for its result is an error here.
        violations=find_violations(trimmed, pending_severity="error"),
        notes=out.notes,
        budget_exceeded=out.budget_exceeded,
        kept_reasons=kept_reasons,
    )


# ---------------------------------------------------------------------------------------------------------------
# Shared pieces


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _is_call(m: Message) -> bool:
    return m.role == "assistant" and bool(m.tool_calls)


def _autogen_units(view: _View) -> list[list[int]]:
    """Group the view as AutoGen stores it: a run of tool results (answering one call message) is one
    FunctionExecutionResultMessage; every other message is one message."""
    units: list[list[int]] = []
    for i, m in enumerate(view.messages):
        if m.role == "tool" and units and view.messages[units[-1][-1]].role == "tool":
            units[-1].append(i)
        else:
            units.append([i])
    return units


def _is_ferm(view: _View, unit: list[int]) -> bool:
    return view.messages[unit[0]].role == "tool"


def _unit_count_note(view: _View, units: list[list[int]], kept: Sequence[int]) -> list[str]:
    # Only worth saying when something was cut: it is why the window holds more OpenAI messages than its size.
    if len(kept) == len(view) or all(len(u) == 1 for u in units):
        return []
    return [
        f"AutoGen stores the results of one call message as one message: {len(view):,} messages here are "
        f"{len(units):,} AutoGen messages."
    ]


_ORPHAN_AT_START = "a tool result without its call at the start"


def _leading_tool_note(view: _View, kept: Sequence[int], who: str, ref: str) -> list[str]:
    if kept and view.messages[kept[0]].role == "tool":
        return [f"{who} leaves {_ORPHAN_AT_START} of the list; providers reject it ({ref})."]
    return []


def _orphans_midlist(view: _View, kept: Sequence[int]) -> list[int]:
    """Kept tool results whose call message was dropped (positions in view)."""
    kept_set = set(kept)
    orphans = []
    last_non_tool: int | None = None
    for i in range(len(view)):
        m = view.messages[i]
        if m.role != "tool":
            last_non_tool = i
            continue
        if i in kept_set and last_non_tool is not None and _is_call(view.messages[last_non_tool]):
            if last_non_tool not in kept_set:
                orphans.append(i)
    return orphans


# ---------------------------------------------------------------------------------------------------------------
# AutoGen


@_register(
    "unbounded", NoParams,
    "Keeps every message.",
    "AutoGen UnboundedChatCompletionContext (autogen-core 0.7.5)",
)
def _unbounded(view: _View, p: NoParams) -> _Outcome:
    return _keep_all(view, "AutoGen's unbounded context keeps every message")


@_register(
    "buffered", BufferedParams,
    "Keeps the last buffer_size messages, then removes one leading tool result.",
    "AutoGen BufferedChatCompletionContext (autogen-core 0.7.5)",
)
def _buffered(view: _View, p: BufferedParams) -> _Outcome:
    units = _autogen_units(view)
    size = p.buffer_size
    window = units[-size:]
    reasons: dict[int, str] = {}
    for u in units[: max(0, len(units) - size)]:
        for i in u:
            reasons[i] = f"outside the last {_n(size, 'message')} of AutoGen's buffer"
    notes: list[str] = []
    if window and _is_ferm(view, window[0]):
        head = window.pop(0)
        for i in head:
            reasons[i] = (
                "leading tool result removed, as AutoGen removes one"
                + (" (AutoGen holds these results as one message)" if len(head) > 1 else "")
            )
        if not window:
            notes.append("AutoGen returns an empty context: its buffer held only a tool result, which it removes.")
    kept = [i for u in window for i in u]
    notes = _unit_count_note(view, units, kept) + notes
    notes += _leading_tool_note(view, kept, "AutoGen", "only one leading result message is removed")
    out = _outcome(view, kept, reasons.__getitem__, f"within the last {_n(size, 'message')} of AutoGen's buffer")
    out.notes = notes
    return out


@_register(
    "head_and_tail", HeadAndTailParams,
    "Keeps the first head_size and last tail_size messages with a 'Skipped N messages.' placeholder between.",
    "AutoGen HeadAndTailChatCompletionContext (autogen-core 0.7.5)",
)
def _head_and_tail(view: _View, p: HeadAndTailParams) -> _Outcome:
    units = _autogen_units(view)
    h, t = p.head_size, p.tail_size
    num_skipped = len(units) - h - t
    if num_skipped <= 0:
        # AutoGen returns the whole history, without applying its boundary guards.
        return _keep_all(view, f"AutoGen keeps everything: at most {h} + {t} messages")
    notes: list[str] = []
    reasons: dict[int, str] = {}
    head, tail = units[:h], units[-t:]
    for u in units[h : len(units) - t]:
        for i in u:
            reasons[i] = f"skipped in the middle: AutoGen keeps the first {h} and the last {t} messages"
    guarded = 0
    if head and _is_call(view.messages[head[-1][0]]):
        u = head.pop()
        guarded += 1
        for i in u:
            reasons[i] = "tool call at the end of the head removed, as AutoGen removes one (its results are not in the head)"
    if tail and _is_ferm(view, tail[0]):
        u = tail.pop(0)
        guarded += 1
        for i in u:
            reasons[i] = "leading tool result of the tail removed, as AutoGen removes one" + (
                " (AutoGen holds these results as one message)" if len(u) > 1 else ""
            )
    kept_head = [i for u in head for i in u]
    kept_tail = [i for u in tail for i in u]
    text = f"Skipped {num_skipped} messages."
    placeholder = Message(role="user", name="System", content=text)
    omitted_units = num_skipped + guarded
    omitted_messages = len(view) - len(kept_head) - len(kept_tail)
    reason = f"AutoGen's placeholder for the skipped middle: a user message from 'System' saying '{text}'"
    if guarded:
        notes.append(
            f"AutoGen's placeholder undercounts: it says '{text}' but {_n(omitted_units, 'AutoGen message')} "
            f"were left out, because its count ignores what its boundary guards remove "
            f"(microsoft/autogen PR #8070)."
        )
    if omitted_messages != omitted_units:
        notes.append(f"In OpenAI messages, {_n(omitted_messages, 'message')} were left out.")
    notes = _unit_count_note(view, units, kept_head + kept_tail) + notes
    orphans = _orphans_midlist(view, kept_head + kept_tail)
    if orphans:
        notes.append("AutoGen leaves tool results without their call after the placeholder; providers reject them.")
    out = _outcome(view, kept_head + kept_tail, reasons.__getitem__, "")
    out.kept_reasons = {i: f"in the first {_n(h, 'message')}" for i in kept_head}
    out.kept_reasons.update({i: f"in the last {_n(t, 'message')}" for i in kept_tail})
    out.inserted = [(len(kept_head), placeholder, reason)]
    out.notes = notes
    return out


def _middle_out_kept(sizes: Sequence[int], per_list: int, limit: int) -> tuple[int, int]:
    """AutoGen's ``while count(msgs) > limit and msgs: msgs.pop(len(msgs)//2)`` without its quadratic cost.

    After k pops the removed messages are always one contiguous block: the pops alternate between the last of
    the left part and the first of the right part, so the list is ``units[:ceil((m-k)/2)] + units[m-floor((m-k)/2):]``.
    The count only falls as k grows, so a binary search over k finds the first k that fits.
    Returns (left, right_start): keep units [0, left) and [right_start, m).
    """
    m = len(sizes)
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    def split(k: int) -> tuple[int, int]:
        rest = m - k
        return (rest + 1) // 2, m - rest // 2

    def fits(k: int) -> bool:
        left, right = split(k)
        return prefix[left] + prefix[m] - prefix[right] + per_list <= limit

    lo, hi = 0, m  # k = m means everything was popped (the loop also stops there)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return split(lo)


@_register(
    "token_limited", TokenLimitedParams,
    "Removes the middle message until the list fits token_limit, then one leading tool result.",
    "AutoGen TokenLimitedChatCompletionContext (autogen-core 0.7.5)",
)
def _token_limited(view: _View, p: TokenLimitedParams) -> _Outcome:
    units = _autogen_units(view)
    sizes = [sum(view.counts[i] for i in u) for u in units]
    left, right = _middle_out_kept(sizes, view.per_list, p.token_limit)
    notes: list[str] = []
    reasons: dict[int, str] = {}
    limit = f"{p.token_limit:,} tokens"
    for u in units[left:right]:
        for i in u:
            reasons[i] = f"removed from the middle to fit {limit} (AutoGen pops the middle message until the list fits)"
    window = units[:left] + units[right:]
    if window and _is_ferm(view, window[0]):
        u = window.pop(0)
        for i in u:
            reasons[i] = "leading tool result removed, as AutoGen removes one"
    kept = [i for u in window for i in u]
    notes = _unit_count_note(view, units, kept) + notes
    if not kept and len(view):
        notes.append(f"Nothing fits in {limit}: AutoGen returns an empty context.")
    orphans = _orphans_midlist(view, kept)
    if orphans:
        notes.append(
            f"AutoGen removed the tool call but kept its {_n(len(orphans), 'result')} in the middle of the list "
            f"(message {', '.join(str(view.offset + i) for i in orphans)}); it only repairs index 0 "
            f"(microsoft/autogen#7955)."
        )
    users = [i for i in range(len(view)) if view.messages[i].role == "user"]
    if users and users[-1] not in set(kept) and any(i < users[-1] for i in kept):
        notes.append("Middle-out removal dropped the newest user message while keeping older messages.")
    out = _outcome(view, kept, reasons.__getitem__, f"fits in {limit} after AutoGen's middle-out removal")
    out.notes = notes
    return out


# ---------------------------------------------------------------------------------------------------------------
# OpenManus


@_register(
    "openmanus_window", OpenManusParams,
    "Keeps the last max_messages messages, tool results included even when their call is cut.",
    "OpenManus Memory (snapshot 52a13f2a): messages[-max_messages:] on every write",
)
def _openmanus_window(view: _View, p: OpenManusParams) -> _Outcome:
    size = p.max_messages
    if size == 0:
        return _keep_all(view, "max_messages=0: OpenManus' slice messages[-0:] keeps everything")
    start = max(0, len(view) - size)
    out = _outcome(
        view, range(start, len(view)),
        lambda i: f"outside the last {_n(size, 'message')} (OpenManus keeps messages[-{size}:])",
        f"within the last {_n(size, 'message')}",
    )
    out.notes = _leading_tool_note(
        view, out.kept, "OpenManus", "FoundationAgents/OpenManus#23; the fix, PR #1116, is open"
    )
    return out


# ---------------------------------------------------------------------------------------------------------------
# LangChain


def _lc_type(m: Message) -> str:
    return {"system": "system", "developer": "system", "user": "human", "assistant": "ai", "tool": "tool"}[m.role]


def _lc_matches(m: Message, types: str | list[str]) -> bool:
    return _lc_type(m) in ([types] if isinstance(types, str) else types)


def _lc_types_text(types: str | list[str]) -> str:
    return types if isinstance(types, str) else " or ".join(types)


def _lc_first_max_tokens(
    view: _View, order: list[int], max_tokens: int, end_on: str | list[str] | None
) -> tuple[int, int]:
    """LangChain's ``_first_max_tokens`` on view positions ``order`` with a list counter (sum + per_list).

    Returns (fit, kept): the prefix length that fits the budget, and the length left after ``end_on``.
    """
    if not order:
        return 0, 0
    prefix = [0]
    for i in order:
        prefix.append(prefix[-1] + view.counts[i])
    if prefix[-1] + view.per_list <= max_tokens:
        idx = fit = len(order)
    else:
        # LangChain binary-searches the longest prefix whose count fits; counts are sums of non-negative
        # numbers, so that is the largest k with prefix[k] + per_list <= max_tokens (never k = 0 evaluated).
        idx = fit = bisect.bisect_right(prefix, max_tokens - view.per_list, lo=1) - 1
        idx = fit = max(idx, 0)
    if end_on:
        while idx > 0 and not _lc_matches(view.messages[order[idx - 1]], end_on):
            idx -= 1
    return fit, idx


def _lc_orphan_notes(view: _View, kept: list[int]) -> list[str]:
    notes: list[str] = []
    if kept and view.messages[kept[0]].role == "tool":
        notes.append(
            f"LangChain leaves {_ORPHAN_AT_START} (langchain-ai/langchain#33245); start_on=['human', 'ai'] avoids it."
        )
    if kept and _is_call(view.messages[kept[-1]]):
        notes.append("LangChain keeps a tool call at the end whose results were cut; providers reject it.")
    return notes


@_register(
    "langchain_last", LangChainLastParams,
    "Keeps the newest messages that fit max_tokens (trim_messages strategy='last').",
    "LangChain trim_messages(strategy='last') (langchain-core 1.8.3)",
)
def _langchain_last(view: _View, p: LangChainLastParams) -> _Outcome:
    reasons: dict[int, str] = {}
    notes: list[str] = []
    end = len(view)
    if p.end_on:
        while end > 0 and not _lc_matches(view.messages[end - 1], p.end_on):
            end -= 1
            reasons[end] = f"after the last {_lc_types_text(p.end_on)} message (end_on drops trailing messages first)"
    start = 0
    system: int | None = None
    remaining = p.max_tokens
    if p.include_system and end > 0 and _lc_type(view.messages[0]) == "system":
        system, start = 0, 1
        system_tokens = view.counts[0] + view.per_list
        remaining = max(0, p.max_tokens - system_tokens)
        if system_tokens > p.max_tokens:
            notes.append(
                f"include_system keeps the system message although it alone counts {system_tokens:,} tokens, "
                f"more than max_tokens={p.max_tokens:,}."
            )
    order = list(range(end - 1, start - 1, -1))  # newest first, as LangChain reverses the list
    fit, kept_n = _lc_first_max_tokens(view, order, remaining, p.start_on)
    budget = f"{p.max_tokens:,} tokens"
    for i in order[fit:]:
        reasons[i] = f"outside the newest messages that fit {budget}"
    for i in order[kept_n:fit]:
        reasons[i] = f"dropped so the list starts on a {_lc_types_text(p.start_on or [])} message (start_on)"
    kept = sorted(order[:kept_n] + ([system] if system is not None else []))
    notes += _lc_orphan_notes(view, [i for i in kept if i != system])
    out = _outcome(view, kept, reasons.__getitem__, f"among the newest messages that fit {budget}")
    if system is not None:
        out.kept_reasons[system] = "include_system: the system message at index 0 is always kept"
    out.notes = notes
    return out


@_register(
    "langchain_first", LangChainFirstParams,
    "Keeps the oldest messages that fit max_tokens (trim_messages strategy='first').",
    "LangChain trim_messages(strategy='first') (langchain-core 1.8.3)",
)
def _langchain_first(view: _View, p: LangChainFirstParams) -> _Outcome:
    order = list(range(len(view)))
    fit, kept_n = _lc_first_max_tokens(view, order, p.max_tokens, p.end_on)
    budget = f"{p.max_tokens:,} tokens"
    reasons: dict[int, str] = {}
    for i in order[fit:]:
        reasons[i] = f"beyond the oldest messages that fit {budget}"
    for i in order[kept_n:fit]:
        reasons[i] = f"dropped so the list ends on a {_lc_types_text(p.end_on or [])} message (end_on)"
    out = _outcome(view, order[:kept_n], reasons.__getitem__, f"among the oldest messages that fit {budget}")
    out.notes = _lc_orphan_notes(view, out.kept)
    return out


# ---------------------------------------------------------------------------------------------------------------
# The seed article: safe window and /clear


@_register(
    "safe_window", SafeWindowParams,
    "Drops the oldest non-system message and the tool messages right after it until max_messages fit.",
    "the seed article's short-term memory _trim",
)
def _safe_window(view: _View, p: SafeWindowParams) -> _Outcome:
    # The article's loop deletes from the front; the same result in one pass.
    remaining = len(view)
    reasons: dict[int, str] = {}
    i = 0
    while remaining > p.max_messages and i < len(view):
        m = view.messages[i]
        if m.role in SYSTEM_ROLES:
            i += 1
            continue
        reasons[i] = f"oldest non-system message dropped to keep at most {_n(p.max_messages, 'message')}"
        remaining -= 1
        j = i + 1
        while j < len(view) and view.messages[j].role == "tool":
            reasons[j] = f"dropped with message {view.offset + i} (tool messages right after it go with it)"
            remaining -= 1
            j += 1
        i = j
    kept = [k for k in range(len(view)) if k not in reasons]
    out = _outcome(view, kept, reasons.__getitem__, f"within the newest {_n(p.max_messages, 'message')}")
    for k in kept:
        if view.messages[k].role in SYSTEM_ROLES:
            out.kept_reasons[k] = "system message: never dropped"
    if remaining > p.max_messages:
        out.notes.append(f"Only system messages are left and there are more than {p.max_messages}.")
    return out


@_register(
    "clear_non_system", NoParams,
    "Keeps system and developer messages only, as /clear does.",
    "the seed article's /clear",
)
def _clear_non_system(view: _View, p: NoParams) -> _Outcome:
    return _outcome(
        view, [i for i, m in enumerate(view.messages) if m.role in SYSTEM_ROLES],
        lambda i: "/clear keeps only system messages", "system message: /clear keeps it",
    )


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Agents cookbook


@_register(
    "last_turns", LastTurnsParams,
    "Keeps the last max_turns user turns, whole.",
    "OpenAI Agents cookbook TrimmingSession (examples/agents_sdk/session_memory.ipynb)",
)
def _last_turns(view: _View, p: LastTurnsParams) -> _Outcome:
    start = 0
    seen = 0
    for i in range(len(view) - 1, -1, -1):
        if view.messages[i].role == "user":
            seen += 1
            if seen == p.max_turns:
                start = i
                break
    turns = _n(p.max_turns, "user turn")
    out = _outcome(view, range(start, len(view)), lambda i: f"before the last {turns}", f"in the last {turns}")
    if any(view.messages[i].role in SYSTEM_ROLES for i in out.dropped):
        out.notes.append("The system message is in the session here (pin_system is off), so it was trimmed with the old turns.")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Semantic Kernel


def _sk_function_content(m: Message) -> bool:
    return m.role == "tool" or _is_call(m)


def _sk_locate_safe_reduction_index(
    msgs: Sequence[Message], target_count: int, threshold_count: int, has_system_message: bool
) -> int | None:
    """``locate_safe_reduction_index`` of semantic-kernel 1.45 (offset_count 0)."""
    if has_system_message:
        target_count -= 1
        if target_count <= 0:
            return len(msgs)
    threshold_index = len(msgs) - threshold_count - target_count
    if threshold_index <= 0:
        return None
    i = len(msgs) - target_count
    while i >= 0:
        if msgs[i].role in SYSTEM_ROLES:
            break
        if not _sk_function_content(msgs[i]):
            break
        if i - 1 < 0 or not _sk_function_content(msgs[i - 1]):
            break
        i -= 1
    target_index = i
    while i >= threshold_index:
        if msgs[i].role == "user":
            return i
        i -= 1
    return target_index


@_register(
    "sk_truncation", SKTruncationParams,
    "Keeps the last target_count messages, walking back to keep tool calls with their results; keeps the first "
    "system message.",
    "Semantic Kernel Python ChatHistoryTruncationReducer (semantic-kernel 1.45)",
)
def _sk_truncation(view: _View, p: SKTruncationParams) -> _Outcome:
    msgs = view.messages
    if len(msgs) <= p.target_count + p.threshold_count:
        return _keep_all(view, "within target_count + threshold_count: Semantic Kernel does not reduce")
    sys_index = next((i for i, m in enumerate(msgs) if m.role in SYSTEM_ROLES), None)
    would_truncate = sys_index is not None and sys_index < len(msgs) - p.target_count
    idx = _sk_locate_safe_reduction_index(msgs, p.target_count, p.threshold_count, would_truncate)
    if idx is None:
        return _keep_all(view, "Semantic Kernel finds no reduction point")
    kept = list(range(idx, len(msgs)))
    if sys_index is not None and sys_index < idx:
        kept.insert(0, sys_index)
    out = _outcome(
        view, kept,
        lambda i: f"before Semantic Kernel's truncation point (message {view.offset + idx}) for target_count={p.target_count}",
        f"from Semantic Kernel's truncation point (message {view.offset + idx}) on",
    )
    if sys_index is not None and sys_index < idx:
        out.kept_reasons[sys_index] = "the first system message, which Semantic Kernel always keeps"
    if idx == len(msgs):
        out.notes.append(
            "target_count after accounting for the system message is 0: Semantic Kernel keeps only the system message."
        )
    elif len(kept) > p.target_count:
        out.notes.append(
            f"Semantic Kernel keeps {len(kept)} messages for target_count={p.target_count}: it walks back so that "
            f"tool calls stay with their results."
        )
    first_dialogue = next((i for i in kept if i != sys_index), None)
    if first_dialogue is not None and msgs[first_dialogue].role == "assistant":
        out.notes.append("The kept history starts with an assistant message, without the user message before it.")
    return out


# ---------------------------------------------------------------------------------------------------------------
# LlamaIndex


def _llamaindex_text(m: Message) -> str:
    # LlamaIndex counts str(message.content): a tool-call message without text is the string "None".
    if m.content is None:
        return "None"
    if isinstance(m.content, str):
        return m.content
    text = m.text
    return text if text or any(isinstance(p, dict) and p.get("type") == "text" for p in m.content) else "None"


class LlamaIndexContentCount:
    """LlamaIndex's count of a window: cl100k tokens of ``" ".join(contents of history[s:])``, for any start s.

    LlamaIndex re-tokenizes the joined text at every step (quadratic, run-llama/llama_index#12264). Here the text
    is cut where cl100k's pre-tokenizer is known to split anyway, so each piece is tokenized once and a window's
    count is its first piece plus a suffix sum. A cut before message j (whose piece is ``" " + text``) is safe when
    the text before it ends in a non-space character (no pre-token crosses from a word or symbol into the
    following space), or when message j's text starts with a non-space character other than a special token's
    ``<|`` (the joining space then opens message j's first pre-token, and any whitespace before it stays a
    pre-token of its own, as it would at the end of the text). Elsewhere messages are tokenized together.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        self._encode = cl100k_encoding().encode  # LlamaIndex's default tokenizer (gpt-3.5-turbo: cl100k_base)
        n = len(self._texts)
        safe = [False] * (n + 1)  # safe[j]: the cut before message j is safe (j = n: the end)
        safe[n] = True
        for j in range(1, n):
            before, text = self._texts[j - 1], self._texts[j]
            safe[j] = (bool(before) and not before[-1].isspace()) or (
                bool(text) and not text[0].isspace() and not text.startswith("<|")
            )
        self._next_cut = [n] * (n + 1)
        for j in range(n - 1, -1, -1):
            self._next_cut[j] = j + 1 if safe[j + 1] else self._next_cut[j + 1]
        # Tokens from each safe cut to the end, every message with its joining space in front.
        self._suffix: dict[int, int] = {n: 0}
        starts = [j for j in range(1, n) if safe[j]]
        for j in reversed(starts):
            end = self._next_cut[j]
            self._suffix[j] = self._tokens(" " + " ".join(self._texts[j:end])) + self._suffix[end]

    def _tokens(self, text: str) -> int:
        return len(self._encode(text, allowed_special="all")) if text else 0

    def window(self, start: int) -> int:
        """Tokens of the contents of messages ``start`` to the end, joined with spaces."""
        end = self._next_cut[start]
        return self._tokens(" ".join(self._texts[start:end])) + self._suffix[end]


@_register(
    "llamaindex_buffer", LlamaIndexParams,
    "Keeps the newest messages whose contents fit token_limit, never starting on an assistant or tool message.",
    "LlamaIndex ChatMemoryBuffer.get() (llama-index-core 0.14), which counts message content only",
)
def _llamaindex_buffer(view: _View, p: LlamaIndexParams) -> _Outcome:
    msgs = view.messages
    total = len(msgs)
    if not total:
        return _keep_all(view, "")
    contents = LlamaIndexContentCount([_llamaindex_text(m) for m in msgs])

    def count(n: int) -> int:  # tokens of the last n contents joined with spaces
        return contents.window(total - n)

    limit = p.token_limit
    n = total
    reasons: dict[int, str] = {}
    current = count(n)
    while current > limit and n > 1:
        reasons[total - n] = f"outside the newest messages whose content fits {limit:,} tokens (LlamaIndex counts content only)"
        n -= 1
        while n > 1 and msgs[total - n].role in ("tool", "assistant"):
            reasons[total - n] = "dropped so the window does not start on an assistant or tool message (LlamaIndex skips those)"
            n -= 1
        current = count(n)
    out_notes: list[str] = []
    if current > limit or n <= 0:
        n = 1
        for i in range(total - 1):
            reasons.setdefault(i, f"outside the newest messages whose content fits {limit:,} tokens")
        out_notes.append(
            f"Nothing fits in {limit:,} tokens: LlamaIndex returns the last message alone "
            f"({current:,} content tokens), whatever its role."
        )
    kept = list(range(total - n, total))
    out = _outcome(view, kept, reasons.__getitem__, f"newest messages whose content fits {limit:,} tokens")
    out.notes = out_notes + _leading_tool_note(view, kept, "LlamaIndex", "its fallback returns the last message")
    return out


# ---------------------------------------------------------------------------------------------------------------
# memoryviz's recommendation


def _arguments_ok(m: Message) -> bool:
    # Providers want a JSON object; an empty string stands for {} (as chain.py's check says).
    for tc in m.tool_calls:
        text = tc.function.arguments.strip()
        if not text:
            continue
        try:
            if not isinstance(json.loads(text), dict):
                return False
        except ValueError:
            return False
    return True


def _is_empty_assistant(m: Message) -> bool:
    # Blank text is no content; a non-text part (an image) is, as chain.py's empty_assistant check says.
    if m.role != "assistant" or m.tool_calls:
        return False
    if isinstance(m.content, list):
        return not any(
            not isinstance(p, dict) or p.get("type", "text") != "text" or str(p.get("text") or "").strip()
            for p in m.content
        )
    return not (m.content or "").strip()


def _safe_units(msgs: Sequence[Message]) -> list[list[int]]:
    """Every message in exactly one candidate unit, in order: a call message with the tool messages right after
    it, or one message alone (a tool message alone is a result without its call)."""
    units: list[list[int]] = []
    i = 0
    while i < len(msgs):
        j = i + 1
        if _is_call(msgs[i]):
            while j < len(msgs) and msgs[j].role == "tool":
                j += 1
        units.append(list(range(i, j)))
        i = j
    return units


def _check_unit(msgs: Sequence[Message], unit: list[int], newer_ids: set[str]) -> tuple[list[int], str, list[int]]:
    """(the messages the unit sends, why it cannot be sent ("" when it can), tool messages it must leave out)."""
    first = msgs[unit[0]]
    if first.role == "tool":
        return unit, "tool result without its call right before it: dropped, providers reject it", []
    if not _is_call(first):
        if _is_empty_assistant(first):
            return unit, "assistant message with neither content nor tool calls: dropped, providers reject it", []
        return unit, "", []
    ids = [tc.id for tc in first.tool_calls]
    answered: dict[str, int] = {}
    extra: list[int] = []
    for k in unit[1:]:
        cid = msgs[k].tool_call_id or ""
        if cid in ids and cid not in answered:
            answered[cid] = k
        else:
            extra.append(k)
    members = [unit[0], *sorted(answered.values())]
    problem = ""
    if len(set(ids)) != len(ids):
        problem = "its calls share an id"
    elif len(answered) < len(ids):
        missing = [c for c in ids if c not in answered]
        pending = not answered and unit[-1] == len(msgs) - 1
        problem = "its call has no result yet (pending)" if pending else f"call {', '.join(missing)} has no result"
    elif not _arguments_ok(first):
        problem = "its arguments are not a JSON object"
    elif newer_ids.intersection(ids):
        problem = f"a newer exchange reuses its call id {sorted(newer_ids.intersection(ids))[0]}"
    if problem:
        return members, f"tool exchange dropped whole: {problem}, which providers reject", extra
    return members, "", extra


@_register(
    "safe_token_budget", SafeTokenBudgetParams,
    "Drops the oldest whole units (user message, assistant message, tool exchange) until everything fits; "
    "never breaks the tool protocol.",
    "memoryviz's own recommendation",
)
def _safe_token_budget(view: _View, p: SafeTokenBudgetParams) -> _Outcome:
    msgs = view.messages
    budget = p.max_tokens
    units = _safe_units(msgs)
    newest_user = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].role == "user"), None)
    reasons: dict[int, str] = {}
    kept_units: list[list[int]] = []
    total = view.pinned_tokens + view.per_list  # everything sent counts, pinned system messages included
    newer_ids: set[str] = set()
    # From the newest unit back: keep what fits; the first unit that does not fit ends the walk, so what is kept is
    # the longest run of newest units that fits (dropping the oldest until everything fits), and only the units
    # looked at are checked.
    u_no = len(units) - 1
    while u_no >= 0:
        members, problem, extra = _check_unit(msgs, units[u_no], newer_ids)
        for k in extra:
            reasons[k] = "tool result that answers no call of the message before it: dropped, providers reject it"
        if problem:
            for k in members:
                reasons[k] = problem
            u_no -= 1
            continue
        size = sum(view.counts[k] for k in members)
        # The newest user turn is never dropped; without a user message, the newest unit that can be sent.
        floor = members[0] >= newest_user if newest_user is not None else not kept_units
        if not floor and total + size > budget:
            break
        total += size
        kept_units.append(members)
        if _is_call(msgs[members[0]]):
            newer_ids.update(tc.id for tc in msgs[members[0]].tool_calls)
        u_no -= 1
    for unit in units[: u_no + 1]:
        first = msgs[unit[0]]
        what = "tool exchange" if _is_call(first) else f"{first.role} message"
        for k in unit:
            reasons[k] = (
                f"oldest {what} dropped to fit {budget:,} tokens" if k == unit[0]
                else f"dropped with its call (message {view.offset + unit[0]}) to fit {budget:,} tokens"
            )
    kept = sorted(k for unit in kept_units for k in unit)
    out = _outcome(view, kept, reasons.__getitem__, f"newest whole units that fit {budget:,} tokens")
    if total > budget:
        out.budget_exceeded = True
        turn = [k for k in kept if newest_user is not None and k >= newest_user]
        what = "the newest user turn" if turn else "what is left"
        out.notes.append(
            f"Budget exceeded: {what} needs {total:,} tokens with the pinned system messages, more than "
            f"max_tokens={budget:,}; it is kept anyway rather than sending an empty context."
        )
        for k in turn:
            out.kept_reasons[k] = "the newest user turn, kept although the budget is exceeded"
    return out


# ---------------------------------------------------------------------------------------------------------------
# AutoGen reasoning-model example


@_register(
    "strip_thoughts", NoParams,
    "Keeps every message but removes reasoning/thought text from assistant messages.",
    "AutoGen's reasoning-model context example (autogen-core 0.7.5 docs: thought set to None)",
)
def _strip_thoughts(view: _View, p: NoParams) -> _Outcome:
    out = _keep_all(view, "kept unchanged")
    for i, m in enumerate(view.messages):
        if m.role != "assistant":
            continue
        # AutoGen stores the text sent with tool calls in AssistantMessage.thought, so the example drops it too.
        drop_text = bool(m.tool_calls) and m.content not in (None, "", [])
        if m.reasoning is None and not drop_text:
            continue
        update: dict[str, Any] = {"reasoning": None}
        what = ["reasoning"] if m.reasoning is not None else []
        if drop_text:
            update["content"] = None
            what.append("the text sent with the tool calls (AutoGen keeps it as the thought)")
        out.replaced[i] = m.model_copy(update=update)
        out.kept_reasons[i] = f"kept; removed {' and '.join(what)}"
    return out
