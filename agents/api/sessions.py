"""The API's sessions: the list (query parameters validated by the session list's own form), one session, its
messages page by page or by search, and the writes: a session created, messages appended, review status set, a
session deleted. The API's root too."""
from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel, ConfigDict, Field
from rest_framework.exceptions import PermissionDenied
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
    editable_project,
    session_summary,
    write_api,
)
from agents.capture import ingest
from agents.memory import schema
from agents.memory.tokens import COUNTERS
from agents.review import workflow
from agents.sessions import chain, find
from agents.store import listing, mapping, writing
from agents.store.filters import SessionFilterForm

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
            "counters": sorted(COUNTERS),
        }
    )


@documented("sessions_list", "The sessions of your projects, filtered and sorted", 400, 401, 404, method="GET",
             parameters=[OpenApiParameter(name, str, description=name) for name in (
                 "project", "agent", "q", "tool", "violations", "errors", "date_from", "date_to", "min_tokens",
                 "max_tokens", "label", "review_status", "assignee", "sort", "page",
             )])
@documented("sessions_create", "Create a session", 400, 403, 409, ok=(201,), method="POST", request=SessionCreate)
@write_api(["GET", "POST"])
def session_list(request: Request) -> Response:
    """GET: the session list with the page's filters (project, agent, q, tool, violations, errors, dates, tokens,
    label, review status, assignee, sort). POST: create a session (``SessionCreate``), with its first messages if
    given."""
    if request.method == "POST":
        return _session_create(request)
    query = request.query_params.copy()
    if "review_status" in query:
        # The summaries' and PATCH's name for what the list's form calls "status".
        if "status" in query:
            return bad_request("review_status: give review_status or status, not both")
        query.setlist("status", query.pop("review_status"))
    form = SessionFilterForm(query or None, user=request.user)
    if form.is_bound and form.refusal():
        refusal = form.refusal()
        if refusal.startswith("status: ") and "review_status" in request.query_params:
            refusal = "review_" + refusal
        return bad_request(refusal)
    sessions = listing.sessions_filtered(request.user, form.filters())
    paginator = ApiPages()
    page = paginator.paginate_queryset(sessions, request)
    return paginator.get_paginated_response([session_summary(request, s) for s in page])


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
    session = access.session_for_user(request.user, session_id)
    if request.method == "PATCH":
        body = body_as(request, SessionUpdate)
        changes = {name: getattr(body, name) for name in body.model_fields_set}
        if "review_status" in changes and changes["review_status"] is None:
            raise _Invalid("review_status: one of unreviewed, in_review, done (not null)")
        workflow.session_review_update(user=request.user, session=session, **changes)
    elif request.method == "DELETE":
        writing.session_delete(user=request.user, session=session)
        return Response(status=204)
    data = session_summary(request, session)
    data["metadata"] = session.metadata
    data["tools"] = session.tools
    data["violations"] = session.violations
    data["messages_url"] = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]))
    data["annotations_url"] = request.build_absolute_uri(reverse("api:session_annotations", args=[session.pk]))
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
    session = access.session_for_user(request.user, session_id)
    if request.method == "POST":
        return _messages_append(request, session)
    try:
        after = int(request.query_params["after"]) if "after" in request.query_params else None
        limit = int(request.query_params.get("limit", chain.MESSAGE_PAGE_SIZE))
    except ValueError:
        return bad_request("after and limit must be whole numbers")
    if not 1 <= limit <= MAX_MESSAGE_PAGE:
        return bad_request(f"limit: must be between 1 and {MAX_MESSAGE_PAGE}")
    search: dict[str, Any] = {}  # with ?q=: the query and how many messages match it
    if "q" in request.query_params:
        q = find.clean_query(request.query_params.get("q"))
        if not q:
            return bad_request("q: say what to look for")
        matches = find.message_matches(session, q)
        found = list((matches.filter(seq__gt=after) if after is not None else matches)[: limit + 1])
        rows, more = found[:limit], len(found) > limit
        search = {"q": q, "count": matches.count()}
    else:
        page = chain.session_message_page(session, after=after, size=limit)
        rows, more = page.rows, page.next_after is not None
    next_url = None
    if more and rows:
        query = urlencode({**({"q": search["q"]} if search else {}), "after": rows[-1].seq, "limit": limit})
        next_url = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]) + f"?{query}")
    return Response({"session": session.pk, "message_count": session.message_count, **search, "next": next_url,
                     "messages": [_message_dict(row) for row in rows]})


# --- writing ------------------------------------------------------------------------------------------------


def _parsed_messages(raw: list[dict[str, Any]]) -> list[schema.Message]:
    """OpenAI-shaped messages; ``id`` is the message's id (``external_id``)."""
    items = []
    for item in raw:
        if isinstance(item, dict) and "id" in item and "external_id" not in item:
            item = {**item, "external_id": str(item["id"])}
            del item["id"]
        items.append(item)
    return schema.parse_messages(items)


def _session_create(request: Request) -> Response:
    body = body_as(request, SessionCreate)
    project = editable_project(request, body.project)
    messages = _parsed_messages(body.messages)
    agent = models.Agent.objects.filter(project=project).filter(Q(slug=body.agent) | Q(name=body.agent)).first()
    if agent is None:
        agent, _ = models.Agent.objects.get_or_create(
            project=project, slug=slugify(body.agent)[:100] or "agent", defaults={"name": body.agent})
    external_id = body.external_id or uuid.uuid4().hex
    if models.Session.objects.filter(agent=agent, external_id=external_id).exists():
        return Response(
            {"error": f"external_id {external_id}: agent {agent.slug} already has this session"}, status=409
        )
    conversation = schema.Conversation(messages=messages, external_id=external_id, title=body.title or None,
                                       source_format="api", metadata=body.metadata)
    session = writing.session_store(agent=agent, conversation=conversation)
    session.last_activity_at = timezone.now()
    session.save(update_fields=["last_activity_at"])
    return Response(session_summary(request, session), status=201)


def _messages_append(request: Request, session: models.Session) -> Response:
    if not access.editable_projects(request.user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("appending messages needs the editor or admin role in this session's project")
    messages = _parsed_messages(body_as(request, MessagesAppend).messages)
    with ingest.session_writer(), transaction.atomic():
        session = (
            models.Session.objects.select_for_update(of=("self",)).select_related("agent__project").get(pk=session.pk)
        )
        ids = [m.external_id for m in messages if m.external_id]
        known = set(
            models.Message.objects.filter(session=session, external_id__in=ids).values_list("external_id", flat=True)
        )
        new: list[schema.Message] = []
        skipped = []
        for message in messages:
            if message.external_id and message.external_id in known:
                skipped.append(message.external_id)
                continue
            if message.external_id:
                known.add(message.external_id)
            new.append(message)
        start = session.message_count
        ingest.session_append(session=session, messages=new)  # a refusal (ValueError) rolls the batch back
        ingest.session_refresh(session=session)
    return Response({"session": session.pk, "added": len(new), "skipped": skipped,
                     "seqs": list(range(start, start + len(new))), "message_count": session.message_count},
                    status=201 if new else 200)


