"""Dark mode: the pages follow the system's colour scheme (prefers-color-scheme), with readable contrast."""
from __future__ import annotations

import pytest

from tests.browser.conftest import CONTRAST, WCAG, screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# Surfaces that once kept a hard-coded light colour in dark mode: each must follow the scheme.
SURFACES = {
    "list": ["#session-table .badge-status"],
    "session": ["kbd"],
    "lab": [".strip-cell.strip-dropped"],
}
BACKGROUND = """(selector) => {
  const e = document.querySelector(selector);
  if (!e) return null;
  const [r, g, b] = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""

# Every text shown under an element whose contrast against its background is under 4.5 (WCAG's formula, as CONTRAST):
# "text (colour on background): ratio", once per kind. For a page whose styles are not ours (Redoc's, generated
# class names), where naming a few selectors would miss the rest.
UNREADABLE = f"""(root) => {{
  {WCAG}
  const found = new Map();
  for (const e of document.querySelectorAll(`${{root}} *`)) {{
    const text = [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent.trim()).join("");
    if (!text || !e.getBoundingClientRect().height) continue;  // no text of its own, or not shown
    const [ratio, colour, back] = contrastOf(e);
    if (ratio < 4.5 && !found.has(colour + back)) {{
      found.set(colour + back, `${{text.slice(0, 40)}} (${{colour}} on rgb(${{back}})): ${{ratio.toFixed(2)}}`);
    }}
  }}
  return [...found.values()];
}}"""


def _luminance(page) -> float:
    # A transparent body (DRF's light pages: a background image over the canvas) shows the white canvas.
    return page.evaluate(
        "() => { const [r, g, b, a] = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);"
        " if (a === 0) return 1; return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; }"
    )


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_pages_follow_the_system_colour_scheme_with_readable_text(browser, live_server, alice, make_session,
                                                                      scheme):
    session = make_session(TRAVEL, title="Paris and Tokyo")
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit]")
        page.wait_for_selector("#session-table")
        pages = {
            "list": ("/", ["#session-table td.title-cell > a", "#session-table .muted", "label[for=id_q]",
                           "table.data th", ".sidebar-title"]),
            "session": (f"/sessions/{session.pk}/", ["article.msg .text", "article.msg .role", ".facts dt",
                                                     ".badge-violation, .badge-error, .badge-ok"]),
            "lab": (f"/sessions/{session.pk}/lab/?strategy=buffered&buffer_size=3",
                    [".strategy-about p", ".param .help", "#kept-count", ".lab-reason", "button.button.primary"]),
            # The browsable API (DRF's own pages, through templates/rest_framework/api.html and static/css/api.css).
            "api": (f"/api/sessions/{session.pk}/", ["ul.breadcrumb a", ".page-header h1", ".response-info pre",
                                                     ".content-main .pull-left code"]),
            # The top bar's "API": Swagger UI, in its own dark theme (html.dark-mode) when the system prefers dark.
            "docs": ("/api/docs/", [".swagger-ui .info .title", ".swagger-ui .opblock-tag",
                                    ".swagger-ui .opblock-summary-description"]),
            # Redoc: started with a dark theme (static/js/redoc_dark.js) when the system prefers dark.
            "redoc": ("/api/redoc/", [".api-info h1", ".menu-content label", ".api-content h2",
                                      ".api-content p"]),
        }
        for name, (path, selectors) in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state()
            if name == "docs":
                page.wait_for_selector(".swagger-ui .opblock-summary-description")
            if name == "redoc":
                page.wait_for_selector(".api-content h2")
                assert page.evaluate(UNREADABLE, "#redoc-container") == [], scheme
            dark = _luminance(page) < 0.2
            assert dark is (scheme == "dark"), (name, _luminance(page))
            for selector in selectors:
                ratio = page.evaluate(CONTRAST, selector)
                assert ratio is not None, (name, selector)
                assert ratio >= 4.5, (scheme, name, selector, round(ratio, 2))
            for selector in SURFACES.get(name, []):
                surface = page.evaluate(BACKGROUND, selector)
                assert surface is not None, (name, selector)
                assert (surface < 0.4) if scheme == "dark" else (surface > 0.6), (scheme, name, selector, surface)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                screenshot(page, f"{scheme}-{name}-{width}")
            page.set_viewport_size({"width": 1440, "height": 900})
    finally:
        context.close()
