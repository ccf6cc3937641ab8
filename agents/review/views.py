"""QA review pages: annotations and review status on the session page, and the review queue.

Each view reads the form, calls one function of ``review.pages`` (which loads through the user's scope, 404 outside
it, and leaves the role check to the ``review`` services, 403 for a member whose role does not allow the action),
and renders its answer: without htmx each POST redirects back (POST-redirect-GET); with htmx it answers the region
it changed.
"""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.http import HtmxHttpRequest
from agents.review import pages


def _respond(request: HtmxHttpRequest, answer: pages.ReviewAnswer) -> HttpResponse:
    """A review form's answer: the next session of the queue; without htmx, back to the session page or the error
    as a page; with htmx, the review panel (errors too: 200, as every form here answers, since htmx swaps no 4xx),
    and the message's annotations out of band when they changed."""
    if answer.next_url:
        return redirect(answer.next_url)
    if not request.htmx:
        if answer.error:
            return render(request, "agents/review_error.html", {"session": answer.session, "error": answer.error})
        return redirect(answer.address)
    context = answer.context
    response = render(request, "agents/session_detail.html#review-panel", context)
    if answer.seq is not None:
        annotations = context["annotations_by_seq"].get(answer.seq, [])
        oob = render(request, "agents/session_detail.html#message-annotations",
                     {**context, "seq": answer.seq, "seq_annotations": annotations, "oob": True})
        response.content += oob.content
    return response


@require_POST
def annotation_create(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    return _respond(request, pages.annotation_added(user=request.user, session_id=session_id, data=request.POST,
                                                    fragment=bool(request.htmx)))


@require_POST
def annotation_update(request: HtmxHttpRequest, session_id: int, annotation_id: int) -> HttpResponse:
    return _respond(request, pages.annotation_changed(user=request.user, session_id=session_id,
                                                      annotation_id=annotation_id, data=request.POST,
                                                      fragment=bool(request.htmx)))


@require_POST
def annotation_delete(request: HtmxHttpRequest, session_id: int, annotation_id: int) -> HttpResponse:
    return _respond(request, pages.annotation_removed(user=request.user, session_id=session_id,
                                                      annotation_id=annotation_id, data=request.POST,
                                                      fragment=bool(request.htmx)))


@require_POST
def session_review(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Review status and assignee from the panel; from the queue ("Done, next"), then the next session."""
    return _respond(request, pages.session_review_set(user=request.user, session_id=session_id, data=request.POST,
                                                      fragment=bool(request.htmx)))


@require_GET
def review_next(request: HtmxHttpRequest) -> HttpResponse:
    """The review queue: the next unreviewed session within the list's filters (``after``: the one just seen),
    opened with the queue bar; the list with a word when none is left, or with the filter's error when one is
    invalid (the queue never widens past the filters asked for)."""
    return redirect(pages.review_next_address(user=request.user, query=request.GET))
