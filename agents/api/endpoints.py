"""What every endpoint of the JSON API shares: authentication (Basic, a project key as Bearer, the session), the one
error shape ``{"error": ...}`` (DRF's errors and the services' ValueErrors alike), the OpenAPI entries, paging, a
JSON body read as its pydantic model, and the summary of a session that several answers hold.

Django REST framework supplies routing, authentication, permissions, pagination and the browsable API; the shapes
are plain dicts built by the same services the pages use."""
from __future__ import annotations

import functools
import re
from types import SimpleNamespace
from typing import Any, cast

from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, ValidationError
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import api_view, authentication_classes
from rest_framework.exceptions import NotFound
from rest_framework.exceptions import ValidationError as _Invalid
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import get_view_description

from agents import models
from agents.api.auth import ApiKeyAuthentication
from agents.auth import ThrottledBasicAuthentication
from agents.memory import schema

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


def documented(operation_id: str, summary: str, *errors: int, ok: tuple[int, ...] = (200,),
                method: str | None = None, response: Any = OpenApiTypes.OBJECT, **more: Any) -> Any:
    """An endpoint's OpenAPI entry (of one ``method``, or of them all): ``response`` (a JSON object, or the pydantic
    model of its shape) for each code of ``ok`` (no body for 204), and the one error shape for each of ``errors``."""
    answers: dict[int, Any] = {code: None if code == 204 else response for code in ok}
    return extend_schema(operation_id=operation_id, summary=summary, methods=[method] if method else None,
                         responses=answers | dict.fromkeys(errors, ApiError), **more)


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


def bad_request(message: str) -> Response:
    return Response({"error": message}, status=400)


def session_summary(request: Request, session: models.Session) -> dict[str, Any]:
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


class _CountedPaginator(Paginator):
    """A paginator told its count (a summary kept on a row), which it then never asks the database for."""

    def __init__(self, object_list: Any, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self.__dict__["count"] = count  # what the cached_property would have computed


class ApiPages(PageNumberPagination):
    """Page-number pages, ``{"count", "next", "previous", "results"}``. ``count``: the number of items when it is
    known without counting them (a store's ``record_count``), so that a page of a million rows costs one query."""

    def __init__(self, *, count: int | None = None) -> None:
        super().__init__()
        if count is not None:
            self.django_paginator_class = functools.partial(_CountedPaginator, count=count)  # type: ignore[assignment]

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            # DRF says only "Invalid page."; say what was asked and what exists.
            asked = request.query_params.get(self.page_query_param, "")
            page_size = self.get_page_size(request)  # set: DRF pages (and so raises NotFound) only with a size
            count = self.django_paginator_class(queryset, page_size).num_pages if page_size else 1
            raise NotFound(f"page {asked}: no such page; there are {count} (page=1 to page={count})") from None


class _FormatNamesTheFile(DefaultContentNegotiation):
    """In an export, ``?format=`` names the file's format (as on the pages and in export_history), not DRF's
    renderer of the answer (which would answer 404 to ``?format=openai``)."""

    settings = cast(Any, SimpleNamespace(URL_FORMAT_OVERRIDE=None))


def format_names_the_file(view: Any) -> Any:
    """On a view made by ``api_view`` (which takes no negotiation class of its own): ``?format=`` is the file's."""
    view.cls.content_negotiation_class = _FormatNamesTheFile
    return view


def query_as(request: Request, model: type[BaseModel]) -> Any:
    """The query string as ``model`` (one value a name; names the model does not know are left to others, such as
    DRF's ``format``); else 400 ``{"error": ...}`` naming the parameter."""
    try:
        return model.model_validate({name: request.query_params.get(name) for name in request.query_params})
    except ValidationError as exc:
        raise _Invalid(schema.describe_validation_error(exc, prefix="")) from None


_PARAMETER_TYPES = {int: OpenApiTypes.INT, str: OpenApiTypes.STR, bool: OpenApiTypes.BOOL}


def query_parameters(model: type[BaseModel]) -> list[OpenApiParameter]:
    """The OpenAPI parameters of a query model (``query_as``): each field with its type and description."""
    out = []
    for name, info in model.model_fields.items():
        kinds: list[Any] = [t for t in getattr(info.annotation, "__args__", (info.annotation,)) if t is not type(None)]
        out.append(OpenApiParameter(info.alias or name, _PARAMETER_TYPES.get(kinds[0], OpenApiTypes.STR),
                                    description=info.description or ""))
    return out


def body_as(request: Request, model: type[BaseModel]) -> Any:
    """The body as ``model``; else 400 ``{"error": ...}`` naming the field (``exception_handler``)."""
    if not isinstance(request.data, dict):
        raise _Invalid("body: expected a JSON object")
    try:
        return model.model_validate(request.data)
    except ValidationError as exc:
        raise _Invalid(schema.describe_validation_error(exc, prefix="")) from None
