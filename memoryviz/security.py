"""Content-Security-Policy on every response (Django 5.2 has no built-in one).

memoryviz's pages load scripts and styles from its own origin only: no inline script, no inline style, no eval
(htmx is configured in base.html not to need them). Conversations are untrusted content; should an escaping bug ever
let markup through, the browser still refuses to run it.
"""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

# The admin and the API's pages render third-party templates with inline <style> blocks and style attributes
# (Django's change list, DRF's Pygments colours and filter buttons, Swagger UI, Redoc): their pages may use inline
# styles, never inline scripts.
THIRD_PARTY_NAMESPACES = frozenset({"admin", "api"})


def policy_header(*, third_party: bool = False) -> str:
    directives = dict(settings.CONTENT_SECURITY_POLICY)
    if third_party:
        directives["style-src"] = f"{directives.get('style-src', '')} 'unsafe-inline'".strip()
        # Redoc (the API reference) runs its search in a worker made from its own code.
        directives["worker-src"] = "'self' blob:"
    if settings.CSP_REPORT_URI:
        directives["report-uri"] = settings.CSP_REPORT_URI
    return "; ".join(f"{name} {value}".strip() for name, value in directives.items())


class ContentSecurityPolicyMiddleware:
    """Adds ``Content-Security-Policy`` (or ``-Report-Only`` with ``CSP_REPORT_ONLY=true``) to every response that
    has none yet."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.header = "Content-Security-Policy-Report-Only" if settings.CSP_REPORT_ONLY else "Content-Security-Policy"
        self.strict = policy_header()
        self.third_party = policy_header(third_party=True)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.header in response:
            return response
        if settings.DEBUG and response.status_code in (404, 500):
            # Django's debug pages (DEBUG only) are built of inline styles and scripts.
            return response
        match = request.resolver_match
        third_party = match is not None and not THIRD_PARTY_NAMESPACES.isdisjoint(match.namespaces)
        response[self.header] = self.third_party if third_party else self.strict
        return response
