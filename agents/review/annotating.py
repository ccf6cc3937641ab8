"""QA review: a project's labels and members, annotations on sessions and messages, review status and assignee.

Shared by the pages, the API and the import/export of annotations. Every function takes objects already loaded
through the user's scope (``access.session_for_user`` and friends) and checks the role the action needs with
``access.require_role``, so a view cannot forget it. Bad input raises ``ValueError`` naming the field
(``label: ...``), which the pages show next to the field and the API returns as ``{"error": ...}``.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.http import Http404, QueryDict
from django.utils import timezone

from agents import access, models
from agents.access import User
from agents.memory import schema
from agents.store import listing, writing
from agents.store.filters import SessionFilterForm

COMMENT_MAX = 10_000
LABEL_NAME_MAX = 60
_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
# Offered on the settings page for a new label; any #rrggbb is accepted.
LABEL_COLORS = ("#dc2626", "#ea580c", "#ca8a04", "#16a34a", "#0891b2", "#2563eb", "#7c3aed", "#db2777", "#6b7280")

# The two inks a label chip's text can take: whichever contrasts more with the chip's colour. With pure black and
# white one of them always reaches WCAG's 4.5:1 (the worst colour gives 4.58:1 with both).
INK_DARK = "#000000"
INK_LIGHT = "#ffffff"


def relative_luminance(color: str) -> float:
    """WCAG 2's relative luminance of a ``#rrggbb`` colour (0 black, 1 white)."""
    channels = []
    for k in (1, 3, 5):
        c = int(color[k:k + 2], 16) / 255
        channels.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2's contrast ratio of two ``#rrggbb`` colours, from 1 to 21."""
    high, low = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def label_ink(color: str) -> str:
    """The text colour of a label chip of ``color``: black or white, whichever contrasts more (white when the
    colour is not ``#rrggbb``, the chip's default grey then showing)."""
    if not _COLOR.match(color or ""):
        return INK_LIGHT
    return INK_DARK if contrast_ratio(color, INK_DARK) > contrast_ratio(color, INK_LIGHT) else INK_LIGHT


# "Leave unchanged" for the optional fields of an update (None means "clear").
UNSET: Any = object()


# --- labels ---------------------------------------------------------------------------------------------------


def labels_for_project(project: models.Project) -> QuerySet[models.Label]:
    return models.Label.objects.filter(project=project).order_by("name")


def _label_fields(name: str, color: str) -> tuple[str, str]:
    name = " ".join(name.split())
    if not name:
        raise ValueError("name: a label needs a name")
    if len(name) > LABEL_NAME_MAX:
        raise ValueError(f"name: at most {LABEL_NAME_MAX} characters")
    color = color.strip().lower()
    if not _COLOR.match(color):
        raise ValueError(f"color: {color[:20]!r} is not a colour as #rrggbb")
    return name, color


def label_create(*, user: User, project: models.Project, name: str, color: str = LABEL_COLORS[-1]) -> models.Label:
    access.require_role(user, project, "admin")
    name, color = _label_fields(name, color)
    if models.Label.objects.filter(project=project, name__iexact=name).exists():
        raise ValueError(f"name: the project already has a label {name!r}")
    try:
        with transaction.atomic():
            return models.Label.objects.create(project=project, name=name, color=color)
    except IntegrityError:
        raise ValueError(f"name: the project already has a label {name!r}") from None


def label_update(*, user: User, label: models.Label, name: str, color: str) -> models.Label:
    access.require_role(user, label.project, "admin")
    name, color = _label_fields(name, color)
    if models.Label.objects.filter(project=label.project_id, name__iexact=name).exclude(pk=label.pk).exists():
        raise ValueError(f"name: the project already has a label {name!r}")
    label.name, label.color = name, color
    label.save(update_fields=["name", "color"])
    return label


def label_delete(*, user: User, label: models.Label) -> int:
    """Delete the label; annotations that were only this label (no comment) go with it, the others lose it.
    Returns how many annotations were removed."""
    access.require_role(user, label.project, "admin")
    with transaction.atomic():
        removed, _ = models.Annotation.objects.filter(label=label, comment="").delete()
        label.delete()
    return removed


def label_usage(project: models.Project) -> dict[int, int]:
    """label id -> how many annotations use it (one query)."""
    rows = models.Annotation.objects.filter(label__project=project).values("label").annotate(n=Count("id"))
    return {row["label"]: row["n"] for row in rows}


# --- members --------------------------------------------------------------------------------------------------


def members_for_project(project: models.Project) -> QuerySet[models.Membership]:
    return models.Membership.objects.filter(project=project).select_related("user").order_by("user__username")


def _role(value: str) -> str:
    if value not in models.Membership.Level.values:
        raise ValueError(f"role: {value[:20]!r} is not a role; valid: {', '.join(models.Membership.Level.values)}")
    return value


def member_add(*, user: User, project: models.Project, username: str, role: str) -> models.Membership:
    access.require_role(user, project, "admin")
    role = _role(role)
    username = username.strip()
    account = get_user_model().objects.filter(username=username).first() if username else None
    if account is None:
        raise ValueError(f"username: no user {username!r} (an account must exist before it joins a project)")
    membership, created = models.Membership.objects.get_or_create(
        project=project, user=account, defaults={"role": role}
    )
    if not created:
        raise ValueError(f"username: {username} is already a member ({membership.role})")
    return membership


def _keeps_an_admin(membership: models.Membership) -> bool:
    others = models.Membership.objects.filter(project=membership.project_id, role=models.Membership.Level.ADMIN)
    return others.exclude(pk=membership.pk).exists()


def member_set_role(*, user: User, membership: models.Membership, role: str) -> models.Membership:
    access.require_role(user, membership.project, "admin")
    role = _role(role)
    if membership.role == models.Membership.Level.ADMIN and role != membership.role and not _keeps_an_admin(membership):
        raise ValueError("role: the project's last admin cannot step down; make someone else admin first")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


def member_remove(*, user: User, membership: models.Membership) -> None:
    access.require_role(user, membership.project, "admin")
    if membership.role == models.Membership.Level.ADMIN and not _keeps_an_admin(membership):
        raise ValueError("username: the project's last admin cannot leave; make someone else admin first")
    with transaction.atomic():
        # Sessions assigned to someone who left are nobody's again.
        models.Session.objects.filter(agent__project=membership.project_id, assignee=membership.user_id).update(
            assignee=None
        )
        membership.delete()


def settings_context(project: models.Project) -> dict[str, Any]:
    """What the project settings page shows of members and labels (three queries)."""
    labels = list(labels_for_project(project))
    usage = label_usage(project)
    used_colors = {label.color for label in labels}
    return {
        "members": list(members_for_project(project)),
        "roles": models.Membership.Level.choices,
        "labels": [{"label": label, "used": usage.get(label.pk, 0)} for label in labels],
        "next_color": next((c for c in LABEL_COLORS if c not in used_colors), LABEL_COLORS[-1]),
    }


# --- annotations ----------------------------------------------------------------------------------------------


def annotations_for_session(session: models.Session) -> QuerySet[models.Annotation]:
    """The session's annotations, session-wide first, then by message, oldest first: one query."""
    return (
        models.Annotation.objects.filter(session=session)
        .select_related("label", "author", "message")
        .only("session_id", "message__seq", "label__name", "label__color", "comment", "author__username",
              "author_name", "created_at", "updated_at")
        .order_by("message__seq", "created_at", "id")
    )


def annotation_for_user(user: User, session_id: int, annotation_id: int) -> tuple[models.Session, models.Annotation]:
    session = access.session_for_user(user, session_id)
    annotation = annotations_for_session(session).filter(pk=annotation_id).first()
    if annotation is None:
        raise Http404("No such annotation in this session.")
    return session, annotation


def _label_by_name(project_id: int, name: str | None) -> models.Label | None:
    if name is None or name == "":
        return None
    label = models.Label.objects.filter(project=project_id, name=name).first()
    if label is None:
        names = list(models.Label.objects.filter(project=project_id).order_by("name").values_list("name", flat=True))
        valid = ", ".join(names) if names else "none yet (an admin adds them on the project's settings page)"
        raise ValueError(f"label: no label {name!r} in this project; labels: {valid}")
    return label


def _comment(text: str | None) -> str:
    text = (text or "").strip()
    if len(text) > COMMENT_MAX:
        raise ValueError(f"comment: at most {COMMENT_MAX:,} characters (this one has {len(text):,})")
    if "\x00" in text:
        raise ValueError("comment: contains a NUL character, which the database cannot store")
    return text


def _acting(user: User) -> tuple[Any, str]:
    """(author, author_name) for something ``user`` writes: an API key writes as the user who made it."""
    if isinstance(user, access.KeyUser):
        return user.acting_user, "" if user.acting_user is not None else user.username
    return user, ""


def annotation_create(
    *, user: User, session: models.Session, seq: int | None, label: str | None, comment: str | None
) -> models.Annotation:
    access.require_role(user, session.agent.project, "annotate")
    project_id = session.agent.project_id
    found_label = _label_by_name(project_id, label)
    text = _comment(comment)
    if found_label is None and not text:
        raise ValueError("comment: write a comment or choose a label")
    message = None
    if seq is not None:
        message = models.Message.objects.filter(session=session, seq=seq).only("pk", "seq").first()
        if message is None:
            raise ValueError(f"seq: no message #{seq}; the session has {session.message_count} (#0 to "
                             f"#{max(session.message_count - 1, 0)}), or null for the whole session")
    author, author_name = _acting(user)
    now = timezone.now()  # one instant for both, or a new annotation reads as edited
    return models.Annotation.objects.create(
        session=session, message=message, label=found_label, comment=text, author=author, author_name=author_name,
        created_at=now, updated_at=now,
    )


def _is_author(user: User, annotation: models.Annotation) -> bool:
    author, author_name = _acting(user)
    if author is not None:
        return annotation.author_id == author.pk
    return bool(author_name) and annotation.author_id is None and annotation.author_name == author_name


def annotation_update(
    *, user: User, annotation: models.Annotation, label: str | None = UNSET, comment: str | None = UNSET
) -> models.Annotation:
    """Only its author changes an annotation (and only while allowed to annotate in the project)."""
    access.require_role(user, annotation.session.agent.project, "annotate")
    if not _is_author(user, annotation):
        raise PermissionDenied("only the author of an annotation edits it")
    if label is not UNSET:
        annotation.label = _label_by_name(annotation.session.agent.project_id, label)
    if comment is not UNSET:
        annotation.comment = _comment(comment)
    if annotation.label is None and not annotation.comment:
        raise ValueError("comment: an annotation keeps a comment or a label (delete it instead)")
    annotation.updated_at = timezone.now()
    annotation.save(update_fields=["label", "comment", "updated_at"])
    return annotation


def annotation_delete(*, user: User, annotation: models.Annotation) -> None:
    """Its author deletes an annotation; a project admin may delete any (imported ones have no author here)."""
    role = access.require_role(user, annotation.session.agent.project, "annotate")
    if not _is_author(user, annotation) and not access.role_allows(role, "admin"):
        raise PermissionDenied("only the author of an annotation (or a project admin) deletes it")
    annotation.delete()


def annotation_dict(annotation: models.Annotation, *, user: User | None = None) -> dict[str, Any]:
    """The API's (and the native format's) shape of an annotation."""
    out: dict[str, Any] = {
        "id": annotation.pk,
        "seq": annotation.message.seq if annotation.message else None,
        "label": annotation.label.name if annotation.label else None,
        "color": annotation.label.color if annotation.label else None,
        "comment": annotation.comment,
        "author": author_display(annotation),
        "created_at": annotation.created_at.isoformat(),
        "updated_at": annotation.updated_at.isoformat(),
    }
    if user is not None:
        out["mine"] = _is_author(user, annotation)
    return out


def author_display(annotation: models.Annotation) -> str:
    if annotation.author is not None:
        return annotation.author.get_username()
    return annotation.author_name or "(deleted user)"


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


# --- annotations in and out of files --------------------------------------------------------------------------


def annotations_export(session: models.Session) -> list[schema.Annotation]:
    """The session's annotations as the native format writes them: seq (None: the session), label and its
    colour, comment, author, times; ids stay here."""
    return [
        schema.Annotation(
            seq=row.message.seq if row.message else None,
            label=row.label.name if row.label else None,
            color=row.label.color if row.label else None,
            comment=row.comment,
            author=author_display(row),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        for row in annotations_for_session(session)
        if row.label_id or row.comment
    ]


@dataclass
class ImportedAnnotations:
    added: int = 0
    labels_created: int = 0


def annotations_import(*, session: models.Session, items: Sequence[schema.Annotation]) -> ImportedAnnotations:
    """Store the annotations a native file carried for ``session`` (already stored with its messages).

    Labels are matched by name and created when the project lacks them (an import needs the editor role; the
    label set stays the admins' to tidy). Authors are kept as names: a file cannot make anyone here the
    author of a comment, so an imported annotation is edited by no one and deleted by an admin.
    """
    result = ImportedAnnotations()
    if not items:
        return result
    with transaction.atomic():  # a bad annotation leaves no label it created behind
        return _annotations_write(session, items, result)


def _annotations_write(
    session: models.Session, items: Sequence[schema.Annotation], result: ImportedAnnotations
) -> ImportedAnnotations:
    project_id = session.agent.project_id
    labels = {label.name: label for label in models.Label.objects.filter(project=project_id)}
    seqs = {item.seq for item in items if item.seq is not None}
    messages = dict(models.Message.objects.filter(session=session, seq__in=seqs).values_list("seq", "pk"))
    rows = []
    now = timezone.now()
    for i, item in enumerate(items):
        label = None
        if item.label:
            label = labels.get(item.label)
            if label is None:
                color = item.color.lower() if item.color and _COLOR.match(item.color) else LABEL_COLORS[-1]
                label = labels[item.label] = models.Label.objects.create(project_id=project_id, name=item.label,
                                                                          color=color)
                result.labels_created += 1
        if item.seq is not None and item.seq not in messages:
            raise ValueError(f"annotations[{i}].seq: no message #{item.seq} in this session "
                             f"({session.message_count} messages)")
        rows.append(models.Annotation(
            session=session, message_id=messages[item.seq] if item.seq is not None else None, label=label,
            comment=item.comment, author=None, author_name=(item.author or "")[:150],
            created_at=item.created_at or now, updated_at=item.updated_at or item.created_at or now,
        ))
    models.Annotation.objects.bulk_create(rows, batch_size=writing.BULK_BATCH)
    result.added = len(rows)
    return result


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
    author, author_name = _acting(user)
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
