"""A message list's structure in one compact value: what a trim reads of each message, and nothing of its text.

Strategies decide from roles, names, call ids, tool calls, error flags, whether a message has content, and stored
token counts (``stored.Outline``). A long session's rows are many: reading 200,000 of them and building their
outlines was most of a lab preview's time (bench/README.md). So the same fields are kept per list as columns in
one value (``encode``), compressed: each message's count and its kind as machine integers (a kind says the role
and flags of its messages), and each kind's own fields (the call ids of tool results, the calls of assistant messages
that have nothing else of their own, by number of calls; the rest whole) as one JSON column per kind. ``decode``
rebuilds the outlines (``Grouped``, their units found once) and the counts without a query or a Python loop per
message: messages with nothing of their own share one outline per role and flags, and each other kind's outlines
are made from its columns by ``map``.

Rows come in as a store reads them (``ROW_FIELDS``): tool calls as their JSON text or already decoded, booleans
as 0/1 or None. ``outlines(rows)`` is ``decode(encode(rows))``: one way rows become outlines, whether the caller
keeps the value or not.
"""
from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any, NamedTuple, cast

from agents.memory.chain import _gc_paused
from agents.memory.schema import ROLES, Message
from agents.memory.stored import OUTLINE_TEXT, CallOutline, FunctionOutline, Outline
from agents.memory.trimming.tool_runs import Grouped

# A row's fields, in order (a store may put more columns before them: ``Encoder.add(rows, skip=...)``).
ROW_FIELDS = ("role", "name", "tool_call_id", "tool_calls", "is_error", "has_content", "token_count")

FORMAT = 3  # bumped when the encoding changes: a value of another format is not read (``decode`` says so)
_MAGIC = b"MVS"

# Flags, one byte a message.
_TEXT = 1  # has content as the protocol checker counts it
_ERROR_KNOWN = 2  # is_error is not None
_ERROR = 4  # is_error is True
_NAME = 8  # a name follows in the strings
_CALL_ID = 16  # a tool_call_id follows
_CALLS = 32  # tool calls follow: [[id, name, arguments], ...]
_OTHER_ROLE = 64  # a role outside ROLES follows (the role byte is then 255)
_OWN = _NAME | _CALL_ID | _CALLS | _OTHER_ROLE  # what makes an outline its own, not shared

_ROLE_CODE = {role: i for i, role in enumerate(ROLES)}
_ROLE_OF = {i: role for i, role in enumerate(ROLES)}


class StructureError(ValueError):
    """A value that is not a structure of this format (written by another version, or damaged)."""


class Encoder:
    """Rows in, one value out: ``add`` batches of rows in order, then ``value()``.

    Messages are sorted into kinds as they come: those with nothing of their own, by role and flags (their outline
    is shared); tool results whose only own field is their call id, by role and flags; messages whose only own
    field is their tool calls, by role, flags and number of calls; and the rest. A kind's own fields are kept as
    one column, in message order, and each message holds its kind's index: ``decode`` builds a kind's outlines
    from its columns in one pass each, and the list from the kinds' indices."""

    def __init__(self) -> None:
        self.counts = array("q")
        self.kinds = array("I")
        self._kind_of: dict[tuple[str, int, int], int] = {}
        self.described: list[list[Any]] = []  # per kind: [letter, role + 256 * flags, calls]
        self.columns: list[list[Any]] = []  # per kind: its messages' own fields, in order

    def __len__(self) -> int:
        return len(self.kinds)

    @classmethod
    def resume(cls, value: bytes | memoryview) -> Encoder:
        """An encoder holding what ``value`` holds, to which more rows are added (a list that grew at its end)."""
        parts = _parts(value)
        encoder = cls()
        encoder.counts, encoder.kinds = parts.counts, parts.kinds
        encoder.described, encoder.columns = parts.described, parts.columns
        encoder._kind_of = {(letter, number, calls): k for k, (letter, number, calls) in enumerate(parts.described)}
        return encoder

    def _kind(self, letter: str, number: int, calls: int) -> int:
        key = (letter, number, calls)
        kind = self._kind_of.get(key)
        if kind is None:
            kind = self._kind_of[key] = len(self.described)
            self.described.append([letter, number, calls])
            self.columns.append([])
        return kind

    def add(self, rows: Iterable[Sequence[Any]], *, skip: int = 0) -> None:
        """Append rows of ``ROW_FIELDS`` (after ``skip`` leading columns: a seq, a session id)."""
        counts, kinds = self.counts.append, self.kinds.append
        kind_of, columns = self._kind_of, self.columns
        for row in rows:
            role, name, tool_call_id, tool_calls, is_error, has_text, tokens = row[skip:skip + 7]
            flag = _TEXT if has_text else 0
            if is_error is not None:
                flag |= _ERROR_KNOWN | (_ERROR if is_error else 0)
            code = _ROLE_CODE.get(role)
            own: list[Any] = []
            if code is None:
                flag |= _OTHER_ROLE
                own.append(role)
                code = 255
            if name:
                flag |= _NAME
                own.append(name)
            if tool_call_id:
                flag |= _CALL_ID
                own.append(tool_call_id)
            calls: list[list[str]] = []
            if tool_calls and tool_calls != "[]":
                decoded = json.loads(tool_calls) if isinstance(tool_calls, str) else tool_calls
                if decoded:
                    flag |= _CALLS
                    calls = [[c["id"], c["function"]["name"], c["function"]["arguments"]] for c in decoded]
                    own.append(calls)
            number = code + 256 * flag
            if not own:
                key = ("s", number, 0)
            elif flag & _OWN == _CALL_ID:
                key, own = ("t", number, 0), tool_call_id
            elif flag & _OWN == _CALLS:
                key, own = ("c", number, len(calls)), [field for call in calls for field in call]
            else:
                key = ("g", number, 0)
            kind = kind_of.get(key)
            if kind is None:
                kind = self._kind(*key)
            if key[0] != "s":
                columns[kind].append(own)
            counts(tokens)
            kinds(kind)

    def value(self) -> bytes:
        n = len(self.kinds)
        strings = json.dumps([self.described, self.columns], ensure_ascii=False, separators=(",", ":")).encode()
        body = n.to_bytes(8, "little") + _little(self.counts).tobytes() + _little(self.kinds).tobytes() + strings
        return _MAGIC + bytes([FORMAT]) + zlib.compress(body, 1)


def _little(numbers: array[int]) -> array[int]:
    """``numbers`` as little-endian machine integers (as they are stored), on any machine."""
    if sys.byteorder == "little":
        return numbers
    swapped = array(numbers.typecode, numbers)  # pragma: no cover - big-endian machines
    swapped.byteswap()  # pragma: no cover
    return swapped  # pragma: no cover


def encode(rows: Iterable[Sequence[Any]], *, skip: int = 0) -> bytes:
    encoder = Encoder()
    encoder.add(rows, skip=skip)
    return encoder.value()


def readable(value: bytes | memoryview) -> bool:
    """Whether ``value`` is a structure of this format (one written by another version is read again from rows)."""
    return bytes(value[:4]) == _MAGIC + bytes([FORMAT])


def size(value: bytes | memoryview) -> int:
    """How many messages a value holds (StructureError when it is not one of this format)."""
    if not readable(value):
        raise StructureError("not a message structure of this format")
    try:
        return int.from_bytes(zlib.decompressobj().decompress(bytes(value[4:]), 8), "little")
    except zlib.error as exc:
        raise StructureError(f"a damaged message structure: {exc}") from None


def decode(value: bytes | memoryview) -> tuple[Grouped, tuple[int, ...]]:
    """The outlines (Grouped) and counts a value holds. StructureError when it is not one of this format."""
    with _gc_paused():  # many small lists and outlines, none garbage: no collection rescans them as they are made
        parts = _parts(value)
        try:
            outlines = _outlines(parts.kinds, parts.described, parts.columns)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise StructureError(f"a damaged message structure: {exc}") from None
        if len(outlines) != len(parts.kinds):
            raise StructureError(f"a damaged message structure: {len(outlines)} outlines for {len(parts.kinds)} "
                                 "messages")
        return Grouped(outlines), tuple(parts.counts)


class _Parts(NamedTuple):
    counts: array[int]
    kinds: array[int]
    described: list[list[Any]]
    columns: list[list[Any]]


def _parts(value: bytes | memoryview) -> _Parts:
    """A value's columns, as machine integers of this machine's order."""
    value = bytes(value)
    if not readable(value):
        raise StructureError("not a message structure of this format")
    try:
        body = zlib.decompress(value[4:])
        n = int.from_bytes(body[:8], "little")
        at = 8
        counts = array("q")
        counts.frombytes(body[at:at + 8 * n])
        at += 8 * n
        kinds = array("I")
        kinds.frombytes(body[at:at + 4 * n])
        at += 4 * n
        if len(counts) != n or len(kinds) != n:
            raise ValueError("its columns are short")
        described, columns = json.loads(body[at:]) if n else ([], [])
        if len(described) != len(columns):
            raise ValueError("its kinds and their columns differ in number")
    except (zlib.error, ValueError, TypeError) as exc:
        raise StructureError(f"a damaged message structure: {exc}") from None
    return _Parts(_little(counts), _little(kinds), described, columns)


_NEW = tuple.__new__


def _outlines(kinds: array[int], described: list[list[Any]], columns: list[list[Any]]) -> list[Message]:
    # One iterator of outlines per kind, each made from its kind's columns in one pass at C speed (``map`` over
    # ``Outline`` and the named tuples' ``tuple.__new__``); then each message takes the next of its kind's.
    made: list[Iterator[Any]] = []
    for (letter, number, calls), column in zip(described, columns, strict=True):
        code, flag = number & 255, number >> 8
        role = _ROLE_OF.get(code, "")
        text = OUTLINE_TEXT if flag & _TEXT else None
        is_error = bool(flag & _ERROR) if flag & _ERROR_KNOWN else None
        if letter == "s":
            made.append(repeat(_outline(role, flag, None, None, ())))
        elif letter == "t":
            made.append(map(Outline, repeat(role), repeat(text), repeat(None), repeat(()), column, repeat(is_error)))
        elif letter == "c":
            fields = list(zip(*column, strict=True))  # the kind's calls' ids, names and arguments, by call
            each = []
            for j in range(calls):
                functions = map(_NEW, repeat(FunctionOutline), zip(fields[3 * j + 1], fields[3 * j + 2], strict=True))
                each.append(map(_NEW, repeat(CallOutline), zip(fields[3 * j], functions, repeat("function"),
                                                               strict=False)))
            made.append(map(Outline, repeat(role), repeat(text), repeat(None), zip(*each, strict=True), repeat(None),
                            repeat(is_error)))
        else:
            made.append(iter([_general(flag, role, own) for own in column]))
    return list(map(next, map(made.__getitem__, kinds)))


def _general(flag: int, role: str, own: list[Any]) -> Message:
    take = iter(own).__next__
    role = take() if flag & _OTHER_ROLE else role
    name = take() if flag & _NAME else None
    call_id = take() if flag & _CALL_ID else None
    calls = tuple([CallOutline(c, FunctionOutline(f, a)) for c, f, a in take()]) if flag & _CALLS else ()
    return _outline(role, flag, name, call_id, calls)


def _outline(role: str, flag: int, name: str | None, call_id: str | None,
             calls: tuple[CallOutline, ...]) -> Message:
    is_error = bool(flag & _ERROR) if flag & _ERROR_KNOWN else None
    return cast(Message, Outline(role, OUTLINE_TEXT if flag & _TEXT else None, name, calls, call_id, is_error))


def outlines(rows: Iterable[Sequence[Any]], *, skip: int = 0) -> tuple[Grouped, tuple[int, ...]]:
    """The outlines and counts of rows: ``decode(encode(rows))``."""
    return decode(encode(rows, skip=skip))
