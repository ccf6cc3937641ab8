"""What every view module shares, so that no view module imports another."""
from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails


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
