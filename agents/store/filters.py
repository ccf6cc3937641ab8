"""The session list's filters as a form, read from the query string, its choices scoped to the user's projects:
the list page, the API's list, the lab's report, exports and the review queue read their filters with it."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.forms.utils import ErrorDict

from agents import access, models
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


def form_model_choice(form: forms.BaseForm, name: str) -> forms.ModelChoiceField[Any]:
    """The form's own copy of a ModelChoiceField (``form.fields`` is typed as holding plain Fields)."""
    return cast("forms.ModelChoiceField[Any]", form.fields[name])


def form_choice(form: forms.BaseForm, name: str) -> forms.ChoiceField:
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
    memory_findings = forms.BooleanField(required=False, label="Has memory findings")
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
        form_model_choice(self, "project").queryset = access.user_projects(user)
        agents = access.agents_for_user(user)
        # Any agent of the user's projects is accepted (clean() clears one of another project than the chosen one),
        # but the select offers only the chosen project's agents.
        agent_field = form_model_choice(self, "agent")
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
            has_memory_findings=bool(data.get("memory_findings")),
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


