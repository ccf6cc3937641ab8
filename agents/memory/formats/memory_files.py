"""The memory formats of DESIGN.md: detect them, and read a file of any of them into a ``MemoryDocument``.

Two kinds of file:

- JSON documents (``agentscope_session``, ``mem0``'s JSON, ``letta_af``, ``autogen_memory``,
  ``langgraph_checkpoints``'s ``get_state_history`` JSON, ``langgraph_store``): each module has ``detect(data)``
  and ``read(data) -> MemoryDocument``.
- SQLite databases (mem0's ``history.db``, LangGraph's ``SqliteSaver``, the Agents SDK's ``SQLiteSession``), told
  apart by their tables: each module has ``TABLES`` (the tables it needs) and ``read_sqlite(db) ->
  MemoryDocument``. A database is data, not code: it is opened read-only and immutable, with no extension, no
  ATTACH, no writes, untrusted schema (no function a view or trigger names runs), and an authorizer that allows
  reading and nothing else (``open_database``). One that is none of the known ones is refused by its tables.

A module may have both (mem0). ``read_document`` is the one entry: the importer, the commands, the API and the
benchmarks call it (through ``agents.memory.formats``).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from types import ModuleType
from typing import IO, Any

from agents.memory.ledger import MemoryDocument

from . import (
    agentscope_session,
    autogen_memory,
    langgraph_checkpoints,
    langgraph_store,
    letta_af,
    mem0,
    openai_agents_session,
)
from .base import FormatError, FormatSpec

SQLITE_HEADER = b"SQLite format 3\x00"

# In the order they are offered and detected.
MEMORY_CODECS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (
        agentscope_session,
        mem0,
        letta_af,
        autogen_memory,
        langgraph_checkpoints,
        langgraph_store,
        openai_agents_session,
    )
}
MEMORY_FORMATS: dict[str, FormatSpec] = {name: module.SPEC for name, module in MEMORY_CODECS.items()}


def memory_codec(name: str) -> ModuleType | None:
    return MEMORY_CODECS.get(name)


def detect_memory(data: Any) -> list[str]:
    """The memory formats whose JSON shape ``data`` has (usually none or one)."""
    return [name for name, module in MEMORY_CODECS.items() if hasattr(module, "detect") and module.detect(data)]


def read_memory_data(data: Any, format: str, *, name: str | None = None) -> MemoryDocument:
    """``name``: the file's name, which some formats read (AgentScope's ``{user_id}_{session_id}.json``)."""
    module = MEMORY_CODECS[format]
    if not hasattr(module, "read"):
        raise FormatError("input", f"{format} is read from its SQLite database, not from JSON")
    document: MemoryDocument = module.read(data, name=name)
    return document


# --- SQLite files ------------------------------------------------------------------------------------------------

def is_sqlite(head: bytes) -> bool:
    return head.startswith(SQLITE_HEADER)


_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION})
# The functions the readers' queries call; nothing else runs, whatever a view or index in the file names.
_ALLOWED_FUNCTIONS = frozenset({"count", "coalesce", "max", "min", "length", "ifnull", "typeof", "substr"})


def _authorize(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _ALLOWED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and db_name not in (None, "main"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


@contextlib.contextmanager
def open_database(path: str | os.PathLike[str], *, live: bool = False) -> Iterator[sqlite3.Connection]:
    """A SQLite file opened as data: read-only and immutable (nothing is written, not even a journal), extensions
    off, no database attached, the schema untrusted, and every statement checked by an authorizer that allows
    reads of the main database and a handful of plain functions.

    ``live``: a file a running program may still write (a path given on the command line, a LangGraph checkpointer
    in use): opened read-only but not immutable, so that what its write-ahead log holds is read too; when that
    cannot be (a folder this process may not write, for the log's index), immutable as any upload."""
    db = _connect(path, immutable=False) if live else None
    if db is None:
        db = _connect(path, immutable=True)
        if db is None:
            raise FormatError("input", "not a readable SQLite database")
    try:
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA query_only = ON")
        db.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 256 * 1024 * 1024)
        db.set_authorizer(_authorize)
        yield db
    finally:
        db.close()


def _connect(path: str | os.PathLike[str], *, immutable: bool) -> sqlite3.Connection | None:
    uri = "file:" + _uri_path(os.fspath(path)) + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    try:
        db = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        if immutable and "not a database" not in str(exc) and "malformed" not in str(exc):
            return None
        raise FormatError("input", f"not a readable SQLite database: {exc}") from None
    return db


def _uri_path(path: str) -> str:
    # In a file: URI, "?" and "#" start the query and the fragment, "%" an escape.
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def tables_of(db: sqlite3.Connection) -> set[str]:
    try:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError as exc:
        raise FormatError("input", f"a damaged SQLite database: {exc}") from None
    return {str(name) for (name,) in rows}


def detect_database(tables: set[str]) -> str:
    found = [name for name, module in MEMORY_CODECS.items()
             if hasattr(module, "TABLES") and tables >= module.TABLES]
    if len(found) == 1:
        return found[0]
    if not found:
        known = "; ".join(f"{name} ({', '.join(sorted(module.TABLES))})"
                          for name, module in MEMORY_CODECS.items() if hasattr(module, "TABLES"))
        shown = ", ".join(sorted(tables)[:12]) or "none"
        raise FormatError("input", f"a SQLite database with the tables {shown}, which is none of the known ones: "
                                   f"{known}")
    raise FormatError("input", f"a SQLite database that reads as {' or '.join(found)}; name the format",
                      choose_format=True)


def read_database(path: str | os.PathLike[str], format: str | None = None, *, live: bool = False) -> MemoryDocument:
    """A database's layers read whole (its records listed), for callers that do not keep it open."""
    with open_database(path, live=live) as db:
        return read_opened(db, format).materialized()


def read_opened(db: sqlite3.Connection, format: str | None = None) -> MemoryDocument:
    """A database's layers; a big store's records (``MemoryDocument.records``) are read from ``db`` as they are
    consumed, so it must stay open until then (a damaged page met then is a FormatError too)."""
    tables = tables_of(db)
    name = format or detect_database(tables)
    module = MEMORY_CODECS.get(name)
    if module is None or not hasattr(module, "read_sqlite"):
        raise FormatError("format", f"{name} is not read from a SQLite database")
    missing = module.TABLES - tables
    if missing:
        raise FormatError("input", f"not a {name} database: no table {', '.join(sorted(missing))}")
    try:
        document: MemoryDocument = module.read_sqlite(db)
    except sqlite3.DatabaseError as exc:
        raise FormatError("input", f"a damaged SQLite database: {exc}") from None
    return document


@contextlib.contextmanager
def database_file(stream: IO[bytes], head: bytes) -> Iterator[str]:
    """A file path holding what ``stream`` gives (``head`` read already), for SQLite, which reads files only.
    Removed afterwards."""
    handle, path = tempfile.mkstemp(prefix="memoryviz-", suffix=".sqlite3")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(head)
            shutil.copyfileobj(stream, out, 1 << 20)
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
