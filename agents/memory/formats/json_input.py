"""Reading JSON and JSONL input: whole for small inputs (exact line/column errors), streamed with ijson for big
ones (bounded memory), and a truncated preview of a big document for format detection."""
from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import ijson

from .base import FormatError

# Inputs up to this size are parsed whole: json gives line and column for syntax errors, and it is fast.
SMALL_INPUT = 8 * 1024 * 1024
# How much of a big input detection looks at.
PREVIEW_BYTES = 1024 * 1024
# Arrays in a preview are cut after this many items; detection never needs more.
PREVIEW_ITEMS = 200
# Real agent histories nest a few levels (content parts, tool schemas); thousands of levels is an attack or a bug.
MAX_DEPTH = 200

_STARTS = {"start_map", "start_array"}
_ENDS = {"end_map", "end_array"}


@dataclass
class Source:
    """An opened input: a binary stream and the name that hints at its kind (``.jsonl``)."""

    stream: IO[bytes]
    name: str
    close: bool


def open_source(source: str | os.PathLike[str] | IO[bytes]) -> Source:
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            return Source(sys.stdin.buffer, "<stdin>", False)
        try:
            return Source(open(source, "rb"), os.fspath(source), True)
        except OSError as exc:
            raise FormatError(os.fspath(source), exc.strerror or str(exc)) from None
    if isinstance(source, io.TextIOBase):
        raise FormatError("input", "expected a binary file object (open it with 'rb')")
    return Source(source, str(getattr(source, "name", "input")), False)


class PrefixedStream(io.RawIOBase):
    """The bytes already read (to decide what the input is) followed by the rest of the stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n


def read_head(stream: IO[bytes], limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = stream.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def decode(data: bytes, place: str = "input") -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(place, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                 "expected JSON or JSONL") from None


def parse_json(text: str, place: str = "") -> Any:
    """``json.loads`` with errors that name line and column."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{place}, line {exc.lineno} column {exc.colno}" if place else f"line {exc.lineno} column {exc.colno}"
        raise FormatError(where, f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise FormatError(place or "input", f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    check_depth(value, place or "input")
    return value


def check_depth(value: Any, place: str) -> None:
    """Refuse absurd nesting before anything recursive (validation, writing) meets it."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FormatError(place, f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))


def looks_like_jsonl(text: str, name: str) -> bool:
    """JSONL when the name says so, or when the first line is a whole JSON object and more follows."""
    if name.endswith((".jsonl", ".ndjson", ".jsonl.txt")):
        return True
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return False
    first, sep, rest = stripped.partition("\n")
    if not sep or not rest.strip():
        return False
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and rest.lstrip().startswith("{")


def iter_jsonl(lines: Iterator[bytes | str]) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for each non-blank line; errors say ``line 7: ...``."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            line = decode(raw, f"line {number}")
        else:
            line = raw
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"line {number}", f"invalid JSON at column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise FormatError(f"line {number}", f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
        check_depth(value, f"line {number}")
        yield number, value


# --- ijson: events, values, previews ----------------------------------------------------------------------------

class Events:
    """ijson's (prefix, event, value) stream with one event of look-ahead and errors turned into FormatError."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._it = ijson.parse(stream, use_float=True)
        self._pending: tuple[str, str, Any] | None = None
        self.depth = 0

    def __iter__(self) -> Events:
        return self

    def __next__(self) -> tuple[str, str, Any]:
        if self._pending is not None:
            ev, self._pending = self._pending, None
            return ev
        try:
            prefix, event, value = next(self._it)
        except StopIteration:
            raise
        except ijson.IncompleteJSONError as exc:
            raise FormatError("input", f"invalid JSON: {_ijson_detail(exc)}") from None
        except ijson.JSONError as exc:
            raise FormatError("input", f"invalid JSON: {_ijson_detail(exc)}") from None
        except UnicodeDecodeError as exc:
            raise FormatError("input", f"not UTF-8 text ({exc.reason})") from None
        if event in _STARTS:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise FormatError("input", f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
        elif event in _ENDS:
            self.depth -= 1
        return prefix, event, value

    def push_back(self, item: tuple[str, str, Any]) -> None:
        self._pending = item

    def next_or_none(self) -> tuple[str, str, Any] | None:
        try:
            return next(self)
        except StopIteration:
            return None

    def value(self, event: str, value: Any) -> Any:
        """The whole value that starts with this event."""
        if event not in _STARTS:
            return value
        builder = ijson.ObjectBuilder()
        builder.event(event, value)
        depth = 1
        for _prefix, ev, val in self:
            builder.event(ev, val)
            if ev in _STARTS:
                depth += 1
            elif ev in _ENDS:
                depth -= 1
                if depth == 0:
                    break
        else:
            raise FormatError("input", "invalid JSON: the input ends in the middle of a value")
        return builder.value


    def array_items(self) -> Iterator[Any]:
        """The values of the array whose start_array was just read, one at a time."""
        for _prefix, event, value in self:
            if event == "end_array":
                return
            yield self.value(event, value)
        raise FormatError("input", "invalid JSON: the input ends inside an array")

    def expect_end(self) -> None:
        if self.next_or_none() is not None:
            raise FormatError("input", "invalid JSON: more data after the document")


def _ijson_detail(exc: Exception) -> str:
    text = str(exc).strip().replace("\n", " ")
    return " ".join(text.split())[:300] or exc.__class__.__name__


def _whole_characters(head: bytes) -> bytes:
    """The head without a UTF-8 character cut in two at its end (a cut is not a decoding error)."""
    for cut in range(4):
        part = head[: len(head) - cut]
        try:
            part.decode("utf-8")
            return part
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:
                return head  # a bad byte well before the end: real garbage, reported as such
    return head


def _whole_escapes(head: bytes) -> bytes:
    """The head without a string escape cut in two at its end (``\\`` or ``\\u00``): a head cut there is a string
    cut short, not a bad escape. Backslashes only occur inside strings in JSON."""
    last = head.rfind(b"\\", max(0, len(head) - 6))
    if last == -1:
        return head
    first = last
    while first > 0 and head[first - 1] == 0x5C:
        first -= 1
    if (last - first + 1) % 2 == 0:
        return head  # the run ends with an escaped backslash: complete
    rest = head[last + 1 :]
    if not rest or (rest[:1] == b"u" and len(rest) < 5):
        return head[:last]
    return head


def preview(head: bytes) -> Any:
    """A document built from the first bytes of a big input, arrays cut after PREVIEW_ITEMS items: enough to tell
    the format without reading the whole input. A truncated input yields what was complete so far."""
    stack: list[Any] = []
    keys: list[str | None] = []
    root: list[Any] = []
    counts: list[int] = []
    skip_depth = 0

    def add(value: Any) -> None:
        if not stack:
            root.append(value)
            return
        container = stack[-1]
        if isinstance(container, list):
            counts[-1] += 1
            if counts[-1] <= PREVIEW_ITEMS:
                container.append(value)
        else:
            container[keys[-1]] = value

    try:
        for _prefix, event, value in ijson.parse(io.BytesIO(_whole_escapes(_whole_characters(head))), use_float=True):
            if skip_depth:
                if event in _STARTS:
                    skip_depth += 1
                elif event in _ENDS:
                    skip_depth -= 1
                continue
            if event == "map_key":
                keys[-1] = value
                continue
            if event in _STARTS:
                if stack and isinstance(stack[-1], list) and counts[-1] >= PREVIEW_ITEMS:
                    skip_depth = 1
                    continue
                if len(stack) >= MAX_DEPTH:
                    raise FormatError("input", f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
                new: Any = {} if event == "start_map" else []
                add(new)
                stack.append(new)
                keys.append(None)
                counts.append(0)
                continue
            if event in _ENDS:
                stack.pop()
                keys.pop()
                counts.pop()
                continue
            add(value)
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        if "premature EOF" not in str(exc):
            # Broken before the head ends: say so now rather than guess a format from half a document.
            if isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
                raise FormatError("input", "not UTF-8 text; expected JSON or JSONL") from None
            raise FormatError("input", f"invalid JSON: {_ijson_detail(exc)}") from None
        # The head ends mid-document, as expected of a big input.
        # Items still open are incomplete (a message missing its later keys): drop them so detection sees whole
        # items only. Open values of keys stay: the items they already hold are complete.
        for i in range(len(stack) - 1, 0, -1):
            parent = stack[i - 1]
            if isinstance(parent, list) and parent and parent[-1] is stack[i]:
                parent.pop()
    if not root:
        raise FormatError("input", "invalid JSON: no JSON value at the start of the input")
    return root[0]
