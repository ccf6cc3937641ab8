"""The session pages: the list, a session (its jumps, recount and delete), one captured call, an agent. Each view
reads its input, calls one function that decides what the page shows (``list_page``, ``pages``, ``actions``,
``call_page``, ``agents``), and renders it."""
from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, push_url

from agents.http import HtmxHttpRequest, int_or_none
from agents.sessions import actions, call_page, list_page, pages
from agents.sessions import agents as sessions_agents
from agents.store import recount


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    shown = list_page.session_list_page(user=request.user, query=request.GET, path=request.path,
                                        fragment=bool(request.htmx))
    if shown.address and not request.htmx:
        return redirect(shown.address)
    template_name = "agents/session_list.html"
    if request.htmx:
        # The table alone: the filter form and its tool suggestions are not part of it.
        template_name += "#session-table"
    response = render(request, template_name, shown.context)
    if shown.address:
        # The URL htmx pushes is the request's; push the one the table shows instead.
        push_url(response, shown.address)
    return response


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    get = request.GET
    shown = pages.session_page(
        user=request.user, session_id=session_id, after=int_or_none(get.get("after")),
        at=int_or_none(get.get("at")), q=get.get("q"), fragment=bool(request.htmx),
        start=int_or_none(get.get("start")) if request.htmx else None, none=get.get("none", ""),
        annotate=int_or_none(get.get("annotate")), queue=get.get("queue"), recounted=get.get("recounted") == "1",
        role=get.get("role"), tool=get.get("tool"),
    )
    if shown.redirect:
        return redirect(shown.redirect)
    template_name = "agents/session_detail.html"
    if not request.htmx:
        return render(request, template_name, shown.context)
    if get.get("live"):
        return render(request, template_name + "#live-tail", shown.context)
    if get.get("earlier"):
        # "Load earlier": this page goes in front of the one on screen; the place (the address) stays.
        return render(request, template_name + "#earlier-page", shown.context)
    response = render(request, template_name + "#message-page", shown.context)
    if shown.address:
        push_url(response, shown.address)
    return response


@require_GET
def session_jump(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """The next (``dir=next``) or previous tool error, violation or user message from message ``from``: one query
    resolves it to a seq, then the page holding it opens there (the search, if any, kept). With none that way, the
    page stays where it was and says so."""
    return redirect(actions.session_jump_target(user=request.user, session_id=session_id, query=request.GET))


@require_POST
def session_recount(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Count the session's stored messages again with another counter and store the counts (POST-redirect-GET)."""
    try:
        session = actions.session_recount_asked(user=request.user, session_id=session_id,
                                                counter=request.POST.get("counter", ""))
    except recount.RecountError as exc:
        raise BadRequest(str(exc)) from None
    return redirect(f"{session.get_absolute_url()}?recounted=1")


@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Delete a session (editors and admins of its project): GET asks to confirm, saying what goes with it; POST
    deletes and opens the list. Someone outside the project gets 404, a viewer or annotator 403 (the role check is
    ``writing.session_delete``'s, asked first on GET too)."""
    if request.method == "POST":
        deleted = actions.session_delete_confirmed(user=request.user, session_id=session_id)
        flash.success(request, deleted.said)
        return HttpResponseClientRedirect(deleted.list_url) if request.htmx else redirect(deleted.list_url)
    context = actions.session_delete_page(user=request.user, session_id=session_id)
    return render(request, "agents/session_delete.html", context)


@require_GET
def llm_call(request: HtmxHttpRequest, session_id: int, call_id: int) -> HttpResponse:
    """Exactly what one captured call was sent, in its order, with the violations of that list."""
    context = call_page.llm_call_page(user=request.user, session_id=session_id, call_id=call_id)
    return render(request, "agents/llm_call.html", context)


@require_http_methods(["GET", "POST"])
def agent_detail(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """An agent: what it is and how many sessions it has; its project's editors change its name, description,
    model and context window here (viewers see them read-only)."""
    shown = sessions_agents.agent_page(user=request.user, agent_id=agent_id,
                                       data=request.POST if request.method == "POST" else None)
    if shown.refused:
        raise PermissionDenied("Changing an agent needs the editor or admin role in its project.")
    if shown.saved and not request.htmx:
        flash.success(request, "Saved.")
        return redirect(shown.agent)
    context = {
        "agent": shown.agent,
        "form": shown.form,
        "can_edit": shown.can_edit,
        "saved": shown.saved,
        "session_count": shown.session_count,
        "memory_stores": shown.memory_stores,
        "agent_sessions_url": f"{reverse('agents:session_list')}?project={shown.agent.project.slug}"
                              f"&agent={shown.agent.pk}",
    }
    template_name = "agents/agent_detail.html"
    if request.htmx:
        template_name += "#agent-card"
    return render(request, template_name, context)


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico before (or without) reading the page's <link rel="icon">, logged in or not. The
    static URL is read per request: with the manifest storage it exists only after collectstatic."""
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))
