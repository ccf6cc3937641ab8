"""QA review pages: annotations and review status on the session page, and the review queue.

Every view loads through the user's scope (404 outside it) and leaves the role check to the ``review`` services
(403 for a member whose role does not allow the action). Without htmx each POST redirects back (POST-redirect-GET);
with htmx it answers the region it changed.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents import access, models
from agents.http import HtmxHttpRequest
from agents.review import annotating, workflow

# --- the session page: annotations and review status ----------------------------------------------------------


def _session_region(request: HtmxHttpRequest, session: models.Session, *, error: str = "", seq: int | None = None,
                    anchor: str = "#review") -> HttpResponse:
    """For htmx: the review panel again (and, when a message's annotations changed, that message's list, out of
    band). Without htmx: back to the session page at the message (POST-redirect-GET), or the error as a page."""
    # Working through the queue, the page keeps its queue bar (its form fields carry the list's query).
    queue_view = request.POST.get("queue_view")
    if not request.htmx:
        if error:
            return render(request, "agents/review_error.html", {"session": session, "error": error})
        params: dict[str, Any] = {"at": seq} if seq is not None else {}
        if queue_view is not None:
            params["queue"] = workflow.queue_query(queue_view)
        target = (f"?{urlencode(params)}" if params else "") + (f"#m-{seq}" if seq is not None else anchor)
        return redirect(session.get_absolute_url() + target)
    context = workflow.session_review_context(request.user, session, first_seq=seq, last_seq=seq)
    context |= {"session": session, "review_error": error, "queue": workflow.queue_state(request.user, queue_view)}
    response = render(request, "agents/session_detail.html#review-panel", context)  # errors too: see above
    if seq is not None:
        oob = render(request, "agents/session_detail.html#message-annotations",
                     {**context, "seq": seq, "seq_annotations": context["annotations_by_seq"].get(seq, []),
                      "oob": True})
        response.content += oob.content
    return response


def _seq(value: str | None) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"seq: {value[:20]!r} is not a message number")
    return int(value)


@require_POST
def annotation_create(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = access.session_for_user(request.user, session_id)
    seq = None
    try:
        seq = _seq(request.POST.get("seq"))
        annotating.annotation_create(user=request.user, session=session, seq=seq,
                                     label=request.POST.get("label") or None, comment=request.POST.get("comment", ""))
    except ValueError as exc:
        return _session_region(request, session, error=str(exc))
    return _session_region(request, session, seq=seq)


@require_POST
def annotation_update(request: HtmxHttpRequest, session_id: int, annotation_id: int) -> HttpResponse:
    session, annotation = annotating.annotation_for_user(request.user, session_id, annotation_id)
    seq = annotation.message.seq if annotation.message else None
    try:
        annotating.annotation_update(user=request.user, annotation=annotation, label=request.POST.get("label") or None,
                                     comment=request.POST.get("comment", ""))
    except ValueError as exc:
        return _session_region(request, session, error=str(exc))
    return _session_region(request, session, seq=seq)


@require_POST
def annotation_delete(request: HtmxHttpRequest, session_id: int, annotation_id: int) -> HttpResponse:
    session, annotation = annotating.annotation_for_user(request.user, session_id, annotation_id)
    seq = annotation.message.seq if annotation.message else None
    annotating.annotation_delete(user=request.user, annotation=annotation)
    return _session_region(request, session, seq=seq)


@require_POST
def session_review(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Review status and assignee from the panel; from the queue ("Done, next"), then the next session."""
    session = access.session_for_user(request.user, session_id)
    changes: dict[str, Any] = {}
    if "review_status" in request.POST:
        changes["review_status"] = request.POST["review_status"]
    if "assignee" in request.POST:
        changes["assignee"] = request.POST["assignee"] or None
    try:
        workflow.session_review_update(user=request.user, session=session, **changes)
    except ValueError as exc:
        return _session_region(request, session, error=str(exc))
    if "queue" in request.POST:
        return redirect(_next_url(request.POST["queue"], after=session.pk))
    return _session_region(request, session)


def _next_url(query: str, *, after: int | None = None) -> str:
    query = workflow.queue_query(query)
    parts = [query] if query else []
    if after is not None:
        parts.append(f"after={after}")
    return reverse("agents:review_next") + ("?" + "&".join(parts) if parts else "")


@require_GET
def review_next(request: HtmxHttpRequest) -> HttpResponse:
    """The review queue: the next unreviewed session within the list's filters (``after``: the one just seen),
    opened with the queue bar; the list with a word when none is left, or with the filter's error when one is
    invalid (the queue never widens past the filters asked for)."""
    query = workflow.queue_query(request.GET.urlencode())
    if workflow.queue_refusal(request.user, query):
        return redirect(reverse("agents:session_list") + "?" + f"{query}&queue=invalid")
    after = request.GET.get("after", "")
    session = workflow.queue_next(request.user, workflow.queue_filters(request.user, query),
                                  after=int(after) if after.isdigit() else None)
    if session is None:
        return redirect(reverse("agents:session_list") + "?" + (f"{query}&" if query else "") + "queue=empty")
    return redirect(session.get_absolute_url() + "?" + urlencode({"queue": query}))
