"""The API's reference pages in Chromium: the bar above Swagger UI and Redoc shows the way back to memoryviz, readable
in both colour schemes, beside the page it sits on (not over it), without a console error or a refusal by the
Content-Security-Policy."""
from __future__ import annotations

import pytest

from tests.browser.conftest import CONTRAST, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = {
    # The page's own content, which waits for its scripts to build it from the schema.
    "docs": ("/api/docs/", ".swagger-ui .info .title"),
    "redoc": ("/api/redoc/", ".api-info h1"),
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_api_reference_shows_the_way_back_to_memoryviz(browser, live_server, alice, name, scheme):
    path, content = PAGES[name]
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit]")
        page.wait_for_selector("#session-table")

        page.goto(f"{live_server.url}{path}")
        page.wait_for_selector(content, timeout=20_000)
        back = page.get_by_role("link", name="Back to memoryviz")
        assert back.is_visible()
        box = back.bounding_box()
        assert box is not None and box["y"] < 48 and box["x"] < 100  # at the top left, where a way out is looked for
        for label in ("Swagger UI", "Redoc", "Browsable API", "OpenAPI schema"):
            assert page.locator(".mv-apinav").get_by_role("link", name=label).is_visible()
        for selector in (".mv-apinav-home", ".mv-apinav li a"):
            assert page.evaluate(CONTRAST, selector) >= 4.5, (selector, scheme)
        # The bar sits above the page's own content, not over it.
        bar = page.locator(".mv-apinav").bounding_box()
        title = page.locator(content).first.bounding_box()
        assert bar is not None and title is not None and title["y"] >= bar["y"] + bar["height"]
        screenshot(page, f"api-{name}-nav-{scheme}")

        back.click()
        page.wait_for_selector("#session-table")
        assert page.url == f"{live_server.url}/"
        # Redoc's "API docs by Redocly" logo comes from Redocly's CDN: the policy keeps it out, as meant.
        problems = [p for p in problems if "cdn.redoc.ly" not in p]
        assert problems == [], "\n".join(problems)
    finally:
        context.close()
