"""QA review pages: the members and labels sections of the project settings page, annotations and review status
on the session page, and the review queue.

Every view loads through the user's scope (404 outside it) and leaves the role check to the ``review`` services
(403 for a member whose role does not allow the action). Without htmx each POST redirects back (POST-redirect-GET);
with htmx it answers the region it changed.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents import access, models
from agents.http import HtmxHttpRequest
from agents.projects import keys
from agents.review import annotating

# --- project settings: members and labels ---------------------------------------------------------------------


def _project(request: HtmxHttpRequest, slug: str) -> models.Project:
    return get_object_or_404(access.user_projects(request.user).distinct(), slug=slug)


def _membership(project: models.Project, membership_id: int) -> models.Membership:
    return get_object_or_404(models.Membership.objects.select_related("project"), project=project, pk=membership_id)


def _settings_region(request: HtmxHttpRequest, project: models.Project, region: str, error: str = "") -> HttpResponse:
    """The changed region for htmx. Without htmx: back to the settings page, or the whole page with the error
    next to the form (200)."""
    if not request.htmx and not error:
        return redirect(reverse("agents:project_settings", args=[project.slug]) + f"#{region}")
    context: dict[str, Any] = {"project": project, f"{region}_error": error, **annotating.settings_context(project)}
    template = "agents/project_settings.html"
    if request.htmx:
        template += f"#{region}"
    else:
        # The rest of the page (the API keys) as its own view shows it; only an admin gets this far.
        context |= {"keys": keys.api_keys_for_admin(request.user, project),
                    "endpoint": request.build_absolute_uri("/otlp")}
    # 200 with the error beside the form, like every form: htmx swaps no 4xx answer (and under DEBUG django-htmx's
    # script replaces the whole document with one).
    return render(request, template, context)


@require_POST
def member_add(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    try:
        annotating.member_add(user=request.user, project=project, username=request.POST.get("username", ""),
                              role=request.POST.get("role", ""))
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def member_role(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = _project(request, slug)
    membership = _membership(project, membership_id)
    try:
        annotating.member_set_role(user=request.user, membership=membership, role=request.POST.get("role", ""))
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def member_remove(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = _project(request, slug)
    membership = _membership(project, membership_id)
    try:
        annotating.member_remove(user=request.user, membership=membership)
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def label_create(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    try:
        annotating.label_create(user=request.user, project=project, name=request.POST.get("name", ""),
                                color=request.POST.get("color", annotating.LABEL_COLORS[-1]))
    except ValueError as exc:
        return _settings_region(request, project, "labels", str(exc))
    return _settings_region(request, project, "labels")


@require_POST
def label_update(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    project = _project(request, slug)
    label = get_object_or_404(models.Label.objects.select_related("project"), project=project, pk=label_id)
    try:
        annotating.label_update(user=request.user, label=label, name=request.POST.get("name", ""),
                                color=request.POST.get("color", label.color))
    except ValueError as exc:
        return _settings_region(request, project, "labels", str(exc))
    return _settings_region(request, project, "labels")


@require_POST
def label_delete(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    project = _project(request, slug)
    label = get_object_or_404(models.Label.objects.select_related("project"), project=project, pk=label_id)
    annotating.label_delete(user=request.user, label=label)
    return _settings_region(request, project, "labels")


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
            params["queue"] = annotating.queue_query(queue_view)
        target = (f"?{urlencode(params)}" if params else "") + (f"#m-{seq}" if seq is not None else anchor)
        return redirect(session.get_absolute_url() + target)
    context = annotating.session_review_context(request.user, session, first_seq=seq, last_seq=seq)
    context |= {"session": session, "review_error": error, "queue": annotating.queue_state(request.user, queue_view)}
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
        annotating.session_review_update(user=request.user, session=session, **changes)
    except ValueError as exc:
        return _session_region(request, session, error=str(exc))
    if "queue" in request.POST:
        return redirect(_next_url(request.POST["queue"], after=session.pk))
    return _session_region(request, session)


def _next_url(query: str, *, after: int | None = None) -> str:
    query = annotating.queue_query(query)
    parts = [query] if query else []
    if after is not None:
        parts.append(f"after={after}")
    return reverse("agents:review_next") + ("?" + "&".join(parts) if parts else "")


@require_GET
def review_next(request: HtmxHttpRequest) -> HttpResponse:
    """The review queue: the next unreviewed session within the list's filters (``after``: the one just seen),
    opened with the queue bar; the list with a word when none is left, or with the filter's error when one is
    invalid (the queue never widens past the filters asked for)."""
    query = annotating.queue_query(request.GET.urlencode())
    if annotating.queue_refusal(request.user, query):
        return redirect(reverse("agents:session_list") + "?" + f"{query}&queue=invalid")
    after = request.GET.get("after", "")
    session = annotating.queue_next(request.user, annotating.queue_filters(request.user, query),
                                    after=int(after) if after.isdigit() else None)
    if session is None:
        return redirect(reverse("agents:session_list") + "?" + (f"{query}&" if query else "") + "queue=empty")
    return redirect(session.get_absolute_url() + "?" + urlencode({"queue": query}))
