"""The API's twin of the session page's "Window over the session": what filled the window at up to
``context.GROWTH_SAMPLES`` replies spread evenly over a session (``GET /api/sessions/<id>/context/growth/``). One
reply's parts in full, with their messages: ``GET /api/sessions/<id>/context/`` (``agents.api.memory``)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.endpoints import api, documented
from agents.ledger import context


class GrowthPointOut(BaseModel):
    seq: int = Field(description="The reply: an assistant message's seq.")
    total: int = Field(description="What it was sent, in tokens; its parts add up to it.")
    parts: dict[str, int] = Field(description="Tokens by part, every part named.")


class GrowthOut(BaseModel):
    """The parts of what each sampled reply was sent, as ``/api/sessions/<id>/context/?seq=N`` gives them for that
    reply. With more messages than ``samples``, the replies are the first at or after each of ``samples`` messages
    spread evenly over the session (``sampled``: true)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "session": 12, "window": 128000, "counter": "cl100k", "messages": 12, "sampled": False, "samples": 200,
        "parts": list(context.PARTS),
        "points": [
            {"seq": 3, "total": 111, "parts": {"system": 14, "memory_blocks": 0, "recalled_memory": 0,
                                               "retrieved_documents": 70, "summary": 0, "history": 0,
                                               "tool_definitions": 0, "input": 27}},
            {"seq": 9, "total": 302, "parts": {"system": 14, "memory_blocks": 0, "recalled_memory": 46,
                                               "retrieved_documents": 140, "summary": 0, "history": 85,
                                               "tool_definitions": 0, "input": 17}},
        ],
    }]})

    session: int
    window: int
    counter: str
    messages: int
    sampled: bool
    samples: int = Field(description="The most replies sampled.")
    parts: list[str] = Field(description="The parts, bottom to top of the chart.")
    points: list[GrowthPointOut]


@documented("session_context_growth", "What filled the window over a session, by part", 401, 404,
            response=GrowthOut)
@api
def session_context_growth(request: Request, session_id: int) -> Response:
    """How the parts of what was sent (system, memory blocks, recalled memory, retrieved documents, summary,
    history, tool definitions, input) grow from reply to reply, against the agent's context window: the session
    page's growth chart as JSON. Costs the same number of queries for any length of session."""
    growth = context.session_growth(user=request.user, session_id=session_id)
    return Response(GrowthOut.model_validate(growth.to_dict()).model_dump(mode="json"))
