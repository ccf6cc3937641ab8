"""A background job's page: its progress over htmx (polled until it ends), and its result when done."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents import jobs, lab, services
from agents.http import HtmxHttpRequest


def _job_for_user(request: HtmxHttpRequest, job_id: int) -> jobs.models.BackgroundJob:
    job = jobs.jobs_for_user(request.user).filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    return job


@require_GET
def job_detail(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    report = None
    if job.status == job.Status.DONE and job.kind == job.Kind.REPORT and job.result:
        report = jobs.report_from_result(request.user, job.result)
    # The finished report is ordered, narrowed to what a count counts and downloaded as on the report page.
    labels = ((job.result or {}).get("labels") or [spec.text for spec in report.specs]) if report else []
    shown = lab.report_shown_context(request.GET, report, labels)
    if isinstance(shown, HttpResponse):
        return shown
    context = {
        **shown,
        # The list's filters the report ran with (kept in its arguments; a job enqueued before they were has none).
        "list_query": urlencode([tuple(pair) for pair in job.params["filters"]])
        if job.kind == job.Kind.REPORT and "filters" in job.params else None,
        "job": job,
        "report": report,
        "preset_counters": any(job.params.get("counters") or []),
        "session_limit": services.REPORT_SESSION_LIMIT,
        "message_limit": services.REPORT_MESSAGE_LIMIT,
    }
    template_name = "agents/job.html"
    if request.htmx:
        # The report's own links (order, show) swap the report; the status poll swaps the status.
        template_name = ("agents/lab_report.html#report-result" if request.htmx.target == "report-result"
                         else template_name + "#job-status")
    return render(request, template_name, context)


@require_GET
def job_download(request: HtmxHttpRequest, job_id: int) -> FileResponse:
    """The file a finished export job wrote, for its owner only."""
    job = _job_for_user(request, job_id)
    path = jobs.job_dir() / job.file_name if job.file_name else None
    if job.status != job.Status.DONE or path is None or not path.exists():
        raise Http404("This export's file is not there (not finished, or expired).")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=job.download_name or job.file_name)
