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
from rest_framework.decorators import api_view
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from agents import models, services
from agents.forms import SessionFilterForm
from agents.memory.formats import FORMATS
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import STRATEGIES, StrategyError, trim

MAX_MESSAGE_PAGE = 1000


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
    return out


@login_not_required
@api_view(["GET"])
def api_root(request: Request) -> Response:
    return Response(
        {
            "sessions": request.build_absolute_uri(reverse("api:session_list")),
            "strategies": request.build_absolute_uri(reverse("api:strategy_list")),
            "formats": request.build_absolute_uri(reverse("api:format_list")),
            "counters": sorted(COUNTERS),
        }
    )


@login_not_required
@api_view(["GET"])
def session_list(request: Request) -> Response:
    """The session list with the page's filters (project, agent, q, tool, violations, errors, dates, tokens, sort)."""
    form = SessionFilterForm(request.query_params or None, user=request.user)
    if form.is_bound and not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        return _bad_request(f"{field}: {errors[0]}")
    sessions = services.sessions_filtered(request.user, form.filters())
    paginator = PageNumberPagination()
    page = paginator.paginate_queryset(sessions, request)
    return paginator.get_paginated_response([_session_summary(request, s) for s in page])


@login_not_required
@api_view(["GET"])
def session_detail(request: Request, session_id: int) -> Response:
    session = services.session_for_user(request.user, session_id)
    data = _session_summary(request, session)
    data["metadata"] = session.metadata
    data["tools"] = session.tools
    data["violations"] = session.violations
    data["messages_url"] = request.build_absolute_uri(reverse("api:session_messages", args=[session.pk]))
    return Response(data)


@login_not_required
@api_view(["GET"])
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


@login_not_required
@api_view(["GET"])
def session_trim(request: Request, session_id: int) -> Response:
    """``?strategy=NAME&<param>=<value>...``: the session as the strategy would trim it (the stored session is
    unchanged). Uses the token counts stored at import, so nothing is recounted."""
    session = services.session_for_user(request.user, session_id)
    params = {k: v for k, v in request.query_params.items() if k not in {"strategy", "format"}}
    name = request.query_params.get("strategy", "")
    try:
        parsed = {k: _query_value(v) for k, v in params.items()}
        rows = list(session.messages.order_by("seq"))
        messages = [services.message_to_schema(r) for r in rows]
        counts = [r.token_count for r in rows]
        result = trim(messages, name, parsed, counter=session.token_counter, token_counts=counts)
    except StrategyError as exc:
        return _bad_request(str(exc))
    return Response(result.to_dict())


def _query_value(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


@login_not_required
@api_view(["GET"])
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


@login_not_required
@api_view(["GET"])
def format_list(request: Request) -> Response:
    return Response(
        {"formats": [{"name": f.name, "label": f.label, "description": f.description} for f in FORMATS.values()]}
    )

