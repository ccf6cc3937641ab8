"""The session page's keys in a real Chromium: j/k between messages, / and n/p through the hits of a search, e to the
next tool error, g to go to #N, G to the last message, ? lists them (desktop and phone, light and dark)."""
from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _chain(n: int = 80) -> list[dict]:
    """Failing calls answered at #21 and #41 (their calls name a parcel: PX-20, PX-40), plain messages between."""
    out: list[dict] = [{"role": "system", "content": "You track parcels."}]
    while len(out) < n:
        i = len(out)
        if i in (20, 40):
            out.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                        "function": {"name": "track", "arguments": json.dumps({"parcel": f"PX-{i}"})}}]})
            out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"carrier down for PX-{i}",
                        "is_error": True})
        else:
            out.append({"role": "user" if i % 2 else "assistant", "content": f"Line {i}."})
    return out


def _key_current(page) -> str:
    return page.evaluate("() => (document.querySelector('.msg.key-current') || {}).id || ''")


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (390, "dark"), (1440, "dark"), (390, "light")])
def test_the_keys_move_through_messages_hits_and_errors(browser, live_server, alice, make_session, width, scheme):
    session = make_session(_chain(), title="Parcel keys")
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_load_state()
        url = f"{live_server.url}{session.get_absolute_url()}"
        page.goto(f"{url}?at=10")
        page.wait_for_url(re.compile(r"#m-10$"))

        # ? lists the keys; ? again (or Esc) closes the list.
        page.keyboard.press("?")
        help_box = page.locator("#keys-help")
        assert help_box.is_visible() and "next tool error" in help_box.inner_text().replace(", previous", "")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"keys-help-{width}-{scheme}.png"))
        page.keyboard.press("?")
        assert not help_box.is_visible()

        # j and k step from the message the address names, and the address follows (no history entry each).
        page.keyboard.press("j")
        assert _key_current(page) == "m-11" and page.url.endswith("#m-11")
        page.keyboard.press("j")
        page.keyboard.press("k")
        assert _key_current(page) == "m-11"
        # e: the next tool error from there.
        page.keyboard.press("e")
        page.wait_for_url(re.compile(r"\?at=21#m-21$"))
        page.keyboard.press("e")
        page.wait_for_url(re.compile(r"\?at=41#m-41$"))

        # / the search; Enter lands on the first hit; n and p step through them.
        page.keyboard.press("/")
        page.keyboard.type("px-")
        # Each step loads a page: its keys are listened to once its scripts have run (the load event), not when
        # the count is first drawn.
        page.keyboard.press("Enter")
        page.wait_for_selector("#find-count:has-text('hit 1 of 4')")
        page.wait_for_load_state("load")
        page.keyboard.press("n")
        page.wait_for_selector("#find-count:has-text('hit 2 of 4')")
        page.wait_for_load_state("load")
        page.keyboard.press("p")
        page.wait_for_selector("#find-count:has-text('hit 1 of 4')")
        page.wait_for_load_state("load")
        # Typing in the search field types: n is a letter there, not a key of the page.
        page.locator("#find-q").focus()
        page.keyboard.press("End")
        page.keyboard.type("n")
        assert page.locator("#find-q").input_value() == "px-n"
        page.locator("#find-q").blur()

        # g: go to #N; G: the last message.
        page.keyboard.press("g")
        page.keyboard.type("66")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"at=66#m-66$"))
        page.keyboard.press("Shift+G")
        page.wait_for_url(re.compile(r"#m-79$"))
        assert page.locator("#m-79").evaluate("(e) => e.getBoundingClientRect().top < window.innerHeight")
        page.screenshot(path=str(ARTIFACTS / f"keys-last-{width}-{scheme}.png"))
    finally:
        context.close()
