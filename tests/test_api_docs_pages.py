"""The API's reference pages (Swagger UI at /api/docs/, Redoc at /api/redoc/) lead back to memoryviz and to each
other, under the Content-Security-Policy: the bar's styles come from a file, never inline."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest


class _Page(HTMLParser):
    """The links of the ``nav.mv-apinav`` bar, the stylesheets and the scripts of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.nav_depth = 0
        self.links: list[tuple[str, str, bool]] = []  # href, text, aria-current
        self.stylesheets: list[str] = []
        self.scripts: list[str | None] = []
        self._link: list[str] | None = None
        self._current = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "nav" and "mv-apinav" in (a.get("class") or "").split():
            self.nav_depth = 1
        elif tag == "nav" and self.nav_depth:
            self.nav_depth += 1
        if tag == "a" and self.nav_depth:
            self._link = [a.get("href") or "", ""]
            self._current = a.get("aria-current") == "page"
        if tag == "link" and a.get("rel") == "stylesheet":
            self.stylesheets.append(a.get("href") or "")
        if tag == "script":
            self.scripts.append(a.get("src"))

    def handle_data(self, data: str) -> None:
        if self._link is not None:
            self._link[1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._link is not None:
            self.links.append((self._link[0], " ".join(self._link[1].split()), self._current))
            self._link = None
        if tag == "nav" and self.nav_depth:
            self.nav_depth -= 1


def _page(client, url: str) -> _Page:
    response = client.get(url)
    assert response.status_code == 200
    page = _Page()
    page.feed(response.content.decode())
    return page


@pytest.mark.parametrize(("url", "current"), [("/api/docs/", "Swagger UI"), ("/api/redoc/", "Redoc")])
def test_it_leads_from_the_api_reference_back_to_memoryviz_and_to_the_other_api_pages(alice_client, url, current):
    page = _page(alice_client, url)
    assert page.links == [
        ("/", "← Back to memoryviz", False),
        ("/api/docs/", "Swagger UI", current == "Swagger UI"),
        ("/api/redoc/", "Redoc", current == "Redoc"),
        ("/api/", "Browsable API", False),
        ("/api/schema/", "OpenAPI schema", False),
    ]
    # Styled from a file of this origin (no inline style to allow), every script a file too.
    assert "/static/css/api_nav.css" in page.stylesheets
    assert None not in page.scripts


def test_it_leads_from_the_browsable_api_back_to_memoryviz(alice_client):
    html = alice_client.get("/api/", HTTP_ACCEPT="text/html").content.decode()
    assert '<a class="navbar-brand" href="/">' in html
    assert "django-rest-framework.org" not in html
