"""LangGraph checkpoints: LangGraph SqliteSaver database, or get_state_history as JSON.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "langgraph_checkpoints"
SPEC = FormatSpec(
    name=NAME,
    label="LangGraph checkpoints",
    description="LangGraph SqliteSaver database, or get_state_history as JSON",
    extension="json",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")


TABLES = frozenset({"checkpoints", "writes"})


def read_sqlite(db: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
