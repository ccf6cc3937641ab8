"""A background job's page: its progress over htmx (polled until it ends), and its result when done."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from agents.http import HtmxHttpRequest
from agents.jobs import queue
from agents.lab import reports


@require_GET
def job_detail(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(queue.jobs_for_user(request.user), pk=job_id)
    report = None
    if job.status == job.Status.DONE and job.kind == job.Kind.REPORT and job.result:
        report = queue.report_from_result(request.user, job.result)
    # The finished report is ordered, narrowed to what a count counts and downloaded as on the report page.
    labels = ((job.result or {}).get("labels") or [spec.text for spec in report.specs]) if report else []
    shown = reports.report_shown_context(request.GET, report, labels)
    if isinstance(shown, HttpResponse):
        return shown
    context = {
        **shown,
        # The list's filters the report ran with (kept in its arguments; a job enqueued before they were has none).
        "list_query": urlencode([tuple(pair) for pair in job.params["filters"]])
        if job.kind == job.Kind.REPORT and "filters" in job.params else None,
        "job": job,
        "preset_counters": any(job.params.get("counters") or []),
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
    job = get_object_or_404(queue.jobs_for_user(request.user), pk=job_id)
    path = queue.job_dir() / job.file_name if job.file_name else None
    if job.status != job.Status.DONE or path is None or not path.exists():
        raise Http404("This export's file is not there (not finished, or expired).")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=job.download_name or job.file_name)
