"""The JSON API: the pages' twins, for scripts and other tools.

Django REST framework supplies routing, authentication, permissions, pagination and the browsable API; the
shapes are plain dicts built by the same services the pages use, and query parameters are validated by the same
form as the session list. One error shape: ``{"error": "..."}``.
"""
from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.urls import reverse
from rest_framework.authentication import BasicAuthentication, SessionAuthentication
from rest_framework.decorators import api_view, authentication_classes
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from agents import models, services
from agents.api_auth import ApiKeyAuthentication
from agents.forms import SessionFilterForm
from agents.memory.formats import FORMATS
from agents.memory.tokens import COUNTERS, get_counter
from agents.memory.trimming import STRATEGIES, StrategyError, resolve_params, trim

MAX_MESSAGE_PAGE = 1000

# Basic first: DRF answers an unauthenticated request with the first class's challenge, so a script without
# credentials gets 401 with ``WWW-Authenticate: Basic`` (it can retry with them), not a bare 403. A browser
# that is logged in still gets in through its session; a script or an agent with a project key, by Bearer.
AUTHENTICATION = [BasicAuthentication, ApiKeyAuthentication, SessionAuthentication]


def api(view: Any) -> Any:
    """A GET endpoint of this API: open to the login middleware (DRF checks access), Basic or session auth."""
    return login_not_required(api_view(["GET"])(authentication_classes(AUTHENTICATION)(view)))


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
                  "context_window": session.agent.context_window},
        "source_format": session.source_format,
        "started_at": session.started_at.isoformat() if session.started_at else None,
        "message_count": session.message_count,
        "token_total": session.token_total,
        "token_counter": session.token_counter,
        "violation_count": session.violation_count,
        "has_errors": session.has_errors,
    }


def _message_dict(row: models.Message) -> dict[str, Any]:
    message = services.message_to_schema(row)
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
            count = self.django_paginator_class(queryset, self.get_page_size(request)).num_pages
            raise NotFound(f"page {asked}: no such page; there are {count} (page=1 to page={count})") from None


@api
def api_root(request: Request) -> Response:
    return Response(
        {
            "sessions": request.build_absolute_uri(reverse("api:session_list")),
            "strategies": request.build_absolute_uri(reverse("api:strategy_list")),
            "formats": request.build_absolute_uri(reverse("api:format_list")),
            "counters": sorted(COUNTERS),
        }
    )


@api
def session_list(request: Request) -> Response:
    """The session list with the page's filters (project, agent, q, tool, violations, errors, dates, tokens, sort)."""
    form = SessionFilterForm(request.query_params or None, user=request.user)
    if form.is_bound and not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        return _bad_request(f"{field}: {errors[0]}")
    sessions = services.sessions_filtered(request.user, form.filters())
    paginator = _Pages()
    page = paginator.paginate_queryset(sessions, request)
    return paginator.get_paginated_response([_session_summary(request, s) for s in page])


@api
def session_detail(request: Request, session_id: int) -> Response:
    session = services.session_for_user(request.user, session_id)
    data = _session_summary(request, session)
    data["metadata"] = session.metadata
    data["tools"] = session.tools
    data["violations"] = session.violations
    data["messages_url"] = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]))
    return Response(data)


@api
def session_messages(request: Request, session_id: int) -> Response:
    """One page of messages in order: ``?after=<seq>&limit=<n>`` (keyset paging: every page costs the same)."""
    session = services.session_for_user(request.user, session_id)
    try:
        after = int(request.query_params["after"]) if "after" in request.query_params else None
        limit = int(request.query_params.get("limit", services.MESSAGE_PAGE_SIZE))
    except ValueError:
        return _bad_request("after and limit must be whole numbers")
    if not 1 <= limit <= MAX_MESSAGE_PAGE:
        return _bad_request(f"limit: must be between 1 and {MAX_MESSAGE_PAGE}")
    page = services.session_message_page(session, after=after, size=limit)
    next_url = None
    if page.next_after is not None:
        next_url = request.build_absolute_uri(
            reverse("api:session_messages", args=[session.pk]) + f"?after={page.next_after}&limit={limit}"
        )
    return Response(
        {
            "session": session.pk,
            "message_count": session.message_count,
            "next": next_url,
            "messages": [_message_dict(row) for row in page.rows],
        }
    )


@api
def session_trim(request: Request, session_id: int) -> Response:
    """``?strategy=NAME&<param>=<value>...``: the session as the strategy would trim it (the stored session is
    unchanged). A parameter given twice is a list (``end_on=human&end_on=ai``), like ``end_on=human,ai``.

    ``counter=NAME``: the session's own counter (the default) uses the counts stored at import, so nothing is
    recounted; another counter recounts every message, and the response says ``"recounted": true``.

    The answer is compact by default, sized by what is kept rather than by the session: ``dropped`` as runs
    ``{"from", "to", "reason"}`` of consecutive input indices, no per-message ``explanation``, and the trimmed
    ``messages`` only with ``?messages=1``. ``?detail=full`` gives the ``trim`` command's whole JSON instead
    (per-index ``dropped``, ``explanation``, ``messages``)."""
    session = services.session_for_user(request.user, session_id)
    query = request.query_params
    name = query.get("strategy", "")
    detail = query.get("detail", "compact")
    if detail not in TRIM_DETAILS:
        return _bad_request(f"detail={detail}: expected {' or '.join(TRIM_DETAILS)}")
    with_messages = query.get("messages", "0").strip().lower()
    if with_messages not in _YES | _NO:
        return _bad_request(f"messages={with_messages}: expected 1 or 0")
    counter = query.get("counter") or session.token_counter
    try:
        get_counter(counter)
    except ValueError as exc:
        return _bad_request(f"counter: {exc}")
    params: dict[str, Any] = {}
    for key in query:
        if key in TRIM_QUERY_KEYS:
            continue
        values = [_query_value(v) for v in query.getlist(key)]
        params[key] = values if len(values) > 1 else values[0]
    try:
        # Cheap checks before a large session is read.
        resolve_params(name, params)
        messages, counts = services.session_messages_with_counts(session)
        recounted = counter != session.token_counter
        result = trim(messages, name, params, counter=counter, token_counts=None if recounted else counts)
    except StrategyError as exc:
        return _bad_request(str(exc))
    del messages, counts  # the input list can go before the answer is built (200,000 messages: hundreds of MB)
    if detail == "full":
        data = result.to_dict()
    else:
        data = result.to_compact_dict(messages=with_messages in _YES)
    data["detail"] = detail
    data["recounted"] = recounted
    return Response(data)


# Query keys of the trim endpoint that are not strategy parameters (format: DRF's ?format=json).
TRIM_QUERY_KEYS = frozenset({"strategy", "format", "counter", "detail", "messages"})
TRIM_DETAILS = ("compact", "full")
_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"0", "false", "no", "off", ""})


def _query_value(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


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


@api
def format_list(request: Request) -> Response:
    return Response(
        {"formats": [{"name": f.name, "label": f.label, "description": f.description} for f in FORMATS.values()]}
    )

