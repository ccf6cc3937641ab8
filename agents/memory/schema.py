"""The message model, in OpenAI chat granularity (one ``tool`` message per result).

Every format reads into these models and writes from them. Fields that a format carries beyond the
OpenAI chat schema (ids, timestamps, is_error, reasoning, usage, marks) have their own fields; anything
else a format needs to write itself back unchanged goes into ``extra``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")
SYSTEM_ROLES: frozenset[str] = frozenset({"system", "developer"})


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: str = Field(description="The arguments as a JSON string, exactly as the model produced them.")


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One message of the list a model is sent."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    # A string, a list of content parts (``{"type": "text", "text": ...}``, images, ...), or None.
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None

    # What formats carry beyond OpenAI chat.
    external_id: str | None = None
    created_at: datetime | None = None
    is_error: bool | None = None
    reasoning: str | None = None
    usage: dict[str, Any] | None = None
    marks: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_role_fields(self) -> Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages carry tool_calls, not {self.role}")
        return self

    @property
    def text(self) -> str:
        """The text of the content: the string, or the text parts joined."""
        return content_text(self.content)

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI Chat Completions message (what the ``openai`` format writes)."""
        out: dict[str, Any] = {"role": self.role}
        out["content"] = self.content if (self.content is not None or not self.tool_calls) else None
        if self.content is None and not self.tool_calls:
            out["content"] = ""
        if self.name and self.role != "tool":
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [tc.model_dump() for tc in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        return out


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


class Annotation(BaseModel):
    """What a reviewer wrote about a message (``seq``, its position in the conversation) or, with ``seq`` None,
    about the whole conversation: a label (its name and colour in the project's label set), a comment or both."""

    model_config = ConfigDict(extra="forbid")

    seq: int | None = Field(default=None, ge=0)
    label: str | None = Field(default=None, max_length=60)
    color: str | None = Field(default=None, pattern=r"^#[0-9a-fA-F]{6}$")
    comment: str = ""
    author: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @model_validator(mode="after")
    def _says_something(self) -> Annotation:
        if not self.label and not self.comment:
            raise ValueError("an annotation needs a label or a comment")
        return self


class Conversation(BaseModel):
    """One session's messages, with what a format says about the session as a whole."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(default_factory=list)
    external_id: str | None = None
    title: str | None = None
    source_format: str | None = None
    started_at: datetime | None = None
    agent: str | None = Field(default=None, description="The agent's name or slug, where the format says.")
    project: str | None = Field(default=None, description="The project's slug, where the format says.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Tool schemas sent with the messages.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    annotations: list[Annotation] = Field(default_factory=list, description="Reviewers' labels and comments.")


def error_place(loc: tuple[int | str, ...], prefix: str = "messages") -> str:
    """``("3", "tool_calls", 0, "function", "arguments")`` -> ``messages[3].tool_calls[0].function.arguments``."""
    place = prefix
    for part in loc:
        if isinstance(part, int):
            place += f"[{part}]"
        else:
            place += f".{part}" if place else str(part)
    return place


def describe_validation_error(exc: ValidationError, prefix: str = "messages") -> str:
    """The first error of a pydantic ValidationError as ``place: what is wrong``."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err.get("loc", ()) if p not in {"function-after[_check_role_fields()]"})
    # Union members show up as extra loc parts ("str", "list[dict[str,any]]"); they say nothing to a person.
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in {"str", "none", "dict", "list"})))
    msg = err["msg"].removeprefix("Value error, ")
    return f"{error_place(loc, prefix)}: {msg}"


def parse_messages(data: Any, prefix: str = "messages") -> list[Message]:
    """Validate a list of OpenAI-shaped message dicts. Raises ``ValueError`` naming the place."""
    if not isinstance(data, list):
        raise ValueError(f"{prefix}: expected a list of messages, got {type(data).__name__}")
    out: list[Message] = []
    for i, item in enumerate(data):
        try:
            out.append(Message.model_validate(item))
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc, f"{prefix}[{i}]")) from None
    return out
