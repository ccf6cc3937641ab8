"""Real-browser tests: Debian's Chromium driven by Playwright, against Django's live server.

Playwright never downloads a browser here: it launches the system ``chromium``. When it is missing the tests
fail with a message that says how to install it (``make system-deps``), never skip silently.

The pages run under a Content-Security-Policy without 'unsafe-eval': Playwright evaluates a bare expression given to
``wait_for_function`` with eval in the page, which the policy refuses, so the pages of these fixtures wrap one into a
function (``"() => (...)"``).
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run inside one unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Chromium is not installed: run `make system-deps` (as root) to install Debian's chromium.")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.on("page", _functions_not_expressions)
    page = context.new_page()
    yield page
    context.close()


def _functions_not_expressions(page: object) -> None:
    """``wait_for_function("expr")`` as ``wait_for_function("() => (expr)")``: Playwright evaluates a bare expression
    with eval in the page, which the pages' Content-Security-Policy refuses; a function it does not."""
    original = page.wait_for_function  # type: ignore[attr-defined]

    def wait_for_function(expression: str, *args: object, **kwargs: object) -> object:
        head = expression.lstrip()
        if not head.startswith(("(", "function", "async")) and "=>" not in head.split("\n", 1)[0]:
            expression = f"() => ({expression})"
        return original(expression, *args, **kwargs)

    page.wait_for_function = wait_for_function  # type: ignore[attr-defined]


@pytest.fixture
def logged_in_page(page, live_server, alice):
    log_in(page, live_server)
    return page


def in_each_scheme(browser, live_server) -> Iterator[tuple[str, Any, list[str]]]:
    """A page logged in as alice in each colour scheme, light then dark, each in a context of its own (1440 x 900),
    closed when the next begins or the loop ends: ``(scheme, page, its console errors from now on)``."""
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
        try:
            page = context.new_page()
            errors = console_errors(page)
            log_in(page, live_server)
            yield scheme, page, errors
        finally:
            context.close()


def log_in(page, live_server) -> None:
    """Log ``page`` in as alice (the ``alice`` fixture's user) through the login page."""
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


HTMX_IDLE = "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"


def htmx_idle(page) -> None:
    """Wait until htmx has no request in flight and has settled what it swapped in: a field typed into before
    htmx has processed the form it belongs to sends nothing (this raced on the loaded CI machine)."""
    page.wait_for_function(HTMX_IDLE)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# WCAG's contrast of an element's text against the first opaque background behind it, as a JavaScript function
# ``contrastOf(element)`` -> [ratio, colour, background]; CONTRAST and the dark-mode test's sweep call it.
WCAG = """const contrastOf = (e) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let p = e, back = null;
  while (p) {
    const c = rgb(getComputedStyle(p).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) { back = c.slice(0, 3); break; }
    p = p.parentElement;
  }
  back = back || [255, 255, 255];
  const colour = getComputedStyle(e).color, a = lum(rgb(colour).slice(0, 3)), b = lum(back);
  return [(Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), colour, back];
};"""

# The contrast of the text of the element ``selector`` names (None when there is none).
CONTRAST = f"""(selector) => {{
  {WCAG}
  const e = document.querySelector(selector);
  return e ? contrastOf(e)[0] : null;
}}"""

# The page's sideways overflow at a phone's width: elements past the right edge that no scrolling box holds.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width) out.push(`document ${document.documentElement.scrollWidth}`);
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || r.right <= width + 1) continue;
    let p = e.parentElement, held = false;
    for (; p; p = p.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) { held = true; break; }
    }
    if (!held) out.push(`${e.tagName.toLowerCase()}.${e.className} right=${Math.round(r.right)}`);
  }
  return out.slice(0, 10);
}"""


def assert_readable(page, selectors, *where: object) -> None:
    """Each selector's text contrasts 4.5:1 at least with what is behind it (WCAG AA); ``where`` names the case in
    the failure (the colour scheme, the page, the width)."""
    for selector in selectors:
        ratio = page.evaluate(CONTRAST, selector)
        assert ratio is not None and ratio >= 4.5, (*where, selector, ratio)


def console_errors(page) -> list[str]:
    """The console errors and uncaught exceptions of ``page`` from now on (a list that fills as they come)."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors
