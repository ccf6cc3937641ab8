"""Copy buttons on the session page in a real Chromium: a message's text, a tool result and a call's arguments go to
the clipboard as stored (the search's marks left out); messages' times show with the gap since the one before; JSON
results are folded by level, with the stored text one click away."""
from __future__ import annotations

import json

import pytest

from agents import models
from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RESULT = {"status": "in transit", "legs": [{"from": "Lyon", "to": "Paris"}],
          "note": "<img src=x id=pwned onerror=alert(1)>"}
CHAIN = [
    {"role": "user", "content": "Where is parcel <PX-1>?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "track", "arguments": json.dumps({"parcel": "PX-1", "deep": True})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps(RESULT)},
    {"role": "assistant", "content": "It is **in transit**:\n\n- Lyon\n- Paris"},
]


def test_it_copies_text_results_and_arguments(browser, live_server, alice, make_session):
    session = make_session(CHAIN, title="Copy me", metadata={"tags": ["prod"]})
    for seq, when in enumerate(["10:00:00", "10:00:01.200000", "10:00:09", "10:02:30"]):
        models.Message.objects.filter(session=session, seq=seq).update(created_at=f"2026-11-30T{when}+00:00")
    context = browser.new_context(viewport={"width": 1440, "height": 900},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{live_server.url}{session.get_absolute_url()}?q=px&at=0")
        clipboard = "() => navigator.clipboard.readText()"
        page.click("#m-0 button[data-copy=text]")
        assert page.evaluate(clipboard) == "Where is parcel <PX-1>?"
        assert page.locator("#m-0 button[data-copy=text]").inner_text() == "copied"
        page.click("#m-1 button[data-copy=arguments]")
        assert json.loads(page.evaluate(clipboard)) == {"parcel": "PX-1", "deep": True}
        page.click("#m-2 button[data-copy=text]")
        assert json.loads(page.evaluate(clipboard)) == RESULT
        # Shown as Markdown, copied as the agent wrote it.
        assert page.locator("#m-3 .text.markdown strong").inner_text() == "in transit"
        page.click("#m-3 button[data-copy=text]")
        assert page.evaluate(clipboard) == "It is **in transit**:\n\n- Lyon\n- Paris"
        # The result is a tree folded by level: the first open, "legs" closed; its strings are text, not markup.
        tree = page.locator("#m-2 .json-tree")
        assert tree.is_visible() and page.locator("#m-2 .text.json").is_hidden()
        assert tree.locator("details.json-fold").first.evaluate("(d) => d.open") is True
        legs = tree.locator("details.json-fold details.json-fold").first
        assert legs.evaluate("(d) => d.open") is False and "1 item" in legs.locator("> summary").inner_text()
        assert page.locator("#pwned").count() == 0 and "onerror=alert(1)" in tree.inner_text()
        # The arguments hold a hit of the search: they stay text, with their mark.
        assert page.locator("#m-1 .call mark.hit").inner_text() == "PX"
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#m-2").screenshot(path=str(ARTIFACTS / "json-folded-1440.png"))
        page.click("#m-2 .json-raw-toggle")
        assert page.locator("#m-2 .text.json").is_visible() and tree.is_hidden()
        assert page.locator("#m-3 .gap").inner_text() == "+2 min 21 s"
        assert page.locator(".session-tags .tag").inner_text() == "prod"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "copy-and-times-1440.png"), full_page=True)
    finally:
        context.close()
