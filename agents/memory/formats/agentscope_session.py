"""AgentScope session: AgentScope 1.x JSONSession file (every agent's state_dict) or a 2.x AgentState dump.

(Being written: the reader replaces this module.)"""
from __future__ import annotations

from typing import Any

from agents.memory.ledger import MemoryDocument

from .base import FormatError, FormatSpec

NAME = "agentscope_session"
SPEC = FormatSpec(
    name=NAME,
    label="AgentScope session",
    description="AgentScope 1.x JSONSession file (every agent's state_dict) or a 2.x AgentState dump",
    extension="json",
    media_type="application/json",
)


def detect(data: Any) -> bool:
    return False


def read(data: Any) -> MemoryDocument:
    raise FormatError("input", f"{NAME} cannot be read yet")
