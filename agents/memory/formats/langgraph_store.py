"""LangGraph store: LangGraph store items (namespace, key, value) as JSON.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "langgraph_store"
SPEC = FormatSpec(
    name=NAME,
    label="LangGraph store",
    description="LangGraph store items (namespace, key, value) as JSON",
    extension="json",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
