"""A stored message list read as its structure first, its contents only where they are needed.

Most strategies decide from roles, call ids, tool calls and stored token counts; a trim then shows or writes only
some of the messages. ``StoredMessages`` is a ``Sequence[Message]`` over a stored session that holds each message's
*outline* (``outline``: a Message with its structure and no text) and reads whole messages through a ``load``
function that the caller passes in (the web app's reads rows by seq; nothing here knows about a database), a batch
at a time and only for the indices asked for.

An outline has the message's role, name, tool_call_id, tool calls (ids, names, arguments) and is_error, nothing
else; its ``content`` is ``OUTLINE_TEXT`` when the message has content as ``chain.py``'s checks count it (a
non-blank text or a non-text part) and None otherwise, so the protocol checker and the strategies that only ask
"is there content?" answer on an outline exactly as on the message. ``trim`` runs a strategy on outlines when the
strategy says it reads no text (``Strategy.reads_text``), and fetches the kept messages' contents only when the
trimmed list is read.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

from agents.memory.chain import _has_content
from agents.memory.schema import FunctionCall, Message, ToolCall

# What an outline holds in place of a text: a message with content, whatever it says.
OUTLINE_TEXT = "\u2026"

# Messages read per call of ``load`` when a run of them is read in order.
LOAD_BATCH = 2_000

Loader = Callable[[Sequence[int]], Mapping[int, Message]]


def has_content(content: str | list[dict[str, Any]] | None) -> bool:
    """Whether a message's content is content as the protocol checker counts it (a non-blank text or a non-text
    part): what an outline keeps of its text, and what a store keeps beside it."""
    return _has_content(content)


def outline(
    *,
    role: str,
    has_text: bool,
    name: str | None = None,
    tool_call_id: str | None = None,
    tool_calls: Sequence[dict[str, Any]] = (),
    is_error: bool | None = None,
) -> Message:
    """A message's structure without its text (``tool_calls`` as stored: OpenAI-shaped dicts)."""
    calls = [
        ToolCall.model_construct(
            id=c["id"], type="function",
            function=FunctionCall.model_construct(name=c["function"]["name"], arguments=c["function"]["arguments"]),
        )
        for c in tool_calls
    ]
    return Message.model_construct(
        role=role, content=OUTLINE_TEXT if has_text else None, name=name or None, tool_calls=calls,
        tool_call_id=tool_call_id or None, is_error=is_error, external_id=None, created_at=None, reasoning=None,
        usage=None, marks=[], extra={},
    )


class StoredMessages(Sequence[Message]):
    """The messages of a stored list: ``outlines`` (one per message, in order) and ``load(indices)``, which
    returns the whole messages at those indices. Reading an item loads it, with the ``LOAD_BATCH`` that follow
    (a trimmed list is read in order); ``prefetch`` loads a known set at once. Loaded messages are kept."""

    def __init__(self, outlines: list[Message], load: Loader, *, batch: int = LOAD_BATCH) -> None:
        self.outlines = outlines
        self._load = load
        self._batch = batch
        self._loaded: dict[int, Message] = {}

    def __len__(self) -> int:
        return len(self.outlines)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            wanted = range(len(self))[index]
            self.prefetch(wanted)
            return [self._loaded[i] for i in wanted]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        message = self._loaded.get(index)
        if message is None:
            self.prefetch(range(index, min(index + self._batch, len(self))))
            message = self._loaded[index]
        return message

    def __iter__(self) -> Iterator[Message]:
        for start in range(0, len(self), self._batch):
            yield from self[start:start + self._batch]

    def prefetch(self, indices: Sequence[int] | range) -> None:
        """Load the messages at ``indices`` not loaded yet, ``batch`` per call of ``load``."""
        missing = [i for i in indices if i not in self._loaded]
        for start in range(0, len(missing), self._batch):
            chunk = missing[start:start + self._batch]
            found = self._load(chunk)
            for i in chunk:
                if i not in found:
                    raise LookupError(f"message {i} of the stored list could not be read")
                self._loaded[i] = found[i]

    def head(self, n: int) -> StoredMessages:
        """The first ``n`` messages, as a stored list that shares this one's loader and what it loaded (the input
        of a call of a replayed run: the messages before it)."""
        if n >= len(self):
            return self
        part = StoredMessages(self.outlines[:n], self._load, batch=self._batch)
        part._loaded = self._loaded
        return part

    @property
    def loaded(self) -> int:
        """How many whole messages were read so far."""
        return len(self._loaded)


class TrimmedMessages(Sequence[Message]):
    """A trimmed list over stored messages: each position is an input message (read from ``base`` when first
    asked for, with the kept ones after it) or a message of its own (an inserted placeholder, an edit)."""

    def __init__(self, base: StoredMessages, sources: Sequence[int | None], own: Mapping[int, Message]) -> None:
        self._base = base
        self._sources = sources
        self._own = own  # position -> message

    def __len__(self) -> int:
        return len(self._sources)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            wanted = range(len(self))[index]
            self._base.prefetch([s for s in (self._sources[k] for k in wanted) if s is not None])
            return [self._at(k) for k in wanted]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        source = self._sources[index]
        if source is not None and index not in self._own:
            ahead = self._sources[index:index + LOAD_BATCH]
            self._base.prefetch([s for s in ahead if s is not None])
        return self._at(index)

    def _at(self, position: int) -> Message:
        own = self._own.get(position)
        if own is not None:
            return own
        source = self._sources[position]
        assert source is not None
        return self._base[source]

    def __iter__(self) -> Iterator[Message]:
        for start in range(0, len(self), LOAD_BATCH):
            yield from self[start:start + LOAD_BATCH]

    def detached(self) -> DetachedTrim:
        """What it is without the stored list (to keep, and put ``over`` the same list read again)."""
        return DetachedTrim(list(self._sources), dict(self._own))


class DetachedTrim(NamedTuple):
    sources: list[int | None]
    own: dict[int, Message]

    def over(self, base: StoredMessages) -> TrimmedMessages:
        return TrimmedMessages(base, self.sources, self.own)


def outlines_of(messages: Sequence[Message]) -> list[Message] | None:
    """The outlines of ``messages`` when it is a stored list (None for a plain list)."""
    return messages.outlines if isinstance(messages, StoredMessages) else None
