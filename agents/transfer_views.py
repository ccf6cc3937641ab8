"""Import (upload page with a preview before saving) and export (downloads of a session or of the filtered list).

The upload is kept in a temporary file named by a random token and the user's id between preview and confirm,
never in the session cookie; both steps are POST forms with CSRF. Exports stream with bounded memory and leave
an ExportRecord; the export log page shows what each export had to drop.
"""
from __future__ import annotations

import json
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import exports, imports, models, services
from agents.forms import SessionFilterForm
from agents.memory import formats
from agents.memory.trimming import StrategyError, parse_param_pairs, split_param_text

# Pasted JSON is read from the POST body, so it is kept small; big histories are uploaded as files.
MAX_PASTE_CHARS = 5 * 1024 * 1024
# Uploads waiting for their confirm are removed after this long.
UPLOAD_TTL_SECONDS = 6 * 3600
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,64}$")
# The label of pasted JSON (it has no file name to read a kind from).
PASTED_LABEL = "pasted JSON"


def editable_projects(user: Any) -> QuerySet[models.Project]:
    """The projects where the user may import (editor or admin)."""
    return services.editable_projects(user)


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
        self.fields["project"].queryset = services.user_projects(user)
        self.fields["project"].label_from_instance = lambda p: p.name
        # Any agent of the user's projects is accepted, so that one of another project is explained by clean()
        # ("X is not an agent of Y") rather than refused as an unknown choice; but the select offers only the
        # agents of the project shown as chosen. With htmx, changing the project fetches this form for it and
        # swaps in its agent select.
        agents = services.agents_for_user(user)
        self.fields["agent"].queryset = agents
        project_slug = (self.data.get("project") if self.is_bound else None) or self.initial.get("project")
        if not project_slug:
            first = self.fields["project"].queryset.first()
            project_slug = first.slug if first is not None else ""
        offered = forms.ModelChoiceField(queryset=agents.filter(project__slug=project_slug),
                                         empty_label=self.fields["agent"].empty_label)
        offered.label_from_instance = lambda a: a.name
        self.fields["agent"].widget.choices = offered.choices
        self.fields["project"].widget.attrs.update({
            "hx-get": reverse("agents:import_upload"),
            "hx-trigger": "change",
            "hx-target": "#id_agent",
            "hx-select": "#id_agent",
            "hx-swap": "outerHTML",
        })
        self.fields["format"].choices = [("", "Detect automatically")] + [
            (name, getattr(spec, "label", name)) for name, spec in formats.FORMATS.items()
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        project, agent = data.get("project"), data.get("agent")
        if agent is not None and project is not None and agent.project_id != project.pk:
            self.add_error("agent", f"{agent.name} is not an agent of {project.name}.")
        if agent is not None and data.get("new_agent"):
            self.add_error("new_agent", "Choose an existing agent or name a new one, not both.")
        return data

    def agent_choice(self) -> models.Agent | str | None:
        return self.cleaned_data.get("agent") or (self.cleaned_data.get("new_agent") or "").strip() or None


# --- import ---------------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def import_upload(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: store the upload under a token and show what would be imported."""
    if not editable_projects(request.user).exists():
        raise PermissionDenied("Importing needs the editor or admin role in a project.")
    if request.method == "GET":
        initial = {"project": request.GET.get("project")} if request.GET.get("project") else None
        return _render_form(request, ImportForm(user=request.user, initial=initial))
    form = ImportForm(request.POST, request.FILES, user=request.user)
    if not form.is_valid():
        return _render_form(request, form, status=400)
    project = form.cleaned_data["project"]
    _require_editor(request.user, project)
    upload, text = form.cleaned_data.get("file"), form.cleaned_data.get("text") or ""
    token = request.POST.get("token", "")
    again = upload is None and not text.strip() and bool(_TOKEN.match(token))
    if again:
        # The preview's "read it as another format": the same stored upload, previewed again (nothing re-sent).
        path = _upload_path(request.user, token)
        label = request.POST.get("label", "upload")[:200]
        if not path.exists():
            return _render_form(request, form, status=400,
                                error="This upload has expired or was already imported; upload the file again.")
    else:
        if upload is None and not text.strip():
            form.add_error(None, "Choose a file or paste JSON.")
            return _render_form(request, form, status=400)
        if upload is not None and text.strip():
            # Both given: importing one and silently dropping the other would surprise; say so instead.
            form.add_error(None, "Choose one: a file or pasted JSON, not both.")
            return _render_form(request, form, status=400)
        if upload is not None and upload.size > settings.MEMORYVIZ_MAX_UPLOAD_BYTES:
            form.add_error("file", f"The file is {upload.size:,} bytes; the limit is "
                                   f"{settings.MEMORYVIZ_MAX_UPLOAD_BYTES:,}.")
            return _render_form(request, form, status=400)
        _purge_old_uploads()
        token = secrets.token_urlsafe(24)
        path = _upload_path(request.user, token)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            if upload is not None:
                for chunk in upload.chunks():
                    fh.write(chunk)
            else:
                fh.write(text.encode("utf-8"))
        label = upload.name if upload is not None else PASTED_LABEL
    agent = form.agent_choice()
    chosen = form.cleaned_data.get("format") or None
    try:
        preview = imports.preview_file(path, project=project, agent=agent, format=chosen, label=label,
                                       name=_detection_name(label))
    except imports.ImportFailed as exc:
        path.unlink(missing_ok=True)
        form.add_error(None, _named(label, web_message(str(exc))))
        return _render_form(request, form, status=400)
    context = {
        "form": form,
        "preview": preview,
        "token": token,
        "label": label,
        "project": project,
        "agent_value": agent.pk if isinstance(agent, models.Agent) else "",
        "new_agent_value": agent if isinstance(agent, str) else "",
        "format_value": chosen or "",
        "format_chosen": bool(chosen),
        "format_choices": form.fields["format"].choices,
        "nothing_new": preview.sessions_imported == 0,
    }
    return render(request, "agents/import_preview.html", context)


@require_POST
def import_confirm(request: HttpRequest) -> HttpResponse:
    """Import the upload previewed under this token, in one transaction, and show the report."""
    if not editable_projects(request.user).exists():
        raise PermissionDenied("Importing needs the editor or admin role in a project.")
    form = ImportForm(request.POST, user=request.user)
    token = request.POST.get("token", "")
    if not form.is_valid() or not _TOKEN.match(token):
        return _render_form(request, form if form.is_bound else ImportForm(user=request.user), status=400,
                            error="The import form was incomplete; upload the file again.")
    project = form.cleaned_data["project"]
    _require_editor(request.user, project)
    path = _upload_path(request.user, token)
    if not path.exists():
        return _render_form(request, ImportForm(user=request.user), status=400,
                            error="This upload has expired or was already imported; upload the file again.")
    label = request.POST.get("label", "upload")[:200]
    try:
        report = imports.import_file(path, project=project, agent=form.agent_choice(),
                                     format=form.cleaned_data.get("format") or None, label=label,
                                     name=_detection_name(label))
    except imports.ImportFailed as exc:
        return _render_form(request, ImportForm(user=request.user, initial={"project": project.slug}),
                            status=400, error=f"{_named(label, web_message(str(exc)))} Nothing was imported.")
    finally:
        path.unlink(missing_ok=True)
    return render(request, "agents/import_report.html", {"report": report, "project": project})


def _named(label: str, error: str) -> str:
    """The error naming the file, once (the importer names it in some errors already)."""
    return error if error.startswith(f"{label}: ") else f"{label}: {error}"


def _detection_name(label: str) -> str | None:
    """The name detection reads (``x.jsonl`` means JSON Lines, as on the command line); pasted text has none."""
    return None if label == PASTED_LABEL else label


# Command-line wording in messages from the shared readers and parsers, said as the page says it.
_WEB_WORDING = (
    (re.compile(r"name the format with --format"), "choose the format in the Format list"),
    (re.compile(r"name one with --format"), "choose one in the Format list"),
    (re.compile(r"--format NAME"), "the Format list"),
    (re.compile(r"--set ('[^']*'|\"[^\"]*\")"), r"\1"),
    (re.compile(r"\(use --on-invalid skip[^)]*\)"), "(choose 'skip' to leave them out)"),
)


def web_message(text: str) -> str:
    """An error message for a page: the same facts, without command-line options the page does not have."""
    for pattern, replacement in _WEB_WORDING:
        text = pattern.sub(replacement, text)
    return text


def _render_form(request: HttpRequest, form: ImportForm, *, status: int = 200, error: str = "") -> HttpResponse:
    context = {"form": form, "error": error, "max_paste": MAX_PASTE_CHARS,
               "max_upload": settings.MEMORYVIZ_MAX_UPLOAD_BYTES}
    return render(request, "agents/import.html", context, status=status)


def _require_editor(user: Any, project: models.Project) -> None:
    if not editable_projects(user).filter(pk=project.pk).exists():
        raise PermissionDenied("Importing into this project needs the editor or admin role.")


def _upload_dir() -> Path:
    # Several application servers behind one database need a shared folder here (MEMORYVIZ_UPLOAD_DIR), so that
    # the confirm finds the upload whichever server the preview ran on.
    configured = settings.MEMORYVIZ_UPLOAD_DIR
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "memoryviz-uploads"


def _upload_path(user: Any, token: str) -> Path:
    # The user's id is part of the name: a token leaked to someone else confirms nothing for them.
    return _upload_dir() / f"{user.pk}-{token}.upload"


def _purge_old_uploads() -> None:
    folder = _upload_dir()
    if not folder.is_dir():
        return
    limit = time.time() - UPLOAD_TTL_SECONDS
    for item in folder.glob("*.upload"):
        try:
            if item.stat().st_mtime < limit:
                item.unlink()
        except OSError:
            pass


# --- export ---------------------------------------------------------------------------------------------------


@require_GET
def export_session(request: HttpRequest, session_id: int) -> HttpResponse:
    """One session (404 when not in the user's projects), whole or as trimmed by ?strategy=...&set=key=value."""
    session = services.session_for_user(request.user, session_id)
    sessions = services.sessions_for_user(request.user).filter(pk=session.pk)
    scope = f"session {session.pk} ({session.title or session.external_id})"
    return _export_response(request, sessions, scope=scope, filters={"session": session.pk}, single=session)


@require_GET
def export_sessions(request: HttpRequest) -> HttpResponse:
    """The sessions matching the list's filters (the same query string as the session list)."""
    form = SessionFilterForm(request.GET, user=request.user)
    filters = {k: v for k, v in request.GET.items() if k in form.fields and k != "sort" and v}
    scope = "sessions matching " + (", ".join(f"{k}={v}" for k, v in filters.items()) or "no filter (all)")
    if not form.is_valid():
        # The list page may ignore an invalid field and show its error; an export must not: dropping a filter
        # widens what is downloaded (a project the user is not in would read as "all projects").
        field, errors = next(iter(form.errors.items()))
        return render(request, "agents/export_error.html", {"error": f"{field}: {errors[0]}", "scope": scope},
                      status=400)
    sessions = services.sessions_filtered(request.user, form.filters())
    return _export_response(request, sessions, scope=scope, filters=filters)


@require_GET
def export_log(request: HttpRequest) -> HttpResponse:
    """The user's exports, newest first, with what each one dropped or skipped."""
    records = list(exports.recent_exports(request.user))
    for record in records:
        # Shown as the JSON the command line and the API take (true, null, "..."), not as a Python dict.
        record.params_json = json.dumps(record.params, ensure_ascii=False, sort_keys=True) if record.params else ""
    return render(request, "agents/export_log.html", {"records": records})


def _export_response(
    request: HttpRequest,
    sessions: QuerySet[models.Session],
    *,
    scope: str,
    filters: dict[str, Any],
    single: models.Session | None = None,
) -> HttpResponse:
    try:
        params = _params_from(request.GET)
        plan = exports.export_plan(
            sessions=sessions, format=request.GET.get("format") or "native", scope=scope, filters=filters,
            strategy=request.GET.get("strategy") or None, params=params,
            on_invalid=request.GET.get("on_invalid") or "skip",
        )
        if not plan.sessions.exists():
            raise exports.ExportFailed("no session matches these filters")
        invalid: list[str] = []
        if plan.format == "openai_jsonl":
            invalid = exports.invalid_sessions(plan)
            if invalid and plan.on_invalid == "stop":
                raise exports.ExportFailed(
                    "stopped: these conversations break the protocol, and openai_jsonl was asked to stop on them "
                    "(choose 'skip' to leave them out): " + "; ".join(invalid[:20])
                    + (f"; and {len(invalid) - 20} more" if len(invalid) > 20 else "")
                )
    except exports.ExportFailed as exc:
        return render(request, "agents/export_error.html", {"error": web_message(str(exc)), "scope": scope},
                      status=400)
    spec = formats.FORMATS[plan.format]
    response = StreamingHttpResponse(
        exports.export_chunks(plan, user=request.user, interface="web"),
        content_type=f"{getattr(spec, 'media_type', 'application/json')}; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{exports.export_filename(plan, single=single)}"'
    if invalid:
        # The body is streamed, so the skipped conversations are told up front, and kept on the export record.
        response["X-Memoryviz-Skipped"] = str(len(invalid))
    return response


def _params_from(query: Any) -> dict[str, Any]:
    """Strategy parameters from ``set=key=value`` (repeatable) and ``params=key=value, key=value``."""
    pairs: list[str] = list(query.getlist("set"))
    pairs += split_param_text(query.get("params", ""))
    try:
        return parse_param_pairs(pairs)
    except StrategyError as exc:
        raise exports.ExportFailed(f"params: {exc}") from None

