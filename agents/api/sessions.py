"""The API's sessions: the list (query parameters validated by the session list's own form), one session, its
messages page by page or by search, and the writes: a session created, messages appended, review status set, a
session deleted. The API's root too."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.exceptions import ValidationError as _Invalid
from rest_framework.request import Request
from rest_framework.response import Response

from agents import access, models
from agents.api.endpoints import (
    ApiPages,
    api,
    bad_request,
    body_as,
    documented,
    session_summary,
    write_api,
)
from agents.capture import writes
from agents.memory.tokens import COUNTERS
from agents.review import pages as review_pages
from agents.sessions import actions, chain, list_page
from agents.store import layer_search, listing, mapping

MAX_MESSAGE_PAGE = 1000


class SessionCreate(BaseModel):
    """A new session: in the key's project (or ``project``, a slug where the caller is an editor), under an agent
    found or created by ``agent`` (a name or slug)."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)
    project: str | None = None
    external_id: str | None = Field(default=None, max_length=255)
    title: str = Field(default="", max_length=500)
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[dict[str, Any]] = Field(default_factory=list)


class MessagesAppend(BaseModel):
    """Messages to append, OpenAI-shaped; ``id`` (or ``external_id``) makes a retry safe."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(min_length=1)


def _message_dict(row: models.Message) -> dict[str, Any]:
    message = mapping.message_to_schema(row)
    out = {"seq": row.seq, **message.model_dump(mode="json", exclude_defaults=True), "token_count": row.token_count,
           "token_running": row.token_running}
    out["role"] = row.role
    if message.tool_calls:
        # Whole, "type": "function" included (exclude_defaults would drop it), so a page is valid OpenAI input.
        out["tool_calls"] = [tc.model_dump(mode="json") for tc in message.tool_calls]
    return out


@documented("api_root", "Links to the API's lists")
@api
def api_root(request: Request) -> Response:
    return Response(
        {
            "sessions": request.build_absolute_uri(reverse("api:session_list")),
            "agents": request.build_absolute_uri(reverse("api:agent_list")),
            "strategies": request.build_absolute_uri(reverse("api:strategy_list")),
            "formats": request.build_absolute_uri(reverse("api:format_list")),
            "presets": request.build_absolute_uri(reverse("api:preset_list")),
            "memory_stores": request.build_absolute_uri(reverse("api:memory_store_list")),
            "counters": sorted(COUNTERS),
        }
    )


@documented("sessions_list", "The sessions of your projects, filtered and sorted", 400, 401, 404, method="GET",
            parameters=[OpenApiParameter(name, str, description=name) for name in (
                "project", "agent", "q", "tool", "violations", "errors", "memory_findings", "date_from", "date_to",
                "min_tokens", "max_tokens", "label", "review_status", "assignee", "sort", "page",
            )])
@documented("sessions_create", "Create a session", 400, 403, 409, ok=(201,), method="POST", request=SessionCreate)
@write_api(["GET", "POST"])
def session_list(request: Request) -> Response:
    """GET: the session list with the page's filters (project, agent, q, tool, violations, errors, memory findings,
    dates, tokens, label, review status, assignee, sort). POST: create a session (``SessionCreate``), with its first
    messages if given."""
    if request.method == "POST":
        body = body_as(request, SessionCreate)
        created = writes.session_created(user=request.user, project=body.project, agent=body.agent,
                                         external_id=body.external_id, title=body.title, metadata=body.metadata,
                                         messages=body.messages)
        if created.session is None:
            return Response({"error": created.conflict}, status=409)
        return Response(session_summary(request, created.session), status=201)
    query = request.query_params.copy()
    if "review_status" in query:
        # The summaries' and PATCH's name for what the list's form calls "status".
        if "status" in query:
            return bad_request("review_status: give review_status or status, not both")
        query.setlist("status", query.pop("review_status"))
    hits = listing.MessageHits()
    try:
        sessions = list_page.sessions_listed(user=request.user, query=query, message_hits=hits)
    except ValueError as exc:
        refusal = str(exc)
        if refusal.startswith("status: ") and "review_status" in request.query_params:
            refusal = "review_" + refusal
        return bad_request(refusal)
    paginator = ApiPages()
    page = paginator.paginate_queryset(sessions, request)
    rows = [session_summary(request, s) for s in page]
    if hits.q:
        # Searched: where each session matched (as the list page says it), only then.
        matched = layer_search.matches_on_page(user=request.user, q=hits.q, sessions=page, message_hits=hits)
        for row, session in zip(rows, page, strict=True):
            row["matched_in"] = [m.as_json(request.build_absolute_uri) for m in matched.get(session.pk, [])]
    return paginator.get_paginated_response(rows)


class SessionUpdate(BaseModel):
    """A session's review: ``review_status`` (unreviewed, in_review, done) and ``assignee`` (a username of the
    project who may review, or null for nobody). Fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid")

    review_status: str | None = None
    assignee: str | None = None


@documented("session_retrieve", "One session's summary", 400, 401, 404, method="GET")
@documented("session_review", "Set a session's review status and assignee", 400, 403, 404, method="PATCH",
            request=SessionUpdate)
@documented("session_delete", "Delete a session (editor or admin)", 403, 404, ok=(204,), method="DELETE")
@write_api(["GET", "PATCH", "DELETE"])
def session_detail(request: Request, session_id: int) -> Response:
    """GET: the session's summary, metadata, tools, violations and review. PATCH (annotator or more):
    ``review_status`` and/or ``assignee``. DELETE (editor or admin): the session and everything in it."""
    if request.method == "DELETE":
        actions.session_delete_confirmed(user=request.user, session_id=session_id)
        return Response(status=204)
    if request.method == "PATCH":
        body = body_as(request, SessionUpdate)
        changes = {name: getattr(body, name) for name in body.model_fields_set}
        if "review_status" in changes and changes["review_status"] is None:
            raise _Invalid("review_status: one of unreviewed, in_review, done (not null)")
        session = review_pages.session_review_changed(user=request.user, session_id=session_id, changes=changes)
    else:
        session = access.session_for_user(request.user, session_id)
    data = session_summary(request, session)
    data["metadata"] = session.metadata
    data["tools"] = session.tools
    data["violations"] = session.violations
    data["messages_url"] = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]))
    data["annotations_url"] = request.build_absolute_uri(reverse("api:session_annotations", args=[session.pk]))
    data["recalls_url"] = request.build_absolute_uri(reverse("api:session_recalls", args=[session.pk]))
    return Response(data)


@documented("session_messages_list", "A page of a session's messages, or those that match q", 400, 401, 404,
            method="GET",
            parameters=[OpenApiParameter("after", int), OpenApiParameter("limit", int), OpenApiParameter("q", str)])
@documented("session_messages_append", "Append messages (idempotent by id)", 400, 403, ok=(200, 201), method="POST",
            request=MessagesAppend)
@write_api(["GET", "POST"])
def session_messages(request: Request, session_id: int) -> Response:
    """GET: one page of messages in order: ``?after=<seq>&limit=<n>`` (keyset paging: every page costs the same).
    With ``?q=text``: only the messages that mention it (content and results, reasoning, tool names, arguments,
    a whole call id), with ``count`` of them all, paged the same way. POST: append messages (``MessagesAppend``);
    a message whose id the session already has is skipped, so a retried request appends nothing twice."""
    if request.method == "POST":
        appended = writes.messages_appended(user=request.user, session_id=session_id,
                                            messages=body_as(request, MessagesAppend).messages)
        return Response({"session": appended.session.pk, "added": appended.added, "skipped": appended.skipped,
                         "seqs": list(range(appended.start, appended.start + appended.added)),
                         "message_count": appended.session.message_count},
                        status=201 if appended.added else 200)
    try:
        after = int(request.query_params["after"]) if "after" in request.query_params else None
        limit = int(request.query_params.get("limit", chain.MESSAGE_PAGE_SIZE))
    except ValueError:
        return bad_request("after and limit must be whole numbers")
    if not 1 <= limit <= MAX_MESSAGE_PAGE:
        return bad_request(f"limit: must be between 1 and {MAX_MESSAGE_PAGE}")
    page = chain.session_messages_page(user=request.user, session_id=session_id, after=after, limit=limit,
                                       q=request.query_params.get("q") if "q" in request.query_params else None)
    # With ?q=: the query and how many messages match it.
    search = {"q": page.q, "count": page.count} if page.q else {}
    next_url = None
    if page.more and page.rows:
        query = urlencode({**({"q": page.q} if page.q else {}), "after": page.rows[-1].seq, "limit": limit})
        next_url = request.build_absolute_uri(reverse("api:session_messages", args=[session_id]) + f"?{query}")
    return Response({"session": page.session.pk, "message_count": page.session.message_count, **search,
                     "next": next_url, "messages": [_message_dict(row) for row in page.rows]})
