"""The API's trimming: a session as a strategy (or a preset) would trim it, the strategies, the presets, and the diff
of a session against another or against its trimmed view."""
from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents import models
from agents.api.endpoints import api, body_as, documented, session_summary, write_api
from agents.diff import diffs
from agents.http import collector_paused
from agents.lab import presets as lab_presets
from agents.lab import trimming as lab_trimming
from agents.memory.tokens import DEFAULT_COUNTER
from agents.memory.trimming import STRATEGIES
from agents.throttling import expensive_api


@documented(
    "session_trim", "The session as a strategy would trim it", 400, 401, 404,
    parameters=[
        OpenApiParameter("strategy", str, description="A strategy's name (default: safe_token_budget)"),
        OpenApiParameter(
            "preset", str, description="A preset of the session's project: its strategy, parameters and counter."
        ),
        OpenApiParameter("counter", str),
        OpenApiParameter("detail", str, enum=["compact", "full"]),
        OpenApiParameter("messages", str),
    ],
)
@api
@expensive_api
@collector_paused
def session_trim(request: Request, session_id: int) -> Response:
    """``?strategy=NAME&<param>=<value>...``: the session as the strategy would trim it (the stored session is
    unchanged). A parameter given twice is a list (``end_on=human&end_on=ai``), like ``end_on=human,ai``. Without
    ``strategy``, memoryviz's recommendation (``safe_token_budget``, its defaults), and the answer says so.
    ``?preset=NAME`` instead: a preset of the session's project, with its counter unless ``counter`` is given.

    ``counter=NAME``: the session's own counter (the default) uses the counts stored at import, so nothing is
    recounted; another counter recounts every message, and the response says ``"recounted": true``.

    The answer is compact by default, sized by what is kept rather than by the session: ``dropped`` as runs
    ``{"from", "to", "reason"}`` of consecutive input indices, no per-message ``explanation``, and the trimmed
    ``messages`` only with ``?messages=1``. ``?detail=full`` gives the ``trim`` command's whole JSON instead
    (per-index ``dropped``, ``explanation``, ``messages``).

    A session with recalled memory also gets ``recalls``: how many recalls the trimmed list still holds (``kept``,
    of them ``edited``), drops (``dropped``: ``recall_trimmed``) or does not decide on (``elsewhere``), the repeated
    injections among those kept (``piled_up``), and the recalls of each kind (``kept_recalls``,
    ``dropped_recalls``: id, carrying message, store, query, items; at most 100 each), as the lab shows them."""
    return Response(lab_trimming.session_trim_answer(
        user=request.user, session_id=session_id, query=request.query_params,
        strategies_url=request.build_absolute_uri(reverse("api:strategy_list")),
    ))


@documented("strategies_list", "Trimming strategies and their parameters")
@api
def strategy_list(request: Request) -> Response:
    return Response(
        {
            "strategies": [
                {
                    "name": s.name,
                    "description": s.description,
                    "emulates": s.emulates,
                    "params": s.params_model.model_json_schema(),
                }
                for s in STRATEGIES.values()
            ]
        }
    )


@api
@expensive_api
def session_diff(request: Request, session_id: int, other_id: int | None = None) -> Response:
    """``/diff/{other}/`` (or ``?with=ID``): the session (left) against another the user can see (right);
    ``?trim=SPEC``: against its trimmed view (``name:key=value,...``). The rows ``start`` to ``start + limit``
    (500 by default) come as blocks, identical runs folded (``context`` identical rows kept beside each change);
    ``messages=1`` adds each row's messages in OpenAI format."""
    query = request.query_params
    found, data = diffs.session_diff_answer(user=request.user, session_id=session_id,
                                            other=other_id if other_id is not None else query.get("with", "").strip(),
                                            query=query)
    return Response({
        "left": session_summary(request, found.left),
        "right": session_summary(request, found.right) if found.right is not None else None,
        **data,
    })


class PresetIn(BaseModel):
    """The body of ``POST /api/presets/``."""

    model_config = ConfigDict(extra="forbid")

    project: str = Field(description="The project's slug.")
    name: str
    strategy: str
    params: dict[str, Any] = Field(default_factory=dict)
    counter: str = DEFAULT_COUNTER


def _preset_dict(preset: models.Preset) -> dict[str, Any]:
    return {
        "name": preset.name,
        "project": preset.project.slug,
        "strategy": preset.strategy,
        "params": preset.params,
        "counter": preset.counter,
        "created_by": preset.created_by.get_username() if preset.created_by else None,
        "created_at": preset.created_at.isoformat(),
    }


@documented("presets_list", "The presets of your projects", 400, method="GET",
            parameters=[OpenApiParameter("project", str)])
@documented("presets_create", "Save a preset", 400, 401, ok=(201,), method="POST", request=PresetIn)
@write_api(["GET", "POST"])
def preset_list(request: Request) -> Response:
    """``GET``: the presets of the user's projects (``?project=SLUG`` for one). ``POST`` a JSON body
    ``{"project", "name", "strategy", "params", "counter"}`` to save one (editor or admin of the project): 201 with
    the preset, or 400 with a sentence saying what is wrong."""
    if request.method == "POST":
        body = body_as(request, PresetIn)
        preset = lab_presets.preset_saved(user=request.user, project=body.project, name=body.name,
                                          strategy=body.strategy, params=body.params, counter=body.counter)
        return Response(_preset_dict(preset), status=201)
    presets = lab_presets.presets_listed(user=request.user, project=request.query_params.get("project"))
    return Response({"presets": [_preset_dict(p) for p in presets]})
