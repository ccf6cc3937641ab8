"""A background job's page: its progress over htmx (polled until it ends), and its result when done."""
from __future__ import annotations

from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from agents.http import HtmxHttpRequest
from agents.jobs import queue


@require_GET
def job_detail(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(queue.jobs_for_user(request.user), pk=job_id)
    # What its kind shows of a finished job (a report: ordered, narrowed and downloaded as on the report page).
    shown = queue.job_shown(request.user, job, request.GET)
    if isinstance(shown, HttpResponse):
        return shown
    context = {**shown, "job": job}
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
