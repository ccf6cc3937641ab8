"""A message list's structure in one compact value: what a trim reads of each message, and nothing of its text.

Strategies decide from roles, names, call ids, tool calls, error flags, whether a message has content, and stored
token counts (``stored.Outline``). A long session's rows are many: reading 200,000 of them and building their
outlines was most of a lab preview's time (bench/README.md). So the same fields are kept per list as columns in
one value (``encode``): a byte per message for its role and one for its flags, its count as a machine integer, and
the few strings (names, call ids, tool calls) as one JSON array, the whole compressed. ``decode`` rebuilds the
outlines (``Grouped``, their units found once) and the counts from it without a per-message query or JSON parse:
messages with nothing of their own (no name, no call, no call id) share one outline per role and flags.

Rows come in as a store reads them (``ROW_FIELDS``): tool calls as their JSON text or already decoded, booleans
as 0/1 or None. ``outlines(rows)`` is ``decode(encode(rows))``: one way rows become outlines, whether the caller
keeps the value or not.
"""
from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Iterable, Sequence
from itertools import compress
from typing import Any, cast

from agents.memory.chain import _gc_paused
from agents.memory.schema import ROLES, Message
from agents.memory.stored import OUTLINE_TEXT, CallOutline, FunctionOutline, Outline
from agents.memory.trimming.tool_runs import Grouped

# A row's fields, in order (a store may put more columns before them: ``Encoder.add(rows, skip=...)``).
ROW_FIELDS = ("role", "name", "tool_call_id", "tool_calls", "is_error", "has_content", "token_count")

FORMAT = 1  # bumped when the encoding changes: a value of another format is not read (``decode`` says so)
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
_OWN_MASK = bytes(1 if f & _OWN else 0 for f in range(256))  # flags.translate: 1 where a message has its own


class StructureError(ValueError):
    """A value that is not a structure of this format (written by another version, or damaged)."""


class Encoder:
    """Rows in, one value out: ``add`` batches of rows in order, then ``value()``."""

    def __init__(self) -> None:
        self.roles = bytearray()
        self.flags = bytearray()
        self.counts = array("q")
        self.strings: list[Any] = []

    def __len__(self) -> int:
        return len(self.roles)

    def add(self, rows: Iterable[Sequence[Any]], *, skip: int = 0) -> None:
        """Append rows of ``ROW_FIELDS`` (after ``skip`` leading columns: a seq, a session id)."""
        roles, flags, counts, strings = self.roles.append, self.flags.append, self.counts.append, self.strings
        for row in rows:
            role, name, tool_call_id, tool_calls, is_error, has_text, tokens = row[skip:skip + 7]
            flag = _TEXT if has_text else 0
            if is_error is not None:
                flag |= _ERROR_KNOWN | (_ERROR if is_error else 0)
            code = _ROLE_CODE.get(role)
            if code is None:
                flag |= _OTHER_ROLE
                strings.append(role)
                code = 255
            if name:
                flag |= _NAME
                strings.append(name)
            if tool_call_id:
                flag |= _CALL_ID
                strings.append(tool_call_id)
            if tool_calls and tool_calls != "[]":
                calls = json.loads(tool_calls) if isinstance(tool_calls, str) else tool_calls
                if calls:
                    flag |= _CALLS
                    strings.append([[c["id"], c["function"]["name"], c["function"]["arguments"]] for c in calls])
            roles(code)
            flags(flag)
            counts(tokens)

    def value(self) -> bytes:
        n = len(self.roles)
        strings = json.dumps(self.strings, ensure_ascii=False, separators=(",", ":")).encode()
        body = (n.to_bytes(8, "little") + bytes(self.roles) + bytes(self.flags) + self.counts.tobytes()
                + strings)
        return _MAGIC + bytes([FORMAT]) + zlib.compress(body, 1)


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
    value = bytes(value)
    if value[:3] != _MAGIC or value[3:4] != bytes([FORMAT]):
        raise StructureError("not a message structure of this format")
    try:
        body = zlib.decompress(value[4:])
        n = int.from_bytes(body[:8], "little")
        roles = body[8:8 + n]
        flags = body[8 + n:8 + 2 * n]
        counts = array("q")
        counts.frombytes(body[8 + 2 * n:8 + 10 * n])
        with _gc_paused():  # many small lists, none garbage: no collection rescans them as they are made
            strings = json.loads(body[8 + 10 * n:]) if n else []
    except (zlib.error, ValueError) as exc:
        raise StructureError(f"a damaged message structure: {exc}") from None
    if len(roles) != n or len(flags) != n or len(counts) != n:
        raise StructureError("a damaged message structure: its columns are short")
    with _gc_paused():
        return Grouped(_outlines(roles, flags, strings)), tuple(counts)


def _outlines(roles: bytes, flags: bytes, strings: list[Any]) -> list[Message]:
    # Each message's role and flags as one number (role + 256 * flags), read at C speed: a message with nothing of
    # its own takes the outline shared by its number (a list lookup, mapped in C); only the others are built here.
    n = len(roles)
    pairs = bytearray(2 * n)
    pairs[0::2] = roles
    pairs[1::2] = flags
    numbers = array("H")
    numbers.frombytes(pairs)
    if numbers.itemsize != 2 or array("H", b"\x01\x00")[0] != 1:  # pragma: no cover - big-endian machines
        numbers = array("H", (r + 256 * f for r, f in zip(roles, flags, strict=True)))
    # What a number says of its message: (role, content, is_error), and its outline when it has nothing of its own.
    fixed: dict[int, tuple[str, str | None, bool | None]] = {}
    shared: dict[int, Message | None] = {}
    for number in set(numbers):
        code, flag = number & 255, number >> 8
        fixed[number] = (_ROLE_OF.get(code, ""), OUTLINE_TEXT if flag & _TEXT else None,
                         bool(flag & _ERROR) if flag & _ERROR_KNOWN else None)
        shared[number] = None if flag & _OWN else _outline(_ROLE_OF[code], flag, None, None, ())
    made: list[Any] = list(map(shared.__getitem__, numbers))
    take = iter(strings).__next__
    for i in compress(range(n), flags.translate(_OWN_MASK)):
        number = numbers[i]
        own = number >> 8 & _OWN
        role, text, is_error = fixed[number]
        if own == _CALL_ID:  # a tool result: the commonest, inline
            made[i] = Outline(role, text, None, (), take(), is_error)
        elif own == _CALLS:  # an assistant message's calls, most often one
            calls = take()
            if len(calls) == 1:
                (call_id, name, arguments), = calls
                made[i] = Outline(role, text, None, (CallOutline(call_id, FunctionOutline(name, arguments)),), None,
                                  is_error)
            else:
                made[i] = Outline(role, text, None, tuple([CallOutline(c, FunctionOutline(f, a)) for c, f, a in calls]),
                                  None, is_error)
        else:
            flag = number >> 8
            role = take() if flag & _OTHER_ROLE else role
            name = take() if flag & _NAME else None
            call_id = take() if flag & _CALL_ID else None
            calls = tuple([CallOutline(c, FunctionOutline(f, a)) for c, f, a in take()]) if flag & _CALLS else ()
            made[i] = _outline(role, flag, name, call_id, calls)
    return made


def _outline(role: str, flag: int, name: str | None, call_id: str | None,
             calls: tuple[CallOutline, ...]) -> Message:
    is_error = bool(flag & _ERROR) if flag & _ERROR_KNOWN else None
    return cast(Message, Outline(role, OUTLINE_TEXT if flag & _TEXT else None, name, calls, call_id, is_error))


def outlines(rows: Iterable[Sequence[Any]], *, skip: int = 0) -> tuple[Grouped, tuple[int, ...]]:
    """The outlines and counts of rows: ``decode(encode(rows))``."""
    return decode(encode(rows, skip=skip))
