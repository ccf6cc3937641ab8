"""An agent: what a project's editors may change about it (the agent page and ``PATCH /api/agents/{id}/``)."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

from agents import models
from agents.access import User, agent_editable

# What a person may change about an agent (its project and slug name it and stay).
AGENT_FIELDS = ("name", "description", "model", "context_window", "token_counter")


def agent_update(*, agent: models.Agent, user: User, changes: dict[str, Any]) -> models.Agent:
    """Apply validated changes (``forms.AgentForm``'s cleaned data) to the agent's editable fields.

    PermissionDenied unless the user is an editor or admin of the agent's project."""
    if not agent_editable(user, agent):
        raise PermissionDenied("Changing an agent needs the editor or admin role in its project.")
    fields = [name for name in AGENT_FIELDS if name in changes]
    for name in fields:
        setattr(agent, name, changes[name])
    if fields:
        agent.save(update_fields=fields)
    return agent
