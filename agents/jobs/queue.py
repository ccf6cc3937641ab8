"""Long work in the background: big reports, exports and imports run by a worker, not by a request.

A page that would run too long (``MEMORYVIZ_BACKGROUND_*``) records a ``BackgroundJob`` and enqueues
:func:`run_job` through django-tasks (its database backend: with PostgreSQL, workers on several machines share the
queue); the job's page polls its progress over htmx and links the result when it is done. A worker killed in the
middle leaves its job running with a stale heartbeat: :func:`jobs_recover` (run by every worker at start and every
little while) queues it again, and the work starts over (reports and exports only read; an import's hidden rows
are removed by ``imports.imports_cleanup`` first).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from agents import access, models
from agents.lab import reports
from agents.memory.trimming import StrategyError, spec_from_text
from agents.store import reading, writing
from agents.transfer import exports, imports

Job = models.BackgroundJob
# Progress is written at most this often (seconds): a heartbeat, not a write per batch.
PROGRESS_EVERY = 1.0


def batch_priority() -> int:
    """Give this process (an import command, a background worker) the niceness ``MEMORYVIZ_BATCH_NICE``, so that
    the web server's requests get the CPU first and the batch work takes what they leave; returns the niceness.
    Absolute, not a step: called again (a second import in the same process) it changes nothing, and it never
    raises a niceness that is higher already."""
    current = os.nice(0)
    if current < settings.MEMORYVIZ_BATCH_NICE:
        current = os.nice(settings.MEMORYVIZ_BATCH_NICE - current)
    return current


def job_dir() -> Path:
    path = Path(settings.MEMORYVIZ_JOB_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def job_enqueue(*, user: Any, kind: str, title: str, params: dict[str, Any], total: int = 0,
                unit: str = "messages") -> models.BackgroundJob:
    """Record a job for ``user`` and queue it for a worker."""
    job = writing.write_retrying(lambda: Job.objects.create(
        user=user, kind=kind, title=title[:500], params=params, total=total, unit=unit))
    _enqueue(job)
    return job


def _enqueue(job: models.BackgroundJob) -> None:
    result = writing.write_retrying(lambda: run_job.enqueue(job.pk))
    Job.objects.filter(pk=job.pk).update(task_id=str(result.id))
    job.task_id = str(result.id)


def jobs_for_user(user: Any) -> Any:
    """The user's own jobs (no one else's: a job may hold an export of sessions only its owner may read)."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "pk", None) is None:
        return Job.objects.none()
    return Job.objects.filter(user=user)


# --- the worker's side ------------------------------------------------------------------------------------------


class _Progress:
    """Tells the job's page how far it got, at most every PROGRESS_EVERY seconds (and is the heartbeat)."""

    def __init__(self, job: models.BackgroundJob) -> None:
        self.job = job
        self.last = 0.0

    def __call__(self, done: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY:
            return
        self.last = now
        self.job.done = done
        writing.write_retrying(lambda: Job.objects.filter(pk=self.job.pk).update(done=done, heartbeat=timezone.now()))


@task()
def run_job(job_id: int) -> str:
    """Run one background job to its end (the task a worker runs); its outcome is written on the job."""
    job = Job.objects.select_related("user").filter(pk=job_id).first()
    if job is None or job.finished:
        return "gone" if job is None else job.status
    job.status, job.worker, job.heartbeat, job.done = Job.Status.RUNNING, writing.process_owner(), timezone.now(), 0
    job.attempts += 1
    writing.write_retrying(lambda: job.save(update_fields=["status", "worker", "heartbeat", "done", "attempts"]))
    progress = _Progress(job)
    try:
        RUNNERS[job.kind](job, progress)
    except (imports.ImportFailed, exports.ExportFailed, StrategyError, ValueError) as exc:
        _finish(job, Job.Status.FAILED, message=str(exc))
        return job.status
    except Exception as exc:
        _finish(job, Job.Status.FAILED, message=f"internal error ({type(exc).__name__}); please report it")
        raise
    _finish(job, Job.Status.DONE)
    return job.status


def _finish(job: models.BackgroundJob, status: str, *, message: str = "") -> None:
    job.status, job.message, job.finished_at = status, message[:2000], timezone.now()
    if status == Job.Status.DONE:
        job.done = max(job.done, job.total)
    writing.write_retrying(lambda: job.save(update_fields=[
        "status", "message", "finished_at", "done", "result", "file_name", "download_name"]))


def _run_report(job: models.BackgroundJob, progress: _Progress) -> None:
    """Every strategy over every chosen session (in the order the list showed them), a chunk of sessions at a time,
    with the progress counted in messages; ``per_call``: every call of each run replayed too."""
    ids: list[int] = job.params["session_ids"]
    specs = [spec_from_text(text) for text in job.params["specs"]]
    per_call = bool(job.params.get("per_call"))
    scoped = access.sessions_for_user(job.user)
    found = {pk: count for pk, count in scoped.filter(pk__in=ids).values_list("pk", "message_count")}
    order = [pk for pk in ids if pk in found]
    rows: list[dict[str, Any]] = []
    # What ReportSummary counts (its spec aside), summed over the chunks.
    counted = [f.name for f in dataclasses.fields(reports.ReportSummary) if f.name != "spec"]
    summaries = [dict.fromkeys(counted, 0) for _ in specs]
    done = 0
    for chunk in _chunks(order, found):
        report = reports.trimming_report(scoped.filter(pk__in=chunk), specs, limit=len(chunk), per_call=per_call,
                                         counters=job.params.get("counters"))
        by_pk = {row.session.pk: row for row in report.rows}
        for pk in chunk:
            row = by_pk.get(pk)
            if row is None:
                continue
            # Each cell as ReportCell holds it, less its spec (the result's "specs" say it once per column).
            rows.append({"session_id": pk, "tokens_before": row.tokens_before, "cells": [
                {f.name: getattr(c, f.name) for f in dataclasses.fields(c) if f.name != "spec"} for c in row.cells]})
        for total, summary in zip(summaries, report.summaries, strict=True):
            for name in counted:
                total[name] += getattr(summary, name)
        done += sum(found[pk] for pk in chunk)
        progress(done)
    job.result = {"specs": [spec.text for spec in specs], "rows": rows, "summaries": summaries, "per_call": per_call}
    if job.params.get("labels"):
        job.result["labels"] = job.params["labels"]  # a preset's column names the preset and its counter


# Messages a report job trims between two progress updates: one read of outlines (outlines.SESSIONS_ROWS_PER_QUERY),
# a few seconds; at most the report service's own per-call bounds.
REPORT_CHUNK_MESSAGES = 20_000


def _chunks(order: Sequence[int], found: dict[int, int]) -> list[list[int]]:
    """Sessions grouped so that each call of the report service stays under its own per-call bounds, and the job's
    page sees progress every ``REPORT_CHUNK_MESSAGES`` messages or so."""
    most = min(REPORT_CHUNK_MESSAGES, reports.REPORT_MESSAGE_LIMIT)
    return list(reading.batches_by_messages(order, found.__getitem__, most=most, count=reports.REPORT_SESSION_LIMIT))


def report_from_result(user: Any, result: dict[str, Any]) -> reports.TrimmingReport:
    """A finished report job's result as the report page shows it (sessions the user can still see)."""
    specs = [spec_from_text(text) for text in result["specs"]]
    sessions = access.sessions_for_user(user).in_bulk([row["session_id"] for row in result["rows"]])
    rows = [
        reports.ReportRow(sessions[row["session_id"]], row["tokens_before"],
                          [reports.ReportCell(spec, **cell) for spec, cell in zip(specs, row["cells"], strict=True)])
        for row in result["rows"] if row["session_id"] in sessions
    ]
    summaries = [
        reports.ReportSummary(spec, **summary) for spec, summary in zip(specs, result["summaries"], strict=True)
    ]
    return reports.TrimmingReport(specs, rows, summaries, capped=False, limit=len(rows),
                                  per_call=bool(result.get("per_call")))


def _run_export(job: models.BackgroundJob, progress: _Progress) -> None:
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


def _run_import(job: models.BackgroundJob, progress: _Progress) -> None:
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


RUNNERS: dict[str, Callable[[models.BackgroundJob, _Progress], None]] = {
    Job.Kind.REPORT: _run_report,
    Job.Kind.EXPORT: _run_export,
    Job.Kind.IMPORT: _run_import,
}


def job_upload_keep(source: Path) -> str:
    """Move an upload waiting for confirmation into the job folder (where its expiry no longer applies): the
    name to give the import job."""
    name = f"import-{secrets.token_hex(12)}.upload"
    shutil.move(str(source), job_dir() / name)
    return name


# --- recovery and expiry ----------------------------------------------------------------------------------------


def jobs_recover(*, now: dt.datetime | None = None) -> list[int]:
    """Queue again the running jobs whose worker is gone (its process on this host ended, or it wrote no progress
    for ``MEMORYVIZ_JOB_STALE_SECONDS``), after removing what an interrupted import left hidden. Returns their ids."""
    limit = (now or timezone.now()) - dt.timedelta(seconds=settings.MEMORYVIZ_JOB_STALE_SECONDS)
    again: list[int] = []
    for job in Job.objects.filter(status=Job.Status.RUNNING):
        alive = writing.process_alive(job.worker)
        if alive is True or (alive is None and job.heartbeat is not None and job.heartbeat >= limit):
            continue
        if job.kind == Job.Kind.IMPORT:
            imports.imports_cleanup()
        with transaction.atomic():
            # Only one worker queues it again, however many look at once.
            claimed = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, worker=job.worker).update(
                status=Job.Status.QUEUED, worker="", done=0)
        if claimed:
            _enqueue(job)
            again.append(job.pk)
    return again


def jobs_expire(*, now: dt.datetime | None = None) -> int:
    """Remove finished jobs older than ``MEMORYVIZ_JOB_TTL_SECONDS``, with their files. Returns how many."""
    limit = (now or timezone.now()) - dt.timedelta(seconds=settings.MEMORYVIZ_JOB_TTL_SECONDS)
    old = list(Job.objects.filter(status__in=[Job.Status.DONE, Job.Status.FAILED], finished_at__lt=limit))
    for job in old:
        for name in (job.file_name, job.params.get("upload", "")):
            if name:
                (job_dir() / name).unlink(missing_ok=True)
        job.delete()
    return len(old)
