"""OpenAI Agents SDK session: OpenAI Agents SDK SQLiteSession database.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "openai_agents_session"
SPEC = FormatSpec(
    name=NAME,
    label="OpenAI Agents SDK session",
    description="OpenAI Agents SDK SQLiteSession database",
    extension="sqlite3",
    media_type="application/json",
)


TABLES = frozenset({"agent_sessions", "agent_messages"})


def read_sqlite(db: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
