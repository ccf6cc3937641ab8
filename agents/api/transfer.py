"""The API's import and export: the formats, a session or the list's sessions downloaded in any format (whole or
trimmed), and a history file imported."""
from __future__ import annotations

import json
from typing import Any

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, ConfigDict
from rest_framework.decorators import parser_classes
from rest_framework.exceptions import ValidationError as _Invalid
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.endpoints import ApiError, api, bad_request, documented, format_names_the_file, write_api
from agents.memory.formats import ALL_FORMATS, FORMATS, FormatSpec, format_layers
from agents.throttling import expensive_api
from agents.transfer import import_page, pages


def _format_dict(spec: FormatSpec) -> dict[str, Any]:
    reads, writes = format_layers(spec.name)
    return {"name": spec.name, "label": spec.label, "description": spec.description, "reads": reads,
            "writes": writes}


@documented("formats_list", "Formats memoryviz reads and writes")
@api
def format_list(request: Request) -> Response:
    """The message formats, then the memory formats; each with the layers (``messages``, ``memory``) it reads and
    writes: a session exports to a format that writes ``messages``, a memory store to one that writes ``memory``."""
    return Response({"formats": [_format_dict(spec) for spec in ALL_FORMATS.values()]})




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
        return bad_request(str((answer.page or {}).get("error") or "nothing to export"))
    return pages.export_download(answer)


@extend_schema(operation_id="session_export", summary="Download a session in any format, whole or trimmed",
               parameters=_EXPORT_FIELDS, request=None, responses=_EXPORT_ANSWERS)
@format_names_the_file
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
@format_names_the_file
@write_api(["POST"])
@expensive_api
def export_create(request: Request) -> Any:
    """The sessions of your projects matching the session list's filters (``project``, ``agent``, ``q``, ``tool``,
    ``violations``, ``errors``, dates, tokens, labels), in one file, as the export page downloads them. A filter
    that cannot apply (another project, an invalid value) is refused, never dropped."""
    return _export_answer(request)


class ImportUpload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    project: str | None = None
    agent: str | None = None
    format: str | None = None


@documented(
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
        return bad_request("file: send the history as a multipart file field named file")
    options = ImportUpload.model_validate({k: request.data.get(k) or None for k in ("project", "agent", "format")})
    report = import_page.import_from_api(user=request.user, upload=upload, project=options.project,
                                         agent=options.agent, format=options.format)
    return Response(report.to_dict(), status=201)
