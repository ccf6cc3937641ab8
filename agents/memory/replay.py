"""Replay: a strategy applied on each call of a stored run, as the framework applied it then.

A stored session is what an agent accumulated; its framework trimmed that list before *every* model call, not
only at the end. Call number c produced the assistant message at input index ``k``: its input was
``messages[:k]`` (for a framework that keeps a view), or what the strategy kept at the call before plus the
messages added since (for one that replaces its history: ``MEMORY_CARRIED``). One more step, at ``len(messages)``,
is the next call, on the list as it stands: for a view that step is exactly the plain preview of the whole list.

Per call a replay reports what was sent (messages, tokens), the errors a provider would reject in it, and whether
the newest user message before the call was among what was sent; and where the first violation and the first
lost question happen.

How each strategy is replayed (``Replay.method``), for a 10,000-message run at a small multiple of one plain
preview (bench/README.md):

- ``incremental`` (``INCREMENTAL_STRATEGIES``): the strategies of DESIGN.md's table send, at each call, system
  messages (pinned, or kept by the strategy) and then one contiguous slice ``messages[s:e]`` of the input, or two
  (head_and_tail: head, placeholder, tail; token_limited: the two ends middle-out removal leaves). Where the slices
  start and end is found from arrays built once for the run (prefix sums of the token counts, positions of user
  messages, unit starts) by bisection, or by a pointer that only moves forward; tokens sent are prefix-sum
  differences; the errors of every slice are counted at once by ``SliceViolations`` (O(n log n) for the whole run),
  two slices sent together by ``SliceViolations.joined_counts``. Assumptions, checked by the property tests against
  trimming each call's input from scratch: ``llamaindex_buffer``'s pointer assumes what LlamaIndex counts never
  shrinks when a message is added (true of cl100k on joined text in practice); ``safe_token_budget`` keeps whole valid
  units by construction, so it sends no violation.
- ``per call, bounded``: in a session that reuses a call id across messages, the two parts of head_and_tail and
  token_limited cannot be counted apart, so the list they send is checked at every call (the cost per call is
  what is sent, bounded by head_size + tail_size or by the budget, not the history); safe_token_budget, whose
  "a newer exchange reuses its call id" rule depends on what it kept, is trimmed per call.
- ``carried``: a strategy whose framework replaces its history (Semantic Kernel's reducer truncates the history
  object) trims, at each call, what it held after the previous call plus the messages added since.
  sk_truncation does it on positions (what it holds is system messages and one contiguous range); any other
  carried strategy runs one ``trim`` per call on what it holds.
- ``after each turn``: a framework that trims its history when a turn (an agent invocation) ends (Strands'
  sliding window) trims what it held plus the turn's messages there, once per turn; each call inside a turn
  sends what it held plus the turn's messages so far, untrimmed. Errors are counted by ``SliceViolations``
  while what it holds is system messages and one contiguous range (else checked on the list sent).
- ``per call``: a strategy without an incremental replay (for now the 2026 clearing strategies, such as
  langchain_clear_tool_uses, whose edits depend on where each call's keep boundary falls), or any strategy with
  ``incremental=False``, is trimmed on each call's input from scratch, which is quadratic; past
  ``PER_CALL_WORK`` message-trims the calls are sampled at a stride, and the replay says so.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from agents.memory.chain import _arguments_problem, _gc_paused, _has_content, find_violations
from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.tokens import DEFAULT_COUNTER, TokenCounter, count_messages, get_counter
from agents.memory.trimming import (
    MEMORY_AFTER_TURN,
    MEMORY_CARRIED,
    MEMORY_KINDS,
    Dropped,
    Edited,
    Inserted,
    StrategySpec,
    TrimResult,
    get_strategy,
    strategy_spec,
    trim,
)
from agents.memory.trimming.registry import View, _in_input_terms

# Past this many messages trimmed in total (the sum of each call's input length), a strategy replayed per call
# is sampled at a stride: 10,000 messages with 4,000 calls would otherwise be 20 million message-trims. A trim
# costs a few microseconds per message, so this is one to three seconds.
PER_CALL_WORK = 300_000

METHOD_INCREMENTAL = "incremental"
METHOD_BOUNDED = "per call, bounded"
METHOD_CARRIED = "carried"
METHOD_AFTER_TURN = "after each turn"
METHOD_PER_CALL = "per call"


# ---------------------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class ReplayStep:
    call: int  # input index of the assistant message this call produced; len(messages) for the next call
    sent: int  # messages sent, pinned and inserted ones included
    tokens: int  # tokens sent (reply priming included)
    tokens_input: int  # tokens of everything before the call: what an untrimmed call would have sent
    errors: int  # violations a provider rejects in what was sent
    question_kept: bool | None  # the newest user message before the call was sent; None: there was none

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call, "sent": self.sent, "tokens": self.tokens, "tokens_input": self.tokens_input,
            "errors": self.errors, "question_kept": self.question_kept,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its fields (a replay is cached, one step per call): a frozen slots dataclass's own state
        # protocol looks up ``dataclasses.fields`` per object, most of a cached 50,000-message preview's unpickling.
        return (ReplayStep, (self.call, self.sent, self.tokens, self.tokens_input, self.errors, self.question_kept))


_QUESTION = {None: -1, False: 0, True: 1}
_QUESTION_OF = (False, True, None)  # by the stored code: 0, 1, -1


class Steps(Sequence[ReplayStep]):
    """A run's steps as columns of machine integers, one entry per call: a long run has one step per call (100,000
    at 200,000 messages), held and pickled (the replay is cached) at 41 bytes a step, where a ``ReplayStep`` object
    each took about 130 and its pickling most of a cached replay's. A step is made when it is read."""

    __slots__ = ("call", "sent", "tokens", "tokens_input", "errors", "question")

    def __init__(self) -> None:
        self.call, self.sent, self.tokens = array("q"), array("q"), array("q")
        self.tokens_input, self.errors = array("q"), array("q")
        self.question = array("b")  # question_kept: -1 None, 0 False, 1 True

    @classmethod
    def of(cls, steps: Iterable[ReplayStep]) -> Steps:
        made = cls()
        for step in steps:
            made.append(step.call, step.sent, step.tokens, step.tokens_input, step.errors, step.question_kept)
        return made

    def append(self, call: int, sent: int, tokens: int, tokens_input: int, errors: int,
               question_kept: bool | None) -> None:
        self.call.append(call)
        self.sent.append(sent)
        self.tokens.append(tokens)
        self.tokens_input.append(tokens_input)
        self.errors.append(errors)
        self.question.append(_QUESTION[question_kept])

    def __len__(self) -> int:
        return len(self.call)

    @overload
    def __getitem__(self, index: int) -> ReplayStep: ...

    @overload
    def __getitem__(self, index: slice) -> list[ReplayStep]: ...

    def __getitem__(self, index: int | slice) -> ReplayStep | list[ReplayStep]:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        return ReplayStep(self.call[index], self.sent[index], self.tokens[index], self.tokens_input[index],
                          self.errors[index], _QUESTION_OF[self.question[index]])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def first(self, column: str, value: int | None = None) -> int | None:
        """The first step whose ``column`` is not 0 (``value`` None) or is ``value``: searched in the column."""
        values: array[int] = getattr(self, column)
        if value is None:
            return next(itertools.compress(itertools.count(), values), None)
        try:
            return values.index(value)
        except ValueError:
            return None


def step_column(steps: Sequence[ReplayStep], name: str) -> Sequence[int]:
    """One field of every step (``tokens``, ``tokens_input``, ``errors``, ``call``, ``sent``; ``question_lost``: 1
    where ``question_kept`` is False): a column of ``Steps`` as it is held, or read from each step of a list."""
    if name == "question_lost":
        if isinstance(steps, Steps):
            return bytes(code == 0 for code in steps.question)
        return [s.question_kept is False for s in steps]
    if isinstance(steps, Steps):
        column: Sequence[int] = getattr(steps, name)
        return column
    return [getattr(s, name) for s in steps]


@dataclass
class Replay:
    strategy: str
    params: dict[str, Any]
    counter: str
    memory: str  # MEMORY_KINDS: how the framework keeps what it trimmed
    method: str  # how the replay was computed (module docstring)
    steps: Sequence[ReplayStep]  # a list, or Steps (the incremental replays of long runs)
    total_calls: int  # steps of the run, the next call included (more than len(steps) when sampled)
    stride: int = 1  # 1: every call; n: every n-th call and the last (per call replays of long runs)
    notes: list[str] = field(default_factory=list)

    @property
    def first_violation(self) -> int | None:
        """Position in ``steps`` of the first call that sent something a provider rejects."""
        if isinstance(self.steps, Steps):
            return self.steps.first("errors")
        return next((k for k, s in enumerate(self.steps) if s.errors), None)

    @property
    def first_question_lost(self) -> int | None:
        """Position in ``steps`` of the first call whose newest user message was not sent."""
        if isinstance(self.steps, Steps):
            return self.steps.first("question", _QUESTION[False])
        return next((k for k, s in enumerate(self.steps) if s.question_kept is False), None)

    @property
    def breaks_at_some_call(self) -> bool:
        return self.first_violation is not None

    @property
    def breaks_at_the_end(self) -> bool:
        return bool(self.steps) and self.steps[-1].errors > 0

    def to_dict(self) -> dict[str, Any]:
        first_v, first_q = self.first_violation, self.first_question_lost
        return {
            "strategy": self.strategy,
            "params": self.params,
            "counter": self.counter,
            "memory": self.memory,
            "memory_text": MEMORY_KINDS[self.memory],
            "method": self.method,
            "calls": self.total_calls,
            "stride": self.stride,
            "first_violation": None if first_v is None else self.steps[first_v].call,
            "first_question_lost": None if first_q is None else self.steps[first_q].call,
            "breaks_at_some_call": self.breaks_at_some_call,
            "breaks_at_the_end": self.breaks_at_the_end,
            "steps": [s.to_dict() for s in self.steps],
            "notes": list(self.notes),
        }


def call_positions(messages: Sequence[Message]) -> list[int]:
    """Where each call of the run stands: the index of every assistant message, then ``len(messages)``."""
    return [k for k, m in enumerate(messages) if m.role == "assistant"] + [len(messages)]


# ---------------------------------------------------------------------------------------------------------------
# Errors of many slices at once


def _ints(value: int, size: int) -> array[int]:
    """``size`` copies of ``value`` as a machine-integer array: the per-message arrays of a replay (prefix sums,
    positions) at 8 bytes an entry where a list of Python ints takes about 40, which made the replay the peak of
    a long session's preview (bench/README.md)."""
    return array("q", [value]) * size


class _Fenwick:
    __slots__ = ("tree",)

    def __init__(self, size: int) -> None:
        self.tree = _ints(0, size + 1)

    def add(self, position: int, weight: int) -> None:
        i = position + 1
        tree = self.tree
        while i < len(tree):
            tree[i] += weight
            i += i & -i

    def below(self, position: int) -> int:
        """Sum of the weights at positions < ``position``."""
        i, total, tree = position, 0, self.tree
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


class SliceViolations:
    """How many errors ``find_violations(messages[s:e], pending_severity="error")`` reports, for many slices.

    Every kind depends on the slice only through its two ends, once each message's relations in the whole list
    are known: a result pairs with the latest earlier call of its id (if that call is in the slice; else it is
    a leading or orphan result), a call is answered in the slice when its first result is before ``e``, a call
    reuses an id when an earlier call of that id is in the slice, a result comes late when its exchange closed
    (at the next non-tool message) before it. So the count of a slice is prefix sums of per-message kinds plus
    weighted pairs (x, y) counted when ``s <= x`` and ``y < e``; ``counts`` answers all slices in one sweep with a
    Fenwick tree. System messages sent before the slice (pinned, or kept by the strategy) change nothing: in the
    openai profile, leading system messages close no exchange and start nothing.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        n = len(messages)
        self.n = n
        intrinsic = _ints(0, n + 1)  # prefix sums: empty assistants, invalid arguments, an id twice in one message
        tools = _ints(0, n + 1)  # prefix sums of tool messages
        no_call = _ints(0, n + 1)  # prefix sums of tool messages whose id no earlier call used
        calls = _ints(0, n + 1)  # prefix sums of calls (an id repeated inside one message counts once)
        self.first_dialogue = _ints(n, n + 1)  # first user/assistant message at or after each position
        next_non_tool = _ints(n, n + 1)
        for i in range(n - 1, -1, -1):
            role = messages[i].role
            self.first_dialogue[i] = i if role in ("user", "assistant") else self.first_dialogue[i + 1]
            next_non_tool[i] = next_non_tool[i + 1] if role == "tool" else i

        self.pairs: list[tuple[int, int, int]] = []  # (x, y, weight): counted when s <= x and y < e
        # Every result whose id was called: its call's number and its own index, as machine integers (a long run
        # has one per tool message; ``call_results`` is made from them when first asked).
        self.result_calls = _ints(0, 0)
        self.result_at = _ints(0, 0)
        latest: dict[str, int] = {}  # id -> number of its latest call
        call_message: list[int] = []  # call number -> message index
        first_result: list[int | None] = []
        self._call_results: list[list[int]] | None = None
        self.unique_ids = True  # no call id is used by calls of two messages
        for i, m in enumerate(messages):
            own = has_no_call = 0
            n_calls = 0
            if m.role == "tool":
                cid = m.tool_call_id or ""
                number = latest.get(cid)
                if number is None:
                    has_no_call = 1
                else:
                    self.result_calls.append(number)
                    self.result_at.append(i)
                    if first_result[number] is None:
                        first_result[number] = i
                    else:  # a second result for a call that has one
                        self.pairs.append((call_message[number], i, 1))
            elif m.role == "assistant":
                if not m.tool_calls:
                    own += not _has_content(m.content)
                seen: set[str] = set()
                for tc in m.tool_calls:
                    own += _arguments_problem(tc.function.arguments) is not None
                    if tc.id in seen:
                        own += 1
                        continue
                    seen.add(tc.id)
                    earlier = latest.get(tc.id)
                    if earlier is not None:  # reuses the id of an earlier call
                        self.pairs.append((call_message[earlier], i, 1))
                        self.unique_ids = False
                    latest[tc.id] = len(call_message)
                    call_message.append(i)
                    first_result.append(None)
                    n_calls += 1
            intrinsic[i + 1] = intrinsic[i] + own
            tools[i + 1] = tools[i] + (m.role == "tool")
            no_call[i + 1] = no_call[i] + has_no_call
            calls[i + 1] = calls[i] + n_calls
        self.late_calls: list[tuple[int, int]] = []  # (message, call number) of calls answered after their exchange
        for number, j in enumerate(call_message):
            r = first_result[number]
            if r is None:
                continue
            self.pairs.append((j, r, -1))  # answered in any slice that holds both: not unanswered
            if r > next_non_tool[j + 1]:  # its exchange closed before the result: interrupted
                self.pairs.append((j, r, 1))
                self.late_calls.append((j, number))
        self.next_non_tool = next_non_tool
        self.call_message = call_message
        self.last_non_tool = _ints(-1, n + 1)  # the newest non-tool message before each position
        for i, m in enumerate(messages):
            self.last_non_tool[i + 1] = i if m.role != "tool" else self.last_non_tool[i]
        self.intrinsic, self.tools, self.no_call, self.calls = intrinsic, tools, no_call, calls
        below_y = _ints(0, n + 1)
        for _, y, w in self.pairs:
            below_y[y + 1] += w
        for i in range(n):
            below_y[i + 1] += below_y[i]
        self._pair_weight_below = below_y  # sum of pair weights with y < e

    def counts(self, slices: Sequence[tuple[int, int]]) -> list[int]:
        """The error count of each ``messages[s:e]``."""
        # Each slice needs D(s, e) = sum of weights of the points with x < s and y < e, for pairs and for results
        # (three answers per slice, kept in a machine-integer array: a long run has one slice per call).
        call_message = self.call_message
        results = zip(self.result_calls, self.result_at, strict=True)
        points = (sorted(self.pairs), sorted((call_message[number], y, 1) for number, y in results))
        order = sorted(range(len(slices)), key=lambda q: slices[q][0])
        answers = self._crossing_sweep(slices, order, points)
        if answers is None:
            answers = self._tree_sweep(slices, order, points)
        out = []
        for q, (s, e) in enumerate(slices):
            if e <= s:
                out.append(0)
                continue
            f = min(self.first_dialogue[s], e)
            leading = self.tools[f] - self.tools[s]
            orphans = (self.no_call[e] - self.no_call[f]) + (answers[3 * q + 1] - answers[3 * q + 2])
            pairs = self._pair_weight_below[e] - answers[3 * q]
            out.append(
                self.intrinsic[e] - self.intrinsic[s] + leading + orphans + pairs + self.calls[e] - self.calls[s]
            )
        return out

    # A point (x, y) has x <= y, and in a session nearly every point joins a call to a result a few messages on, so
    # D(s, e) = (weights with x < s) - (weights of the points that cross s, x < s <= y, with y >= e). The points
    # crossing s are few: the calls still waiting for a result at s, and ids reused across it.
    CROSSING_LIMIT = 64

    def _crossing_sweep(
        self, slices: Sequence[tuple[int, int]], order: list[int], points: tuple[list[tuple[int, int, int]], ...]
    ) -> array[int] | None:
        """The answers from prefix sums over x and the points crossing each slice's start, kept in a heap by y as
        the sweep moves by s (None when more than ``CROSSING_LIMIT`` cross one start: then the tree is cheaper)."""
        answers = _ints(0, 3 * len(slices))
        n, first_dialogue, limit = self.n, self.first_dialogue, self.CROSSING_LIMIT
        push, pop = heapq.heappush, heapq.heappop
        for which, pts in enumerate(points):
            by_x = _ints(0, n + 1)
            for x, _, w in pts:
                by_x[x + 1] += w
            below_x = array("q", itertools.accumulate(by_x))  # the weights of the points with x < s
            heap: list[tuple[int, int]] = []  # (y, weight) of the points with x < s <= y
            k, end = 0, len(pts)
            for q in order:
                s, e = slices[q]
                while k < end and pts[k][0] < s:
                    push(heap, pts[k][1:])
                    k += 1
                while heap and heap[0][0] < s:
                    pop(heap)
                below = below_x[s]
                if not heap:
                    if which:
                        answers[3 * q + 1] = answers[3 * q + 2] = below
                    else:
                        answers[3 * q] = below
                    continue
                if len(heap) > limit:
                    return None
                if which:
                    f = min(first_dialogue[s], e)
                    answers[3 * q + 1] = below - sum([w for y, w in heap if y >= e])
                    answers[3 * q + 2] = below - sum([w for y, w in heap if y >= f])
                else:
                    answers[3 * q] = below - sum([w for y, w in heap if y >= e])
        return answers

    def _tree_sweep(
        self, slices: Sequence[tuple[int, int]], order: list[int], points: tuple[list[tuple[int, int, int]], ...]
    ) -> array[int]:
        """The answers from one sweep over the slices by s, adding points by x into a tree indexed by y."""
        answers = _ints(0, 3 * len(slices))
        trees = (_Fenwick(self.n + 1), _Fenwick(self.n + 1))
        next_point = [0, 0]
        for q in order:
            s, e = slices[q]
            for which in (0, 1):
                pts, tree, k = points[which], trees[which], next_point[which]
                while k < len(pts) and pts[k][0] < s:
                    tree.add(pts[k][1], pts[k][2])
                    k += 1
                next_point[which] = k
            answers[3 * q] = trees[0].below(e)
            answers[3 * q + 1] = trees[1].below(e)
            answers[3 * q + 2] = trees[1].below(min(self.first_dialogue[s], e))
        return answers

    def joined_counts(self, parts: Sequence[tuple[int, int, int, int]], *, separated: bool) -> list[int]:
        """The error count of ``messages[a0:a1] + messages[b0:b1]`` for each (a0, a1, b0, b1), a1 <= b0, with a
        user message between the two parts when ``separated`` (AutoGen's "Skipped N messages." placeholder).

        Only for sessions whose call ids are unique (``unique_ids``). Then the two parts interact only through
        calls of A answered in B: counted apart, such a call is unanswered in A and its result an orphan in B (2);
        joined, the call is answered, late (1) if anything but results came between them, else not (0). Every
        other kind keeps its count: a second result in B is a duplicate instead of an orphan, B's leading results
        become orphans, and a call of A that B does not answer stays unanswered."""
        if not self.unique_ids:
            raise ValueError("joined_counts needs a session whose call ids are unique")
        separate = self.counts([(a0, a1) for a0, a1, _, _ in parts] + [(b0, b1) for _, _, b0, b1 in parts])
        out = []
        for q, (a0, a1, b0, b1) in enumerate(parts):
            total = separate[q] + separate[len(parts) + q]
            if a0 < a1 and b0 < b1:
                total += sum(late - 2 for late in self._answered_across(a0, a1, b0, b1, separated))
            out.append(total)
        return out

    @property
    def call_results(self) -> list[list[int]]:
        """Call number -> the results that pair with it, in order."""
        if self._call_results is None:
            made: list[list[int]] = [[] for _ in self.call_message]
            for number, i in zip(self.result_calls, self.result_at, strict=True):
                made[number].append(i)
            self._call_results = made
        return self._call_results

    def _answered_across(self, a0: int, a1: int, b0: int, b1: int, separated: bool) -> Iterator[int]:
        """For each call of A whose first result in A + B is in B: 1 if it comes late there, else 0."""
        candidates: set[int] = set()
        x = self.last_non_tool[a1]  # the exchange still open at the end of A
        if x >= a0:  # its calls: numbered in message order, so a run of call_message
            calls = self.call_message
            candidates.update(range(bisect.bisect_left(calls, x), bisect.bisect_right(calls, x)))
        lo = bisect.bisect_left(self.late_calls, (a0, -1))
        hi = bisect.bisect_left(self.late_calls, (a1, -1))
        candidates.update(number for _, number in self.late_calls[lo:hi])
        first_b = self.next_non_tool[b0]
        for number in candidates:
            results = self.call_results[number]
            k = bisect.bisect_left(results, a0)
            if k < len(results) and results[k] < a1:
                continue  # answered inside A
            k = bisect.bisect_left(results, b0)
            if k == len(results) or results[k] >= b1:
                continue
            t = results[k]
            j = self.call_message[number]
            yield 1 if separated or self.next_non_tool[j + 1] < a1 or first_b < t else 0

# ---------------------------------------------------------------------------------------------------------------
# The run's arrays, built once


class _Run:
    def __init__(self, messages: Sequence[Message], counts: Sequence[int], tc: TokenCounter, pin: bool) -> None:
        self.messages = messages
        self.n = n = len(messages)
        self.counts = counts
        self.tc = tc
        self.per_list = tc.per_list
        g = _ints(0, n + 1)
        for i, c in enumerate(counts):
            g[i + 1] = g[i] + c
        self.g = g
        lead = 0
        while lead < n and messages[lead].role in SYSTEM_ROLES:
            lead += 1
        self.lead = lead
        # Every call stands at an assistant message or at the end, never inside the leading system run, so what
        # a pinning strategy sets aside is the same at every call: the view starts at v0.
        self.v0 = lead if pin else 0
        self.calls = call_positions(messages)
        self.last_user = _ints(-1, n + 1)  # newest user message before each position
        for i, m in enumerate(messages):
            self.last_user[i + 1] = i if m.role == "user" else self.last_user[i]

    def question(self, k: int, kept: Any) -> bool | None:
        u = self.last_user[k]
        return None if u < 0 else kept(u)


@dataclass(slots=True)
class _Window:
    """What one call sends: ``extra`` system messages (pinned, or kept by the strategy) then messages[start:end];
    for strategies that keep two parts, then ``between`` (a placeholder, or nothing) and messages[start2:end2]."""

    start: int
    end: int
    extra: int = 0
    extra_tokens: int = 0
    tokens: int | None = None  # when the slice's messages were changed (strip_thoughts): the total sent
    start2: int = 0
    end2: int = 0
    between: Message | None = None
    between_tokens: int = 0


def _system_prefix(run: _Run) -> tuple[list[int], list[int]]:
    n, msgs = run.n, run.messages
    count, tokens = [0] * (n + 1), [0] * (n + 1)
    for i in range(n):
        is_system = msgs[i].role in SYSTEM_ROLES
        count[i + 1] = count[i] + is_system
        tokens[i + 1] = tokens[i] + (run.counts[i] if is_system else 0)
    return count, tokens


def _autogen_unit_starts(run: _Run) -> list[int]:
    # AutoGen holds a run of tool results as one message: a unit starts wherever a tool follows no tool.
    msgs = run.messages
    return [
        x for x in range(run.v0, run.n) if x == run.v0 or not (msgs[x].role == "tool" and msgs[x - 1].role == "tool")
    ]


# --- one generator per strategy: a _Window (or a finished ReplayStep) per call ---------------------------------


def _unbounded(run: _Run, p: Any) -> Iterator[_Window]:
    for k in run.calls:
        yield _Window(0, k)


def _openmanus_window(run: _Run, p: Any) -> Iterator[_Window]:
    v0 = run.v0
    for k in run.calls:
        start = v0 if p.max_messages == 0 else max(v0, k - p.max_messages)
        yield _Window(start, k, v0, run.g[v0])


def _buffered(run: _Run, p: Any) -> Iterator[_Window]:
    starts, msgs, v0 = _autogen_unit_starts(run), run.messages, run.v0
    for k in run.calls:
        m = bisect.bisect_left(starts, k)
        first = max(0, m - p.buffer_size)
        start = starts[first] if first < m else k
        if start < k and msgs[start].role == "tool":  # AutoGen removes one leading result message
            start = starts[first + 1] if first + 1 < m else k
        yield _Window(start, k, v0, run.g[v0])


def _langchain_types(p_value: Any) -> set[str]:
    types = [p_value] if isinstance(p_value, str) else list(p_value or [])
    roles = {"system": ("system", "developer"), "human": ("user",), "ai": ("assistant",), "tool": ("tool",)}
    return {role for t in types for role in roles[t]}


def _last_match(run: _Run, roles: set[str]) -> list[int]:
    """For each position x (0..n), the newest message before x whose role is in ``roles`` (-1: none)."""
    out = [-1] * (run.n + 1)
    for i, m in enumerate(run.messages):
        out[i + 1] = i if m.role in roles else out[i]
    return out


def _next_match(run: _Run, roles: set[str]) -> list[int]:
    """For each position x, the first message at or after x whose role is in ``roles`` (n: none)."""
    out = [run.n] * (run.n + 1)
    for i in range(run.n - 1, -1, -1):
        out[i] = i if run.messages[i].role in roles else out[i + 1]
    return out


def _langchain_last(run: _Run, p: Any) -> Iterator[_Window]:
    g, v0, per_list = run.g, run.v0, run.per_list
    end_match = _last_match(run, _langchain_types(p.end_on)) if p.end_on else None
    start_match = _next_match(run, _langchain_types(p.start_on)) if p.start_on else None
    for k in run.calls:
        end = k
        if end_match is not None:
            end = max(end_match[k] + 1, v0)
        start, extra, extra_tokens = v0, v0, g[v0]
        remaining = p.max_tokens
        if p.include_system and end > v0 and run.messages[v0].role in SYSTEM_ROLES:
            start, extra, extra_tokens = v0 + 1, v0 + 1, g[v0 + 1]
            remaining = max(0, p.max_tokens - (run.counts[v0] + per_list))
        # The newest messages that fit: the smallest s with g[end] - g[s] <= remaining - per_list.
        s = bisect.bisect_left(g, g[end] - (remaining - per_list), start, end)
        if start_match is not None:
            s = min(start_match[s], end)
        yield _Window(s, end, extra, extra_tokens)


def _langchain_first(run: _Run, p: Any) -> Iterator[_Window]:
    g, v0, per_list = run.g, run.v0, run.per_list
    end_match = _last_match(run, _langchain_types(p.end_on)) if p.end_on else None
    for k in run.calls:
        # The oldest messages that fit: the largest e with g[e] - g[v0] <= max_tokens - per_list.
        end = bisect.bisect_right(g, g[v0] + p.max_tokens - per_list, v0 + 1, k + 1) - 1
        if end_match is not None:
            end = max(end_match[end] + 1, v0)
        yield _Window(v0, end, v0, g[v0])


def _safe_window(run: _Run, p: Any) -> Iterator[_Window]:
    v0, msgs = run.v0, run.messages
    sys_count, sys_tokens = _system_prefix(run)
    non_system = [i for i in range(v0, run.n) if msgs[i].role not in SYSTEM_ROLES]
    next_non_tool = _ints(run.n, run.n + 1)
    for i in range(run.n - 1, -1, -1):
        next_non_tool[i] = next_non_tool[i + 1] if msgs[i].role == "tool" else i
    for k in run.calls:
        need = (k - v0) - p.max_messages  # non-system messages to drop
        if need <= 0:
            yield _Window(v0, k, v0, run.g[v0])
            continue
        available = bisect.bisect_left(non_system, k)
        if need > available:
            cut = k  # only system messages are left
        else:
            # Just after the need-th non-system message, then past the tool messages that go with it.
            cut = min(next_non_tool[non_system[need - 1] + 1], k)
        yield _Window(cut, k, v0 + sys_count[cut] - sys_count[v0], run.g[v0] + sys_tokens[cut] - sys_tokens[v0])


def _last_turns(run: _Run, p: Any) -> Iterator[_Window]:
    v0 = run.v0
    users = [i for i in range(v0, run.n) if run.messages[i].role == "user"]
    for k in run.calls:
        m = bisect.bisect_left(users, k)
        start = users[m - p.max_turns] if m >= p.max_turns else v0
        yield _Window(start, k, v0, run.g[v0])


def _clear_non_system(run: _Run, p: Any) -> Iterator[_Window]:
    sys_count, sys_tokens = _system_prefix(run)
    for k in run.calls:
        yield _Window(k, k, sys_count[k], sys_tokens[k])


def _strip_thoughts(run: _Run, p: Any) -> Iterator[_Window]:
    # Each message is changed on its own, whatever comes before or after: strip the whole list once.
    strat = get_strategy("strip_thoughts")
    v0 = run.v0
    view = View(list(run.messages[v0:]), list(run.counts[v0:]), run.per_list, run.g[v0], run.tc, v0)
    out = strat.run(view, p)
    changed = [0] * (run.n + 1)
    for i in range(run.n):
        copy = out.replaced.get(i - v0) if i >= v0 else None
        changed[i + 1] = changed[i] + (run.tc.count(copy) if copy is not None else run.counts[i])
    for k in run.calls:
        yield _Window(0, k, tokens=changed[k] + run.per_list)


def _llamaindex_buffer(run: _Run, p: Any) -> Iterator[_Window]:
    from agents.memory.trimming.llamaindex import _llamaindex_text

    v0, msgs, limit = run.v0, run.messages, p.token_limit
    contents = _PrefixContentCount([_llamaindex_text(m) for m in msgs])
    skip = ("tool", "assistant")
    pointer = v0
    for k in run.calls:
        if k <= v0:
            yield _Window(k, k, v0, run.g[v0])
            continue
        s = max(pointer, v0)
        # LlamaIndex tries the whole view, then later starts that are not assistant or tool messages, and ends on
        # the last message alone. A start rejected at an earlier call is rejected now (counts only grow).
        while s < k - 1:
            candidate = s == v0 or msgs[s].role not in skip
            if candidate and contents.tokens(s, k) <= limit:
                break
            s += 1
        pointer = s
        yield _Window(s, k, v0, run.g[v0])


class _PrefixContentCount:
    """LlamaIndex's count of ``" ".join(texts[s:e])`` for any window, tokenizing each piece once.

    The same safe cuts as ``LlamaIndexContentCount`` (where cl100k's pre-tokenizer splits anyway; they depend
    only on the two texts around them), so a window is its first piece, whole pieces summed by prefix sums, and
    the text from the last cut to its end.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        from agents.memory.tokens import cl100k_encoding

        self._texts = list(texts)
        self._encode = cl100k_encoding().encode
        n = len(self._texts)
        self._cuts = [0]  # safe cuts, ascending (0 is the start)
        for j in range(1, n):
            before, text = self._texts[j - 1], self._texts[j]
            if (bool(before) and not before[-1].isspace()) or (
                bool(text) and not text[0].isspace() and not text.startswith("<|")
            ):
                self._cuts.append(j)
        self._cuts.append(n)
        self._piece_sums = [0]  # tokens of the pieces between consecutive cuts, each with its joining space
        for a, b in itertools.pairwise(self._cuts[1:]):
            self._piece_sums.append(self._piece_sums[-1] + self._tokens(" " + " ".join(self._texts[a:b])))
        self._head: dict[tuple[int, int], int] = {}
        self._tail: dict[tuple[int, int], int] = {}

    def _tokens(self, text: str) -> int:
        return len(self._encode(text, allowed_special="all")) if text else 0

    def tokens(self, start: int, end: int) -> int:
        cuts = self._cuts
        first = bisect.bisect_right(cuts, start)  # the first cut after start
        if first >= len(cuts) or cuts[first] >= end:
            key = (start, end)
            if key not in self._head:
                self._head[key] = self._tokens(" ".join(self._texts[start:end]))
            return self._head[key]
        last = bisect.bisect_right(cuts, end) - 1  # the last cut at or before end
        head_key = (start, cuts[first])
        if head_key not in self._head:
            self._head[head_key] = self._tokens(" ".join(self._texts[start : cuts[first]]))
        whole = self._piece_sums[last - 1] - self._piece_sums[first - 1]  # pieces from cuts[first] to cuts[last]
        tail = 0
        if cuts[last] < end:
            tail_key = (cuts[last], end)
            if tail_key not in self._tail:
                self._tail[tail_key] = self._tokens(" " + " ".join(self._texts[cuts[last] : end]))
            tail = self._tail[tail_key]
        return self._head[head_key] + whole + tail


def _reuses_call_ids(messages: Sequence[Message]) -> bool:
    """A call id used by calls of two different messages (inside one message it is the unit's own problem)."""
    seen: set[str] = set()
    for m in messages:
        ids = {tc.id for tc in m.tool_calls}
        if ids & seen:
            return True
        seen |= ids
    return False


def _safe_token_budget(run: _Run, p: Any) -> Iterator[ReplayStep]:
    """safe_token_budget keeps the newest user message and the newest sendable units that fit (the newest one
    after the user message whatever it costs); every other unit that can be sent is older than the first that
    did not fit. A complete unit's verdict is the same at every call, so prefix sums over units find, by
    bisection, where the kept units start; only the unit cut by the call is checked again. What it keeps is
    whole valid units, so it sends no violation (sessions that reuse call ids across messages go per call)."""
    from agents.memory.trimming.safe_budget import _check_unit, _safe_units

    msgs, counts, v0, budget = run.messages, run.counts, run.v0, p.max_tokens
    units = [[v0 + i for i in u] for u in _safe_units(msgs[v0:])]
    starts = [u[0] for u in units]
    size = [0] * (len(units) + 1)  # prefix sums over units of the tokens sent (0 for a unit that cannot be)
    sent = [0] * (len(units) + 1)  # prefix sums over units of the messages sent
    newest_ok = [-1] * (len(units) + 1)  # newest unit before each unit number that can be sent
    for u_no, unit in enumerate(units):
        members, problem, _ = _check_unit(msgs, unit, set())
        size[u_no + 1] = size[u_no] + (0 if problem else sum(counts[i] for i in members))
        sent[u_no + 1] = sent[u_no] + (0 if problem else len(members))
        newest_ok[u_no + 1] = newest_ok[u_no] if problem else u_no
    base = run.g[v0] + run.per_list
    for k in run.calls:
        m = bisect.bisect_left(starts, k)  # units before the call; the last may be cut by it
        tokens_input = run.g[k] + run.per_list
        u = run.last_user[k]
        question = None if u < 0 else True
        if m == 0:
            yield ReplayStep(k, v0, base, tokens_input, 0, question)
            continue
        last = [i for i in units[m - 1] if i < k]
        members, problem, _ = _check_unit(msgs, last, set())  # only whether it can be sent: msgs may go on
        last_size = 0 if problem else sum(counts[i] for i in members)
        last_sent = 0 if problem else len(members)
        user_unit = bisect.bisect_left(starts, u) if u >= 0 else None
        lo, hi = 0, m  # the smallest a whose units fit (what is sent only shrinks as a grows)
        while lo < hi:
            mid = (lo + hi) // 2
            user = counts[u] if user_unit is not None and user_unit < mid else 0
            if base + user + _from_unit(size, m, mid, last_size) <= budget:
                hi = mid
            else:
                lo = mid + 1
        a = lo
        newest = m - 1 if not problem else newest_ok[m - 1]
        if newest == user_unit:  # the newest sendable unit besides the user message is older than it
            newest = -1
        if newest >= 0 and (user_unit is None or newest > user_unit) and a > newest:
            a = newest  # the floor: the newest step is sent whatever it costs
        tokens = base + _from_unit(size, m, a, last_size)
        n_sent = v0 + _from_unit(sent, m, a, last_sent)
        if user_unit is not None and user_unit < a:
            tokens += counts[u]
            n_sent += 1
        yield ReplayStep(k, n_sent, tokens, tokens_input, 0, question)


def _from_unit(table: list[int], m: int, a: int, last_value: int) -> int:
    """The sum over units a .. m-1 of a prefix-sum table, the last one (cut by the call) counted as ``last_value``."""
    return table[m - 1] - table[min(a, m - 1)] + (last_value if a <= m - 1 else 0)


_INCREMENTAL = {
    "unbounded": _unbounded,
    "openmanus_window": _openmanus_window,
    "buffered": _buffered,
    "langchain_last": _langchain_last,
    "langchain_first": _langchain_first,
    "safe_window": _safe_window,
    "last_turns": _last_turns,
    "clear_non_system": _clear_non_system,
    "strip_thoughts": _strip_thoughts,
    "llamaindex_buffer": _llamaindex_buffer,
}


def _head_and_tail(run: _Run, p: Any) -> Iterator[_Window]:
    from agents.memory.trimming.registry import is_call

    starts, msgs, v0 = _autogen_unit_starts(run), run.messages, run.v0
    placeholders: dict[int, tuple[Message, int]] = {}
    for k in run.calls:
        m = bisect.bisect_left(starts, k)
        skipped = m - p.head_size - p.tail_size
        if skipped <= 0:  # AutoGen sends everything, without its boundary guards
            yield _Window(0, k)
            continue
        bound = starts[:m] + [k]
        head_end = p.head_size
        if is_call(msgs[bound[head_end - 1]]):  # a call at the end of the head goes (its results are not in it)
            head_end -= 1
        tail_start = m - p.tail_size
        if msgs[bound[tail_start]].role == "tool":  # one leading result message of the tail goes
            tail_start += 1
        if skipped not in placeholders:
            text = Message(role="user", name="System", content=f"Skipped {skipped} messages.")
            placeholders[skipped] = (text, run.tc.count(text))
        placeholder, placeholder_tokens = placeholders[skipped]
        yield _Window(
            bound[0], bound[head_end], v0, run.g[v0], start2=bound[tail_start], end2=k,
            between=placeholder, between_tokens=placeholder_tokens,
        )


def _token_limited(run: _Run, p: Any) -> Iterator[_Window]:
    starts, msgs, g, v0, per_list = _autogen_unit_starts(run), run.messages, run.g, run.v0, run.per_list
    for k in run.calls:
        m = bisect.bisect_left(starts, k)
        bound = starts[:m] + [k]  # unit u is messages bound[u]:bound[u + 1]; the last one cut by the call
        lo, hi = 0, m  # the fewest units popped for the rest to fit
        while lo < hi:
            mid = (lo + hi) // 2
            left, right = _middle_out_split(m, mid)
            if (g[bound[left]] - g[bound[0]]) + (g[k] - g[bound[right]]) + per_list <= p.token_limit:
                hi = mid
            else:
                lo = mid + 1
        left, right = _middle_out_split(m, lo)
        head = [bound[0], bound[left]]
        tail = [bound[right], k]
        # AutoGen then removes one leading result message of what is left.
        first, first_unit = (head, 0) if left > 0 else (tail, right)
        if first_unit < m and first[0] < first[1] and msgs[first[0]].role == "tool":
            first[0] = bound[first_unit + 1]
        yield _Window(head[0], head[1], v0, g[v0], start2=tail[0], end2=tail[1])


def _middle_out_split(m: int, pops: int) -> tuple[int, int]:
    """As registry's _middle_out_kept: of m units with ``pops`` removed, units [0, left) and [right, m) stay."""
    rest = m - pops
    return (rest + 1) // 2, m - rest // 2


_INCREMENTAL.update(head_and_tail=_head_and_tail, token_limited=_token_limited)


def _sk_truncation_carried(run: _Run, p: Any) -> Iterator[_Window]:
    """Semantic Kernel's reducer on what it holds, call after call, without building lists: what it holds is
    always some system messages (pinned, and the first one it keeps) then one contiguous range of the input
    (it keeps a suffix and appends new messages), so its reduction runs on positions. The same algorithm as
    ``semantic_kernel._sk_truncation``; the property tests compare it with the carried trim."""
    msgs, counts = run.messages, run.counts
    next_system = [run.n] * (run.n + 1)
    for i in range(run.n - 1, -1, -1):
        next_system[i] = i if msgs[i].role in SYSTEM_ROLES else next_system[i + 1]
    head: list[int] = []  # the system messages held before the range
    start = 0  # the range held: start .. the call
    target, threshold = p.target_count, p.threshold_count

    def function_content(i: int) -> bool:
        return msgs[i].role == "tool" or bool(msgs[i].tool_calls)

    for k in run.calls:
        held = len(head) + (k - start)
        at = functools.partial(_held_at, head, start, 0)  # input index of a position of what is held
        pinned = run.lead if p.pin_system else 0  # the system prompt, outside the reducer's history
        size = held - pinned  # the reducer's view
        if size > target + threshold:
            # The first system message of the view: the head holds only system messages.
            if pinned < len(head):
                first_system: int | None = pinned
            else:
                found = next_system[start + pinned - len(head)]
                first_system = len(head) + found - start if found < k else None
            sys_view = None if first_system is None else first_system - pinned
            would_truncate = sys_view is not None and sys_view < size - target
            view_at = functools.partial(_held_at, head, start, pinned)
            idx = _sk_locate(size, view_at, msgs, function_content, target, threshold, would_truncate)
            if idx is not None:
                keep_from = pinned + idx  # position in what is held
                new_head = [at(q) for q in range(pinned)]
                if sys_view is not None and sys_view < idx:
                    new_head.append(at(pinned + sys_view))
                if keep_from < len(head):
                    new_head += head[keep_from:]
                else:
                    start = at(keep_from) if keep_from < held else k
                head = new_head
        yield _Window(start, k, len(head), sum(counts[i] for i in head))


def _held_at(head: list[int], start: int, offset: int, position: int) -> int:
    """The input index of a position (plus ``offset``) of what the reducer holds: ``head``, then ``start`` on."""
    position += offset
    return head[position] if position < len(head) else start + position - len(head)


def _sk_locate(
    size: int, index: Any, msgs: Sequence[Message], function_content: Any, target: int, threshold: int,
    has_system: bool,
) -> int | None:
    """``semantic_kernel._sk_locate_safe_reduction_index`` over view positions (``index`` maps them)."""
    if has_system:
        target -= 1
        if target <= 0:
            return size
    threshold_index = size - threshold - target
    if threshold_index <= 0:
        return None
    i = size - target
    while i >= 0:
        m = index(i)
        if msgs[m].role in SYSTEM_ROLES or not function_content(m):
            break
        if i - 1 < 0 or not function_content(index(i - 1)):
            break
        i -= 1
    target_index = i
    while i >= threshold_index:
        if msgs[index(i)].role == "user":
            return i
        i -= 1
    return target_index


_CARRIED = {"sk_truncation": _sk_truncation_carried}

# The strategies replayed without trimming each call (the others: per call, sampled on long runs).
INCREMENTAL_STRATEGIES = frozenset(_INCREMENTAL) | {"safe_token_budget"} | frozenset(_CARRIED)


# ---------------------------------------------------------------------------------------------------------------
# Entry points


def _step_from_result(k: int, result: TrimResult, sources: Sequence[int | None], run: _Run) -> ReplayStep:
    u = run.last_user[k]
    question = None if u < 0 else u in set(s for s in sources if s is not None)
    errors = sum(1 for v in result.violations if v.severity == "error")
    return ReplayStep(k, len(result.messages), result.tokens_after, run.g[k] + run.per_list, errors, question)


@dataclass
class _CarriedCall:
    call: int
    result: TrimResult  # the trim of what the framework held (positions of ``held``)
    held: list[int | None]  # the input index of each message it held before trimming (None: one it inserted)
    sent: list[int | None]  # the input index of each message sent (None: inserted, now or at an earlier call)
    why_inserted: list[str]  # for each message sent: why it was inserted ("" when it is an input message)


def _carried_calls(run: _Run, spec: StrategySpec, counter: str) -> Iterator[_CarriedCall]:
    """Each call of a framework that keeps only what it trimmed: it trims what it held after the previous call
    plus the messages added since, and holds the result (edited messages stay edited, inserted ones stay). The
    session's leading system messages are the framework's system prompt, outside its memory: they are set aside
    at every call (when the strategy pins), and a system message from inside its memory never is."""
    held: list[int | None] = []
    held_messages: list[Message] = []
    held_counts: list[int] = []
    held_why: list[str] = []
    added = 0
    for k in run.calls:
        held += range(added, k)
        held_messages += run.messages[added:k]
        held_counts += run.counts[added:k]
        held_why += [""] * (k - added)
        added = k
        # The system prompt is outside the framework's memory: what pins is the session's leading system run, not
        # a system message that trimming left at the front.
        result = trim(held_messages, spec, counter=counter, token_counts=held_counts, pinned=run.lead)
        sent = [held[s] if s is not None else None for s in result.sources]
        why = [held_why[s] if s is not None else "" for s in result.sources]
        for x in result.inserted:
            why[x.position] = x.reason
        yield _CarriedCall(k, result, list(held), sent, why)
        held, held_messages, held_counts, held_why = sent, list(result.messages), list(result.message_tokens), why


@dataclass
class _TurnCall:
    call: int
    held: list[int | None]  # input index of each message held since the last turn ended (None: inserted)
    held_messages: list[Message]
    held_counts: list[int]
    start: int  # the turn's messages so far: messages[start:call], sent untrimmed after what is held
    why_dropped: dict[int, str]  # input index -> why the framework dropped it when a turn ended
    notes: list[str]


def _after_turn_calls(run: _Run, spec: StrategySpec, counter: str) -> Iterator[_TurnCall]:
    """Each call of a framework that trims when a turn ends: a turn ends where the next user message starts the
    next one (and at the end of the session, for the next call); the framework trims what it held plus the
    turn's messages then, and holds the result. Before the first user message no turn has run."""
    users = [i for i, m in enumerate(run.messages) if m.role == "user"]
    ends = users[1:] + ([run.n] if users else [])
    held: list[int | None] = []
    held_messages: list[Message] = []
    held_counts: list[int] = []
    why_dropped: dict[int, str] = {}
    notes: list[str] = []
    added = 0
    next_end = 0
    for k in run.calls:
        while next_end < len(ends) and ends[next_end] <= k:
            end = ends[next_end]
            next_end += 1
            held += range(added, end)
            held_messages += run.messages[added:end]
            held_counts += run.counts[added:end]
            added = end
            result = trim(held_messages, spec, counter=counter, token_counts=held_counts, pinned=run.lead)
            for d in result.dropped:
                source = held[d.index]
                if source is not None:
                    why_dropped[source] = f"{d.reason} (when the turn ending before message {end} ended)"
            notes = list(result.notes)
            held = [held[s] if s is not None else None for s in result.sources]
            held_messages, held_counts = list(result.messages), list(result.message_tokens)
        yield _TurnCall(k, list(held), list(held_messages), list(held_counts), added, why_dropped, notes)


def _after_turn_steps(run: _Run, calls: list[_TurnCall]) -> list[ReplayStep]:
    slices: list[tuple[int, int]] = []
    explicit: dict[int, int] = {}
    for q, c in enumerate(calls):
        # When what is held is system messages, then one contiguous range of the input ending where the turn's
        # messages start (a tool result's text may have been shortened: that changes no error), the whole list
        # sent is one slice.
        lead = 0
        while lead < len(c.held) and c.held_messages[lead].role in SYSTEM_ROLES:
            lead += 1
        rest = c.held[lead:]
        contiguous = all(x is not None for x in rest) and rest == list(range(c.start - len(rest), c.start)) and all(
            c.held_messages[lead + j] is run.messages[x] or run.messages[x].role == "tool"
            for j, x in enumerate(rest)
            if x is not None
        )
        if contiguous:
            slices.append((c.start - len(rest), c.call))
        else:
            slices.append((c.call, c.call))
            explicit[q] = _errors(c.held_messages + list(run.messages[c.start : c.call]))
    counted = SliceViolations(run.messages).counts(slices)
    steps = []
    for q, c in enumerate(calls):
        u = run.last_user[c.call]
        kept = set(x for x in c.held if x is not None)
        question = None if u < 0 else (u in kept or u >= c.start)
        tokens = sum(c.held_counts) + run.g[c.call] - run.g[c.start] + run.per_list
        sent = len(c.held) + c.call - c.start
        steps.append(ReplayStep(c.call, sent, tokens, run.g[c.call] + run.per_list, explicit.get(q, counted[q]),
                                question))
    return steps


def replay(
    messages: Sequence[Message],
    strategy: str | StrategySpec,
    params: Mapping[str, Any] | None = None,
    *,
    counter: str = DEFAULT_COUNTER,
    token_counts: Sequence[int] | None = None,
    work_limit: int = PER_CALL_WORK,
    incremental: bool = True,
) -> Replay:
    """The strategy on every call of the run (module docstring). StrategyError on an unknown strategy or invalid
    parameters, as ``trim``. ``incremental=False`` trims every call's input from scratch (no sampling unless
    ``work_limit`` says so): the reference the faster paths are tested and measured against. ``strategy`` may be a
    validated ``StrategySpec`` (then ``params`` is not used)."""
    spec = strategy if isinstance(strategy, StrategySpec) else strategy_spec(strategy, params)
    strat, resolved = spec.strategy, spec.params
    tc = get_counter(counter)
    counts = list(token_counts) if token_counts is not None else count_messages(messages, tc)
    if len(counts) != len(messages):
        raise ValueError(f"token_counts has {len(counts)} entries for {len(messages)} messages")
    run = _Run(messages, counts, tc, resolved.pin_system)
    out = Replay(strat.name, resolved.model_dump(), tc.name, strat.memory, METHOD_INCREMENTAL, [], len(run.calls))
    if getattr(resolved, "summarize_with", None) == "endpoint":
        # One model call per summary at every call of the run is not a preview: placeholders stand in.
        resolved = resolved.model_copy(update={"summarize_with": "placeholder"})
        out.notes.append(
            "The replay uses placeholder summaries: asking the summary endpoint at every call of the run would "
            "take a model call each time. The preview of one call asks it."
        )
    with _gc_paused():
        if strat.memory == MEMORY_CARRIED and incremental and strat.name in _CARRIED:
            out.method = METHOD_CARRIED
            out.steps, _ = _windows_to_steps(run, list(_CARRIED[strat.name](run, resolved)))
        elif strat.memory == MEMORY_CARRIED:
            out.method = METHOD_CARRIED
            carried = _carried_calls(run, spec, tc.name)
            out.steps = [_step_from_result(c.call, c.result, c.sent, run) for c in carried]
        elif strat.memory == MEMORY_AFTER_TURN:
            out.method = METHOD_AFTER_TURN
            out.steps = _after_turn_steps(run, list(_after_turn_calls(run, spec, tc.name)))
        elif incremental and strat.name in _INCREMENTAL:
            out.steps, incremental_errors = _windows_to_steps(run, list(_INCREMENTAL[strat.name](run, resolved)))
            if not incremental_errors:
                out.method = METHOD_BOUNDED
        elif incremental and strat.name == "safe_token_budget" and not _reuses_call_ids(messages):
            out.steps = list(_safe_token_budget(run, resolved))
        else:
            out.method = METHOD_PER_CALL
            out.steps, out.stride = _per_call(run, spec, tc.name, work_limit)
            if out.stride > 1:
                out.notes.append(
                    f"Trimming each of the {len(run.calls):,} calls from scratch would take too long: every "
                    f"{out.stride}th call is shown, and the last."
                )
    return out


def _errors(messages: Sequence[Message]) -> int:
    return sum(1 for v in find_violations(messages, pending_severity="error") if v.severity == "error")


def _windows_to_steps(run: _Run, windows: list[_Window]) -> tuple[Steps, bool]:
    """The steps, and whether every error count came from SliceViolations (False: some lists were checked
    whole, because their two parts cannot be counted apart in a session that reuses call ids)."""
    slices = SliceViolations(run.messages)
    two_parts = [q for q, w in enumerate(windows) if w.start2 < w.end2 or w.between is not None]
    errors = slices.counts([(w.start, w.end) for w in windows])
    incremental = True
    if two_parts and slices.unique_ids:
        joined: dict[int, int] = {}
        for separated in (False, True):
            chosen = [q for q in two_parts if (windows[q].between is not None) == separated]
            parts = [(windows[q].start, windows[q].end, windows[q].start2, windows[q].end2) for q in chosen]
            joined.update(zip(chosen, slices.joined_counts(parts, separated=separated), strict=True))
        for q, e in joined.items():
            errors[q] = e
    elif two_parts:
        incremental = False
        msgs = run.messages
        for q in two_parts:
            w = windows[q]
            # The system messages sent before change no count (SliceViolations), so they are left out.
            sent = list(msgs[w.start : w.end]) + ([w.between] if w.between is not None else [])
            errors[q] = _errors(sent + list(msgs[w.start2 : w.end2]))
    del slices  # its per-message arrays and pairs go before the steps are made: a long run's peak
    steps = Steps()
    add = steps.append
    for k, w, e in zip(run.calls, windows, errors, strict=True):
        if w.tokens is not None:
            tokens = w.tokens
        else:
            tokens = w.extra_tokens + run.g[w.end] - run.g[w.start] + run.per_list
            tokens += w.between_tokens + run.g[w.end2] - run.g[w.start2] if w.end2 > w.start2 else w.between_tokens
        sent_count = w.extra + max(0, w.end - w.start) + max(0, w.end2 - w.start2) + (w.between is not None)
        u = run.last_user[k]
        question = None if u < 0 else (w.start <= u < w.end or w.start2 <= u < w.end2)
        add(k, sent_count, tokens, run.g[k] + run.per_list, e, question)
    return steps, incremental


def _per_call(
    run: _Run, spec: StrategySpec, counter: str, work_limit: int
) -> tuple[list[ReplayStep], int]:
    work = sum(run.calls)
    stride = max(1, math.ceil(work / work_limit)) if work_limit > 0 else 1
    chosen = run.calls[::stride]
    if chosen[-1] != run.calls[-1]:
        chosen.append(run.calls[-1])
    steps = []
    for k in chosen:
        result = trim(run.messages[:k], spec, counter=counter, token_counts=run.counts[:k])
        steps.append(_step_from_result(k, result, result.sources, run))
    return steps, stride


def replay_call(
    messages: Sequence[Message],
    strategy: str | StrategySpec,
    params: Mapping[str, Any] | None = None,
    *,
    call: int,
    counter: str = DEFAULT_COUNTER,
    token_counts: Sequence[int] | None = None,
) -> TrimResult:
    """What the framework sent at the call that produced message ``call`` (``len(messages)``: the next call), as
    a TrimResult in input indices: every input message before the call is kept or dropped. For a framework that
    carries what it kept, a message it had already deleted is dropped "at an earlier call"."""
    spec = strategy if isinstance(strategy, StrategySpec) else strategy_spec(strategy, params)
    strat, resolved = spec.strategy, spec.params
    tc = get_counter(counter)
    counts = list(token_counts) if token_counts is not None else count_messages(messages, tc)
    if not 0 <= call <= len(messages):
        raise ValueError(f"call {call} is outside the session (0 to {len(messages)})")
    if strat.memory == MEMORY_AFTER_TURN:
        return _after_turn_result(messages, counts, tc, spec, call)
    if strat.memory != MEMORY_CARRIED:
        return trim(messages[:call], spec, counter=tc.name, token_counts=counts[:call])
    run = _Run(messages, counts, tc, resolved.pin_system)
    run.calls = [k for k in run.calls if k < call] + [call]
    last = deque(_carried_calls(run, spec, tc.name), maxlen=1).pop()  # the trims before it, only to carry memory
    result = last.result
    why_dropped = {last.held[d.index]: d.reason for d in result.dropped if last.held[d.index] is not None}
    kept = sorted(s for s in last.sent if s is not None)
    kept_set = set(kept)
    dropped = [
        Dropped(i, why_dropped.get(i, "deleted from the framework's memory at an earlier call"))
        for i in range(call)
        if i not in kept_set
    ]
    inserted = [
        Inserted(pos, result.messages[pos], last.why_inserted[pos] or "inserted at an earlier call")
        for pos, s in enumerate(last.sent)
        if s is None
    ]
    kept_reasons = {
        s: result.kept_reasons.get(held_pos, "kept")
        for s, held_pos in zip(last.sent, result.sources, strict=True)
        if s is not None and held_pos is not None
    }
    return TrimResult(
        strategy=result.strategy, params=result.params, counter=result.counter, kept=kept, dropped=dropped,
        inserted=inserted, messages=result.messages, tokens_before=run.g[call] + tc.per_list,
        tokens_after=result.tokens_after, violations=result.violations, notes=result.notes,
        budget_exceeded=result.budget_exceeded, kept_reasons=kept_reasons, sources=list(last.sent),
        edited=[Edited(src, e.reason) for e in result.edited if (src := last.held[e.index]) is not None],
        message_tokens=list(result.message_tokens),
    )


def _after_turn_result(
    messages: Sequence[Message], counts: list[int], tc: TokenCounter, spec: StrategySpec, call: int
) -> TrimResult:
    """What a framework that trims when a turn ends sent at ``call``, as a TrimResult in input indices."""
    name, resolved = spec.name, spec.params
    run = _Run(messages, counts, tc, resolved.pin_system)
    run.calls = [k for k in run.calls if k < call] + [call]
    last = deque(_after_turn_calls(run, spec, tc.name), maxlen=1).pop()
    sent_messages = last.held_messages + list(messages[last.start : call])
    sources: list[int | None] = last.held + list(range(last.start, call))
    kept = sorted(s for s in sources if s is not None)
    kept_set = set(kept)
    in_turn = "sent as it is: a message of the turn in progress (the framework trims when the turn ends)"
    kept_reasons = {s: "kept when the last turn ended" for s in last.held if s is not None}
    kept_reasons.update({i: in_turn for i in range(last.start, call)})
    edited = [
        Edited(s, "changed when a turn ended")
        for s, m in zip(last.held, last.held_messages, strict=True)
        if s is not None and m is not messages[s]
    ]
    violations = [
        _in_input_terms(v, sources) for v in find_violations(sent_messages, pending_severity="error")
    ]
    return TrimResult(
        strategy=name, params=resolved.model_dump(), counter=tc.name, kept=kept,
        dropped=[Dropped(i, last.why_dropped.get(i, "dropped when a turn ended")) for i in range(call)
                 if i not in kept_set],
        inserted=[Inserted(pos, m, "inserted when a turn ended") for pos, (s, m) in
                  enumerate(zip(sources, sent_messages, strict=True)) if s is None],
        messages=sent_messages, tokens_before=run.g[call] + tc.per_list,
        tokens_after=sum(last.held_counts) + run.g[call] - run.g[last.start] + tc.per_list,
        violations=violations, notes=list(last.notes), kept_reasons=kept_reasons, sources=sources, edited=edited,
        message_tokens=last.held_counts + list(counts[last.start : call]),
    )
