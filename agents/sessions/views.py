from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, push_url

from agents import access, models
from agents.capture import calls
from agents.http import HtmxHttpRequest, int_or_none
from agents.review import workflow
from agents.sessions import agents as sessions_agents
from agents.sessions import find, pages
from agents.sessions.agents import AgentForm
from agents.store import listing, recount, writing
from agents.store.filters import SessionFilterForm

SESSIONS_PER_PAGE = 50


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    form = SessionFilterForm(request.GET or None, user=request.user)
    form.is_valid()  # invalid fields are dropped from the filters and shown with their error
    if form.cleared and not request.htmx:
        return redirect(_list_url_without(request, form.cleared))
    sessions = listing.sessions_filtered(request.user, form.filters()).select_related("assignee")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    workflow.attach_labels(page.object_list)
    query = request.GET.copy()
    for name in ["page", "queue", *form.cleared]:
        query.pop(name, None)
    sort_query = query.copy()
    sort_query.pop("sort", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "sort_prefix": f"?{sort_query.urlencode()}&" if sort_query else "?",
        "sort": form.filters().sort,
        # Asked by the template only when the list is empty.
        "has_projects": access.user_projects(request.user).exists,
        # Opened from a search, a session lands on its first hit.
        "hit_query": urlencode({"q": form.filters().q}) if form.filters().q else "",
        "queue_empty": request.GET.get("queue") == "empty",
        # From /review/next/ with an invalid filter: the queue did not open, for the error the form shows.
        "queue_refused": request.GET.get("queue") == "invalid" and (form.refusal() or "a filter is not valid"),
    }
    template_name = "agents/session_list.html"
    if request.htmx:
        # The table alone: the filter form and its tool suggestions are not part of it.
        template_name += "#session-table"
    else:
        context["tool_names"] = listing.tool_names_for_user(request.user)
        context |= workflow.list_choices(request.user)
    response = render(request, template_name, context)
    if form.cleared and request.htmx:
        # The URL htmx pushes is the request's; push the one the table shows instead.
        push_url(response, _list_url_without(request, form.cleared))
    return response


def _list_url_without(request: HtmxHttpRequest, names: Iterable[str]) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return f"{request.path}?{query.urlencode()}" if query else request.path


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
    session = access.session_for_user(request.user, session_id)
    kind = request.GET.get("kind", "")
    if kind not in find.JUMPS:
        raise BadRequest(f"kind: {kind!r} is not something to jump to; valid: {', '.join(find.JUMPS)}")
    forward = request.GET.get("dir", "next") != "prev"
    start = int_or_none(request.GET.get("from"))
    if start is None:
        start = -1 if forward else session.message_count
    within = find.ChainFilter.from_query(request.GET.get("role"), request.GET.get("tool"))
    target = find.jump_target(session, kind, from_seq=start, forward=forward, within=within)
    keep = {**({"q": q} if (q := find.clean_query(request.GET.get("q"))) else {}), **within.query()}
    if target is None:
        here = min(max(start, 0), max(session.message_count - 1, 0))
        query = urlencode({**keep, "at": here, "none": f"{kind}-{'next' if forward else 'prev'}"})
        return redirect(f"{session.get_absolute_url()}?{query}#m-{here}")
    return redirect(f"{session.get_absolute_url()}?{urlencode({**keep, 'at': target})}#m-{target}")



@require_POST
def session_recount(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Count the session's stored messages again with another counter and store the counts (POST-redirect-GET)."""
    session = access.session_for_user(request.user, session_id)
    if not access.editable_projects(request.user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("Counting a session again needs the editor or admin role in its project.")
    try:
        recount.session_recount(session=session, counter=request.POST.get("counter", ""), user=request.user)
    except recount.RecountError as exc:
        raise BadRequest(str(exc)) from None
    return redirect(f"{session.get_absolute_url()}?recounted=1")


@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Delete a session (editors and admins of its project): GET asks to confirm, saying what goes with it; POST
    deletes and opens the list. Someone outside the project gets 404, a viewer or annotator 403 (the role check is
    ``writing.session_delete``'s, asked first on GET too)."""
    session = access.session_for_user(request.user, session_id)
    if request.method == "POST":
        name = session.title or session.external_id or f"#{session.pk}"
        writing.session_delete(user=request.user, session=session)
        flash.success(request, f"Deleted the session {name!r} and its {session.message_count:,} messages.")
        to = f"{reverse('agents:session_list')}?agent={session.agent_id}"
        return HttpResponseClientRedirect(to) if request.htmx else redirect(to)
    access.require_role(request.user, session.agent.project, "edit")
    context = {"session": session, "annotation_count": session.annotations.count()}
    return render(request, "agents/session_delete.html", context)


@require_GET
def llm_call(request: HtmxHttpRequest, session_id: int, call_id: int) -> HttpResponse:
    """Exactly what one captured call was sent, in its order, with the violations of that list."""
    session, call = calls.llm_call_for_user(request.user, session_id, call_id)
    sent = calls.llm_call_sent_messages(call)
    by_position: dict[int, list[dict[str, Any]]] = {}
    for violation in call.sent_violations:
        by_position.setdefault(violation.get("index", -1), []).append(violation)
    rows = []
    previous = -1
    for position, row in enumerate(sent):
        gap = row.seq - previous - 1 if row.seq > previous else 0
        rows.append({"row": row, "position": position, "gap": gap, "violations": by_position.get(position, []),
                     "permalink": find.permalink(session, row.seq), "text": pages.display_text(row)[0],
                     "calls": [pages.call_view(tc) for tc in row.tool_calls]})
        previous = max(previous, row.seq)
    before = call.reply_seq if call.reply_seq is not None else session.message_count
    context = {"session": session, "call": call, "rows": rows, "received": len(set(call.sent)), "before": before,
               "left_out": max(before - len(set(call.sent)), 0),
               "reply_href": find.permalink(session, call.reply_seq) if call.reply_seq is not None else ""}
    return render(request, "agents/llm_call.html", context)


@require_http_methods(["GET", "POST"])
def agent_detail(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """An agent: what it is and how many sessions it has; its project's editors change its name, description,
    model and context window here (viewers see them read-only)."""
    agent = access.agent_for_user(request.user, agent_id)
    can_edit = access.agent_editable(request.user, agent)
    form = AgentForm(initial=AgentForm.initial_for(agent)) if can_edit else None
    saved = False
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Changing an agent needs the editor or admin role in its project.")
        form = AgentForm(request.POST)
        if form.is_valid():
            sessions_agents.agent_update(agent=agent, user=request.user, changes=form.cleaned_data)
            if not request.htmx:
                flash.success(request, "Saved.")
                return redirect(agent)
            saved = True
    context = {
        "agent": agent,
        "form": form,
        "can_edit": can_edit,
        "saved": saved,
        "session_count": agent.sessions.filter(state=models.Session.State.READY).count(),
        "agent_sessions_url": f"{reverse('agents:session_list')}?project={agent.project.slug}&agent={agent.pk}",
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
