"""Parameter types for lists of tool names, as the 2026 strategies take them (exclude_tools, trimmable_tools,
clear_tool_inputs): a list, a comma-separated string, or one name alone, which is a list of one."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _names(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _bool_or_names(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() not in _BOOL_WORDS:
        return _names(value)
    return value


ToolNames = Annotated[list[str], BeforeValidator(_names)]
BoolOrToolNames = Annotated[bool | list[str], BeforeValidator(_bool_or_names)]
