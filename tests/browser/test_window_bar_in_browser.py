"""What filled the window in Chromium, on AgentScope's user_1_trip (turns 1 and 2, imported through the one import
path): a reply's "What filled the window" opens its bar (the parts, their tokens, their messages), a part's link
lands at its message; the session's "Window over the session" draws the growth chart. Light and dark, 1440 and
390 px, readable, nothing wider than the screen, no console error."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents import models
from agents.ledger.context import reply_context
from tests.browser.conftest import (
    OVERFLOW,
    assert_readable,
    console_errors,
    htmx_idle,
    in_each_scheme,
    screenshot,
)
from tests.window_sessions import friday_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def friday(alice, tmp_path: Path) -> models.Session:
    session = friday_session("mem", tmp_path)
    models.Membership.objects.create(project=session.agent.project, user=alice, role="viewer")
    return session


def open_bar(page, seq: int) -> object:
    page.locator(f"#window-{seq} > summary").click()
    bar = page.locator(f"#window-bar-{seq}")
    bar.wait_for(state="visible")
    htmx_idle(page)
    return bar


def test_a_user_opens_a_reply_s_window_bar_and_follows_a_part_to_its_message(logged_in_page, live_server, friday,
                                                                            alice):
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}{friday.get_absolute_url()}")
    assert page.locator("#window-bar-9").count() == 0  # nothing loaded until asked
    bar = open_bar(page, 9)
    expected = {p.part: p.tokens for p in reply_context(user=alice, session_id=friday.pk, seq=9).parts}
    for part, tokens in expected.items():
        row = bar.locator(f'tr[data-part="{part}"]')
        assert row.locator("td.num").first.inner_text() == f"{tokens:,}", part
    assert bar.locator("svg.window-bar").first.get_attribute("role") == "img"
    assert "recalled memory 46" in bar.locator("svg.window-bar").first.get_attribute("aria-label")
    assert len(bar.locator("svg.window-bar").first.locator("rect.part-fill").all()) == 5
    # The recalled memory's message is one click away, and the page opens at it.
    bar.locator('tr[data-part="recalled_memory"] a', has_text="#7").click()
    page.wait_for_function("() => location.hash === '#m-7'")
    page.wait_for_load_state()
    assert page.evaluate("() => document.querySelector(':target')?.id") == "m-7"
    assert "at=7" in page.url
    # The growth chart: every reply, a polygon per part that has tokens, the window's line.
    page.locator("#window-over-session summary").click()
    chart = page.locator("#window-growth svg.window-growth")
    chart.wait_for(state="visible")
    htmx_idle(page)
    assert chart.locator("polygon").count() == 5
    assert chart.locator("line.window-line").count() == 0  # 421 tokens at most against 128,000: said instead
    assert "The window (128,000 tokens) is above the chart" in page.locator("#window-growth").inner_text()
    assert "Every reply of the session (4)" in page.locator("#window-growth").inner_text()
    assert errors == []


def test_the_window_bar_and_chart_read_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice, friday):
    selectors = ("#window-9 > summary", "#window-bar-9 .window-bar-said", '#window-bar-9 tr[data-part="system"] th',
                 '#window-bar-9 tr[data-part="system"] td.num', '#window-bar-9 tr[data-part="history"] a',
                 '#window-bar-9 tr[data-part="summary"] td.num', "#window-bar-9 tfoot a",
                 "#window-growth .window-legend li", "#window-growth .window-growth-axes",
                 "#window-growth .window-off-chart")
    for scheme, page, errors in in_each_scheme(browser, live_server):
        page.goto(f"{live_server.url}{friday.get_absolute_url()}")
        page.wait_for_load_state()
        open_bar(page, 9)
        page.locator("#window-over-session summary").click()
        page.locator("#window-growth svg.window-growth").wait_for(state="visible")
        htmx_idle(page)
        assert_readable(page, selectors, scheme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:
                assert page.evaluate(OVERFLOW) == [], scheme
            for target, name in (("#m-9", "bar"), ("#window-over-session", "growth")):
                page.locator(target).scroll_into_view_if_needed()
                page.locator(target).screenshot(path=str(screenshot(page, f"window-{name}-{scheme}-{width}")
                                                         .with_name(f"window-{name}-{scheme}-{width}.png")))
        assert errors == [], scheme
