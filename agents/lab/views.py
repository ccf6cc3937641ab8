"""The trimming lab: one session under one strategy, strategies side by side, and strategies across sessions."""
from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect, push_url

from agents.http import HtmxHttpRequest, collector_paused, int_or_none
from agents.lab import compare, pages
from agents.throttling import expensive


def _site(request: HtmxHttpRequest) -> str:
    """The scheme and host that the lab's addresses to copy start with."""
    return request.build_absolute_uri("/").rstrip("/")


@require_http_methods(["GET", "POST"])
@expensive
@collector_paused
def session_lab(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """The lab; a POST saves its setting as a preset (the form posts to the lab's own address, so that a refused
    save answers the lab itself, its links intact, with the error beside the form). A refused save answers 200 (htmx
    swaps no 4xx answer, and under DEBUG django-htmx's script would replace the whole page with it): over htmx the
    form alone, without JS the whole lab."""
    if request.method == "POST":
        saved = pages.preset_save(user=request.user, session_id=session_id, data=request.POST,
                                  fragment=bool(request.htmx), site=_site(request))
        if saved.address:
            return HttpResponseClientRedirect(saved.address) if request.htmx else redirect(saved.address)
        if request.htmx:
            return render(request, "agents/_lab_elsewhere.html#preset-save", saved.form_context)
        context, replay_part = saved.lab_context, saved.replay_part
    else:
        # ?part=replay: the replay of a long session, asked for by its lab page once the preview is shown.
        replay_part = request.GET.get("part") == "replay"
        context = pages.lab_page(user=request.user, session_id=session_id, query=request.GET,
                                 step=int_or_none(request.GET.get("step")), site=_site(request),
                                 replay_part=replay_part)
    return _render_lab(request, context, replay_part=replay_part)


def _render_lab(request: HtmxHttpRequest, context: dict[str, Any], *, replay_part: bool) -> HttpResponse:
    if replay_part:
        if context["replay"] is None:  # no valid spec: the page says why; nothing to add
            return HttpResponse("")
        return render(request, "agents/_lab_replay.html", context)
    # Only the result is swapped on a parameter change: the field errors travel out of band.
    context["oob_errors"] = bool(request.htmx) and request.htmx.target != "lab-main"
    template_name = "agents/lab.html"
    if request.htmx:
        # The strategy select replaces the form and the result; any other change only the result. Invalid input
        # answers 200 with the errors like every form here (under DEBUG, django-htmx's script replaces the whole
        # document with a 400 answer to htmx).
        template_name += "#lab-main" if request.htmx.target == "lab-main" else "#lab-result"
    return render(request, template_name, context)


@require_GET
@expensive
@collector_paused
def session_lab_compare(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Two to four columns, each a strategy with its own parameter form (or a preset). The URL names the columns
    (``?s=buffered:buffer_size=3&s=preset:NAME``); a column's form (``c2``, ``c2-KEY``) and "add" answer with that
    URL: a redirect without htmx, the result and the URL pushed with htmx."""
    shown = compare.compare_page(user=request.user, session_id=session_id, query=request.GET, path=request.path,
                                 fragment=bool(request.htmx))
    if shown.redirect:
        return redirect(shown.redirect)
    template_name = "agents/lab_compare.html"
    if request.htmx:
        template_name += "#compare-result"
    response = render(request, template_name, shown.context)
    if shown.push:
        push_url(response, shown.push)
    return response


@require_GET
@expensive
def trimming_report(request: HtmxHttpRequest) -> HttpResponse:
    shown = pages.report_page(user=request.user, query=request.GET)
    if shown.job is not None:
        return HttpResponseClientRedirect(shown.job.get_absolute_url()) if request.htmx else redirect(shown.job)
    if shown.download is not None:
        return shown.download  # ?download=csv|json
    template_name = "agents/lab_report.html"
    if request.htmx:
        template_name += "#report-result"
    return render(request, template_name, shown.context)
