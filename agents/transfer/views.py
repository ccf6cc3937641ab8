"""Import (upload page with a preview before saving) and export (downloads of a session or of the filtered list).

Each view reads its input, calls one function (``import_page`` for the import, ``pages.export_request`` for an
export) and renders or streams what it returns. The upload waits in ``agents.transfer.uploads`` between preview and
confirm; both steps are POST forms with CSRF. Exports stream with bounded memory and leave an ExportRecord; the
export log page shows what each export had to drop.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.throttling import expensive
from agents.transfer import exports, import_page, pages

# --- import ---------------------------------------------------------------------------------------------------

_IMPORT_TEMPLATES = {"form": "agents/import.html", "preview": "agents/import_preview.html",
                     "report": "agents/import_report.html"}


def _import_response(request: HttpRequest, shown: import_page.ImportPage) -> HttpResponse:
    if shown.job is not None:
        return redirect(shown.job)
    return render(request, _IMPORT_TEMPLATES[shown.page], shown.context)


@require_http_methods(["GET", "POST"])
@expensive(methods=("POST",))
def import_upload(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: keep the upload under a token and show what would be imported."""
    if request.method == "GET":
        return _import_response(request, import_page.import_form_page(user=request.user,
                                                                      project=request.GET.get("project")))
    return _import_response(request, import_page.import_previewed(user=request.user, data=request.POST,
                                                                  files=request.FILES))


@require_POST
@expensive
def import_confirm(request: HttpRequest) -> HttpResponse:
    """Import the upload previewed under this token, in one transaction, and show the report."""
    return _import_response(request, import_page.import_confirmed(user=request.user, data=request.POST))


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
    return pages.export_download(answer)
