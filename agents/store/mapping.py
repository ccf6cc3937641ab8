"""The one mapping between schema messages and Message rows, both ways, and what the database cannot store (said,
by its place, before an INSERT fails)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from agents import models
from agents.memory import schema
from agents.memory.stored import has_content

# --- the one mapping between schema messages and rows -------------------------------------------------------


def message_from_schema(
    message: schema.Message, *, session: models.Session, seq: int, token_count: int = 0, token_running: int = 0
) -> models.Message:
    """An unsaved Message row for a schema Message (``message_problem`` says whether the database can store it)."""
    content = message.content
    parts: list[dict[str, Any]] | None = None
    if isinstance(content, list):
        # The joined text goes in `content` so that search and display never parse parts.
        parts = content
        content = schema.content_text(content)
    return models.Message(
        session=session,
        seq=seq,
        role=message.role,
        content=content,
        content_parts=parts,
        name=message.name or "",
        tool_call_id=message.tool_call_id or "",
        tool_calls=[tc.model_dump() for tc in message.tool_calls],
        is_error=message.is_error,
        reasoning=message.reasoning or "",
        external_id=message.external_id or "",
        created_at=message.created_at,
        token_count=token_count,
        token_running=token_running,
        usage=message.usage,
        marks=list(message.marks),
        extra=dict(message.extra),
        has_content=has_content(message.content),
    )


# --- what the database cannot store, said before an INSERT fails --------------------------------------------
# PostgreSQL refuses NUL characters in text and JSON, and both databases refuse NaN and Infinity in JSON (SQLite
# through the JSON_VALID check Django puts on JSON columns): both refuse the same input, named by its place, so
# that a file the import preview accepts also imports, and a database switch breaks nothing. Column widths too:
# a longer value is refused, never cut silently.

MAX_ID_CHARS = 255
_MESSAGE_TEXT = ("name", "tool_call_id", "reasoning", "external_id")
_MESSAGE_JSON = ("usage", "marks", "extra")


def message_problem(message: schema.Message) -> str | None:
    """Why the database cannot store this message, as ``place: what`` (the place within the message), or None."""
    for name in ("name", "tool_call_id", "external_id"):
        value = getattr(message, name)
        if value and len(value) > MAX_ID_CHARS:
            return f"{name}: {len(value)} characters, longer than the {MAX_ID_CHARS} that can be stored"
    for i, call in enumerate(message.tool_calls):
        if len(call.id) > MAX_ID_CHARS or len(call.function.name) > MAX_ID_CHARS:
            return f"tool_calls[{i}]: call id or function name longer than {MAX_ID_CHARS} characters"
        for place, text in (("id", call.id), ("function.name", call.function.name),
                            ("function.arguments", call.function.arguments)):
            if "\x00" in text:
                return f"tool_calls[{i}].{place}: {_NUL}"
    for name in _MESSAGE_TEXT:
        value = getattr(message, name)
        if value and "\x00" in value:
            return f"{name}: {_NUL}"
    for name, value in (("content", message.content), *((n, getattr(message, n)) for n in _MESSAGE_JSON)):
        what = value_problem(value) if value else None
        if what:
            return f"{name}: {what}"
    return None


def conversation_problem(conversation: schema.Conversation) -> str | None:
    """Why the database cannot store this conversation's session row (its messages aside), or None."""
    if conversation.external_id and len(conversation.external_id) > MAX_ID_CHARS:
        return (f"external_id: {len(conversation.external_id)} characters, longer than the {MAX_ID_CHARS} that can "
                "be stored")
    if conversation.source_format and len(conversation.source_format) > 40:
        return f"source_format: {conversation.source_format[:50]!r} is not a format name"
    for name in ("external_id", "title", "source_format", "agent", "project", "metadata", "tools"):
        value = getattr(conversation, name)
        what = value_problem(value) if value else None
        if what:
            return f"{name}: {what}"
    return None


_NUL = "contains a NUL character (\\u0000), which the database cannot store"


def value_problem(value: Any) -> str | None:
    """What in a value (a text, or JSON) the database cannot store, said before an INSERT fails: a NUL character,
    NaN or Infinity; None when it can all be stored."""
    if isinstance(value, str):
        return _NUL if "\x00" in value else None
    if isinstance(value, float):
        if value != value:
            return "contains NaN, which JSON cannot hold"
        if value in (float("inf"), float("-inf")):
            return "contains Infinity, which JSON cannot hold"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            what = value_problem(key) or value_problem(item)
            if what:
                return what
    elif isinstance(value, list):
        for item in value:
            what = value_problem(item)
            if what:
                return what
    return None


def message_to_schema(row: models.Message | Any) -> schema.Message:
    """The schema Message a row stores (the inverse of ``message_from_schema``): a model instance, or a named tuple
    of ``MESSAGE_FIELDS`` (``session_message_batches``).

    Built without validation (``_trusted``, what ``model_construct`` leaves): the row was validated as a schema
    Message when it was stored. The object is the one validation gives (the same values, the same nested ToolCall
    models, the same fields set: tests/test_export_service.py). A row that does not hold what
    ``message_from_schema`` stores (an unknown role, tool calls of another shape) is validated, and refused, as
    before."""
    calls = _stored_calls(row.tool_calls or [])
    fields = _message_fields(row)
    if calls is None or row.role not in _ROLES:
        fields["tool_calls"] = row.tool_calls or []
        return schema.Message(**fields)
    fields["tool_calls"] = [
        _trusted(schema.ToolCall, {"id": call_id, "type": "function",
                                   "function": _trusted(schema.FunctionCall, {"name": name, "arguments": arguments})})
        for call_id, name, arguments in calls
    ]
    return _trusted(schema.Message, fields)


def _message_fields(row: models.Message | Any) -> dict[str, Any]:
    """A row's schema fields, in the model's order (``tool_calls`` for the caller to fill)."""
    return {
        "role": row.role,
        "content": row.content_parts if row.content_parts is not None else row.content,
        "name": row.name or None,
        "tool_calls": None,
        "tool_call_id": row.tool_call_id or None,
        "external_id": row.external_id or None,
        "created_at": row.created_at,
        "is_error": row.is_error,
        "reasoning": row.reasoning or None,
        "usage": row.usage,
        "marks": row.marks or [],
        "extra": row.extra or {},
    }


def _stored_calls(stored: list[Any]) -> list[tuple[str, str, str]] | None:
    """The (id, name, arguments) of a row's tool calls as ``message_from_schema`` stores them (``model_dump()`` of
    each ToolCall); None when one is not in that shape (the caller validates)."""
    calls = []
    for call in stored:
        if type(call) is not dict or call.keys() != _TOOL_CALL_KEYS or call["type"] != "function":
            return None
        function, call_id = call["function"], call["id"]
        if type(function) is not dict or function.keys() != _FUNCTION_KEYS or type(call_id) is not str:
            return None
        name, arguments = function["name"], function["arguments"]
        if type(name) is not str or type(arguments) is not str:
            return None
        calls.append((call_id, name, arguments))
    return calls


_TOOL_CALL_KEYS = {"id", "type", "function"}
_FUNCTION_KEYS = {"name", "arguments"}
_Model = TypeVar("_Model", bound=BaseModel)


def _trusted(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """``cls.model_construct(**values)`` for ``values`` that name every field, in the fields' order: what
    model_construct leaves in the instance, without its loop over the fields' aliases and defaults (which costs
    twice the validation it saves)."""
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def message_rows(
    messages: Sequence[schema.Message],
    *,
    session: models.Session,
    start_seq: int = 0,
    token_counts: Sequence[int] | None = None,
    tokens_before: int = 0,
    content_keys: Sequence[str] | None = None,
) -> tuple[list[models.Message], list[models.ToolCall]]:
    """Unsaved Message rows (seq from ``start_seq``) and their ToolCall rows, ready for bulk_create.

    ``tokens_before`` is the running total of the session before ``start_seq`` (the ``token_running`` of the
    message at ``start_seq - 1``); each row's ``token_running`` continues it, so a caller storing a session in
    batches passes the running total it carried from the previous batch.

    The ToolCall rows point at the unsaved Message objects; once those are bulk-created (which sets their
    primary keys on SQLite and PostgreSQL) the ToolCall rows can be bulk-created too.
    """
    if token_counts is not None and len(token_counts) != len(messages):
        raise ValueError(f"token_counts has {len(token_counts)} entries for {len(messages)} messages")
    if tokens_before < 0:
        raise ValueError(f"tokens_before is {tokens_before}; a running total cannot be negative")
    rows: list[models.Message] = []
    calls: list[models.ToolCall] = []
    running = tokens_before
    for i, message in enumerate(messages):
        count = token_counts[i] if token_counts else 0
        running += count
        row = message_from_schema(message, session=session, seq=start_seq + i, token_count=count, token_running=running)
        if content_keys is not None:
            row.content_key = content_keys[i]
        rows.append(row)
        for position, tc in enumerate(message.tool_calls):
            calls.append(
                models.ToolCall(
                    session=session,
                    message=row,
                    call_id=tc.id,
                    name=tc.function.name,
                    arguments=tc.function.arguments,
                    position=position,
                )
            )
    return rows, calls


# Roles as one shared string each: a driver returns a new string per row, and a long session holds one per message.
_ROLES = {role: role for role in schema.ROLES}
