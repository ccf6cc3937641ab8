"""Big reports, exports and imports run as background jobs (django-tasks, database backend): the page shows their
progress and result, a job survives its worker's death, results are their owner's only and expire."""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from agents import access, models
from agents.jobs import queue
from agents.lab import reports
from agents.store import writing
from tests.paths import MEMORY_SAMPLES

# The worker commits as it goes and closes its connection between tasks (close_old_connections), as in
# production: the tests run on committed data, not inside a transaction it would break.
pytestmark = pytest.mark.django_db(transaction=True)

TOOL_LOOP = [
    {"role": "system", "content": "You plan trips."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny in Paris."},
    {"role": "user", "content": "And Rome?"},
    {"role": "assistant", "content": "Sunny too."},
]


def run_worker() -> None:
    """One worker process's loop, until the queue is empty."""
    Worker(queue_names=["default"], interval=0, batch=True, backend_name="default", startup_delay=False,
           max_tasks=None, worker_id="test-worker", excluded_queue_names=[]).run()


@pytest.fixture
def job_dir(settings, tmp_path: Path) -> Path:
    settings.MEMORYVIZ_JOB_DIR = str(tmp_path / "jobs")
    return Path(settings.MEMORYVIZ_JOB_DIR)


@pytest.fixture
def sessions(make_session) -> list[models.Session]:
    return [make_session(TOOL_LOOP, title=f"Trip {i}") for i in range(3)]


REPORT = "/lab/report/?s=buffered:buffer_size=2&s=safe_token_budget:max_tokens=40"


def figures(html: str) -> str:
    """A report table's figures: each page links its counts to its own address (the job's, the report's)."""
    unlinked = re.sub(r'<a (?!href="/sessions/)[^>]*>|</a>', "", html)  # the links to the lab are the same
    return re.sub(r'<span class="muted small">(of \d+)</span>', r"\1", unlinked)


def test_a_big_report_runs_in_the_background_and_its_page_shows_the_same_report(
    alice, alice_client, sessions, settings, job_dir
) -> None:
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10
    filtered = REPORT + "&q=Trip&min_tokens=1"  # the list's filters: every session matches them
    response = alice_client.get(filtered)
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.kind == "report" and job.total == 3 * len(TOOL_LOOP) and job.status == "queued"
    assert job.params["filters"] == [["q", "Trip"], ["min_tokens", "1"]]  # kept with the job
    assert 'data-status="queued"' in alice_client.get(f"/jobs/{job.pk}/").content.decode()
    run_worker()
    job.refresh_from_db()
    assert job.status == "done" and job.done == job.total and job.attempts == 1
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'data-status="done"' in page and "hx-trigger" not in page.split('id="job-status"')[1].split(">")[0]
    # The same figures as the report computed in one request.
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10_000
    inline = alice_client.get(filtered).content.decode()

    def table(html: str) -> str:
        start = html.index('<table class="data report-summary">')
        return figures(html[start:html.index("</table>", start)])

    assert table(page) == table(inline)
    # "of N" opens these sessions in the list, with the filters the report ran with, as the inline report's does.
    listed = 'href="/?q=Trip&amp;min_tokens=1"'  # the session list
    of_n = f'<a class="muted small" {listed} title="These sessions in the list">of 3</a>'
    assert page.count(of_n) == inline.count(of_n) == 2
    assert f'{listed} id="report-list"' in page
    assert page.count('class="report-row"') == 3
    # Downloaded and ordered from the job's page as from the report's.
    download = alice_client.get(f"/jobs/{job.pk}/", {"download": "json", "order": "-tokens"})
    assert download["Content-Type"] == "application/json" and len(json.loads(download.content)["rows"]) == 3
    assert alice_client.get(f"{REPORT}&download=json&order=-tokens").content == download.content


def test_a_report_replaying_every_call_runs_in_the_background_as_it_does_in_a_request(
    alice_client, sessions, settings, job_dir
) -> None:
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10
    alice_client.get(REPORT + "&per_call=1")
    job = models.BackgroundJob.objects.get()
    assert job.params["per_call"] is True and "every call" in job.title
    run_worker()
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10_000
    inline = alice_client.get(REPORT + "&per_call=1").content.decode()

    def tables(html: str) -> list[str]:
        start = html.index('<table class="data report-summary">')
        return [figures(html[start:html.index("</table>", start)]),
                figures(html[html.index('<tbody', html.index("report-table")):
                             html.index("</table>", html.index("report-table"))])]

    assert "Broken at some call" in page and tables(page) == tables(inline)
    assert page.count('class="report-row"') == 3


def test_a_report_over_more_sessions_than_a_request_holds_covers_them_all_with_progress(
    alice_client, make_session, settings, job_dir, monkeypatch
) -> None:
    monkeypatch.setattr(reports, "REPORT_SESSION_LIMIT", 2)  # and so two sessions per chunk of the worker
    for i in range(5):
        make_session(TOOL_LOOP, title=f"Trip {i}")
    alice_client.get(REPORT)
    job = models.BackgroundJob.objects.get()
    seen: list[int] = []
    monkeypatch.setattr(queue, "_Progress", _recording(queue._Progress, seen))
    run_worker()
    job.refresh_from_db()
    assert job.status == "done" and len(job.result["rows"]) == 5 and job.done == job.total == 5 * len(TOOL_LOOP)
    assert seen == [2 * len(TOOL_LOOP), 4 * len(TOOL_LOOP), 5 * len(TOOL_LOOP)]  # after each chunk
    assert alice_client.get(f"/jobs/{job.pk}/").content.decode().count('class="report-row"') == 5


def test_a_report_job_tells_its_progress_every_few_thousand_messages(monkeypatch) -> None:
    monkeypatch.setattr(reports, "REPORT_CHUNK_MESSAGES", 100)
    sizes = {1: 60, 2: 50, 3: 30, 4: 500, 5: 10}
    assert reports._chunks([1, 2, 3, 4, 5], sizes) == [[1], [2, 3], [4], [5]]  # a bigger session alone


def _recording(progress_class: type, seen: list[int]) -> type:
    class Recording(progress_class):  # type: ignore[misc, valid-type]
        def __call__(self, done: int, *, force: bool = False) -> None:
            seen.append(done)
            super().__call__(done, force=force)

    return Recording


def test_over_htmx_the_report_form_is_sent_to_the_job_page(alice_client, sessions, settings, job_dir) -> None:
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10
    response = alice_client.get(REPORT, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="report-result")
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 200 and response["HX-Redirect"] == f"/jobs/{job.pk}/"
    fragment = alice_client.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section id="job-status"') and 'hx-trigger="every 1s"' in fragment


def test_a_background_report_survives_a_worker_restart(alice, alice_client, sessions, settings, job_dir) -> None:
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10
    alice_client.get(REPORT)
    job = models.BackgroundJob.objects.get()
    # A worker took the task, started the job, and was killed (kill -9, a machine restart): its task row says
    # running forever, the job too, and its process is gone.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    DBTaskResult.objects.get(pk=job.task_id).claim("killed-worker")
    models.BackgroundJob.objects.filter(pk=job.pk).update(
        status="running", worker=f"{writing.process_owner().rpartition(':')[0]}:{gone.stdout.strip()}",
        heartbeat=timezone.now(), done=7, attempts=1)
    run_worker()  # a worker that does not look for dead ones would never run it again
    assert models.BackgroundJob.objects.get(pk=job.pk).status == "running"
    # The restarted worker looks first.
    assert queue.jobs_recover() == [job.pk]
    assert queue.jobs_recover() == []  # queued once, however many workers look
    run_worker()
    job.refresh_from_db()
    assert job.status == "done" and job.attempts == 2 and len(job.result["rows"]) == 3
    assert "report-row" in alice_client.get(f"/jobs/{job.pk}/").content.decode()


def test_a_job_from_another_host_is_recovered_only_once_its_heartbeat_is_stale(db, alice, settings) -> None:
    settings.MEMORYVIZ_JOB_STALE_SECONDS = 60
    job = models.BackgroundJob.objects.create(user=alice, kind="report", title="t", status="running",
                                              worker="elsewhere:42", heartbeat=timezone.now(),
                                              params={"session_ids": [], "specs": []})
    assert queue.jobs_recover() == []
    assert queue.jobs_recover(now=timezone.now() + dt.timedelta(seconds=61)) == [job.pk]
    job.refresh_from_db()
    assert job.status == "queued" and job.task_id


def test_a_big_export_is_written_by_a_worker_and_downloaded_by_its_owner_only(
    alice_client, client, bob, sessions, settings, job_dir
) -> None:
    settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES = 10
    response = alice_client.post("/export/", {"format": "openai_jsonl"})
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 302 and job.kind == "export"
    run_worker()
    job.refresh_from_db()
    assert job.status == "done", job.message
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/{job.pk}/download/"' in page
    download = alice_client.get(f"/jobs/{job.pk}/download/")
    body = b"".join(download.streaming_content).decode()
    assert download["Content-Disposition"].startswith("attachment;") and ".jsonl" in download["Content-Disposition"]
    lines = [json.loads(line) for line in body.splitlines()]
    assert len(lines) == 3 and lines[0]["messages"][1]["content"] == "Weather in Paris?"
    assert models.ExportRecord.objects.get().session_count == 3
    client.force_login(bob)
    assert client.get(f"/jobs/{job.pk}/").status_code == 404
    assert client.get(f"/jobs/{job.pk}/download/").status_code == 404


def test_a_big_import_runs_in_the_background_and_shows_its_sessions_when_done(
    alice, alice_client, project, settings, job_dir, tmp_path
) -> None:
    settings.MEMORYVIZ_BACKGROUND_IMPORT_BYTES = 10
    upload = tmp_path / "trip.json"
    upload.write_text(json.dumps(TOOL_LOOP))
    with open(upload, "rb") as fh:
        preview = alice_client.post("/import/", {"project": project.slug, "file": fh})
    assert preview.status_code == 200
    token = preview.context["token"]
    confirm = alice_client.post("/import/confirm/", {"token": token, "project": project.slug, "label": "trip.json",
                                                     "agent": preview.context["agent_value"],
                                                     "new_agent": preview.context["new_agent_value"], "format": ""})
    job = models.BackgroundJob.objects.get()
    assert confirm.status_code == 302 and job.kind == "import"
    assert not access.sessions_for_user(alice).exists()
    run_worker()
    job.refresh_from_db()
    assert job.status == "done", job.message
    session = access.sessions_for_user(alice).get()
    assert session.message_count == len(TOOL_LOOP)
    assert f'href="/sessions/{session.pk}/"' in alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert list(job_dir.iterdir()) == []  # the upload went with the import


def test_a_big_memory_database_imported_in_the_background_shows_its_memory_layers_when_done(
    alice, alice_client, project, settings, job_dir
) -> None:
    settings.MEMORYVIZ_BACKGROUND_IMPORT_BYTES = 10
    with open(MEMORY_SAMPLES / "mem0" / "history.db", "rb") as fh:
        preview = alice_client.post("/import/", {"project": project.slug, "file": fh})
    assert preview.status_code == 200 and preview.context["confirm_label"] == "Import 1 session and 1 memory store"
    confirm = alice_client.post("/import/confirm/", {"token": preview.context["token"], "project": project.slug,
                                                     "label": "history.db", "agent": "", "new_agent": "",
                                                     "format": ""})
    job = models.BackgroundJob.objects.get()
    assert confirm.status_code == 302 and not models.MemoryStore.objects.filter(state="ready").exists()
    run_worker()
    job.refresh_from_db()
    assert job.status == "done", job.message
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    shown = " ".join(re.sub(r"<[^>]+>", " ", page.split('class="import-memory"')[1].split("</section>")[0]).split())
    assert "Stored with the sessions:" in shown and "Records added 4 Versions added 6" in shown
    assert "mem0 records facts kept across sessions new" in shown
    assert models.MemoryStore.objects.get(state="ready").record_count == 4


def test_a_failed_job_says_why(alice, alice_client, settings, job_dir) -> None:
    job = queue.job_enqueue(user=alice, kind="import", title="Import of gone.json",
                            params={"upload": "missing.upload", "label": "gone.json", "project_id": 0})
    run_worker()
    job.refresh_from_db()
    assert job.status == "failed" and "gone.json: the uploaded file is gone" in job.message
    assert "Failed: gone.json" in alice_client.get(f"/jobs/{job.pk}/").content.decode()


def test_finished_jobs_expire_with_their_files(db, alice, settings, job_dir) -> None:
    settings.MEMORYVIZ_JOB_TTL_SECONDS = 3600
    job_dir.mkdir(parents=True)
    (job_dir / "export-1").write_text("x")
    old = models.BackgroundJob.objects.create(user=alice, kind="export", title="old", status="done",
                                              file_name="export-1", finished_at=timezone.now() - dt.timedelta(hours=2))
    fresh = models.BackgroundJob.objects.create(user=alice, kind="report", title="new", status="done",
                                                finished_at=timezone.now())
    assert queue.jobs_expire() == 1
    assert list(models.BackgroundJob.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert not (job_dir / "export-1").exists() and old.pk != fresh.pk
