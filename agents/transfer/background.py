"""Exports and imports too long for one request, run by a worker: the job kinds transfer registers with the queue
(``jobs.queue.job_kind``)."""
from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.utils import timezone

from agents import access, models
from agents.jobs import queue
from agents.jobs.queue import job_dir
from agents.memory.trimming import spec_from_text
from agents.transfer import exports, imports, staging


@queue.job_kind(models.BackgroundJob.Kind.EXPORT, refused=(exports.ExportFailed,))
def _run_export(job: models.BackgroundJob, progress: Callable[[int], None]) -> None:
    params = job.params
    sessions = access.sessions_for_user(job.user).filter(pk__in=params["session_ids"])
    spec = spec_from_text(params["spec"]) if params.get("spec") else None
    plan = exports.export_plan(sessions=sessions, format=params["format"], scope=params["scope"],
                               filters=params.get("filters") or {}, spec=spec, counter=params.get("counter"),
                               on_invalid=params.get("on_invalid") or "skip")
    name = f"export-{job.pk}-{secrets.token_hex(8)}"
    path = job_dir() / name
    partial = path.with_suffix(".part")
    with open(partial, "w", encoding="utf-8") as out:
        result = exports.export_to(plan, out, user=job.user, interface="web", on_messages=progress)
    partial.replace(path)
    job.file_name, job.download_name = name, params["filename"]
    job.result = result.to_dict()


@queue.job_kind(models.BackgroundJob.Kind.IMPORT, refused=(imports.ImportFailed,), before_retry=staging.imports_cleanup)
def _run_import(job: models.BackgroundJob, progress: Callable[[int], None]) -> None:
    params = job.params
    path = job_dir() / params["upload"]
    if not path.exists():
        raise imports.ImportFailed(f"{params['label']}: the uploaded file is gone; upload it again")
    project = access.editable_projects(job.user).filter(pk=params["project_id"]).first()
    if project is None:
        raise imports.ImportFailed("project: you may no longer import into this project")
    agent: Any = params.get("agent_name") or None
    if params.get("agent_id"):
        agent = models.Agent.objects.filter(project=project, pk=params["agent_id"]).first()
    report = imports.import_file(path, project=project, agent=agent, format=params.get("format") or None,
                                 label=params["label"], name=params.get("name"), on_messages=progress)
    models.Session.objects.filter(pk__in=[s.session_id for s in report.sessions if s.session_id and s.added]).update(
        last_activity_at=timezone.now())
    path.unlink(missing_ok=True)
    job.result = report.to_dict()


def job_upload_keep(source: Path) -> str:
    """Move an upload waiting for confirmation into the job folder (where its expiry no longer applies): the
    name to give the import job."""
    name = f"import-{secrets.token_hex(12)}.upload"
    shutil.move(str(source), job_dir() / name)
    return name
