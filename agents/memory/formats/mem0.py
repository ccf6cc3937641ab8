"""mem0: mem0 get_all/search output and history rows as JSON, or mem0's history.db.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "mem0"
SPEC = FormatSpec(
    name=NAME,
    label="mem0",
    description="mem0 get_all/search output and history rows as JSON, or mem0's history.db",
    extension="json",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")


TABLES = frozenset({"history"})


def read_sqlite(db: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
