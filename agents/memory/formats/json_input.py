"""Reading JSON and JSONL input: whole for small inputs (exact line/column errors), streamed with ijson for big
ones (bounded memory), and a truncated preview of a big document for format detection.

Whatever the path, input that is not text memoryviz can store is refused with the place named: UTF-32, a lone
UTF-16 surrogate escape (``"\\ud800"``: half a character, which no database stores), a whole number of more digits
than Python reads (4,300).
"""
from __future__ import annotations

import io
import json
import os
import re
import secrets
import sys
from collections import deque
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
_STRINGS = {"string", "map_key"}
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


def text_encoding(head: bytes) -> str:
    """``utf-8`` or ``utf-16`` (what the input's first bytes say: a byte order mark, or the zero bytes around the
    ASCII character every JSON text starts with). FormatError for UTF-32, which JSON never is."""
    if head[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or (
        len(head) >= 4 and (head[1:4] == b"\x00\x00\x00" or head[:3] == b"\x00\x00\x00") and head[:4] != b"\x00" * 4
    ):
        raise FormatError("input", "UTF-32 text; JSON is UTF-8 (or UTF-16): save the file as UTF-8")
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if len(head) >= 2 and head[0] != 0 and head[1] == 0 or head[:1] == b"\x00" and head[1:2] not in (b"", b"\x00"):
        return "utf-16"
    return "utf-8"


def decode(data: bytes, place: str = "input") -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if text_encoding(data[:4]) == "utf-16":
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            encoding = "utf-16"
        else:
            encoding = "utf-16-le" if data[1:2] == b"\x00" else "utf-16-be"
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(place, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                 "expected JSON or JSONL") from None


def parse_json(text: str, place: str = "") -> Any:
    """``json.loads`` with errors that name line and column (syntax) or the value's path (what memoryviz cannot
    keep: a lone surrogate, a number of too many digits)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{place}, line {exc.lineno} column {exc.colno}" if place else f"line {exc.lineno} column {exc.colno}"
        raise FormatError(where, f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise FormatError(place or "input", f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError:
        # Python refuses to read a whole number of more than sys.get_int_max_str_digits() digits (a guard against
        # quadratic conversion): parse again, keeping such numbers aside, to say where one is.
        _raise_for_long_number(text, place)
        raise
    check_depth(value, place or "input")
    if _SURROGATE_ESCAPE.search(text):
        check_text(value, place)
    return value


# A UTF-16 surrogate written as an escape (\uD800-\uDFFF): emoji from ensure_ascii writers come as pairs of them;
# one alone is half a character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _path(parts: list[str | int]) -> str:
    # A key may itself hold the lone surrogate being reported: shown as its escape, which any output can carry.
    text = "".join(f"[{p}]" if isinstance(p, int) else "." + _SURROGATE.sub(_escape, p) for p in parts)
    return text[1:] if text.startswith(".") else text


def _where(place: str, parts: list[str | int]) -> str:
    path = _path(parts)
    if not place:
        return path or "input"
    return f"{place}, {path}" if path else place


def _walk(value: Any) -> Iterator[tuple[list[str | int], Any, bool]]:
    """(path, item, is_key) for every value and key, depth first."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        parts, item = stack.pop()
        yield parts, item, False
        if isinstance(item, dict):
            for key, child in item.items():
                yield [*parts, key], key, True
                stack.append(([*parts, key], child))
        elif isinstance(item, list):
            stack.extend(([*parts, i], child) for i, child in enumerate(item))


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate of a decoded string, as its escape (``\\ud800``), or None."""
    match = _SURROGATE.search(text)
    return f"\\u{ord(match.group()):04x}" if match else None


def surrogate_message(escape: str) -> str:
    return f"{escape} is half of a UTF-16 surrogate pair (a lone surrogate), not a character; nothing can store it"


def check_text(value: Any, place: str = "") -> None:
    """FormatError naming the first string (or key) that holds a lone surrogate."""
    for parts, item, is_key in _walk(value):
        if isinstance(item, str):
            escape = lone_surrogate(item)
            if escape is not None:
                where = _where(place, parts) + (" (a key)" if is_key else "")
                raise FormatError(where, surrogate_message(escape))


class _LongNumber(str):
    """A whole number's digits that Python will not read as an int (kept as text to say where it is)."""


def _raise_for_long_number(text: str, place: str) -> None:
    limit = sys.get_int_max_str_digits()

    def parse_int(digits: str) -> Any:
        return _LongNumber(digits) if limit and len(digits.lstrip("-")) > limit else int(digits)

    try:
        value = json.loads(text, parse_int=parse_int)
    except (ValueError, RecursionError):
        return
    for parts, item, _is_key in _walk(value):
        if isinstance(item, _LongNumber):
            raise FormatError(_where(place, parts), long_number_message(len(item.lstrip("-")), limit))


def long_number_message(digits: int, limit: int) -> str:
    return f"a whole number of {digits:,} digits; numbers of more than {limit:,} digits are not read"


# ijson's parser (inputs over 8 MB) reads whole numbers as 64-bit integers.
STREAMED_NUMBER_LIMIT = (
    "a whole number beyond 64 bits (over 9,223,372,036,854,775,807), which files over 8 MB cannot hold; "
    "write it as a string, or as a decimal number"
)


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
        line = decode(raw, f"line {number}") if isinstance(raw, bytes) else raw
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"line {number}", f"invalid JSON at column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise FormatError(f"line {number}", f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
        except ValueError:
            _raise_for_long_number(line, f"line {number}")
            raise
        check_depth(value, f"line {number}")
        if _SURROGATE_ESCAPE.search(line):
            check_text(value, f"line {number}")
        yield number, value


# --- long strings and lone surrogates in a streamed input -----------------------------------------------------------

# yajl (ijson's C parser) re-scans a token that spans its buffers from its start at every buffer, so a single string
# of N bytes costs O(N²) (300 MiB took ten minutes); and it turns a lone surrogate escape into "?" without a word.
# LiftedStrings stands between the input and ijson: it hands strings longer than this to Python's own (linear) JSON
# string decoder and gives ijson a short stand-in, and it checks every surrogate escape.
LONG_STRING = 1 << 20
LIFT_CHUNK = 1 << 20
_STAND_IN = "\x00memoryviz-lifted-"
_SURROGATE_ESCAPES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class LiftedStrings(io.RawIOBase):
    """The bytes of a JSON input, with each string longer than ``long_string`` bytes replaced by a short stand-in
    whose decoded value is in ``values`` (``Events`` puts it back), and a FormatError naming the byte of the first
    lone surrogate escape.

    It scans chunk by chunk with C-level searches (count, find, regular expressions), never byte by byte: per chunk
    it only needs to know whether the chunk ends inside a string, and where that string began."""

    def __init__(self, raw: IO[bytes], *, long_string: int = LONG_STRING, chunk: int = LIFT_CHUNK) -> None:
        self._raw = raw
        self._long = long_string
        self._chunk = chunk
        self.values: dict[str, str] = {}
        self._nonce = secrets.token_hex(6)
        # What the parser reads next: views into the chunks, never copied into one buffer (consuming a bytearray from
        # its front cost more than the scan itself).
        self._out: deque[memoryview] = deque()
        self._carry = b""  # the end of the previous chunk held back: a run of backslashes or a cut escape
        self._in_string = False
        self._held: list[memoryview] = []  # an open string, from its opening quote, while it may still be long
        self._held_size = 0
        self._eof = False
        # The offset of the next chunk's first byte. Errors name a byte, not a line: counting the newlines of every
        # chunk would cost as much as counting its quotes, and a big JSON file is mostly one line anyway.
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._out and not self._eof:
            self._step()
        if not self._out:
            return 0
        piece = self._out[0]
        n = min(len(buffer), len(piece))
        buffer[:n] = piece[:n]
        if n == len(piece):
            self._out.popleft()
        else:
            self._out[0] = piece[n:]
        return n

    def _emit(self, piece: memoryview) -> None:
        if len(piece):
            self._out.append(piece)

    # --- one chunk ------------------------------------------------------------------------------------------

    def _step(self) -> None:
        data = self._raw.read(self._chunk)
        if not data:
            self._eof = True
            chunk, self._carry = self._carry, b""
            if chunk:
                self._scan(chunk, True)
            if self._held:
                # The input ends inside a string: give the parser its start (enough to say where), not all of it.
                self._emit(memoryview(b"".join(self._held)[:65536]))
                self._held, self._held_size = [], 0
            return
        chunk = self._carry + data if self._carry else data
        # Without a backslash (one memchr) a chunk has no escape to cut, check or count.
        escapes = b"\\" in chunk
        cut = _escape_boundary(chunk) if escapes else len(chunk)
        self._carry = chunk[cut:]
        self._scan(chunk[:cut] if cut < len(chunk) else chunk, escapes)

    def _scan(self, chunk: bytes, escapes: bool) -> None:
        if escapes:
            self._check_surrogates(chunk)
        view = memoryview(chunk)
        start = 0
        while start < len(chunk):
            if self._in_string:
                end = self._closing_quote(chunk, start)
                if end == -1:
                    self._hold(view[start:])
                    break
                self._hold(view[start : end + 1])
                self._close_string()
                start = end + 1
                continue
            # Outside a string: the state at the end of the chunk follows from the parity of its unescaped quotes;
            # only a string left open at the end needs finding.
            quotes = chunk.count(b'"', start) - (_escaped_quotes(chunk, start) if escapes else 0)
            if quotes % 2 == 0:
                self._emit(view[start:])
                break
            opening = self._last_opening_quote(chunk, start)
            self._emit(view[start:opening])
            self._in_string = True
            self._held, self._held_size = [], 0
            start = opening
            self._hold(view[start : start + 1])
            start += 1
        self._offset += len(chunk)

    def _hold(self, piece: memoryview) -> None:
        self._held.append(piece)
        self._held_size += len(piece)

    def _close_string(self) -> None:
        self._in_string = False
        held, self._held, size, self._held_size = self._held, [], self._held_size, 0
        if size <= self._long:
            self._out.extend(piece for piece in held if len(piece))
            return
        raw = b"".join(held)
        del held
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(self._place(), f"not UTF-8 text (byte 0x{raw[exc.start]:02x} in a string)") from None
        del raw
        try:
            value, end = json.decoder.scanstring(text, 1)  # type: ignore[attr-defined]  # not in typeshed
        except json.JSONDecodeError as exc:
            raise FormatError(self._place(), f"invalid JSON in a string: {exc.msg}") from None
        del text
        key = f"{_STAND_IN}{self._nonce}-{len(self.values)}"
        self.values[key] = value
        self._emit(memoryview(json.dumps(key).encode("ascii")))

    @staticmethod
    def _closing_quote(chunk: bytes, start: int) -> int:
        """The first unescaped quote from ``start`` (inside a string), or -1."""
        at = chunk.find(b'"', start)
        while at != -1:
            run = at
            while run > start and chunk[run - 1] == 0x5C:
                run -= 1
            if (at - run) % 2 == 0:
                return at
            at = chunk.find(b'"', at + 1)
        return -1

    @staticmethod
    def _last_opening_quote(chunk: bytes, start: int) -> int:
        """The last unescaped quote from ``start`` on: the one that opens the string left open at the end."""
        at = chunk.rfind(b'"', start)
        while at != -1:
            run = at
            while run > start and chunk[run - 1] == 0x5C:
                run -= 1
            if (at - run) % 2 == 0:
                return at
            at = chunk.rfind(b'"', start, at)
        raise AssertionError("an odd count of unescaped quotes has a last one")

    def _check_surrogates(self, chunk: bytes) -> None:
        if b"\\u" not in chunk:
            return
        for match in _SURROGATE_ESCAPES.finditer(chunk):
            at = match.start()
            run = at
            while run > 0 and chunk[run - 1] == 0x5C:
                run -= 1
            if (at - run) % 2:
                continue  # "\\ud800" is a backslash and the text "ud800", not an escape
            unit = int(chunk[at + 2 : at + 6], 16)
            if unit < 0xDC00:
                after = chunk[at + 6 : at + 12]
                if len(after) == 6 and after[:2] in (b"\\u", b"\\U") and 0xDC00 <= _hex(after[2:]) <= 0xDFFF:
                    continue
            elif at >= 6 and chunk[at - 6 : at - 4] == b"\\u" and 0xD800 <= _hex(chunk[at - 4 : at]) <= 0xDBFF:
                continue
            raise FormatError(self._place(at), surrogate_message(f"\\u{unit:04x}"))

    def _place(self, at: int = 0) -> str:
        """``byte N`` (from 1) of the input, ``at`` bytes into the chunk being scanned."""
        return f"byte {self._offset + at + 1:,}"


def _escaped_quotes(chunk: bytes, start: int) -> int:
    """The quotes from ``start`` that a backslash escapes: those after an odd run of backslashes.

    With N(k) the count of quotes after at least k backslashes (a count of k backslashes and a quote: each such
    occurrence ends at its own quote), the quotes after exactly k are N(k) - N(k+1), so the escaped ones are
    N(1) - N(2) + N(3) - ... : a few C-level counts, whatever the number of escapes (a regular expression visiting each
    backslash cost 70 ms a megabyte on text full of "\\n")."""
    total, sign, k = 0, 1, 1
    while True:
        at_least = chunk.count(b"\\" * k + b'"', start)
        if not at_least:
            return total
        total += sign * at_least
        sign, k = -sign, k + 1


_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def _escape_boundary(chunk: bytes) -> int:
    """Where to end a chunk so that no escape, and no surrogate pair, is cut in two (what follows waits for the next
    chunk): at the first escape that starts in the last 12 bytes, or before the high half of a pair ending there."""
    window = max(0, len(chunk) - 12)
    at = chunk.find(b"\\", window)
    if at == -1:
        return len(chunk)
    run = at
    while run > 0 and chunk[run - 1] == 0x5C:
        run -= 1
    if (at - run) % 2:
        at -= 1  # the second half of an escaped backslash: the escape starts one byte before
    if at >= 6 and _HIGH_SURROGATE_ESCAPE.fullmatch(chunk, at - 6, at):
        at -= 6
    return at


def _hex(digits: bytes) -> int:
    try:
        return int(digits, 16)
    except ValueError:
        return -1


# --- ijson: events, values, previews ----------------------------------------------------------------------------

class Events:
    """ijson's (prefix, event, value) stream with one event of look-ahead and errors turned into FormatError."""

    def __init__(self, stream: IO[bytes], lifted: dict[str, str] | None = None) -> None:
        # use_float: floats rather than Decimals, and whole numbers read as 64-bit (a bigger one is an "integer
        # overflow"). Without it, ijson 3.6's C parser crashes the process on a number of more than 4,300 digits.
        self._it = ijson.parse(stream, use_float=True)
        self._pending: tuple[str, str, Any] | None = None
        self.depth = 0
        # Strings a LiftedStrings under the stream took out: their stand-ins are replaced by their values.
        self._lifted = lifted if lifted is not None else {}
        # Where the parser is, to name the place of an error: the last event and the index of each array being
        # read item by item (array_items).
        self._last: tuple[str, str, Any] = ("", "", None)
        self._items: list[int] = []

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
        except ijson.JSONError as exc:
            detail = _ijson_detail(exc)
            if detail.startswith("parse error: integer overflow"):
                raise FormatError(self.place(), STREAMED_NUMBER_LIMIT) from None
            raise FormatError("input", f"invalid JSON: {detail}") from None
        except UnicodeDecodeError as exc:
            raise FormatError("input", f"not UTF-8 text ({exc.reason})") from None
        if self._lifted and event in _STRINGS and value.startswith(_STAND_IN):
            value = self._lifted.pop(value, value)
        self._last = (prefix, event, value)
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
        self._items.append(-1)
        try:
            for _prefix, event, value in self:
                if event == "end_array":
                    return
                self._items[-1] += 1
                yield self.value(event, value)
        finally:
            self._items.pop()
        raise FormatError("input", "invalid JSON: the input ends inside an array")

    def place(self) -> str:
        """Where the parser is (``messages[12].content``), from ijson's prefix of the last event, the items counted
        by array_items, and the key just read; "input" when nothing was read yet."""
        prefix, event, value = self._last
        parts = prefix.split(".") if prefix else []
        if event == "map_key":
            parts.append(str(value))
        items = iter(self._items)
        path = ""
        for part in parts:
            if part == "item":
                path += f"[{next(items, '?')}]"
            else:
                path += f".{part}" if path else part
        return path or "input"

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

    lifted = LiftedStrings(io.BytesIO(_whole_escapes(_whole_characters(head))))
    try:
        for _prefix, event, value in ijson.parse(io.BufferedReader(lifted, 1 << 16), use_float=True):
            if lifted.values and event in _STRINGS and value.startswith(_STAND_IN):
                value = lifted.values.pop(value, value)
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
        # A number too big for the streaming parser ends the preview there; the reader says where it is.
        if "premature EOF" not in str(exc) and "integer overflow" not in str(exc):
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
