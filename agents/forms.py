from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from agents import services

SORT_CHOICES = [
    ("-started", "Newest first"),
    ("started", "Oldest first"),
    ("-messages", "Most messages"),
    ("messages", "Fewest messages"),
    ("-tokens", "Most tokens"),
    ("tokens", "Fewest tokens"),
    ("-violations", "Most violations"),
    ("violations", "Fewest violations"),
    ("-activity", "Latest activity first"),
    ("activity", "Earliest activity first"),
]


class SessionFilterForm(forms.Form):
    """The session list's filters, read from the query string. Choices are scoped to the user's projects."""

    project = forms.ModelChoiceField(queryset=None, required=False, to_field_name="slug", empty_label="All projects")
    agent = forms.ModelChoiceField(queryset=None, required=False, empty_label="All agents")
    q = forms.CharField(required=False, max_length=200, label="Search", strip=True)
    tool = forms.CharField(required=False, max_length=255, label="Tool", strip=True)
    violations = forms.BooleanField(required=False, label="Has violations")
    errors = forms.BooleanField(required=False, label="Has tool errors")
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    min_tokens = forms.IntegerField(required=False, min_value=0, label="Min tokens")
    max_tokens = forms.IntegerField(required=False, min_value=0, label="Max tokens")
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES)

    def __init__(self, *args: Any, user: AbstractBaseUser | AnonymousUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = services.user_projects(user)
        agents = services.agents_for_user(user)
        project = self.data.get("project") if self.is_bound else None
        if project:
            # Offer only the chosen project's agents; an agent of another project then reads as no agent filter.
            agents = agents.filter(project__slug=project)
        self.fields["agent"].queryset = agents
        self.fields["agent"].label_from_instance = lambda a: f"{a.name} ({a.project.name})"

    def filters(self) -> services.SessionFilters:
        """The valid filters; an invalid field is ignored (the form shows its error) rather than failing the page."""
        data = self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {}
        return services.SessionFilters(
            project=data.get("project"),
            agent=data.get("agent"),
            q=data.get("q") or "",
            tool=data.get("tool") or "",
            has_violations=bool(data.get("violations")),
            has_errors=bool(data.get("errors")),
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            min_tokens=data.get("min_tokens"),
            max_tokens=data.get("max_tokens"),
            sort=data.get("sort") or services.DEFAULT_SESSION_SORT,
        )


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

    @staticmethod
    def initial_for(agent: Any) -> dict[str, Any]:
        return {name: getattr(agent, name) for name in ("name", "description", "model", "context_window")}

