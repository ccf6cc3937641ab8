"""Long work in the background: big reports, exports and imports run by a worker, not by a request.

A page that would run too long (``MEMORYVIZ_BACKGROUND_*``) records a ``BackgroundJob`` and enqueues
:func:`run_job` through django-tasks (its database backend: with PostgreSQL, workers on several machines share the
queue); the job's page polls its progress over htmx and links the result when it is done. A worker killed in the
middle leaves its job running with a stale heartbeat: :func:`jobs_recover` (run by every worker at start and every
little while) queues it again, and the work starts over (reports and exports only read; an import's hidden rows
are removed first).

The queue knows no capability: each kind of job is registered by the one it belongs to (:func:`job_kind`: the lab's
report in ``lab.reports``, exports and imports in ``transfer.background``), when the app is ready (``agents.apps``).
The lab and transfer queue their jobs here, and the worker runs what they registered, without the queue importing
either of them.
"""
from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django_tasks import task

from agents import access, models
from agents.memory.trimming import StrategyError
from agents.store import writing

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
    """Record a job for ``user`` (an API key's: the user who created it) and queue it for a worker."""
    owner = access.recorded_user(user)
    if owner is None:
        raise ValueError("a background job belongs to a person, and this request is no one's")
    job = writing.write_retrying(lambda: Job.objects.create(
        user=owner, kind=kind, title=title[:500], params=params, total=total, unit=unit))
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


# --- the kinds of job ---------------------------------------------------------------------------------------------

# What runs a job: its row, and a callable told how much is done (``_Progress``, the heartbeat too).
Runner = Callable[[models.BackgroundJob, Callable[[int], None]], None]
# What a finished job's page shows of its result (a context, or a download), for the user and the page's query.
Shown = Callable[[Any, models.BackgroundJob, QueryDict], "dict[str, Any] | HttpResponse"]


@dataclass(frozen=True)
class JobKind:
    run: Runner
    # Errors that mean the job's input is wrong (the job fails, saying so), beside StrategyError and ValueError.
    refused: tuple[type[Exception], ...] = ()
    # What clears what a run killed midway left, before the job runs again (an import's hidden sessions).
    before_retry: Callable[[], object] | None = None
    shown: Shown | None = None


KINDS: dict[str, JobKind] = {}


def job_kind(kind: str, *, refused: tuple[type[Exception], ...] = (), before_retry: Callable[[], object] | None = None,
             shown: Shown | None = None) -> Callable[[Runner], Runner]:
    """Register the function that runs jobs of ``kind`` (a ``BackgroundJob.Kind``), with what fails such a job
    as refused, what clears a killed run's leftovers, and what the job's page shows once it is done."""

    def register(run: Runner) -> Runner:
        KINDS[kind] = JobKind(run, refused, before_retry, shown)
        return run

    return register


@dataclass
class JobPage:
    job: models.BackgroundJob
    # What its kind shows of it once done (a report: ordered, narrowed and downloaded as on the report page), or the
    # download its page's query asks for.
    shown: dict[str, Any] | HttpResponse


def job_page(*, user: Any, job_id: int, query: QueryDict) -> JobPage:
    """The user's job (404 for anyone else's) and what its page shows of its result."""
    job = get_object_or_404(jobs_for_user(user), pk=job_id)
    kind = KINDS.get(job.kind)
    return JobPage(job, kind.shown(user, job, query) if kind is not None and kind.shown is not None else {})


def job_file(*, user: Any, job_id: int) -> tuple[Path, str]:
    """The file a finished export job wrote, and the name to download it as, for its owner only (404 when it is not
    there: not finished, or expired)."""
    job = get_object_or_404(jobs_for_user(user), pk=job_id)
    path = job_dir() / job.file_name if job.file_name else None
    if job.status != job.Status.DONE or path is None or not path.exists():
        raise Http404("This export's file is not there (not finished, or expired).")
    return path, job.download_name or job.file_name


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
    kind = KINDS[job.kind]
    refused: tuple[type[Exception], ...] = (*kind.refused, StrategyError, ValueError)
    try:
        kind.run(job, progress)
    except refused as exc:
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
        kind = KINDS.get(job.kind)
        if kind is not None and kind.before_retry is not None:
            kind.before_retry()  # an import's hidden rows
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
