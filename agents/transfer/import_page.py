"""What the import pages answer, each decided in one call from its view: the form; an upload kept under a token and
previewed (what would be imported, nothing stored); the previewed upload imported (the report), or handed to a
worker when it is big (the job). The upload waits in ``transfer.uploads`` between preview and confirm. The API's
import too (``import_from_api``).

Importing needs the editor or admin role (PermissionDenied, 403, otherwise); a form with what is wrong answers 200,
like every form with errors (nothing was stored)."""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.forms import ChoiceField
from django.utils import timezone

from agents import access, models
from agents.jobs import queue
from agents.memory import formats
from agents.transfer import background, imports, uploads
from agents.transfer.forms import MAX_PASTE_CHARS, ImportForm

# The label of pasted JSON (it has no file name to read a kind from).
PASTED_LABEL = "pasted JSON"
EXPIRED = "This upload has expired or was already imported; upload the file again."


@dataclass
class ImportPage:
    """Which page an import request shows (``form``, ``preview`` or ``report``) and its context; or the job that
    imports a big file (its page follows the import)."""

    page: str = "form"
    context: dict[str, Any] = field(default_factory=dict)
    job: models.BackgroundJob | None = None


def _form_page(form: ImportForm, *, error: str = "") -> ImportPage:
    return ImportPage("form", {"form": form, "error": error, "max_paste": MAX_PASTE_CHARS,
                               "max_upload": settings.MEMORYVIZ_MAX_UPLOAD_BYTES})


def _require_editor(user: Any, project: models.Project | None = None) -> None:
    """PermissionDenied unless the user may import (into ``project``, or into some project)."""
    projects = access.editable_projects(user)
    if not (projects.filter(pk=project.pk) if project is not None else projects).exists():
        raise PermissionDenied("Importing needs the editor or admin role" + (" in this project." if project else "."))


def import_form_page(*, user: access.User, project: str | None = None) -> ImportPage:
    """The import form, its project chosen (``project``: a slug) when the page was opened for one."""
    _require_editor(user)
    return _form_page(ImportForm(user=user, initial={"project": project} if project else None))


def import_previewed(*, user: access.User, data: Any, files: Any) -> ImportPage:
    """Keep the upload (a file in ``files`` or JSON pasted in ``data``, or the one a preview kept under ``data``'s
    token, read again as another format) and show what would be imported."""
    _require_editor(user)
    form = ImportForm(data, files, user=user)
    if not form.is_valid():
        return _form_page(form)
    project, agent, chosen = form.cleaned_data["project"], form.agent_choice(), form.cleaned_data["format"] or None
    _require_editor(user, project)
    try:
        token, path, label = _upload_to_preview(user, data, form)
    except uploads.UploadRefused as exc:
        return _form_page(form, error=str(exc))
    # "Read it as ..." on a preview reads the kept upload again in another format.
    reread = not form.cleaned_data.get("file") and not (form.cleaned_data.get("text") or "").strip()
    try:
        preview = imports.preview_file(path, project=project, agent=agent, format=chosen, label=label,
                                       name=_detection_name(label))
    except imports.ImportFailed as exc:
        error = _import_error(exc, label)
        if reread:
            # A wrong format keeps the upload and the preview it replaced, with what the other format said.
            shown = data.get("shown_format") or None
            shown = shown if shown in formats.ALL_FORMATS else None
            try:
                preview = imports.preview_file(path, project=project, agent=agent, format=shown, label=label,
                                               name=_detection_name(label))
            except imports.ImportFailed:
                pass
            else:
                still = f"The preview below is still the one read as {shown or preview.format + ' (detected)'}."
                return _preview_page(form, preview, token=token, label=label, chosen=shown,
                                     error=f"Read as {chosen}: {error.rstrip('.')}. {still}")
        path.unlink(missing_ok=True)
        return _form_page(form, error=error)
    return _preview_page(form, preview, token=token, label=label, chosen=chosen)


def _preview_page(form: ImportForm, preview: imports.ImportReport, *, token: str, label: str, chosen: str | None,
                  error: str = "") -> ImportPage:
    agent = form.agent_choice()
    return ImportPage("preview", {
        "form": form, "preview": preview, "token": token, "label": label, "project": form.cleaned_data["project"],
        "agent_value": agent.pk if isinstance(agent, models.Agent) else "",
        "new_agent_value": agent if isinstance(agent, str) else "",
        "format_value": chosen or "", "format_chosen": bool(chosen),
        "format_choices": cast(ChoiceField, form.fields["format"]).choices,
        "nothing_new": preview.sessions_imported == 0 and not _memory_to_store(preview.memory),
        "confirm_label": _confirm_label(preview),
        "error": error,
    })


def _memory_to_store(memory: dict[str, Any] | None) -> bool:
    return memory is not None and any(memory[key] for key in ("stores", "records", "versions", "recalls", "snapshots"))


def _confirm_label(preview: imports.ImportReport) -> str:
    """What the confirm button imports: the new sessions and the new memory stores; a file of memory alone joining a
    store says so ("Import into 1 memory store")."""
    parts = []
    if preview.sessions_imported:
        parts.append(_counted(preview.sessions_imported, "session"))
    memory = preview.memory or {}
    new = sum(1 for store in memory.get("stores", []) if store["status"] == "new")
    joined = len(memory.get("stores", [])) - new
    if new:
        parts.append(_counted(new, "memory store"))
    elif joined and not parts:
        # Not how many records: the preview counts those the store holds already too (the import skips them).
        return f"Import into {_counted(joined, 'memory store')}"
    elif not parts:
        for key, noun in (("recalls", "recall"), ("snapshots", "snapshot")):
            if memory.get(key):
                parts.append(_counted(memory[key], noun))
    return "Import " + (" and ".join(parts) or _counted(0, "session"))


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def import_confirmed(*, user: access.User, data: Any) -> ImportPage:
    """Import the upload previewed under ``data``'s token, in one transaction, and show the report; past
    ``MEMORYVIZ_BACKGROUND_IMPORT_BYTES``, a worker imports it."""
    _require_editor(user)
    form = ImportForm(data, user=user)
    path = uploads.upload_path(user, data.get("token", ""))
    if not form.is_valid() or path is None:
        return _form_page(form, error="The import form was incomplete; upload the file again.")
    project = form.cleaned_data["project"]
    _require_editor(user, project)
    if not path.exists():
        return _form_page(ImportForm(user=user), error=EXPIRED)
    label = data.get("label", "upload")[:200]
    if path.stat().st_size > settings.MEMORYVIZ_BACKGROUND_IMPORT_BYTES:
        return ImportPage(job=_import_in_background(user, path, form, label))
    try:
        report = imports.import_file(path, project=project, agent=form.agent_choice(),
                                     format=form.cleaned_data.get("format") or None, label=label,
                                     name=_detection_name(label))
    except imports.ImportFailed as exc:
        return _form_page(ImportForm(user=user, initial={"project": project.slug}),
                          error=f"{_import_error(exc, label)} Nothing was imported.")
    finally:
        path.unlink(missing_ok=True)
    return ImportPage("report", {"report": report, "project": project})


def _import_in_background(user: access.User, path: Path, form: ImportForm, label: str) -> models.BackgroundJob:
    """A big file is imported by a worker: the upload moves to the job (its expiry no longer applies) and the job's
    page follows the import."""
    agent = form.agent_choice()
    params = {
        "upload": background.job_upload_keep(path), "label": label, "name": _detection_name(label),
        "project_id": form.cleaned_data["project"].pk, "format": form.cleaned_data.get("format") or "",
        "agent_id": agent.pk if isinstance(agent, models.Agent) else None,
        "agent_name": agent if isinstance(agent, str) else None,
    }
    return queue.job_enqueue(user=user, kind=models.BackgroundJob.Kind.IMPORT, title=f"Import of {label}",
                             params=params, total=0, unit="messages")


def _upload_to_preview(user: access.User, data: Any, form: ImportForm) -> tuple[str, Path, str]:
    """(token, path, label) of what to preview: the upload kept under the form's token (the preview's "read it as
    another format"), or this request's file or pasted JSON, kept under a new token. UploadRefused says why not."""
    upload, text = form.cleaned_data.get("file"), form.cleaned_data.get("text") or ""
    token = data.get("token", "")
    kept = uploads.upload_path(user, token)
    if upload is None and not text.strip() and kept is not None:
        if not kept.exists():
            raise uploads.UploadRefused(EXPIRED)
        return token, kept, data.get("label", "upload")[:200]
    if upload is None and not text.strip():
        raise uploads.UploadRefused("Choose a file or paste JSON.")
    if upload is not None and text.strip():
        # Both given: importing one and silently dropping the other would surprise; say so instead.
        raise uploads.UploadRefused("Choose one: a file or pasted JSON, not both.")
    if upload is None:
        content = text.encode("utf-8")
        return *uploads.upload_save(user, [content], size=len(content)), PASTED_LABEL
    if upload.size > settings.MEMORYVIZ_MAX_UPLOAD_BYTES:
        raise uploads.UploadRefused(f"{upload.name}: the file is {upload.size:,} bytes; the limit is "
                                    f"{settings.MEMORYVIZ_MAX_UPLOAD_BYTES:,}.")
    return *uploads.upload_save(user, upload.chunks(), size=upload.size), upload.name


def _detection_name(label: str) -> str | None:
    """The name detection reads (``x.jsonl`` means JSON Lines, as on the command line); pasted text has none."""
    return None if label == PASTED_LABEL else label


def _import_error(exc: imports.ImportFailed, label: str) -> str:
    """What went wrong in the file, and where the page names a format when naming one would let it be read."""
    return exc.naming(label) + (" in the Format list" if exc.choose_format else "")


# --- the API's import ----------------------------------------------------------------------------------------------


def import_from_api(*, user: access.User, upload: Any, project: str | None, agent: str | None,
                    format: str | None) -> imports.ImportReport:
    """An uploaded history file (``upload``: its name and content) imported into ``project`` (a slug; none: the
    only project the user may write to), as the import page takes it; nothing is stored when it fails (ValueError,
    naming the place and the field)."""
    target = access.project_to_write(user, project)
    if format and format not in formats.ALL_FORMATS:
        raise ValueError(f"format: unknown format {format!r}; valid: {', '.join(sorted(formats.ALL_FORMATS))}")
    source: Any = (
        upload.temporary_file_path() if hasattr(upload, "temporary_file_path") else io.BufferedReader(upload.file)
    )
    try:
        report = imports.import_file(source, project=target, agent=agent, format=format, label=upload.name,
                                     name=upload.name)
    except imports.ImportFailed as exc:
        named = exc.naming(upload.name) + (" in the format field" if exc.choose_format else "")
        raise ValueError(f"{named} Nothing was imported.") from None
    models.Session.objects.filter(pk__in=[s.session_id for s in report.sessions if s.session_id and s.added]).update(
        last_activity_at=timezone.now())
    return report
