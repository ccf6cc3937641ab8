"""Jumps on the session page in a real Chromium: next/previous tool error from the message on screen, the header's
list of tool errors, "go to #N" and "last message" (desktop and phone)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _chain(n: int = 400) -> list[dict]:
    """Failing calls at #41/#42, #201/#202 and #361/#362 (the last on the second page), an orphan at #120."""
    out: list[dict] = [{"role": "system", "content": "You probe hosts."}]
    while len(out) < n:
        i = len(out)
        if i in (41, 201, 361):
            call = {"name": "probe_host", "arguments": '{"host": "db-1"}'}
            out.append({"role": "assistant", "content": None,
                        "tool_calls": [{"id": f"c{i}", "type": "function", "function": call}]})
            out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"timeout after 30 s ({i})",
                        "is_error": True})
        elif i == 120:
            out.append({"role": "tool", "tool_call_id": "ghost", "content": "nobody asked"})
        else:
            out.append({"role": "user" if i % 2 else "assistant", "content": f"Status line {i}."})
    return out


def _login(page, live_server) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


def _visible(page, seq: int) -> bool:
    return page.locator(f"#m-{seq}").evaluate(
        "(e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; }"
    )


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (390, "dark")])
def test_it_jumps_between_tool_errors_and_goes_to_a_message(browser, live_server, alice, make_session, width, scheme):
    session = make_session(_chain(), title="Probe run")
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    try:
        _login(page, live_server)
        page.goto(f"{live_server.url}{session.get_absolute_url()}")
        # The header lists the tool errors with their tool; the badge counts them.
        assert page.locator("#session-tool-errors a").inner_text() == "3"
        assert page.locator("#tool-errors li").count() == 3
        assert "probe_host" in page.locator("#tool-errors li").first.inner_text()

        page.click("#jump-error-next")
        page.wait_for_url("**#m-42")
        assert _visible(page, 42)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"jumps-error-{width}-{scheme}.png"))
        page.click("#jump-error-next")
        page.wait_for_url("**#m-202")
        # Scrolled on by hand past #250, "next tool error" goes from there: #362, on the next page.
        page.locator("#m-250").scroll_into_view_if_needed()
        page.evaluate("() => document.getElementById('m-250').scrollIntoView({block: 'start'})")
        page.click("#jump-error-next")
        page.wait_for_url("**?at=362#m-362")
        assert _visible(page, 362)
        page.click("#jump-error-prev")
        page.wait_for_url("**?at=202#m-202")
        # None after the last: the page stays and says so.
        page.goto(f"{live_server.url}{session.get_absolute_url()}?at=362#m-362")
        page.click("#jump-error-next")
        page.wait_for_selector("#jump-none")
        assert page.locator("#jump-none").inner_text() == "No tool error after #362."

        page.click("#jump-violation-prev")
        page.wait_for_url("**?at=120#m-120")
        page.fill("#goto-at", "333")
        page.press("#goto-at", "Enter")
        page.wait_for_url("**?at=333#m-333")
        assert _visible(page, 333)
        page.click("#jump-last")
        page.wait_for_url("**#m-399")
        assert _visible(page, 399)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        page.goto(f"{live_server.url}{session.get_absolute_url()}")
        page.screenshot(path=str(ARTIFACTS / f"jumps-header-{width}-{scheme}.png"), full_page=False)
    finally:
        context.close()
