"""A stored message list read as its structure first, its contents only where they are needed.

Most strategies decide from roles, call ids, tool calls and stored token counts; a trim then shows or writes only
some of the messages. ``StoredMessages`` is a ``Sequence[Message]`` over a stored session that holds each message's
*outline* (``outline``: its structure and no text, an ``Outline`` that reads as a Message) and reads whole messages
through a ``load`` function that the caller passes in (the web app's reads rows by seq; nothing here knows about a
database), a batch at a time and only for the indices asked for.

An outline has the message's role, name, tool_call_id, tool calls (ids, names, arguments) and is_error, nothing
else; its ``content`` is ``OUTLINE_TEXT`` when the message has content as ``chain.py``'s checks count it (a
non-blank text or a non-text part) and None otherwise, so the protocol checker and the strategies that only ask
"is there content?" answer on an outline exactly as on the message. ``trim`` runs a strategy on outlines when the
strategy says it reads no text (``Strategy.reads_text``), and fetches the kept messages' contents only when the
trimmed list is read.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, cast, overload

from agents.memory.chain import _has_content
from agents.memory.schema import FunctionCall, Message, ToolCall, content_text

# What an outline holds in place of a text: a message with content, whatever it says.
OUTLINE_TEXT = "\u2026"

# Messages read per call of ``load`` when a run of them is read in order.
LOAD_BATCH = 2_000

Loader = Callable[[Sequence[int]], Mapping[int, Message]]


def has_content(content: str | list[dict[str, Any]] | None) -> bool:
    """Whether a message's content is content as the protocol checker counts it (a non-blank text or a non-text
    part): what an outline keeps of its text, and what a store keeps beside it."""
    return _has_content(content)


class FunctionOutline(NamedTuple):
    """A tool call's function in an outline (``FunctionCall``'s fields)."""

    name: str
    arguments: str

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


class CallOutline(NamedTuple):
    """A tool call in an outline (``ToolCall``'s fields)."""

    id: str
    function: FunctionOutline
    type: str = "function"

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "function": self.function.model_dump()}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, **kwargs: Any) -> ToolCall:
        return self.as_tool_call().model_copy(update=update, **kwargs)

    def as_tool_call(self) -> ToolCall:
        return ToolCall.model_construct(
            id=self.id, type="function",
            function=FunctionCall.model_construct(name=self.function.name, arguments=self.function.arguments),
        )


_NO_CALLS: tuple[CallOutline, ...] = ()


class Outline:
    """A message's structure without its text: read as a ``Message`` is read (the attributes, ``to_openai``,
    ``model_copy``, ``model_dump``, equality), at a fraction of a pydantic model's cost to build and hold (one
    per stored message: building them was half of a 50,000-message preview, bench/README.md). Its tool calls are
    a tuple of ``CallOutline``; whatever else a caller asks of it is asked of ``as_message()``."""

    __slots__ = ("role", "content", "name", "tool_calls", "tool_call_id", "is_error")

    # What an outline never holds (as ``outline`` built them when they were Messages).
    external_id = None
    created_at = None
    reasoning = None
    usage = None

    def __init__(
        self, role: str, content: str | None, name: str | None, tool_calls: tuple[CallOutline, ...],
        tool_call_id: str | None, is_error: bool | None,
    ) -> None:
        self.role = role
        self.content = content
        self.name = name
        self.tool_calls = tool_calls
        self.tool_call_id = tool_call_id
        self.is_error = is_error

    @property
    def marks(self) -> list[str]:
        return []

    @property
    def extra(self) -> dict[str, Any]:
        return {}

    @property
    def text(self) -> str:
        return content_text(self.content)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Outline.__slots__:
            raise AttributeError(name)
        return getattr(self.as_message(), name)

    def as_message(self) -> Message:
        """The same outline as a ``Message`` (what it was built as before: ``Message.model_construct``)."""
        return Message.model_construct(
            role=self.role, content=self.content, name=self.name,
            tool_calls=[c.as_tool_call() for c in self.tool_calls], tool_call_id=self.tool_call_id,
            is_error=self.is_error, external_id=None, created_at=None, reasoning=None, usage=None, marks=[], extra={},
        )

    def to_openai(self) -> dict[str, Any]:
        return self.as_message().to_openai()

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return self.as_message().model_dump(**kwargs)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, **kwargs: Any) -> Message:
        return self.as_message().model_copy(update=update, **kwargs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Outline):
            return all(getattr(self, k) == getattr(other, k) for k in Outline.__slots__)
        if isinstance(other, Message):
            return self.as_message() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a Message: mutable, not hashable

    def __repr__(self) -> str:
        return f"Outline({', '.join(f'{k}={getattr(self, k)!r}' for k in Outline.__slots__)})"

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in Outline.__slots__)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for k, v in zip(Outline.__slots__, state, strict=True):
            setattr(self, k, v)


def outline(
    *,
    role: str,
    has_text: bool,
    name: str | None = None,
    tool_call_id: str | None = None,
    tool_calls: Sequence[dict[str, Any]] = (),
    is_error: bool | None = None,
) -> Message:
    """A message's structure without its text (``tool_calls`` as stored: OpenAI-shaped dicts): an ``Outline``,
    which reads as the ``Message`` it stands for (typed so: strategies, the checker and the replay take it as one)."""
    calls = tuple(
        CallOutline(c["id"], FunctionOutline(c["function"]["name"], c["function"]["arguments"])) for c in tool_calls
    ) if tool_calls else _NO_CALLS
    made = Outline(role, OUTLINE_TEXT if has_text else None, name or None, calls, tool_call_id or None, is_error)
    return cast(Message, made)


class StoredMessages(Sequence[Message]):
    """The messages of a stored list: ``outlines`` (one per message, in order) and ``load(indices)``, which
    returns the whole messages at those indices. Reading an item loads it, with the ``LOAD_BATCH`` that follow
    (a trimmed list is read in order), or that precede it when the one after it was read (read from the end
    back); ``prefetch`` loads a known set at once. Loaded messages are kept."""

    def __init__(self, outlines: Sequence[Message], load: Loader, *, batch: int = LOAD_BATCH) -> None:
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
            if index + 1 in self._loaded:  # read from the end back: the batch before it
                self.prefetch(range(max(0, index + 1 - self._batch), index + 1))
            else:
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


def outlines_of(messages: Sequence[Message]) -> Sequence[Message] | None:
    """The outlines of ``messages`` when it is a stored list (None for a plain list)."""
    return messages.outlines if isinstance(messages, StoredMessages) else None
