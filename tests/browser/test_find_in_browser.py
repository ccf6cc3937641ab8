"""Find inside a session in a real Chromium: a list search opens the session on its first hit, the page's own search
bar steps through the hits, marked in the chain (phone and desktop, light and dark)."""
from __future__ import annotations

import json

import pytest

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _chain(n: int = 60) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "You look up parcels."}]
    for i in range(1, n):
        if i % 20 == 0:
            arguments = json.dumps({"parcel": f"PX-{i}", "carrier": "<b>dhl</b>"})
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": "track_parcel", "arguments": arguments}}]})
            messages.append({"role": "tool", "tool_call_id": f"call_{i}",
                             "content": f"Parcel PX-{i} is stuck at <customs>."})
        else:
            messages.append({"role": "user" if i % 2 else "assistant",
                             "content": f"Small talk number {i}, nothing to see."})
    return messages


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))  # the viewport: what the person sees after the jump


def _login(page, live_server) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


def _in_view(page, selector: str) -> bool:
    return page.locator(selector).evaluate(
        "(e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; }"
    )


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (390, "dark"), (1440, "dark"), (390, "light")])
def test_it_opens_a_session_on_its_first_hit_and_steps_through_the_hits(browser, live_server, alice, make_session,
                                                                        width, scheme):
    session = make_session(_chain(), title="Parcel desk")
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    try:
        _login(page, live_server)
        # A list search for "customs" links each session with the query; the session opens on its first hit.
        page.goto(f"{live_server.url}/?q=customs")
        page.click("a:has-text('Parcel desk')")
        page.wait_for_selector("#find-count")
        first = session.messages.filter(content__icontains="customs").order_by("seq").first().seq
        assert f"at={first}" in page.url and page.url.endswith(f"#m-{first}")
        assert page.locator("#find-count").inner_text() == "hit 1 of 2"
        assert page.locator(f"#m-{first}.hit-current mark.hit").inner_text() == "customs"
        assert _in_view(page, f"#m-{first}")
        # The agent's markup stays text around the mark.
        assert "<customs>" in page.locator(f"#m-{first} .text").inner_text()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        _shot(page, f"find-first-hit-{width}-{scheme}")

        # The page's own search bar: a tool's argument; Enter lands on the first hit, "next" on the second.
        page.fill("#find-q", "PX-40")
        page.press("#find-q", "Enter")
        page.wait_for_selector("#find-count:has-text('hit 1 of')")
        call = page.locator(".msg.hit-current")
        assert call.locator(".call mark.hit").first.inner_text() == "PX-40"
        page.click("#find-next")
        page.wait_for_selector("#find-count:has-text('hit 2 of 2')")
        current = page.locator(".msg.hit-current")
        assert current.get_attribute("class").count("role-tool")
        assert _in_view(page, ".msg.hit-current")
        page.click("#find-previous")
        page.wait_for_selector("#find-count:has-text('hit 1 of 2')")
        _shot(page, f"find-steps-{width}-{scheme}")

        # Show only one tool's calls and results: the search stays, and counts inside the filter.
        page.select_option("#filter-tool", "track_parcel")
        page.click("#chain-filter button[type=submit]")
        page.wait_for_selector("#filter-note")
        roles = page.eval_on_selector_all(".messages .msg", "(els) => els.map((e) => e.className)")
        # From the first hit on (PX-40's call and result); the calls before it one "load earlier" away.
        assert len(roles) == 2 and all("role-assistant" in r or "role-tool" in r for r in roles), roles
        assert page.locator("a.load-earlier").count() == 1
        assert "tool=track_parcel" in page.url and "q=PX-40" in page.url
        assert page.locator("#find-count").inner_text() == "hit 1 of 2"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        _shot(page, f"find-filtered-{width}-{scheme}")
        page.click("#filter-clear")
        page.wait_for_selector("#find-count")
        assert page.locator("#filter-note").count() == 0 and page.locator(".messages .msg").count() > 4
    finally:
        context.close()
