from __future__ import annotations

from typing import Any, cast

from django import forms
from django.forms.utils import ErrorDict

from agents import access, models
from agents.memory import formats
from agents.sessions import agents as sessions_agents
from agents.store import listing

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
    ("status", "Unreviewed first"),
    ("-status", "Done first"),
    ("assignee", "Assignee A–Z"),
    ("-assignee", "Assignee Z–A"),
    ("label", "Label A–Z"),
    ("-label", "Label Z–A"),
]
STATUS_CHOICES = [("", "Any status"), *models.ReviewStatus.choices]


def _model_choice(form: forms.BaseForm, name: str) -> forms.ModelChoiceField[Any]:
    """The form's own copy of a ModelChoiceField (``form.fields`` is typed as holding plain Fields)."""
    return cast("forms.ModelChoiceField[Any]", form.fields[name])


def _choice(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    return cast(forms.ChoiceField, form.fields[name])


class AgentOfProjectChoiceField(forms.ModelChoiceField):
    """Agents named with their project: "Travel bot (Alpha)"."""

    def label_from_instance(self, obj: models.Agent) -> str:
        return f"{obj.name} ({obj.project.name})"


class SessionFilterForm(forms.Form):
    """The session list's filters, read from the query string. Choices are scoped to the user's projects."""

    project: forms.ModelChoiceField[models.Project] = forms.ModelChoiceField(
        queryset=None, required=False, to_field_name="slug", empty_label="All projects"
    )
    agent: forms.ModelChoiceField[models.Agent] = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="All agents"
    )
    q = forms.CharField(required=False, max_length=200, label="Search", strip=True)
    tool = forms.CharField(required=False, max_length=255, label="Tool", strip=True)
    violations = forms.BooleanField(required=False, label="Has violations")
    # A field named like Form.errors: Django's form metaclass takes declared fields off the class, so .errors stays
    # the ErrorDict, which mypy cannot see.
    errors: ErrorDict = forms.BooleanField(required=False, label="Has tool errors")  # type: ignore[assignment]
    date_from = forms.DateField(required=False, label="Started from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Started until", widget=forms.DateInput(attrs={"type": "date"}))
    min_tokens = forms.IntegerField(required=False, min_value=0, label="Min tokens")
    max_tokens = forms.IntegerField(required=False, min_value=0, label="Max tokens")
    label = forms.CharField(required=False, max_length=60, label="Label", strip=True)
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES, label="Review status")
    # A username, "me", or "-" for nobody.
    assignee = forms.CharField(required=False, max_length=150, label="Assignee", strip=True)
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES)

    def __init__(self, *args: Any, user: access.User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _model_choice(self, "project").queryset = access.user_projects(user)
        agents = access.agents_for_user(user)
        # Any agent of the user's projects is accepted (clean() clears one of another project than the chosen one),
        # but the select offers only the chosen project's agents.
        agent_field = _model_choice(self, "agent")
        agent_field.queryset = agents
        project = self.data.get("project") if self.is_bound else None
        offered = AgentOfProjectChoiceField(queryset=agents.filter(project__slug=project) if project else agents,
                                            empty_label=agent_field.empty_label)
        agent_field.widget.choices = offered.choices
        # Fields clean() emptied because another filter excludes them, with why: the list drops them from its URL,
        # an export refuses them (dropping a filter widens what is downloaded).
        self.cleared: dict[str, str] = {}
        self.user = user

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        project, agent = data.get("project"), data.get("agent")
        if agent is not None and project is not None and agent.project_id != project.pk:
            # Choosing another project leaves the old project's agent in the query: it is no filter any more.
            data["agent"] = None
            self.cleared["agent"] = f"{agent.name} is not an agent of {project.name}."
        return data

    def refusal(self) -> str:
        """For an export or the API, which must not widen what they answer by dropping a filter: the first invalid
        or cleared field as ``field: why``, or "" when every filter holds."""
        for name, errors in (self.errors.items() if self.is_bound and not self.is_valid() else ()):
            return f"{name}: {errors[0]}"
        for name, why in self.cleared.items():
            return f"{name}: {why}"
        return ""

    def filters(self) -> listing.SessionFilters:
        """The valid filters; an invalid field is ignored (the form shows its error) rather than failing the page."""
        data = self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {}
        return listing.SessionFilters(
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
            label=data.get("label") or "",
            review_status=data.get("status") or "",
            assignee=self._assignee(data.get("assignee") or ""),
            sort=data.get("sort") or listing.DEFAULT_SESSION_SORT,
        )

    def _assignee(self, value: str) -> str:
        if value == "me":
            return getattr(self.user, "get_username", lambda: listing.NOBODY)() or listing.NOBODY
        return value


def session_filter_pairs(data: Any) -> list[tuple[str, str]]:
    """The session list's filters in a query or form data (a QueryDict), as (name, value) pairs: what an export of
    "these sessions" carries as hidden fields."""
    return [(key, value) for key, values in data.lists() if key in SessionFilterForm.base_fields
            for value in values if value != ""]


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

        _choice(self, "token_counter").choices = [("", "follow the model")] + [
            (name, f"{name}: {c.description}") for name, c in sorted(COUNTERS.items())
        ]

    @staticmethod
    def initial_for(agent: Any) -> dict[str, Any]:
        return {name: getattr(agent, name) for name in sessions_agents.AGENT_FIELDS}


# Pasted JSON is read from the POST body, so it is kept small; big histories are uploaded as files.
MAX_PASTE_CHARS = 5 * 1024 * 1024


class ImportForm(forms.Form):
    project = forms.ModelChoiceField(queryset=models.Project.objects.none(), to_field_name="slug",
                                     empty_label=None)
    agent = forms.ModelChoiceField(queryset=models.Agent.objects.none(), required=False,
                                   empty_label="From the file, or named after its format",
                                   help_text="An existing agent of the project.")
    new_agent = forms.CharField(required=False, max_length=200, label="or a new agent",
                                help_text="Created in the project when it does not exist.")
    format = forms.ChoiceField(required=False, label="Format")
    file = forms.FileField(required=False, label="File (JSON or JSONL)")
    text = forms.CharField(required=False, label="or paste JSON", max_length=MAX_PASTE_CHARS,
                           widget=forms.Textarea(attrs={"rows": 18, "cols": 100, "spellcheck": "false",
                                                        "class": "mono paste-box"}))

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every project the user is in is accepted here; the role is checked in the view, which answers 403.
        # (Projects and agents read as their names.)
        projects = access.user_projects(user)
        _model_choice(self, "project").queryset = projects
        # Any agent of the user's projects is accepted, so that one of another project is explained by clean()
        # ("X is not an agent of Y") rather than refused as an unknown choice; but the select offers only the
        # agents of the project shown as chosen. With htmx, changing the project fetches this form for it and
        # swaps in its agent select (import.html).
        agents = access.agents_for_user(user)
        agent_field = _model_choice(self, "agent")
        agent_field.queryset = agents
        project_slug = (self.data.get("project") if self.is_bound else None) or self.initial.get("project")
        if not project_slug:
            first = projects.first()
            project_slug = first.slug if first is not None else ""
        offered = forms.ModelChoiceField(queryset=agents.filter(project__slug=project_slug),
                                         empty_label=agent_field.empty_label)
        agent_field.widget.choices = offered.choices
        _choice(self, "format").choices = [("", "Detect automatically")] + [
            (name, getattr(spec, "label", name)) for name, spec in formats.FORMATS.items()
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        project, agent = data.get("project"), data.get("agent")
        if agent is not None and project is not None and agent.project_id != project.pk:
            self.add_error("agent", f"{agent.name} is not an agent of {project.name}.")
        if agent is not None and data.get("new_agent"):
            self.add_error("new_agent", "Choose an existing agent or name a new one, not both.")
        return data

    def agent_choice(self) -> models.Agent | str | None:
        return self.cleaned_data.get("agent") or (self.cleaned_data.get("new_agent") or "").strip() or None
