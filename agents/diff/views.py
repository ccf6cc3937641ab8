"""The diff pages: two sessions side by side, or a session against a trimmed view of it (logic in agents.diff.diffs)."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from agents import access
from agents.diff import diffs
from agents.http import HtmxHttpRequest
from agents.lab import presets
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import STRATEGIES, StrategyError
from agents.throttling import expensive


@require_GET
@expensive
def session_diff(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """``?with=ID``: this session (A) against another (B); ``?trim=SPEC``: against its trimmed view. Without
    either, or with a wrong one, the page offers the choices."""
    session = access.session_for_user(request.user, session_id)
    other, spec_text = request.GET.get("with", "").strip(), request.GET.get("trim", "").strip()
    # counter=: what the trimmed view counts with (the lab's, when it counts again), else the preset's or the
    # session's stored counts.
    counter = request.GET.get("counter", "").strip() if spec_text else ""
    context: dict[str, object] = {"session": session, "with": other, "trim": spec_text, "strategies": STRATEGIES}
    found = None
    try:
        if other:
            found = diffs.session_diff(left=session, right=access.session_for_user(request.user, _id(other)))
        elif spec_text:
            # trim=preset:NAME: a preset of the session's project.
            spec, preset = presets.spec_or_preset(user=None, text=spec_text, project=session.agent.project)
            if counter and counter not in COUNTERS:
                raise StrategyError(f"counter: unknown counter '{counter}'; valid: {', '.join(sorted(COUNTERS))}")
            found = diffs.session_diff_trimmed(session=session, spec=spec,
                                               counter=presets.trim_counter(preset, counter or None))
    except (StrategyError, presets.PresetError) as exc:
        context["error"] = f"trim={spec_text}: {exc}"
    if found is None:
        context["candidates"] = diffs.diff_candidates(user=request.user, session=session)
        return render(request, "agents/session_diff.html", context)  # an invalid trim= is shown on the form (200)
    query = urlencode({"with": other} if other else {"trim": spec_text, **({"counter": counter} if counter else {})})
    page = diffs.diff_page(found, query=query, page=request.GET.get("page"), rows=request.GET.get("rows"))
    context.update(found=found, page=page, query=query, counts=found.diff.counts(), labels=diffs.LABELS[found.trimmed])
    template_name = "agents/session_diff.html"
    if request.htmx:
        template_name += "#diff-rows"
    return render(request, template_name, context)


def _id(text: str) -> int:
    if not text.isdigit():
        raise Http404(f"with={text}: no such session")
    return int(text)


@require_GET
def session_compare(request: HtmxHttpRequest) -> HttpResponse:
    """The list's "Compare" button: two checked sessions open their diff, the one stored first as A (the list
    shows the newest first, so its order would put the later run on the left); any other number says so."""
    ids = sorted(int(i) for i in request.GET.getlist("session") if i.isdigit())
    if len(ids) != 2:
        return render(request, "agents/compare_choose.html", {"count": len(ids)})
    return redirect(reverse("agents:session_diff", args=[ids[0]]) + "?" + urlencode({"with": ids[1]}))
