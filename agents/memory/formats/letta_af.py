"""Letta agent file: Letta .af agent file, current or older schema.

Being written: the reader replaces this module."""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "letta_af"
SPEC = FormatSpec(
    name=NAME,
    label="Letta agent file",
    description="Letta .af agent file, current or older schema",
    extension="af",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
