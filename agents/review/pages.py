"""What the review's forms on the session page answer, each decided in one call from its view: an annotation added,
changed or removed, a review status or assignee set; and where the review queue goes next.

Without htmx, a form goes back to the session page at the message it changed (POST-redirect-GET), or shows its
error on a page of its own; with htmx, it answers the review panel again (and the message's annotations, out of
band). Working through the queue, the page keeps its queue bar (the forms carry the list's query as
``queue_view``)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from agents import access, models
from agents.review import annotating, workflow


@dataclass
class ReviewAnswer:
    session: models.Session
    error: str = ""
    seq: int | None = None  # the message whose annotations changed (None: the session's own, or none)
    address: str = ""  # without htmx: where the session page opens again ("" with an error)
    context: dict[str, Any] = field(default_factory=dict)  # with htmx: the review panel's
    next_url: str = ""  # "Done, next" from the queue: the next session's


def _answer(user: access.User, session: models.Session, data: Any, *, fragment: bool, error: str = "",
            seq: int | None = None, anchor: str = "#review") -> ReviewAnswer:
    """What a review form answers once its change is made (or refused with ``error``)."""
    queue_view = data.get("queue_view")
    if not fragment:
        if error:
            return ReviewAnswer(session, error=error)
        params: dict[str, Any] = {"at": seq} if seq is not None else {}
        if queue_view is not None:
            params["queue"] = workflow.queue_query(queue_view)
        target = (f"?{urlencode(params)}" if params else "") + (f"#m-{seq}" if seq is not None else anchor)
        return ReviewAnswer(session, seq=seq, address=session.get_absolute_url() + target)
    context = workflow.session_review_context(user, session, first_seq=seq, last_seq=seq)
    context |= {"session": session, "review_error": error, "queue": workflow.queue_state(user, queue_view)}
    return ReviewAnswer(session, error=error, seq=seq, context=context)


def _seq(value: str | None) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"seq: {value[:20]!r} is not a message number")
    return int(value)


def _changed(user: access.User, session: models.Session, data: Any, change: Callable[[], int | None], *,
             fragment: bool) -> ReviewAnswer:
    """Make ``change`` (which refuses with ValueError, and gives the message whose annotations it changed), then
    answer."""
    error, seq = "", None
    try:
        seq = change()
    except ValueError as exc:
        error = str(exc)
    return _answer(user, session, data, fragment=fragment, error=error, seq=seq)


def annotation_added(*, user: access.User, session_id: int, data: Any, fragment: bool) -> ReviewAnswer:
    """``data`` (the form): ``seq`` (empty: the whole session), ``label``, ``comment``."""
    session = access.session_for_user(user, session_id)

    def add() -> int | None:
        seq = _seq(data.get("seq"))
        annotating.annotation_create(user=user, session=session, seq=seq, label=data.get("label") or None,
                                     comment=data.get("comment", ""))
        return seq

    return _changed(user, session, data, add, fragment=fragment)


def annotation_changed(*, user: access.User, session_id: int, annotation_id: int, data: Any,
                       fragment: bool) -> ReviewAnswer:
    session, annotation = annotating.annotation_for_user(user, session_id, annotation_id)

    def change() -> int | None:
        annotating.annotation_update(user=user, annotation=annotation, label=data.get("label") or None,
                                     comment=data.get("comment", ""))
        return annotation.message.seq if annotation.message else None

    return _changed(user, session, data, change, fragment=fragment)


def annotation_removed(*, user: access.User, session_id: int, annotation_id: int, data: Any,
                       fragment: bool) -> ReviewAnswer:
    session, annotation = annotating.annotation_for_user(user, session_id, annotation_id)
    seq = annotation.message.seq if annotation.message else None
    annotating.annotation_delete(user=user, annotation=annotation)
    return _answer(user, session, data, fragment=fragment, seq=seq)


def session_review_set(*, user: access.User, session_id: int, data: Any, fragment: bool) -> ReviewAnswer:
    """Review status and assignee from the panel (``review_status``, ``assignee``: empty for nobody); from the
    queue ("Done, next": ``queue``), the next session of the queue after this one."""
    session = access.session_for_user(user, session_id)
    changes: dict[str, Any] = {}
    if "review_status" in data:
        changes["review_status"] = data["review_status"]
    if "assignee" in data:
        changes["assignee"] = data["assignee"] or None
    try:
        workflow.session_review_update(user=user, session=session, **changes)
    except ValueError as exc:
        return _answer(user, session, data, fragment=fragment, error=str(exc))
    if "queue" in data:
        return ReviewAnswer(session, next_url=_next_url(data["queue"], after=session.pk))
    return _answer(user, session, data, fragment=fragment)


def _next_url(query: str, *, after: int | None = None) -> str:
    query = workflow.queue_query(query)
    parts = [query] if query else []
    if after is not None:
        parts.append(f"after={after}")
    return reverse("agents:review_next") + ("?" + "&".join(parts) if parts else "")


def review_next_address(*, user: access.User, query: Any) -> str:
    """The review queue: the next unreviewed session within the list's filters in ``query`` (``after``: the one
    just seen), opened with the queue bar; the list with a word when none is left, or with the filter's error when
    one is invalid (the queue never widens past the filters asked for)."""
    kept = workflow.queue_query(query.urlencode())
    if workflow.queue_refusal(user, kept):
        return reverse("agents:session_list") + "?" + f"{kept}&queue=invalid"
    after = query.get("after", "")
    session = workflow.queue_next(user, workflow.queue_filters(user, kept),
                                  after=int(after) if after.isdigit() else None)
    if session is None:
        return reverse("agents:session_list") + "?" + (f"{kept}&" if kept else "") + "queue=empty"
    return session.get_absolute_url() + "?" + urlencode({"queue": kept})


# --- what the API's review endpoints answer ------------------------------------------------------------------------


def session_review_changed(*, user: access.User, session_id: int, changes: dict[str, Any]) -> models.Session:
    """The session (404 outside the user's projects) with its ``review_status`` and/or ``assignee`` set (a role that
    may not: PermissionDenied; a wrong value: ValueError naming the field)."""
    session = access.session_for_user(user, session_id)
    workflow.session_review_update(user=user, session=session, **changes)
    return session


def session_annotations_listed(*, user: access.User, session_id: int) -> tuple[models.Session,
                                                                               list[models.Annotation]]:
    """The session's annotations (404 outside the user's projects): the session's own first, then by message."""
    session = access.session_for_user(user, session_id)
    return session, list(annotating.annotations_for_session(session))


def annotation_made(*, user: access.User, session_id: int, seq: int | None, label: str | None,
                    comment: str) -> models.Annotation:
    """A new annotation on message ``seq`` of the session (None: the whole session), read back as the list reads
    it."""
    session = access.session_for_user(user, session_id)
    annotation = annotating.annotation_create(user=user, session=session, seq=seq, label=label, comment=comment)
    return annotating.annotations_for_session(session).get(pk=annotation.pk)


def annotation_edited(*, user: access.User, session_id: int, annotation_id: int,
                      changes: dict[str, Any]) -> models.Annotation:
    """One of the user's annotations with its ``label`` and/or ``comment`` changed (its author only)."""
    _session, annotation = annotating.annotation_for_user(user, session_id, annotation_id)
    return annotating.annotation_update(user=user, annotation=annotation, **changes)


def annotation_dropped(*, user: access.User, session_id: int, annotation_id: int) -> None:
    """Delete an annotation: its author, or an admin of the project."""
    _session, annotation = annotating.annotation_for_user(user, session_id, annotation_id)
    annotating.annotation_delete(user=user, annotation=annotation)
