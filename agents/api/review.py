"""The API's annotations: a session's labels and comments, on a message or the whole session."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.endpoints import body_as, documented, write_api
from agents.review import annotating
from agents.review import pages as review_pages

# --- annotations ----------------------------------------------------------------------------------------------


class AnnotationCreate(BaseModel):
    """A label from the project's label set, a comment, or both, on message ``seq`` (null: the whole session)."""

    model_config = ConfigDict(extra="forbid")

    seq: int | None = Field(default=None, ge=0)
    label: str | None = None
    comment: str = ""


class AnnotationUpdate(BaseModel):
    """New label (null: none) and/or comment of one of your annotations; fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = None
    comment: str | None = None


@documented("session_annotations_list", "A session's annotations", 401, 404, method="GET")
@documented("session_annotations_create", "Annotate a message or the session", 400, 403, 404, ok=(201,),
            method="POST", request=AnnotationCreate)
@write_api(["GET", "POST"])
def session_annotations(request: Request, session_id: int) -> Response:
    """GET: the session's annotations (the session's own first, then by message). POST (annotator or more):
    ``{"seq": 12 or null, "label": "hallucination", "comment": "..."}``."""
    if request.method == "POST":
        body = body_as(request, AnnotationCreate)
        annotation = review_pages.annotation_made(user=request.user, session_id=session_id, seq=body.seq,
                                                  label=body.label, comment=body.comment)
        return Response(annotating.annotation_dict(annotation, user=request.user), status=201)
    session, rows = review_pages.session_annotations_listed(user=request.user, session_id=session_id)
    return Response(
        {"session": session.pk, "annotations": [annotating.annotation_dict(a, user=request.user) for a in rows]}
    )


@documented("session_annotation_update", "Change one of your annotations", 400, 403, 404, method="PATCH",
            request=AnnotationUpdate)
@documented("session_annotation_delete", "Delete one of your annotations", 403, 404, ok=(204,), method="DELETE")
@write_api(["PATCH", "DELETE"])
def session_annotation(request: Request, session_id: int, annotation_id: int) -> Response:
    """PATCH: its author changes ``label`` and/or ``comment``. DELETE: its author (or a project admin) removes it."""
    if request.method == "DELETE":
        review_pages.annotation_dropped(user=request.user, session_id=session_id, annotation_id=annotation_id)
        return Response(status=204)
    body = body_as(request, AnnotationUpdate)
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    annotation = review_pages.annotation_edited(user=request.user, session_id=session_id,
                                                annotation_id=annotation_id, changes=changes)
    return Response(annotating.annotation_dict(annotation, user=request.user))
