"""Bounded cost per request: the expensive endpoints (the lab, compare and report pages, diffs, the trim API,
exports and imports) are throttled per user, and at most a configured number run at once in one server process.

One rate for the API and the pages: DRF's throttling on the API (``ExpensiveThrottle``), the same class asked by
the pages' decorator (``expensive``), so that both count against one budget per user. Beyond the rate the answer is
429 with ``Retry-After``; when the process already runs ``MEMORYVIZ_EXPENSIVE_CONCURRENCY`` of them, 503 with
``Retry-After`` at once ("busy, try again"), never a worker left waiting. A streamed answer (an export) holds its
place until the last chunk is sent.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from rest_framework.exceptions import APIException, Throttled
from rest_framework.throttling import UserRateThrottle

SCOPE = "expensive"


class ExpensiveThrottle(UserRateThrottle):
    """Per user (per client address when anonymous): ``MEMORYVIZ_EXPENSIVE_RATE`` requests to expensive endpoints,
    API and pages together."""

    scope = SCOPE

    def __init__(self) -> None:
        self.cache = caches["throttle"]
        super().__init__()

    def get_rate(self) -> str | None:
        # Read at each request, so that a test or an operator changing the setting is obeyed without a restart.
        return settings.MEMORYVIZ_EXPENSIVE_RATE or None

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            # An API key acts for its project: its requests count against the key, not a user row it lacks.
            ident = f"key-{user.api_key.pk}" if hasattr(user, "api_key") else user.pk
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


class Busy(APIException):
    status_code = 503
    default_detail = "The server is busy with other long requests; try again in a few seconds."
    default_code = "busy"

    def __init__(self, wait: int) -> None:
        super().__init__()
        self.wait = wait


class _Slots:
    """At most ``MEMORYVIZ_EXPENSIVE_CONCURRENCY`` expensive requests at once in this process (0: no limit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0

    def take(self) -> bool:
        limit = settings.MEMORYVIZ_EXPENSIVE_CONCURRENCY
        with self._lock:
            if limit and self.running >= limit:
                return False
            self.running += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


SLOTS = _Slots()


def admit(request: Any) -> Callable[[], None]:
    """Let an expensive request in, or raise ``Throttled`` (over the user's rate) or ``Busy`` (no free slot).
    Returns what to call when the work is done (exactly once)."""
    throttle = ExpensiveThrottle()
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # no view: the rate is per user
        raise Throttled(wait=throttle.wait())
    if not SLOTS.take():
        raise Busy(wait=settings.MEMORYVIZ_BUSY_RETRY_SECONDS)
    done = threading.Event()

    def release() -> None:
        if not done.is_set():
            done.set()
            SLOTS.give_back()

    return release


class _Releasing:
    """A streamed body that gives its slot back when it ends or is closed, whether or not it was started."""

    def __init__(self, chunks: Iterable[Any], release: Callable[[], None]) -> None:
        self._chunks = iter(chunks)
        self._release = release

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._chunks)
        except BaseException:
            self._release()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._release()


def _run_holding(release: Callable[[], None], view: Callable[..., Any], request: Any, *args: Any, **kwargs: Any) -> Any:
    """Run the view in the slot that ``release`` gives back: at once when the view fails or answers, or, for a
    streamed response, once it is sent (or dropped)."""
    try:
        response = view(request, *args, **kwargs)
    except BaseException:
        release()
        raise
    if isinstance(response, StreamingHttpResponse) and not response.is_async:
        response.streaming_content = _Releasing(cast(Iterator[bytes], response.streaming_content), release)
    else:
        release()
    return response


def refusal(request: HttpRequest, exc: Throttled | Busy) -> HttpResponse:
    """The page's "wait and try again", with ``Retry-After``: 429 over the rate, 503 when busy."""
    wait = max(1, int(getattr(exc, "wait", None) or 1))
    busy = isinstance(exc, Busy)
    context = {"busy": busy, "wait": wait}
    template = "agents/busy.html"
    if getattr(request, "htmx", False):
        template += "#busy-message"
    response = render(request, template, context, status=503 if busy else 429)
    response["Retry-After"] = str(wait)
    return response


def expensive(view: Callable[..., HttpResponseBase] | None = None, *, methods: tuple[str, ...] = ()) -> Any:
    """For a page: throttled per user and limited in concurrency, as the API's expensive endpoints are.
    ``methods``: only requests with these methods are (``("POST",)``: the form itself is cheap)."""
    if view is None:
        return functools.partial(expensive, methods=methods)

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if methods and request.method not in methods:
            return view(request, *args, **kwargs)
        try:
            release = admit(request)
        except (Throttled, Busy) as exc:
            return refusal(request, exc)
        return _run_holding(release, view, request, *args, **kwargs)

    return wrapped


def expensive_api(view: Callable[..., Any]) -> Callable[..., Any]:
    """For a DRF function view (inside ``api_view``): the same admission, answered by DRF's exception handler
    (429 or 503 with ``Retry-After`` and ``{"error": ...}``)."""

    @functools.wraps(view)
    def wrapped(request: Any, *args: Any, **kwargs: Any) -> Any:
        return _run_holding(admit(request), view, request, *args, **kwargs)

    return wrapped
