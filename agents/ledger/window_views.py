"""What filled the window, as pages: one reply's (or captured call's) input by part against the agent's window,
and how the parts grow over a session. Each serves a whole page, and over htmx the fragment the session page loads
when its "What filled the window" or "Window over the session" is opened (the session page itself reads nothing
for them). Their JSON twins: ``/api/sessions/<id>/context/`` and ``/api/sessions/<id>/context/growth/``."""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.http import HtmxHttpRequest
from agents.ledger import window_shown


@require_GET
def session_window(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """``?seq=N``: the reply at message N, as it was sent every message before it; ``?call=ID``: a captured call,
    as it was sent what it received. 400 saying why for a seq or call that names no reply."""
    shown = window_shown.window_page(user=request.user, session_id=session_id, seq=request.GET.get("seq"),
                                     call=request.GET.get("call"))
    template_name = "agents/window_bar.html" + ("#window-bar" if request.htmx else "")
    return render(request, template_name, shown.context, status=shown.status)


@require_GET
def session_window_growth(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """The parts at up to ``context.GROWTH_SAMPLES`` replies spread evenly over the session, as stacked areas."""
    context = window_shown.growth_page(user=request.user, session_id=session_id)
    template_name = "agents/window_growth.html" + ("#window-growth" if request.htmx else "")
    return render(request, template_name, context)
