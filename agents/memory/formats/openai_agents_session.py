"""OpenAI Agents SDK sessions: a ``SQLiteSession`` database (and the tables ``AdvancedSQLiteSession`` adds).

``SQLiteSession(session_id, db_path)`` writes ``agent_sessions(session_id, created_at, updated_at)`` and
``agent_messages(id INTEGER PRIMARY KEY AUTOINCREMENT, session_id, message_data, created_at)``: each row one
Responses API input item as JSON, what ``session.get_items()`` gives back and what the next ``Runner.run`` sends
after the agent's instructions (which the database does not hold).

Each session is a conversation: external id its ``session_id``, ``started_at`` its ``created_at``, its items in the
order of their ``id`` (``created_at`` is SQLite's ``CURRENT_TIMESTAMP``, to the second, UTC), read by the
``openai_responses`` reader (a function call joins the assistant message before it, a reasoning item the message
after it, ids kept, written back unchanged), each message with the ``created_at`` of the row of the item that opens
it. A session whose rows have no ``agent_sessions`` row (SQLite does not enforce the foreign key) is read too.

``AdvancedSQLiteSession`` adds ``message_structure`` (each item's branch and position), ``turn_usage`` and its
bookkeeping tables. A branch (``create_branch_from_turn``) shares the items before its turn and appends its own to
``agent_messages``, so a session with branches is read by ``message_structure``: a conversation per branch, items
in the order of ``sequence_number`` (what ``get_items(branch_id=...)`` gives); ``main`` keeps the session's id,
another branch is ``{session_id}@{branch_id}``; each branch's ``turn_usage`` rows go to its metadata.

An item that is not JSON is refused, naming its row (the SDK skips it silently when it reads the session).
"""
from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from agents.memory.ledger import MemoryDocument, parse_time
from agents.memory.schema import Conversation

from . import openai_responses
from .base import FormatError, FormatSpec, json_type
from .json_input import MAX_DEPTH, check_depth

NAME = "openai_agents_session"
SPEC = FormatSpec(
    name=NAME,
    label="OpenAI Agents SDK session",
    description="OpenAI Agents SDK SQLiteSession database",
    extension="sqlite3",
    media_type="application/json",
)
TABLES = frozenset({"agent_sessions", "agent_messages"})
MAIN_BRANCH = "main"


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(d[0]) for d in db.execute(f'SELECT * FROM "{table}" LIMIT 0').description}


def _need(db: sqlite3.Connection, table: str, needed: Iterable[str]) -> set[str]:
    columns = _columns(db, table)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise FormatError(table, f"not the Agents SDK's {table} table: no column {', '.join(missing)}")
    return columns


def _sql_type(value: Any) -> str:
    return {int: "an integer", float: "a number", bytes: "a blob"}.get(type(value), json_type(value))


def _time(value: Any, place: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise FormatError(place, f"expected a time, got {_sql_type(value)}")
    try:
        return parse_time(value)
    except ValueError:
        raise FormatError(place, f"not a time: {value[:60]!r}") from None


def _item(data: Any, place: str) -> Any:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(place, "not UTF-8 text") from None
    if not isinstance(data, str):
        raise FormatError(place, f"expected a Responses item as JSON text, got {_sql_type(data)}")
    try:
        item = json.loads(data)
    except RecursionError:
        raise FormatError(place, f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise FormatError(place, f"not JSON: {exc}") from None
    check_depth(item, place)
    return item


def read_sqlite(db: sqlite3.Connection) -> MemoryDocument:
    try:
        return _read(db)
    except sqlite3.DatabaseError as exc:
        raise FormatError("input", f"a damaged SQLite database: {exc}") from None


def _read(db: sqlite3.Connection) -> MemoryDocument:
    session_columns = _need(db, "agent_sessions", ["session_id"])
    message_columns = _need(db, "agent_messages", ["id", "session_id", "message_data"])
    picked = ", ".join(c if c in session_columns else f"NULL AS {c}" for c in ("created_at", "updated_at"))
    sessions = {}
    for session_id, created, updated in db.execute(f"SELECT session_id, {picked} FROM agent_sessions ORDER BY rowid"):
        place = f"agent_sessions[session_id={session_id!r}]"
        if not isinstance(session_id, str):
            raise FormatError(f"{place}.session_id", f"expected a string, got {_sql_type(session_id)}")
        sessions[session_id] = (_time(created, f"{place}.created_at"), _time(updated, f"{place}.updated_at"))
    tables = {str(n) for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    notes: list[str] = []
    branches = _branches(db, tables, notes)
    usage = _usage(db, tables)
    created_at = "created_at" if "created_at" in message_columns else "NULL AS created_at"
    conversations: dict[str, list[Conversation]] = {}
    cursor = db.execute(f"SELECT id, session_id, message_data, {created_at} FROM agent_messages "
                        "ORDER BY session_id, id")
    for session_id, rows in itertools.groupby(cursor, key=itemgetter(1)):
        if not isinstance(session_id, str):
            raise FormatError("agent_messages.session_id", f"expected a string, got {_sql_type(session_id)}")
        if session_id in branches:
            unplaced = sum(1 for row in rows if row[0] not in branches[session_id][1])
            if unplaced:
                notes.append(f"agent_messages: {unplaced} item(s) of the session {session_id!r} are in no branch of "
                             "message_structure; not read")
            continue
        conversations[session_id] = [_conversation(session_id, None, list(rows), sessions.get(session_id),
                                                   usage.get((session_id, MAIN_BRANCH)))]
    for session_id, (by_branch, _) in branches.items():
        conversations[session_id] = [
            _conversation(session_id, branch, rows, sessions.get(session_id), usage.get((session_id, branch)))
            for branch, rows in by_branch.items()]
    for session_id, times in sessions.items():
        if session_id not in conversations:  # a session with no item yet: an empty conversation
            conversations[session_id] = [_conversation(session_id, None, [], times, None)]
    ordered = [*sessions, *(s for s in conversations if s not in sessions)]
    return MemoryDocument(format=NAME, conversations=[c for s in ordered for c in conversations[s]], notes=notes)


def _branches(db: sqlite3.Connection, tables: set[str],
              notes: list[str]) -> dict[str, tuple[dict[str, list[tuple[Any, ...]]], set[Any]]]:
    """The items of each session AdvancedSQLiteSession structured, by branch (main first), in branch order; and the
    ids of the items every branch holds."""
    if "message_structure" not in tables:
        return {}
    columns = _columns(db, "message_structure")
    if not {"session_id", "message_id", "branch_id", "sequence_number"} <= columns:
        notes.append("message_structure: not AdvancedSQLiteSession's (no session_id, message_id, branch_id, "
                     "sequence_number); the sessions are read by the order of their items")
        return {}
    created_at = "m.created_at" if "created_at" in _columns(db, "agent_messages") else "NULL"
    cursor = db.execute(
        f"SELECT m.id, s.session_id, m.message_data, {created_at}, s.branch_id FROM message_structure s "
        "JOIN agent_messages m ON m.id = s.message_id "
        "ORDER BY s.session_id, s.branch_id <> 'main', s.branch_id, s.sequence_number, s.id")
    out: dict[str, tuple[dict[str, list[tuple[Any, ...]]], set[Any]]] = {}
    for row in cursor:
        session_id, branch = row[1], row[4]
        if not isinstance(session_id, str) or not isinstance(branch, str):
            raise FormatError(f"message_structure[message_id={row[0]}]", "expected a session id and a branch id "
                                                                          "as strings")
        by_branch, ids = out.setdefault(session_id, ({}, set()))
        by_branch.setdefault(branch, []).append(row[:4])
        ids.add(row[0])
    return out


def _usage(db: sqlite3.Connection, tables: set[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    if "turn_usage" not in tables:
        return {}
    counts = ("requests", "input_tokens", "output_tokens", "total_tokens")
    columns = _columns(db, "turn_usage")
    if not {"session_id", "branch_id", "user_turn_number"} <= columns:
        return {}
    picked = ", ".join(c if c in columns else f"NULL AS {c}" for c in counts)
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for session_id, branch, turn, *values in db.execute(
            f"SELECT session_id, branch_id, user_turn_number, {picked} FROM turn_usage "
            "ORDER BY session_id, branch_id, user_turn_number"):
        out.setdefault((str(session_id), str(branch)), []).append(
            {"turn": turn, **{name: value for name, value in zip(counts, values, strict=True)}})
    return out


def _conversation(session_id: str, branch: str | None, rows: Sequence[tuple[Any, ...]],
                  session: tuple[datetime | None, datetime | None] | None,
                  usage: list[dict[str, Any]] | None) -> Conversation:
    places = [f"agent_messages[id={row[0]}].message_data" for row in rows]
    items = [_item(row[2], place) for row, place in zip(rows, places, strict=True)]
    times = [_time(row[3], f"agent_messages[id={row[0]}].created_at") for row in rows]
    [conversation] = openai_responses.read(items, f"agent_messages[session_id={session_id!r}]", item_places=places,
                                           item_times=times)
    own: dict[str, Any] = {"session_id": session_id}
    if session is not None:
        own["created_at"] = session[0].isoformat() if session[0] else None
        own["updated_at"] = session[1].isoformat() if session[1] else None
    if branch is not None:
        own["branch_id"] = branch
    if usage:
        own["turn_usage"] = usage
    external_id = session_id if branch in (None, MAIN_BRANCH) else f"{session_id}@{branch}"
    started = session[0] if session is not None and session[0] else (times[0] if times else None)
    return conversation.model_copy(update={
        "external_id": external_id, "started_at": started, "source_format": NAME,
        "title": session_id if branch in (None, MAIN_BRANCH) else f"{session_id} ({branch})",
        "metadata": {**conversation.metadata, NAME: own}})
