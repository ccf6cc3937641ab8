"""QA review: annotations on sessions and messages (a label of the project's set, a comment, or both), and
annotations in and out of files.

Shared by the pages, the API and the import/export of annotations (status, assignee and the queue:
``review.workflow``). Every function takes objects already loaded through the user's scope
(``access.session_for_user`` and friends) and checks the role the action needs with ``access.require_role``, so a
view cannot forget it. Bad input raises ``ValueError`` naming the field (``label: ...``), which the pages show next
to the field and the API returns as ``{"error": ...}``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from agents import access, models
from agents.access import User
from agents.memory import schema
from agents.projects.labels import LABEL_COLOR, LABEL_COLORS
from agents.store import writing

COMMENT_MAX = 10_000


# "Leave unchanged" for the optional fields of an update (None means "clear").
UNSET: Any = object()


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


def acting_author(user: User) -> tuple[Any, str]:
    """(author, author_name) for something ``user`` writes: an API key writes as the user who made it."""
    if isinstance(user, access.KeyUser):
        return access.recorded_user(user), "" if user.acting_user is not None else user.username
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
    author, author_name = acting_author(user)
    now = timezone.now()  # one instant for both, or a new annotation reads as edited
    return models.Annotation.objects.create(
        session=session, message=message, label=found_label, comment=text, author=author, author_name=author_name,
        created_at=now, updated_at=now,
    )


def _is_author(user: User, annotation: models.Annotation) -> bool:
    author, author_name = acting_author(user)
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
                color = item.color.lower() if item.color and LABEL_COLOR.match(item.color) else LABEL_COLORS[-1]
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


