"""What every view module shares, so that no view module imports another."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from agents.memory.chain import _gc_paused

V = TypeVar("V", bound=Callable[..., Any])


def collector_paused(view: V) -> V:
    """Run the view with CPython's cyclic garbage collector paused. A trim of a long session builds a few hundred
    thousand objects (its outlines, the trimmed list, the preview's rows) that live until the answer is made and
    are in no cycle; each collection their allocations set off rescanned all of them, a 200,000-message lab
    preview spent more time there than trimming (bench/README.md). Reference counting frees them when the view
    returns; the collector runs again from then on, and collects whatever cycles the request left."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with _gc_paused():
            return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def int_or_none(value: str | None) -> int | None:
    """A place or offset from the query string: a whole number from -1 up, else None (absent, or not one)."""
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return None
    return number if number is None or number >= -1 else None


class VaryOnHtmxMiddleware:
    """Adds ``Vary: HX-Request`` to every response.

    A page and its htmx fragment share one URL (``template_name + "#region"``). Without the header a browser may
    answer a later navigation to that URL from its cache with the fragment it fetched for htmx: Back after filtering
    the list showed the bare, unstyled table."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        patch_vary_headers(response, ("HX-Request",))
        return response
