"""Import (upload page with a preview before saving) and export (downloads of a session or of the filtered list).

The upload waits in ``agents.transfer.uploads`` between preview and confirm; both steps are POST forms with CSRF.
Exports stream with bounded memory and leave an ExportRecord; the export log page shows what each export had to
drop.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.forms import ChoiceField
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import access, models
from agents.jobs import queue
from agents.memory import formats
from agents.throttling import expensive
from agents.transfer import background, exports, imports, pages, uploads
from agents.transfer.forms import MAX_PASTE_CHARS, ImportForm

# The label of pasted JSON (it has no file name to read a kind from).
PASTED_LABEL = "pasted JSON"
EXPIRED = "This upload has expired or was already imported; upload the file again."


# --- import ---------------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@expensive(methods=("POST",))
def import_upload(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: keep the upload under a token and show what would be imported."""
    _require_editor(request.user)
    if request.method == "GET":
        initial = {"project": request.GET["project"]} if request.GET.get("project") else None
        return _render_form(request, ImportForm(user=request.user, initial=initial))
    form = ImportForm(request.POST, request.FILES, user=request.user)
    if not form.is_valid():
        return _render_form(request, form)
    project, agent, chosen = form.cleaned_data["project"], form.agent_choice(), form.cleaned_data["format"] or None
    _require_editor(request.user, project)
    try:
        token, path, label = _upload_to_preview(request, form)
    except uploads.UploadRefused as exc:
        return _render_form(request, form, error=str(exc))
    # "Read it as ..." on a preview reads the kept upload again in another format.
    reread = not form.cleaned_data.get("file") and not (form.cleaned_data.get("text") or "").strip()
    try:
        preview = imports.preview_file(path, project=project, agent=agent, format=chosen, label=label,
                                       name=_detection_name(label))
    except imports.ImportFailed as exc:
        error = _import_error(exc, label)
        if reread:
            # A wrong format keeps the upload and the preview it replaced, with what the other format said.
            shown = request.POST.get("shown_format") or None
            shown = shown if shown in formats.FORMATS else None
            try:
                preview = imports.preview_file(path, project=project, agent=agent, format=shown, label=label,
                                               name=_detection_name(label))
            except imports.ImportFailed:
                pass
            else:
                still = f"The preview below is still the one read as {shown or preview.format + ' (detected)'}."
                return _render_preview(request, form, preview, token=token, label=label, chosen=shown,
                                       error=f"Read as {chosen}: {error.rstrip('.')}. {still}")
        path.unlink(missing_ok=True)
        return _render_form(request, form, error=error)
    return _render_preview(request, form, preview, token=token, label=label, chosen=chosen)


def _render_preview(request: HttpRequest, form: ImportForm, preview: imports.ImportReport, *, token: str,
                    label: str, chosen: str | None, error: str = "") -> HttpResponse:
    agent = form.agent_choice()
    context = {
        "form": form, "preview": preview, "token": token, "label": label, "project": form.cleaned_data["project"],
        "agent_value": agent.pk if isinstance(agent, models.Agent) else "",
        "new_agent_value": agent if isinstance(agent, str) else "",
        "format_value": chosen or "", "format_chosen": bool(chosen),
        "format_choices": cast(ChoiceField, form.fields["format"]).choices,
        "nothing_new": preview.sessions_imported == 0,
        "error": error,
    }
    return render(request, "agents/import_preview.html", context)


@require_POST
@expensive
def import_confirm(request: HttpRequest) -> HttpResponse:
    """Import the upload previewed under this token, in one transaction, and show the report."""
    _require_editor(request.user)
    form = ImportForm(request.POST, user=request.user)
    path = uploads.upload_path(request.user, request.POST.get("token", ""))
    if not form.is_valid() or path is None:
        return _render_form(request, form, error="The import form was incomplete; upload the file again.")
    project = form.cleaned_data["project"]
    _require_editor(request.user, project)
    if not path.exists():
        return _render_form(request, ImportForm(user=request.user), error=EXPIRED)
    label = request.POST.get("label", "upload")[:200]
    if path.stat().st_size > settings.MEMORYVIZ_BACKGROUND_IMPORT_BYTES:
        return _import_in_background(request, path, form, label)
    try:
        report = imports.import_file(path, project=project, agent=form.agent_choice(),
                                     format=form.cleaned_data.get("format") or None, label=label,
                                     name=_detection_name(label))
    except imports.ImportFailed as exc:
        return _render_form(request, ImportForm(user=request.user, initial={"project": project.slug}),
                            error=f"{_import_error(exc, label)} Nothing was imported.")
    finally:
        path.unlink(missing_ok=True)
    return render(request, "agents/import_report.html", {"report": report, "project": project})


def _import_in_background(request: HttpRequest, path: Path, form: ImportForm, label: str) -> HttpResponse:
    """A big file is imported by a worker: the upload moves to the job (its expiry no longer applies) and the job's
    page follows the import."""
    agent = form.agent_choice()
    params = {
        "upload": background.job_upload_keep(path), "label": label, "name": _detection_name(label),
        "project_id": form.cleaned_data["project"].pk, "format": form.cleaned_data.get("format") or "",
        "agent_id": agent.pk if isinstance(agent, models.Agent) else None,
        "agent_name": agent if isinstance(agent, str) else None,
    }
    job = queue.job_enqueue(user=request.user, kind=models.BackgroundJob.Kind.IMPORT, title=f"Import of {label}",
                            params=params, total=0, unit="messages")
    return redirect(job)


def _upload_to_preview(request: HttpRequest, form: ImportForm) -> tuple[str, Path, str]:
    """(token, path, label) of what to preview: the upload kept under the form's token (the preview's "read it as
    another format"), or this request's file or pasted JSON, kept under a new token. UploadRefused says why not."""
    upload, text = form.cleaned_data.get("file"), form.cleaned_data.get("text") or ""
    token = request.POST.get("token", "")
    kept = uploads.upload_path(request.user, token)
    if upload is None and not text.strip() and kept is not None:
        if not kept.exists():
            raise uploads.UploadRefused(EXPIRED)
        return token, kept, request.POST.get("label", "upload")[:200]
    if upload is None and not text.strip():
        raise uploads.UploadRefused("Choose a file or paste JSON.")
    if upload is not None and text.strip():
        # Both given: importing one and silently dropping the other would surprise; say so instead.
        raise uploads.UploadRefused("Choose one: a file or pasted JSON, not both.")
    if upload is None:
        data = text.encode("utf-8")
        return *uploads.upload_save(request.user, [data], size=len(data)), PASTED_LABEL
    if upload.size > settings.MEMORYVIZ_MAX_UPLOAD_BYTES:
        raise uploads.UploadRefused(f"{upload.name}: the file is {upload.size:,} bytes; the limit is "
                                    f"{settings.MEMORYVIZ_MAX_UPLOAD_BYTES:,}.")
    return *uploads.upload_save(request.user, upload.chunks(), size=upload.size), upload.name


def _detection_name(label: str) -> str | None:
    """The name detection reads (``x.jsonl`` means JSON Lines, as on the command line); pasted text has none."""
    return None if label == PASTED_LABEL else label


def _import_error(exc: imports.ImportFailed, label: str) -> str:
    """What went wrong in the file, and where the page names a format when naming one would let it be read."""
    return exc.naming(label) + (" in the Format list" if exc.choose_format else "")


def _require_editor(user: Any, project: models.Project | None = None) -> None:
    """PermissionDenied unless the user may import (into ``project``, or into some project)."""
    projects = access.editable_projects(user)
    if not (projects.filter(pk=project.pk) if project is not None else projects).exists():
        raise PermissionDenied("Importing needs the editor or admin role" + (" in this project." if project else "."))


def _render_form(request: HttpRequest, form: ImportForm, *, error: str = "") -> HttpResponse:
    """The import page with what is wrong: 200, like every form with errors (nothing was stored)."""
    context = {"form": form, "error": error, "max_paste": MAX_PASTE_CHARS,
               "max_upload": settings.MEMORYVIZ_MAX_UPLOAD_BYTES}
    return render(request, "agents/import.html", context)


# --- export ---------------------------------------------------------------------------------------------------


# An export is a POST (it streams the file and writes an ExportRecord), from the Export menu or the export page, with
# CSRF. A GET of the same URL (a shared link, a bookmark) shows that page, filled in from its query: it downloads
# and records nothing until its button is pressed. Only the POST is expensive.


@require_http_methods(["GET", "POST"])
@expensive(methods=("POST",))
def export_session(request: HttpRequest, session_id: int) -> HttpResponse | StreamingHttpResponse:
    """One session (404 when not in the user's projects), whole or as trimmed by strategy= and params=."""
    answer = pages.export_request(user=request.user, data=_export_data(request), download=request.method == "POST",
                                  session_id=session_id)
    return _export_response(request, answer)


@require_http_methods(["GET", "POST"])
@expensive(methods=("POST",))
def export_sessions(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The sessions matching the list's filters (the same fields as the session list's query string)."""
    answer = pages.export_request(user=request.user, data=_export_data(request), download=request.method == "POST")
    return _export_response(request, answer)


@require_GET
def export_log(request: HttpRequest) -> HttpResponse:
    """The user's exports, newest first, with what each one dropped or skipped."""
    records = list(exports.recent_exports(request.user))
    return render(request, "agents/export_log.html", {"records": records})


def _export_data(request: HttpRequest) -> Any:
    return request.POST if request.method == "POST" else request.GET


def _export_response(request: HttpRequest, answer: pages.ExportAnswer) -> HttpResponse | StreamingHttpResponse:
    """GET: the export page. POST: the download, the job that writes it, or the export page with what is wrong."""
    if answer.job is not None:
        return redirect(answer.job)
    if answer.chunks is None:
        return render(request, "agents/export.html", answer.page)
    return export_download(answer)


def export_download(answer: pages.ExportAnswer) -> StreamingHttpResponse:
    """The file of an export answer, streamed with its content type and name (the pages and the API)."""
    assert answer.chunks is not None, "an answer with its file"
    response = StreamingHttpResponse(answer.chunks, content_type=answer.media_type)
    response["Content-Disposition"] = f'attachment; filename="{answer.filename}"'
    if answer.skipped:
        # The body is streamed, so the skipped conversations are told up front, and kept on the export record.
        response["X-Memoryviz-Skipped"] = str(len(answer.skipped))
    return response
