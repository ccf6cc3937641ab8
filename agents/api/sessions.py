"""The JSON API: the pages' twins, for scripts and other tools.

Django REST framework supplies routing, authentication, permissions, pagination and the browsable API; the
shapes are plain dicts built by the same services the pages use, and query parameters are validated by the same
form as the session list. One error shape: ``{"error": "..."}``.
"""
from __future__ import annotations

import functools
import io
import json
import re
import uuid
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.db.models import Count, Q
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import api_view, authentication_classes, parser_classes
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.exceptions import ValidationError as _Invalid
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import get_view_description

from agents import access, models
from agents.api.auth import ApiKeyAuthentication
from agents.auth import ThrottledBasicAuthentication
from agents.capture import ingest
from agents.diff import diffs
from agents.http import collector_paused
from agents.lab import presets as lab_presets
from agents.lab import trimming as lab_trimming
from agents.memory import schema
from agents.memory.formats import FORMATS
from agents.memory.tokens import COUNTERS, DEFAULT_COUNTER
from agents.memory.trimming import FALSE_WORDS, STRATEGIES, TRUE_WORDS, StrategyError
from agents.review import annotating, workflow
from agents.sessions import agents as sessions_agents
from agents.sessions import chain, find
from agents.sessions.agents import AgentForm
from agents.store import listing, mapping, writing
from agents.store.filters import SessionFilterForm
from agents.throttling import expensive_api
from agents.transfer import imports, pages
from agents.transfer import views as transfer_views

MAX_MESSAGE_PAGE = 1000

# Basic first: DRF answers an unauthenticated request with the first class's challenge, so a script without
# credentials gets 401 with ``WWW-Authenticate: Basic`` (it can retry with them), not a bare 403. A browser
# that is logged in still gets in through its session; a script or an agent with a project key, by Bearer.
AUTHENTICATION = [ThrottledBasicAuthentication, ApiKeyAuthentication, SessionAuthentication]


_LITERAL = re.compile(r"``(.+?)``")


def view_description(view: Any, html: bool = False) -> str | SafeString:
    """The endpoint's docstring as the browsable API shows it (``VIEW_DESCRIPTION_FUNCTION``): its ``literals``
    as code and its paragraphs as paragraphs, instead of the docstring's own markup shown as text."""
    text = get_view_description(view, html=False)
    if not html:
        return _LITERAL.sub(r"\1", text)
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return mark_safe("".join(
        "<p>" + _LITERAL.sub(r"<code>\1</code>", str(escape(p))) + "</p>" for p in paragraphs
    ))


class ApiError(BaseModel):
    """Every error of this API."""

    error: str


def _documented(operation_id: str, summary: str, *errors: int, ok: tuple[int, ...] = (200,),
                method: str | None = None, **more: Any) -> Any:
    """An endpoint's OpenAPI entry (of one ``method``, or of them all): a JSON object for each code of ``ok`` (no
    body for 204), and the one error shape for each of ``errors``."""
    answers: dict[int, Any] = {code: None if code == 204 else OpenApiTypes.OBJECT for code in ok}
    return extend_schema(operation_id=operation_id, summary=summary, methods=[method] if method else None,
                         responses=answers | dict.fromkeys(errors, ApiError), **more)


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


class AgentPatch(BaseModel):
    """The agent's fields to change (the others stay); the same limits as the agent page's form."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str | None = None
    model: str | None = None
    context_window: int | None = None
    token_counter: str | None = Field(default=None, description="A counter's name; empty follows the model.")


class MessagesAppend(BaseModel):
    """Messages to append, OpenAI-shaped; ``id`` (or ``external_id``) makes a retry safe."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(min_length=1)


def write_api(methods: list[str]) -> Any:
    """An endpoint of this API answering ``methods``: open to the login middleware (DRF checks access), Basic,
    Bearer or session auth; writes need the editor role on the project. The services refuse bad input with a
    ValueError naming the field (PresetError, TrimRequestError, ...): 400 ``{"error": ...}``, said here once."""

    def decorate(view: Any) -> Any:
        @functools.wraps(view)
        def refusing(request: Request, *args: Any, **kwargs: Any) -> Any:
            try:
                return view(request, *args, **kwargs)
            except ValueError as exc:
                raise _Invalid(str(exc)) from None

        return login_not_required(api_view(methods)(authentication_classes(AUTHENTICATION)(refusing)))

    return decorate


# A GET endpoint.
api = write_api(["GET"])


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict) and "detail" in data:
        response.data = {"error": str(data["detail"])}
    elif isinstance(data, dict) and data and "error" not in data:
        field, errors = next(iter(data.items()))
        first = errors[0] if isinstance(errors, list) and errors else errors
        response.data = {"error": f"{field}: {first}"}
    elif isinstance(data, list) and data:
        response.data = {"error": str(data[0])}
    return response


def _bad_request(message: str) -> Response:
    return Response({"error": message}, status=400)


def _session_summary(request: Request, session: models.Session) -> dict[str, Any]:
    return {
        "id": session.pk,
        "url": request.build_absolute_uri(reverse("api:session_detail", args=[session.pk])),
        "page_url": request.build_absolute_uri(session.get_absolute_url()),
        "external_id": session.external_id,
        "title": session.title,
        "project": session.agent.project.slug,
        "agent": {"slug": session.agent.slug, "name": session.agent.name, "model": session.agent.model,
                  "context_window": session.agent.context_window,
                  "url": request.build_absolute_uri(reverse("api:agent_detail", args=[session.agent_id]))},
        "source_format": session.source_format,
        "started_at": session.started_at.isoformat() if session.started_at else None,
        "message_count": session.message_count,
        "token_total": session.token_total,
        "token_counter": session.token_counter,
        "violation_count": session.violation_count,
        "has_errors": session.has_errors,
        "review_status": session.review_status,
        "assignee": session.assignee.get_username() if session.assignee else None,
    }


def _message_dict(row: models.Message) -> dict[str, Any]:
    message = mapping.message_to_schema(row)
    out = {"seq": row.seq, **message.model_dump(mode="json", exclude_defaults=True), "token_count": row.token_count,
           "token_running": row.token_running}
    out["role"] = row.role
    if message.tool_calls:
        # Whole, "type": "function" included (exclude_defaults would drop it), so a page is valid OpenAI input.
        out["tool_calls"] = [tc.model_dump(mode="json") for tc in message.tool_calls]
    return out


class _Pages(PageNumberPagination):
    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            # DRF says only "Invalid page."; say what was asked and what exists.
            asked = request.query_params.get(self.page_query_param, "")
            page_size = self.get_page_size(request)  # set: DRF pages (and so raises NotFound) only with a size
            count = self.django_paginator_class(queryset, page_size).num_pages if page_size else 1
            raise NotFound(f"page {asked}: no such page; there are {count} (page=1 to page={count})") from None


@_documented("api_root", "Links to the API's lists")
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


@_documented("sessions_list", "The sessions of your projects, filtered and sorted", 400, 401, 404, method="GET",
             parameters=[OpenApiParameter(name, str, description=name) for name in (
                 "project", "agent", "q", "tool", "violations", "errors", "date_from", "date_to", "min_tokens",
                 "max_tokens", "label", "review_status", "assignee", "sort", "page",
             )])
@_documented("sessions_create", "Create a session", 400, 403, 409, ok=(201,), method="POST", request=SessionCreate)
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
            return _bad_request("review_status: give review_status or status, not both")
        query.setlist("status", query.pop("review_status"))
    form = SessionFilterForm(query or None, user=request.user)
    if form.is_bound and form.refusal():
        refusal = form.refusal()
        if refusal.startswith("status: ") and "review_status" in request.query_params:
            refusal = "review_" + refusal
        return _bad_request(refusal)
    sessions = listing.sessions_filtered(request.user, form.filters())
    paginator = _Pages()
    page = paginator.paginate_queryset(sessions, request)
    return paginator.get_paginated_response([_session_summary(request, s) for s in page])


def _agent_dict(request: Request, agent: models.Agent, *, can_edit: bool, session_count: int) -> dict[str, Any]:
    return {
        "id": agent.pk,
        "url": request.build_absolute_uri(reverse("api:agent_detail", args=[agent.pk])),
        "page_url": request.build_absolute_uri(agent.get_absolute_url()),
        "project": agent.project.slug,
        "name": agent.name,
        "slug": agent.slug,
        "description": agent.description,
        "model": agent.model,
        "context_window": agent.context_window,
        "token_counter": agent.token_counter,  # as chosen ("" follows the model)
        "counter": agent.counter,  # what its new sessions count with
        "session_count": session_count,
        "can_edit": can_edit,
    }


@_documented("agents_list", "The agents of your projects", 401)
@api
def agent_list(request: Request) -> Response:
    agents = access.agents_for_user(request.user).annotate(
        session_total=Count("sessions", filter=Q(sessions__state=models.Session.State.READY))).order_by(
        "project__name", "name", "pk")
    editable = set(access.editable_projects(request.user).values_list("pk", flat=True))
    paginator = _Pages()
    page = paginator.paginate_queryset(agents, request)
    return paginator.get_paginated_response([
        _agent_dict(request, a, can_edit=a.project_id in editable, session_count=a.session_total) for a in page
    ])


@_documented("agent_retrieve", "One agent", 401, 404, method="GET")
@_documented("agent_update", "Change an agent's name, description, model or context window (editors and admins)",
             400, 403, 404, method="PATCH", request=AgentPatch)
@write_api(["GET", "PATCH"])
def agent_detail(request: Request, agent_id: int) -> Response:
    """The JSON twin of the agent page: PATCH takes the fields to change, checked as the page's form checks them."""
    agent = access.agent_for_user(request.user, agent_id)
    can_edit = access.agent_editable(request.user, agent)
    if request.method == "PATCH":
        if not can_edit:
            raise PermissionDenied("changing an agent needs the editor or admin role in its project")
        patch = _body(request, AgentPatch)
        form = AgentForm({**AgentForm.initial_for(agent), **patch.model_dump(exclude_unset=True)})
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            return _bad_request(f"{field}: {errors[0]}")
        sessions_agents.agent_update(agent=agent, user=request.user, changes=form.cleaned_data)
    ready = agent.sessions.filter(state=models.Session.State.READY)
    return Response(_agent_dict(request, agent, can_edit=can_edit, session_count=ready.count()))


class SessionUpdate(BaseModel):
    """A session's review: ``review_status`` (unreviewed, in_review, done) and ``assignee`` (a username of the
    project who may review, or null for nobody). Fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid")

    review_status: str | None = None
    assignee: str | None = None


@_documented("session_retrieve", "One session's summary", 400, 401, 404, method="GET")
@_documented("session_review", "Set a session's review status and assignee", 400, 403, 404, method="PATCH",
             request=SessionUpdate)
@_documented("session_delete", "Delete a session (editor or admin)", 403, 404, ok=(204,), method="DELETE")
@write_api(["GET", "PATCH", "DELETE"])
def session_detail(request: Request, session_id: int) -> Response:
    """GET: the session's summary, metadata, tools, violations and review. PATCH (annotator or more):
    ``review_status`` and/or ``assignee``. DELETE (editor or admin): the session and everything in it."""
    session = access.session_for_user(request.user, session_id)
    if request.method == "PATCH":
        body = _body(request, SessionUpdate)
        changes = {name: getattr(body, name) for name in body.model_fields_set}
        if "review_status" in changes and changes["review_status"] is None:
            raise _Invalid("review_status: one of unreviewed, in_review, done (not null)")
        workflow.session_review_update(user=request.user, session=session, **changes)
    elif request.method == "DELETE":
        writing.session_delete(user=request.user, session=session)
        return Response(status=204)
    data = _session_summary(request, session)
    data["metadata"] = session.metadata
    data["tools"] = session.tools
    data["violations"] = session.violations
    data["messages_url"] = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]))
    data["annotations_url"] = request.build_absolute_uri(reverse("api:session_annotations", args=[session.pk]))
    return Response(data)


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


@_documented("session_annotations_list", "A session's annotations", 401, 404, method="GET")
@_documented("session_annotations_create", "Annotate a message or the session", 400, 403, 404, ok=(201,),
             method="POST", request=AnnotationCreate)
@write_api(["GET", "POST"])
def session_annotations(request: Request, session_id: int) -> Response:
    """GET: the session's annotations (the session's own first, then by message). POST (annotator or more):
    ``{"seq": 12 or null, "label": "hallucination", "comment": "..."}``."""
    session = access.session_for_user(request.user, session_id)
    if request.method == "POST":
        body = _body(request, AnnotationCreate)
        annotation = annotating.annotation_create(user=request.user, session=session, seq=body.seq, label=body.label,
                                                  comment=body.comment)
        annotation = annotating.annotations_for_session(session).get(pk=annotation.pk)
        return Response(annotating.annotation_dict(annotation, user=request.user), status=201)
    rows = annotating.annotations_for_session(session)
    return Response(
        {"session": session.pk, "annotations": [annotating.annotation_dict(a, user=request.user) for a in rows]}
    )


@_documented("session_annotation_update", "Change one of your annotations", 400, 403, 404, method="PATCH",
             request=AnnotationUpdate)
@_documented("session_annotation_delete", "Delete one of your annotations", 403, 404, ok=(204,), method="DELETE")
@write_api(["PATCH", "DELETE"])
def session_annotation(request: Request, session_id: int, annotation_id: int) -> Response:
    """PATCH: its author changes ``label`` and/or ``comment``. DELETE: its author (or a project admin) removes it."""
    _session, annotation = annotating.annotation_for_user(request.user, session_id, annotation_id)
    if request.method == "DELETE":
        annotating.annotation_delete(user=request.user, annotation=annotation)
        return Response(status=204)
    body = _body(request, AnnotationUpdate)
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    annotating.annotation_update(user=request.user, annotation=annotation, **changes)
    return Response(annotating.annotation_dict(annotation, user=request.user))


@_documented("session_messages_list", "A page of a session's messages, or those that match q", 400, 401, 404,
             method="GET",
             parameters=[OpenApiParameter("after", int), OpenApiParameter("limit", int), OpenApiParameter("q", str)])
@_documented("session_messages_append", "Append messages (idempotent by id)", 400, 403, ok=(200, 201), method="POST",
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
        return _bad_request("after and limit must be whole numbers")
    if not 1 <= limit <= MAX_MESSAGE_PAGE:
        return _bad_request(f"limit: must be between 1 and {MAX_MESSAGE_PAGE}")
    search: dict[str, Any] = {}  # with ?q=: the query and how many messages match it
    if "q" in request.query_params:
        q = find.clean_query(request.query_params.get("q"))
        if not q:
            return _bad_request("q: say what to look for")
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


@_documented(
    "session_trim", "The session as a strategy would trim it", 400, 401, 404,
    parameters=[
        OpenApiParameter("strategy", str, description="A strategy's name (default: safe_token_budget)"),
        OpenApiParameter(
            "preset", str, description="A preset of the session's project: its strategy, parameters and counter."
        ),
        OpenApiParameter("counter", str),
        OpenApiParameter("detail", str, enum=["compact", "full"]),
        OpenApiParameter("messages", str),
    ],
)
@api
@expensive_api
@collector_paused
def session_trim(request: Request, session_id: int) -> Response:
    """``?strategy=NAME&<param>=<value>...``: the session as the strategy would trim it (the stored session is
    unchanged). A parameter given twice is a list (``end_on=human&end_on=ai``), like ``end_on=human,ai``. Without
    ``strategy``, memoryviz's recommendation (``safe_token_budget``, its defaults), and the answer says so.
    ``?preset=NAME`` instead: a preset of the session's project, with its counter unless ``counter`` is given.

    ``counter=NAME``: the session's own counter (the default) uses the counts stored at import, so nothing is
    recounted; another counter recounts every message, and the response says ``"recounted": true``.

    The answer is compact by default, sized by what is kept rather than by the session: ``dropped`` as runs
    ``{"from", "to", "reason"}`` of consecutive input indices, no per-message ``explanation``, and the trimmed
    ``messages`` only with ``?messages=1``. ``?detail=full`` gives the ``trim`` command's whole JSON instead
    (per-index ``dropped``, ``explanation``, ``messages``)."""
    return Response(lab_trimming.session_trim_answer(
        user=request.user, session_id=session_id, query=request.query_params,
        strategies_url=request.build_absolute_uri(reverse("api:strategy_list")),
    ))


@_documented("strategies_list", "Trimming strategies and their parameters")
@api
def strategy_list(request: Request) -> Response:
    return Response(
        {
            "strategies": [
                {
                    "name": s.name,
                    "description": s.description,
                    "emulates": s.emulates,
                    "params": s.params_model.model_json_schema(),
                }
                for s in STRATEGIES.values()
            ]
        }
    )


@_documented("formats_list", "Formats memoryviz reads and writes")
@api
def format_list(request: Request) -> Response:
    return Response(
        {"formats": [{"name": f.name, "label": f.label, "description": f.description} for f in FORMATS.values()]}
    )




# --- export ---------------------------------------------------------------------------------------------------

_EXPORT_FIELDS = [
    OpenApiParameter("format", str, enum=sorted(FORMATS), description="A format of /api/formats/ (default: native)"),
    OpenApiParameter("strategy", str, description="Export each session as this strategy trims it"),
    OpenApiParameter("params", str, description="The strategy's parameters: key=value, key=value"),
    OpenApiParameter("preset", str, description="A preset instead of strategy and params"),
    OpenApiParameter("counter", str, description="What the trim counts with (default: the preset's, else each "
                                                 "session's stored counts)"),
    OpenApiParameter("on_invalid", str, enum=["skip", "stop"],
                     description="openai_jsonl: leave out, or refuse, conversations that break the protocol"),
]
_EXPORT_ANSWERS = {
    (200, "application/octet-stream"): OpenApiTypes.BINARY,
    202: OpenApiTypes.OBJECT, 400: ApiError, 401: ApiError, 404: ApiError,
}


class _FormatNamesTheFile(DefaultContentNegotiation):
    """In an export, ``?format=`` names the file's format (as on the pages and in export_history), not DRF's
    renderer of the answer (which would answer 404 to ``?format=openai``)."""

    settings = cast(Any, SimpleNamespace(URL_FORMAT_OVERRIDE=None))


def _format_names_the_file(view: Any) -> Any:
    """On a view made by ``api_view`` (which takes no negotiation class of its own)."""
    view.cls.content_negotiation_class = _FormatNamesTheFile
    return view


def _export_query(request: Request) -> QueryDict:
    """The export's fields from the query string and the body (a form, or a JSON object whose lists repeat a
    field; its ``params`` may be an object, as the presets API takes them)."""
    query = request.query_params.copy()
    data = request.data
    if hasattr(data, "lists"):
        for key, values in data.lists():
            query.setlist(key, values)
    elif isinstance(data, dict):
        for key, value in data.items():
            if key == "params" and isinstance(value, dict):
                value = ", ".join(f"{name}={_param_text(v)}" for name, v in value.items())
            query.setlist(key, [str(v) for v in value] if isinstance(value, list) else [str(value)])
    elif data:
        raise _Invalid("body: expected a JSON object")
    return query


def _param_text(value: Any) -> str:
    """A JSON parameter value as the key=value syntax writes it (a list as JSON; null: the default)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _export_answer(request: Request, *, session_id: int | None = None) -> Any:
    """Through the pages' one export path (pages.export_request): the streamed file, 202 with the background job's
    URL, or 400 ``{"error": ...}`` naming the field."""
    answer = pages.export_request(user=request.user, data=_export_query(request), download=True,
                                  session_id=session_id, interface="api")
    if answer.job is not None:
        return Response({"job": request.build_absolute_uri(answer.job.get_absolute_url()),
                         "status": answer.job.status}, status=202)
    if answer.chunks is None:
        return _bad_request(str((answer.page or {}).get("error") or "nothing to export"))
    return transfer_views.export_download(answer)


@extend_schema(operation_id="session_export", summary="Download a session in any format, whole or trimmed",
               parameters=_EXPORT_FIELDS, request=None, responses=_EXPORT_ANSWERS)
@_format_names_the_file
@write_api(["POST"])
@expensive_api
def session_export(request: Request, session_id: int) -> Any:
    """The session as the session page's Export menu downloads it: ``format``, and ``strategy`` with ``params``
    or ``preset`` (of the session's project) to export it trimmed; the fields in the query string or the body.
    Any member of the project may export. Past the background threshold, 202 with the job's URL."""
    return _export_answer(request, session_id=session_id)


@extend_schema(operation_id="exports_create", summary="Download the sessions matching the list's filters",
               parameters=[*_EXPORT_FIELDS, OpenApiParameter("project", str), OpenApiParameter("agent", str),
                           OpenApiParameter("q", str)],
               request=None, responses=_EXPORT_ANSWERS)
@_format_names_the_file
@write_api(["POST"])
@expensive_api
def export_create(request: Request) -> Any:
    """The sessions of your projects matching the session list's filters (``project``, ``agent``, ``q``, ``tool``,
    ``violations``, ``errors``, dates, tokens, labels), in one file, as the export page downloads them. A filter
    that cannot apply (another project, an invalid value) is refused, never dropped."""
    return _export_answer(request)


# --- writing ------------------------------------------------------------------------------------------------


def _body(request: Request, model: type[BaseModel]) -> Any:
    """The body as ``model``; else 400 ``{"error": ...}`` naming the field (``exception_handler``)."""
    if not isinstance(request.data, dict):
        raise _Invalid("body: expected a JSON object")
    try:
        return model.model_validate(request.data)
    except ValidationError as exc:
        raise _Invalid(schema.describe_validation_error(exc, prefix="")) from None


def _parsed_messages(raw: list[dict[str, Any]]) -> list[schema.Message]:
    """OpenAI-shaped messages; ``id`` is the message's id (``external_id``)."""
    items = []
    for item in raw:
        if isinstance(item, dict) and "id" in item and "external_id" not in item:
            item = {**item, "external_id": str(item["id"])}
            del item["id"]
        items.append(item)
    return schema.parse_messages(items)


def _editable_project(request: Request, slug: str | None) -> models.Project:
    projects = access.editable_projects(request.user)
    if slug:
        project = projects.filter(slug=slug).first()
        if project is None:
            raise PermissionDenied(f"project {slug}: no such project where you may write (editor or admin)")
        return project
    choices = list(projects.distinct()[:2])
    if len(choices) != 1:
        raise _Invalid("project: name the project's slug (you may write to several, or to none)")
    return choices[0]


def _session_create(request: Request) -> Response:
    body = _body(request, SessionCreate)
    project = _editable_project(request, body.project)
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
    return Response(_session_summary(request, session), status=201)


def _messages_append(request: Request, session: models.Session) -> Response:
    if not access.editable_projects(request.user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("appending messages needs the editor or admin role in this session's project")
    messages = _parsed_messages(_body(request, MessagesAppend).messages)
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


class ImportUpload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    project: str | None = None
    agent: str | None = None
    format: str | None = None


@_documented(
    "import_create", "Import a history file in any format", 400, 403, ok=(201,),
    request={
        "multipart/form-data": {
            "type": "object",
            "properties": {
                "file": {"type": "string", "format": "binary"},
                "project": {"type": "string"},
                "agent": {"type": "string"},
                "format": {"type": "string", "enum": sorted(FORMATS)},
            },
            "required": ["file"],
        }
    },
)
@write_api(["POST"])
@parser_classes([MultiPartParser, FormParser])
@expensive_api
def import_upload(request: Request) -> Response:
    """A file in any format memoryviz reads, as the import page takes it (multipart: ``file``; optional
    ``project``, ``agent``, ``format``). Answers the import report; nothing is stored when it fails."""
    upload = request.FILES.get("file")
    if upload is None:
        return _bad_request("file: send the history as a multipart file field named file")
    options = ImportUpload.model_validate({k: request.data.get(k) or None for k in ("project", "agent", "format")})
    project = _editable_project(request, options.project)
    if options.format and options.format not in FORMATS:
        return _bad_request(f"format: unknown format {options.format!r}; valid: {', '.join(sorted(FORMATS))}")
    source: Any = (
        upload.temporary_file_path() if hasattr(upload, "temporary_file_path") else io.BufferedReader(upload.file)
    )
    try:
        report = imports.import_file(source, project=project, agent=options.agent, format=options.format,
                                     label=upload.name, name=upload.name)
    except imports.ImportFailed as exc:
        named = exc.naming(upload.name) + (" in the format field" if exc.choose_format else "")
        return _bad_request(f"{named} Nothing was imported.")
    models.Session.objects.filter(pk__in=[s.session_id for s in report.sessions if s.session_id and s.added]).update(
        last_activity_at=timezone.now())
    return Response(report.to_dict(), status=201)


# Rows of a diff per answer by default, and at most.
DIFF_ROWS = 500
MAX_DIFF_ROWS = 5000


@api
@expensive_api
def session_diff(request: Request, session_id: int, other_id: int | None = None) -> Response:
    """``/diff/{other}/`` (or ``?with=ID``): the session (left) against another the user can see (right);
    ``?trim=SPEC``: against its trimmed view (``name:key=value,...``). The rows ``start`` to ``start + limit``
    (500 by default) come as blocks, identical runs folded (``context`` identical rows kept beside each change);
    ``messages=1`` adds each row's messages in OpenAI format."""
    session = access.session_for_user(request.user, session_id)
    query = request.query_params
    other = other_id if other_id is not None else query.get("with", "").strip()
    spec_text = query.get("trim", "").strip()
    numbers: dict[str, int] = {}
    for key, default, top in (("start", 0, None), ("limit", DIFF_ROWS, MAX_DIFF_ROWS), ("context", 1, 50)):
        text = query.get(key, str(default))
        if not text.isdigit() or (top is not None and int(text) > top):
            return _bad_request(f"{key}={text}: expected a whole number{f' up to {top}' if top else ''}")
        numbers[key] = int(text)
    with_messages = query.get("messages", "0").strip().lower()
    if with_messages not in TRUE_WORDS | FALSE_WORDS | {""}:
        return _bad_request(f"messages={with_messages}: expected 1 or 0")
    if other == "" and not spec_text:
        return _bad_request("say what to compare with: /diff/{id}/, ?with=ID or ?trim=name:key=value")
    if other != "":
        if not str(other).isdigit():
            return _bad_request(f"with={other}: expected a session id")
        found = diffs.session_diff(left=session, right=access.session_for_user(request.user, int(other)))
    else:
        try:
            # trim=preset:NAME: a preset of the session's project.
            spec, preset = lab_presets.spec_or_preset(user=None, text=spec_text, project=session.agent.project)
            found = diffs.session_diff_trimmed(session=session, spec=spec, counter=lab_presets.trim_counter(preset))
        except (StrategyError, lab_presets.PresetError) as exc:
            return _bad_request(f"trim: {exc}")
    start = numbers["start"]
    data = diffs.diff_dict(found, start=start, stop=start + numbers["limit"], context=numbers["context"],
                           messages=with_messages in TRUE_WORDS)
    return Response({
        "left": _session_summary(request, found.left),
        "right": _session_summary(request, found.right) if found.right is not None else None,
        **data,
    })


class PresetIn(BaseModel):
    """The body of ``POST /api/presets/``."""

    model_config = ConfigDict(extra="forbid")

    project: str = Field(description="The project's slug.")
    name: str
    strategy: str
    params: dict[str, Any] = Field(default_factory=dict)
    counter: str = DEFAULT_COUNTER


def _preset_dict(request: Request, preset: models.Preset) -> dict[str, Any]:
    return {
        "name": preset.name,
        "project": preset.project.slug,
        "strategy": preset.strategy,
        "params": preset.params,
        "counter": preset.counter,
        "created_by": preset.created_by.get_username() if preset.created_by else None,
        "created_at": preset.created_at.isoformat(),
    }


@_documented("presets_list", "The presets of your projects", 400, method="GET",
             parameters=[OpenApiParameter("project", str)])
@_documented("presets_create", "Save a preset", 400, 401, ok=(201,), method="POST", request=PresetIn)
@write_api(["GET", "POST"])
def preset_list(request: Request) -> Response:
    """``GET``: the presets of the user's projects (``?project=SLUG`` for one). ``POST`` a JSON body
    ``{"project", "name", "strategy", "params", "counter"}`` to save one (editor or admin of the project): 201 with
    the preset, or 400 with a sentence saying what is wrong."""
    if request.method == "POST":
        body = _body(request, PresetIn)
        project = access.user_projects(request.user).filter(slug=body.project).first()
        if project is None:
            return _bad_request(f"project: no project {body.project!r} among yours")
        preset = lab_presets.preset_create(
            user=request.user, project=project, name=body.name, strategy=body.strategy, params=body.params,
            counter=body.counter,
        )
        return Response(_preset_dict(request, preset), status=201)
    project = None
    slug = request.query_params.get("project")
    if slug:
        project = access.user_projects(request.user).filter(slug=slug).first()
        if project is None:
            return _bad_request(f"project: no project {slug!r} among yours")
    presets = lab_presets.presets_for_user(request.user, project=project)
    return Response({"presets": [_preset_dict(request, p) for p in presets]})
