"""An agent: what a project's editors may change about it, and its page (the page and ``PATCH /api/agents/{id}/``
both change it through ``agent_page``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet

from agents import access, models
from agents.access import User, agent_editable
from agents.ledger.pages import memory_store_count
from agents.store.filters import form_choice

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


# A bound for typing mistakes, far above any model's window (the largest are a few million tokens).
MAX_CONTEXT_WINDOW = 100_000_000


class AgentForm(forms.Form):
    """What a project's editors change about an agent: the page's form and the body of ``PATCH /api/agents/{id}/``."""

    name = forms.CharField(max_length=200, strip=True)
    description = forms.CharField(required=False, strip=True, widget=forms.Textarea(attrs={"rows": 3}))
    model = forms.CharField(required=False, max_length=200, strip=True, label="Model",
                            help_text="The model the agent calls, e.g. gpt-4o.")
    context_window = forms.IntegerField(
        min_value=1, max_value=MAX_CONTEXT_WINDOW, label="Context window (tokens)",
        help_text="What the model accepts: the session page measures each running total against it.",
    )
    token_counter = forms.ChoiceField(
        required=False, label="Token counter",
        help_text="What its new sessions are counted with. Empty follows the model (gpt-4o and later count with "
        "o200k, gpt-4 and gpt-3.5 with cl100k); a stored session is recounted from its own page.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from agents.memory.tokens import COUNTERS

        form_choice(self, "token_counter").choices = [("", "follow the model")] + [
            (name, f"{name}: {c.description}") for name, c in sorted(COUNTERS.items())
        ]

    @staticmethod
    def initial_for(agent: Any) -> dict[str, Any]:
        return {name: getattr(agent, name) for name in AGENT_FIELDS}


@dataclass
class AgentPage:
    agent: models.Agent
    can_edit: bool  # an editor or admin of its project: the form is offered
    form: AgentForm | None  # the form, filled in from what was sent (with its errors); None for a reader
    saved: bool  # what was sent was valid and is saved
    refused: bool  # a reader sent changes: nothing was saved (the page and the API each say so their way)
    session_count: int
    memory_stores: int  # the stores its memory page shows (its own and those its project shares)


def agent_page(*, user: User, agent_id: int, data: Any = None, partial: bool = False) -> AgentPage:
    """The agent (404 when it is not in the user's projects) and, with ``data`` (the page's POST; with ``partial``,
    the API's PATCH: only the fields to change), the change validated by ``AgentForm`` and saved when valid."""
    agent = access.agent_for_user(user, agent_id)
    can_edit = agent_editable(user, agent)
    form = None
    if can_edit:
        form = (AgentForm(initial=AgentForm.initial_for(agent)) if data is None
                else AgentForm({**AgentForm.initial_for(agent), **data} if partial else data))
    saved = form is not None and data is not None and form.is_valid()
    if saved:
        assert form is not None
        agent_update(agent=agent, user=user, changes=form.cleaned_data)
    session_count = agent.sessions.filter(state=models.Session.State.READY).count()
    return AgentPage(agent, can_edit, form, saved, data is not None and not can_edit, session_count,
                     memory_store_count(agent))


def agents_listed(*, user: User) -> tuple[QuerySet[models.Agent], set[int]]:
    """The agents of the user's projects, each with its count of ready sessions (``session_total``), by project and
    name; and the projects where the user may change them."""
    agents = access.agents_for_user(user).annotate(
        session_total=Count("sessions", filter=Q(sessions__state=models.Session.State.READY))).order_by(
        "project__name", "name", "pk")
    return agents, set(access.editable_projects(user).values_list("pk", flat=True))
