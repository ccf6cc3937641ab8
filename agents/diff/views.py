"""The diff pages: two sessions side by side, or a session against a trimmed view of it (logic in agents.diff.diffs)."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from agents.diff import diffs
from agents.http import HtmxHttpRequest
from agents.throttling import expensive


@require_GET
@expensive
def session_diff(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """``?with=ID``: this session (A) against another (B); ``?trim=SPEC``: against its trimmed view. Without
    either, or with a wrong one, the page offers the choices."""
    context = diffs.session_diff_page(user=request.user, session_id=session_id, query=request.GET)
    template_name = "agents/session_diff.html"
    if request.htmx and "found" in context:
        template_name += "#diff-rows"
    return render(request, template_name, context)


@require_GET
def session_compare(request: HtmxHttpRequest) -> HttpResponse:
    """The list's "Compare" button: two checked sessions open their diff, the one stored first as A (the list
    shows the newest first, so its order would put the later run on the left); any other number says so."""
    ids = sorted(int(i) for i in request.GET.getlist("session") if i.isdigit())
    if len(ids) != 2:
        return render(request, "agents/compare_choose.html", {"count": len(ids)})
    return redirect(reverse("agents:session_diff", args=[ids[0]]) + "?" + urlencode({"with": ids[1]}))
