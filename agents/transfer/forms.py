"""The import page's form: a file or pasted JSON, the project and agent it goes to, and its format."""
from __future__ import annotations

from typing import Any

from django import forms

from agents import access, models
from agents.memory import formats
from agents.store.filters import form_choice, form_model_choice

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
    # No accept= on purpose: detection reads the content (a SQLite database by its tables, a Letta .af as JSON), and a
    # history kept as .txt, .ndjson, .sqlite3 or without an extension is as welcome.
    file = forms.FileField(required=False, label="File (JSON, JSONL, a Letta .af or a SQLite database)")
    text = forms.CharField(required=False, label="or paste JSON", max_length=MAX_PASTE_CHARS,
                           widget=forms.Textarea(attrs={"rows": 18, "cols": 100, "spellcheck": "false",
                                                        "class": "mono paste-box"}))

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every project the user is in is accepted here; the role is checked in the view, which answers 403.
        # (Projects and agents read as their names.)
        projects = access.user_projects(user)
        form_model_choice(self, "project").queryset = projects
        # Any agent of the user's projects is accepted, so that one of another project is explained by clean()
        # ("X is not an agent of Y") rather than refused as an unknown choice; but the select offers only the
        # agents of the project shown as chosen. With htmx, changing the project fetches this form for it and
        # swaps in its agent select (import.html).
        agents = access.agents_for_user(user)
        agent_field = form_model_choice(self, "agent")
        agent_field.queryset = agents
        project_slug = (self.data.get("project") if self.is_bound else None) or self.initial.get("project")
        if not project_slug:
            first = projects.first()
            project_slug = first.slug if first is not None else ""
        offered = forms.ModelChoiceField(queryset=agents.filter(project__slug=project_slug),
                                         empty_label=agent_field.empty_label)
        agent_field.widget.choices = offered.choices
        form_choice(self, "format").choices = [("", "Detect automatically")] + [
            (name, getattr(spec, "label", name)) for name, spec in formats.ALL_FORMATS.items()
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
