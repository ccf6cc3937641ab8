"""A session's review status and assignee, the review queue (the next unreviewed session within the list's filters),
and what the session page's review panel and the session list show of them."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.db.models import Q
from django.http import QueryDict

from agents import access, models
from agents.access import User
from agents.projects.labels import labels_for_project
from agents.projects.members import members_for_project
from agents.review.annotating import UNSET, acting_author, annotations_for_session
from agents.store import listing
from agents.store.filters import SessionFilterForm

# --- review status and assignee -------------------------------------------------------------------------------


def _assignee(session: models.Session, username: str | None) -> Any:
    if username is None or username == "":
        return None
    membership = (
        models.Membership.objects.filter(project=session.agent.project_id, user__username=username)
        .select_related("user").first()
    )
    if membership is None:
        raise ValueError(f"assignee: {username!r} is not a member of project {session.agent.project.slug}")
    if not access.role_allows(membership.role, "annotate"):
        raise ValueError(f"assignee: {username} is a {membership.role} here and cannot review (annotator or more)")
    return membership.user


def session_review_update(
    *, user: User, session: models.Session, review_status: str | None = UNSET, assignee: str | None = UNSET
) -> models.Session:
    """Set the session's review status and/or assignee (a username of the project, or None for nobody)."""
    access.require_role(user, session.agent.project, "annotate")
    fields = []
    if review_status is not UNSET:
        if review_status not in models.ReviewStatus.values:
            raise ValueError(f"review_status: {str(review_status)[:20]!r} is not one of "
                             f"{', '.join(models.ReviewStatus.values)}")
        session.review_status = review_status
        fields.append("review_status")
    if assignee is not UNSET:
        session.assignee = _assignee(session, assignee)
        fields.append("assignee")
    if fields:
        session.save(update_fields=fields)
    return session


def assignable_members(project: models.Project) -> list[Any]:
    """The project's users who can review (annotator or more), for the assignee choice."""
    return [m.user for m in members_for_project(project).filter(role__in=access.ANNOTATE_ROLES)]


# --- the review queue -----------------------------------------------------------------------------------------

# How far down the list the queue looks for the session after the current one (ids only: one query).
QUEUE_WINDOW = 10_000


def queue_next(user: User, filters: listing.SessionFilters, *, after: int | None = None) -> models.Session | None:
    """The next unreviewed session of the list as the filters narrow and sort it: the first one after session
    ``after`` in the list's order (wrapping round to the start), or None when no other is unreviewed.

    Skipping a session (not marking it) moves past it; marking it done takes it out of the queue."""
    filters = dataclasses.replace(filters, review_status="")
    listed = listing.sessions_filtered(user, filters)
    unreviewed = Q(review_status=models.ReviewStatus.UNREVIEWED)
    in_queue = listed.filter(unreviewed | Q(pk=after) if after else unreviewed)
    ids = list(in_queue.values_list("pk", flat=True)[:QUEUE_WINDOW])
    if after in ids:
        position = ids.index(after)
        order = ids[position + 1:] + ids[:position]
    else:
        order = ids
    if not order:
        return None
    return access.sessions_for_user(user).get(pk=order[0])


def queue_remaining(user: User, filters: listing.SessionFilters) -> int:
    filters = dataclasses.replace(
        filters, review_status=models.ReviewStatus.UNREVIEWED, sort=listing.DEFAULT_SESSION_SORT
    )
    return listing.sessions_filtered(user, filters).count()


# --- what the session page shows ------------------------------------------------------------------------------

ANNOTATIONS_LISTED = 500


def session_review_context(user: User, session: models.Session, *, first_seq: int | None,
                           last_seq: int | None) -> dict[str, Any]:
    """The session page's review panel and the annotations of the messages on the page (``first_seq`` to
    ``last_seq``): five queries whatever the session's length or number of annotations."""
    project = session.agent.project
    role = access.project_role(user, project)
    can = access.role_permissions(role)
    listed = list(annotations_for_session(session)[: ANNOTATIONS_LISTED + 1])
    by_seq: dict[int, list[models.Annotation]] = {}
    if first_seq is not None and last_seq is not None:
        if len(listed) <= ANNOTATIONS_LISTED:
            on_page = [a for a in listed if a.message is not None and first_seq <= a.message.seq <= last_seq]
        else:
            on_page = list(annotations_for_session(session).filter(message__seq__gte=first_seq,
                                                                    message__seq__lte=last_seq))
        for annotation in on_page:
            if annotation.message is not None:
                by_seq.setdefault(annotation.message.seq, []).append(annotation)
    author, author_name = acting_author(user)
    for annotation in listed + [a for rows in by_seq.values() for a in rows]:
        # What the template offers on each: edit (the author's own) and delete (also a project admin's).
        mine = (annotation.author_id == author.pk) if author is not None else (
            bool(author_name) and annotation.author_name == author_name)
        annotation.mine = mine  # type: ignore[attr-defined]
        annotation.can_delete = mine or can["admin"]  # type: ignore[attr-defined]
    return {
        "role": role or "",
        "can": can,
        "labels": list(labels_for_project(project)) if can["annotate"] or listed else [],
        "annotations": listed[:ANNOTATIONS_LISTED],
        "annotations_more": len(listed) > ANNOTATIONS_LISTED,
        "annotations_by_seq": by_seq,
        "assignable": assignable_members(project) if can["annotate"] else [],
        "review_statuses": models.ReviewStatus.choices,
    }


def queue_filters(user: User, query: str) -> listing.SessionFilters:
    """The list's filters from its query string (what the queue carries from page to page)."""
    form = SessionFilterForm(QueryDict(query) or None, user=user)
    form.is_valid()  # as the list does: an invalid field is left out
    return form.filters()


def queue_refusal(user: User, query: str) -> str:
    """Why the queue does not open for the list's query string: its first invalid filter as ``field: why`` (another
    user's project, a status that is none), the error the list shows for it; "" when every filter holds. Left out,
    as the list leaves it out, it would widen the queue past what the person asked for."""
    form = SessionFilterForm(QueryDict(query) or None, user=user)
    for name, errors in (form.errors.items() if form.is_bound else ()):
        return f"{name}: {errors[0]}"
    return ""


def queue_query(query: str) -> str:
    """The list's query string as the queue keeps it: its filters and sort, not its page or queue state."""
    data = QueryDict(query, mutable=True)
    for key in ("page", "after", "queue"):
        data.pop(key, None)
    return data.urlencode()


def queue_state(user: User, query: str | None) -> dict[str, Any] | None:
    """The queue bar of a session page opened from the queue (``?queue=<the list's query>``), else None."""
    if query is None:
        return None
    query = queue_query(query)
    return {"query": query, "remaining": queue_remaining(user, queue_filters(user, query))}


# --- what the session list shows ------------------------------------------------------------------------------


def attach_labels(sessions: Iterable[models.Session]) -> None:
    """Set ``review_labels`` (distinct labels, by name) on each session of a list page: one query."""
    ids = [s.pk for s in sessions]
    found: dict[int, dict[str, str]] = {}
    if ids:
        rows = (models.Annotation.objects.filter(session__in=ids, label__isnull=False)
                .values_list("session_id", "label__name", "label__color").distinct())
        for session_id, name, color in rows:
            found.setdefault(session_id, {})[name] = color
    for s in sessions:
        s.review_labels = sorted(found.get(s.pk, {}).items())  # type: ignore[attr-defined]


def list_choices(user: User) -> dict[str, Any]:
    """The review filters' choices: the labels and the reviewers of the user's projects (two queries)."""
    projects = access.user_projects(user)
    labels = sorted(set(models.Label.objects.filter(project__in=projects).values_list("name", flat=True)))
    people = sorted(set(
        models.Membership.objects.filter(project__in=projects, role__in=access.ANNOTATE_ROLES)
        .values_list("user__username", flat=True)
    ))
    return {"label_names": labels, "reviewers": people, "review_statuses": models.ReviewStatus.choices,
            "nobody": listing.NOBODY}
