"""What the OTLP/HTTP receiver decides for one request, in one call from its view: who sends it (a project's API
key as Bearer), whether its body may be read (its declared size) and decoded, and what was stored of its spans or
log records. The view reads the request and answers in OTLP's own encoding."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from agents.capture import ingest, live_memory
from agents.memory import otlp
from agents.memory.llm_calls import extract
from agents.memory.memory_spans import extract_memory
from agents.projects import keys


@dataclass
class Receipt:
    """A refusal (``status`` 4xx and its ``message``: nothing stored), or what the batch stored: how many spans
    or log records could not be used (``rejected``), and why; ``error_message`` also names what was kept only in
    part (OTLP's warnings: a partial success with nothing rejected)."""

    status: int = 200
    message: str = ""
    rejected: int = 0
    error_message: str = ""


def otlp_receive(*, signal: otlp.Signal, authorization: str, declared_length: str, read: Callable[[int], bytes],
                 content_type: str, content_encoding: str) -> Receipt:
    """One OTLP/HTTP export request of ``signal``: ``authorization`` (the header), ``declared_length`` (its
    Content-Length), ``read`` (reads the body, at most the bytes asked: called only once the key and the size
    are accepted)."""
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return Receipt(401, "missing API key: send the header Authorization: Bearer <key> "
                            "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<key>)")
    try:
        api_key = keys.api_key_authenticate(key=key)
    except keys.ApiKeyError as exc:
        return Receipt(401, str(exc))
    limit = settings.MEMORYVIZ_OTLP_MAX_BYTES
    if declared_length.isdigit() and int(declared_length) > limit:
        return Receipt(413, f"body too large: {declared_length} bytes, the limit is {limit}")
    body = read(limit + 1)
    try:
        batch = otlp.decode(body, signal=signal, content_type=content_type, content_encoding=content_encoding,
                            max_bytes=limit)
    except otlp.OtlpError as exc:
        return Receipt(exc.status, str(exc))
    # Read first, then stored under one writer: the calls, then what the same batch says of memory (its writes,
    # reads and compactions, and the calls its reads fed).
    calls, memory_spans = extract(batch), extract_memory(batch)
    with ingest.request_writer():
        result = ingest.otlp_ingest(api_key=api_key, batch=batch, extraction=calls)
        memory = live_memory.memory_ingest(project=api_key.project, batch=batch, calls=result,
                                           extraction=memory_spans)
    result.rejected += memory.rejected
    result.problems += memory.problems
    return Receipt(rejected=result.rejected, error_message=result.error_message)
