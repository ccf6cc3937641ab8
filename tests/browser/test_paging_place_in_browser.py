"""Paging keeps the place in a real Chromium: "load more" puts the loaded page in the address, so a reload comes back
there; "load earlier" puts the page before in front without moving what the reader is looking at."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import ARTIFACTS, htmx_idle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_load_more_keeps_the_place_and_load_earlier_prepends(logged_in_page, live_server, make_session):
    page = logged_in_page
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(700)]
    session = make_session(messages, title="Seven hundred")
    page.goto(f"{live_server.url}{session.get_absolute_url()}")
    page.click(".load-more a.button")
    page.locator("#m-300").wait_for()
    htmx_idle(page)
    assert re.search(r"\?at=300$", page.url), page.url
    # A reload opens the page loaded, scrolled to its first message.
    page.reload()
    page.wait_for_url(re.compile(r"\?at=300#m-300$"))
    assert page.locator("#m-299").count() == 0
    page.wait_for_function(
        "() => { const r = document.getElementById('m-300').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )
    # "Load earlier" puts #0-#299 in front; #300 stays where it was on screen.
    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator("a.load-earlier").scroll_into_view_if_needed()
    before = page.locator("#m-300").bounding_box()["y"]
    page.click("a.load-earlier")
    page.locator("#m-299").wait_for(state="attached")
    htmx_idle(page)
    assert page.locator("#m-0").count() == 1 and page.locator("a.load-earlier").count() == 0
    seqs = page.eval_on_selector_all(".messages .msg", "(els) => els.map((e) => Number(e.id.slice(2)))")
    assert seqs == list(range(600))
    assert abs(page.locator("#m-300").bounding_box()["y"] - before) < 5
    assert re.search(r"\?at=300#m-300$", page.url)  # the place did not move
    # The footer counts from the new first message on screen, and so does the next "load more".
    assert "messages 0–599 of 700" in page.locator(".load-more").inner_text()
    page.click(".load-more a.button")
    page.locator("#m-699").wait_for(state="attached")
    htmx_idle(page)
    assert "700 of 700 shown" in page.locator(".load-more").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paging-earlier-1400.png"))
