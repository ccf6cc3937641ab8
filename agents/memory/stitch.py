"""Stitching the model calls of one session into one message chain.

Each call carries the history its framework sent (whole, or trimmed: a framework may drop old messages, insert a
summary, or put a fresh system prompt in front) plus new messages (tool results, the user's next message), and
it produces one reply. The chain holds every message once, in order: what a call resends is matched to the
chain, what is new to it is appended, and its reply is appended after that.

How a call's input is split into resent and new, in the order of the calls (their start time, then their ids):

1. The chain's last message is, in a sequential agent, the previous call's reply. The resent part of the input
   ends at the *last* input message identical to it; everything after is new. (A user who says "Thanks!" twice
   has the second one after the previous reply, so it is new: kept twice. One that is only resent lies before.)
2. Within the resent part, messages are matched to the chain from its end backwards, each to the latest identical
   message before the one matched after it. So a trimmed history (its head dropped) maps onto the chain's tail.
   An input message that matches nothing (a summary a framework wrote, a system prompt that changed) is new.
3. When no input message is identical to the chain's last one (a framework that dropped the previous reply, or
   a second conversation in the same session), the resent part ends at the last input assistant message found in
   the chain, else it is the leading system messages.

"Identical" is ``message_key``: role, content, tool calls (arguments compared as JSON) and tool call id; not
ids, timestamps or usage, which a framework does not resend. The chain only grows: a call never moves a message
already placed, so the positions a call received (``sent``, in the order it received them) stay valid. The
cost of placing a call is proportional to what it carries: each of its messages is hashed once and looked up in
an index of the chain by key (``ChainIndex``), never by scanning the chain.

Calls can arrive in any order and more than once: a call with an id already placed is ignored, and one that
started before calls already placed rolls the chain back to where it belongs and replays the later calls, so
the chain is the same whatever the order of arrival (``Stitcher``).
"""
from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .llm_calls import CapturedCall, merge_calls
from .llm_calls import message_key as message_key  # what "identical" means here (it joins log events too)
from .schema import SYSTEM_ROLES, Message


class ChainIndex(Protocol):
    """What placing a call needs to know of the chain (in memory, or the stored session's messages)."""

    def size(self) -> int: ...

    def last_key(self) -> str | None: ...

    def positions(self, keys: Collection[str]) -> Mapping[str, Sequence[int]]:
        """For each key present in the chain, its positions in ascending order."""
        ...


@dataclass
class Placement:
    """Where a call's messages stand in the chain: ``sent`` are the positions it received, in its order;
    ``new`` the messages to append (from position ``start``), its reply among them at ``reply``."""

    start: int
    sent: list[int]
    reply: int | None
    new: list[Message]


def place_call(index: ChainIndex, inputs: Sequence[Message], outputs: Sequence[Message]) -> Placement:
    keys = [message_key(m) for m in inputs]
    size = index.size()
    found = index.positions(set(keys)) if size else {}
    boundary = _boundary(keys, inputs, found, index.last_key())
    matched: list[int | None] = [None] * len(inputs)
    cursor = size
    for i in range(boundary - 1, -1, -1):
        spots = found.get(keys[i], ())
        j = bisect.bisect_left(spots, cursor) - 1
        if j >= 0:
            matched[i] = cursor = spots[j]
    new: list[Message] = []
    sent: list[int] = []
    for message, spot in zip(inputs, matched, strict=True):
        if spot is None:
            spot = size + len(new)
            new.append(message)
        sent.append(spot)
    reply_message = next((m for m in outputs if m.role == "assistant"), None)
    reply = None
    if reply_message is not None:
        reply = size + len(new)
        new.append(reply_message)
    return Placement(start=size, sent=sent, reply=reply, new=new)


def _boundary(keys: list[str], inputs: Sequence[Message], found: Mapping[str, Sequence[int]], last: str | None) -> int:
    """How many leading input messages may be resent (see the module's rules 1 and 3)."""
    if last is not None:
        for i in range(len(keys) - 1, -1, -1):
            if keys[i] == last:
                return i + 1
    for i in range(len(keys) - 1, -1, -1):
        if inputs[i].role == "assistant" and keys[i] in found:
            return i + 1
    lead = 0
    while lead < len(inputs) and inputs[lead].role in SYSTEM_ROLES:
        lead += 1
    return lead


class MemoryChain:
    """A chain in memory, indexed by message key."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.keys: list[str] = []
        self._positions: dict[str, list[int]] = {}

    def size(self) -> int:
        return len(self.messages)

    def last_key(self) -> str | None:
        return self.keys[-1] if self.keys else None

    def positions(self, keys: Collection[str]) -> Mapping[str, Sequence[int]]:
        return {k: self._positions[k] for k in keys if k in self._positions}

    def append(self, messages: Iterable[Message]) -> None:
        for message in messages:
            key = message_key(message)
            self._positions.setdefault(key, []).append(len(self.messages))
            self.messages.append(message)
            self.keys.append(key)

    def truncate(self, size: int) -> None:
        for position in range(len(self.messages) - 1, size - 1, -1):
            spots = self._positions[self.keys[position]]
            spots.pop()
            if not spots:
                del self._positions[self.keys[position]]
        del self.messages[size:]
        del self.keys[size:]


def call_order(call: CapturedCall) -> tuple[int, str, str]:
    """Calls are stitched in the order they started; ties by their ids, so the order never depends on arrival."""
    return (call.started_ns or call.observed_ns or 0, call.trace_id, call.span_id)


@dataclass
class StitchedCall:
    call: CapturedCall
    placement: Placement


@dataclass
class Stitcher:
    """Calls added one by one, as they arrive, give the same chain as all of them stitched at once."""

    chain: MemoryChain = field(default_factory=MemoryChain)
    calls: list[StitchedCall] = field(default_factory=list)
    _placed: set[tuple[str, str]] = field(default_factory=set)
    _waiting: dict[tuple[str, str], CapturedCall] = field(default_factory=dict)  # seen without content so far

    def add(self, call: CapturedCall) -> bool:
        """Place a call; False if it adds nothing to the chain. A call seen again with more (the other half of
        its log events) is placed again where it stands; one without content waits for its content."""
        ident = (call.trace_id, call.span_id)
        if ident in self._waiting:
            call = self._waiting.pop(ident).merged(call)
        if ident not in self._placed:
            if not call.has_content:
                self._waiting[ident] = call
                return False
            at = len(self.calls)
        else:
            at = next(i for i, c in enumerate(self.calls) if (c.call.trace_id, c.call.span_id) == ident)
            merged = self.calls[at].call.merged(call)
            if _content(merged) == _content(self.calls[at].call):
                self.calls[at].call = merged  # model, usage, timing from the span: nothing moves
                return False
            call = merged
        self._placed.add(ident)
        order = call_order(call)
        while at and call_order(self.calls[at - 1].call) > order:
            at -= 1
        # Roll back to where the call belongs and replay the calls after it: the chain never depends on arrival.
        start = self.calls[at].placement.start if at < len(self.calls) else self.chain.size()
        replay = [c.call for c in self.calls[at:] if (c.call.trace_id, c.call.span_id) != ident] + [call]
        self.chain.truncate(start)
        del self.calls[at:]
        for each in sorted(replay, key=call_order):
            placement = place_call(self.chain, each.inputs or [], each.outputs or [])
            self.chain.append(placement.new)
            self.calls.append(StitchedCall(each, placement))
        return True

    @property
    def messages(self) -> list[Message]:
        return self.chain.messages


def _content(call: CapturedCall) -> tuple[list[str], list[str]]:
    return ([message_key(m) for m in call.inputs or ()], [message_key(m) for m in call.outputs or ()])


def stitch(calls: Iterable[CapturedCall]) -> Stitcher:
    """All the calls of a session at once (duplicates merged)."""
    stitcher = Stitcher()
    for call in sorted(merge_calls(calls), key=call_order):
        stitcher.add(call)
    return stitcher
