"""Keyboard use in a real Chromium: the skip link, a visible focus ring on checkboxes, Escape on the Export menu."""
from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _outline(locator) -> dict[str, str]:
    return locator.evaluate(
        "(e) => { const s = getComputedStyle(e); "
        "return {style: s.outlineStyle, width: s.outlineWidth, color: s.outlineColor}; }"
    )


def test_the_keyboard_reaches_the_content_sees_its_focus_and_closes_the_export_menu(
    logged_in_page, live_server, make_session
):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("#session-table")

    # The first Tab reaches a skip link, shown while focused; Enter moves the focus to the page's content.
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    assert page.evaluate("() => document.activeElement.className") == "skip-link"
    box = skip.bounding_box()
    assert box is not None and box["y"] >= 0 and skip.is_visible()
    screenshot(page, "skip-link")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "main"

    # A checkbox reached by the keyboard shows a ring in the accent colour (the soft one was invisible).
    checkbox = page.locator("input[name=violations]")
    checkbox.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.name") == "violations"
    ring = _outline(checkbox)
    assert ring["style"] == "solid" and ring["width"] == "2px" and ring["color"] == "rgb(59, 91, 219)", ring

    # Escape closes the Export menu, from its button or from inside its form, and the focus goes back to its button.
    summary = page.locator("summary:has-text('Export these sessions')")
    summary.click()
    menu = page.locator("details.export-menu")
    assert menu.evaluate("(d) => d.open") is True
    page.locator(".export-menu select[name=format]").focus()
    page.keyboard.press("Escape")
    assert menu.evaluate("(d) => d.open") is False
    assert page.evaluate("() => document.activeElement.tagName") == "SUMMARY"
    summary.click()
    page.keyboard.press("Escape")
    assert menu.evaluate("(d) => d.open") is False
