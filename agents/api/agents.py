"""The API's agents: the agents of your projects, and one agent (changed by its project's editors)."""
from __future__ import annotations

from typing import Any

from django.urls import reverse
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from agents import models
from agents.api.endpoints import ApiPages, api, bad_request, body_as, documented, write_api
from agents.sessions import agents as sessions_agents


class AgentPatch(BaseModel):
    """The agent's fields to change (the others stay); the same limits as the agent page's form."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str | None = None
    model: str | None = None
    context_window: int | None = None
    token_counter: str | None = Field(default=None, description="A counter's name; empty follows the model.")


def _agent_dict(request: Request, agent: models.Agent, *, can_edit: bool, session_count: int) -> dict[str, Any]:
    return {
        "id": agent.pk,
        "url": request.build_absolute_uri(reverse("api:agent_detail", args=[agent.pk])),
        "page_url": request.build_absolute_uri(agent.get_absolute_url()),
        "project": agent.project.slug,
        "name": agent.name,
        "slug": agent.slug,
        "description": agent.description,
        "model": agent.model,
        "context_window": agent.context_window,
        "token_counter": agent.token_counter,  # as chosen ("" follows the model)
        "counter": agent.counter,  # what its new sessions count with
        "session_count": session_count,
        "can_edit": can_edit,
        "memory_url": request.build_absolute_uri(reverse("api:agent_memory", args=[agent.pk])),
        "snapshots_url": request.build_absolute_uri(reverse("api:agent_snapshots", args=[agent.pk])),
    }


@documented("agents_list", "The agents of your projects", 401)
@api
def agent_list(request: Request) -> Response:
    agents, editable = sessions_agents.agents_listed(user=request.user)
    paginator = ApiPages()
    page = paginator.paginate_queryset(agents, request)
    return paginator.get_paginated_response([
        _agent_dict(request, a, can_edit=a.project_id in editable, session_count=a.session_total) for a in page
    ])


@documented("agent_retrieve", "One agent", 401, 404, method="GET")
@documented("agent_update", "Change an agent's name, description, model or context window (editors and admins)",
            400, 403, 404, method="PATCH", request=AgentPatch)
@write_api(["GET", "PATCH"])
def agent_detail(request: Request, agent_id: int) -> Response:
    """The JSON twin of the agent page: PATCH takes the fields to change, checked as the page's form checks them."""
    patch = body_as(request, AgentPatch).model_dump(exclude_unset=True) if request.method == "PATCH" else None
    shown = sessions_agents.agent_page(user=request.user, agent_id=agent_id, data=patch, partial=True)
    if shown.refused:
        raise PermissionDenied("changing an agent needs the editor or admin role in its project")
    if patch is not None and not shown.saved and shown.form is not None:
        field, errors = next(iter(shown.form.errors.items()))
        return bad_request(f"{field}: {errors[0]}")
    return Response(_agent_dict(request, shown.agent, can_edit=shown.can_edit, session_count=shown.session_count))
