"""AutoGen memory: AutoGen ListMemory component, or TaskResult messages with MemoryQueryEvents.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "autogen_memory"
SPEC = FormatSpec(
    name=NAME,
    label="AutoGen memory",
    description="AutoGen ListMemory component, or TaskResult messages with MemoryQueryEvents",
    extension="json",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
