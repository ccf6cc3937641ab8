"""A background job's page: its progress over htmx (polled until it ends), and its result when done."""
from __future__ import annotations

from django.http import FileResponse, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.http import HtmxHttpRequest
from agents.jobs import queue


@require_GET
def job_detail(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    shown = queue.job_page(user=request.user, job_id=job_id, query=request.GET)
    if isinstance(shown.shown, HttpResponse):
        return shown.shown  # the finished report, downloaded
    context = {**shown.shown, "job": shown.job}
    template_name = "agents/job.html"
    if request.htmx:
        # The report's own links (order, show) swap the report; the status poll swaps the status.
        template_name = ("agents/lab_report.html#report-result" if request.htmx.target == "report-result"
                         else template_name + "#job-status")
    return render(request, template_name, context)


@require_GET
def job_download(request: HtmxHttpRequest, job_id: int) -> FileResponse:
    """The file a finished export job wrote, for its owner only."""
    path, name = queue.job_file(user=request.user, job_id=job_id)
    return FileResponse(open(path, "rb"), as_attachment=True, filename=name)
