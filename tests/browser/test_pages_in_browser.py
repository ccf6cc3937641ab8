"""The pages as a person uses them, in a real Chromium: login, filters over htmx, paging, escaping."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_logs_in_and_lists_sessions(page, live_server, alice, make_session):
    make_session(TRAVEL, title="Paris and Tokyo")
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url  # every page requires login
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_selector("#session-table")
    assert page.locator("#session-table").get_by_text("Paris and Tokyo").is_visible()
    screenshot(page, "session-list")


def test_it_filters_the_list_without_reloading_and_keeps_the_filter_in_the_url(
    logged_in_page, live_server, make_session
):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    make_session([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "stray"}],
                 title="Broken orphan")
    page.goto(f"{live_server.url}/")
    page.evaluate("window.__same_document = true")
    page.check("input[name=violations]")
    page.wait_for_url(re.compile(r"violations=on"))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Paris and Tokyo')")
    table = page.locator("#session-table")
    assert table.get_by_text("Broken orphan").is_visible()
    assert page.evaluate("window.__same_document") is True  # htmx swapped the table; no full page load
    page.reload()
    assert page.is_checked("input[name=violations]")
    assert page.locator("#session-table").get_by_text("Paris and Tokyo").count() == 0


def test_it_shows_a_session_with_calls_results_and_violations(logged_in_page, live_server, make_session):
    page = logged_in_page
    broken = make_session(TRAVEL[:3] + [{"role": "user", "content": "Hello?"}] + TRAVEL[3:], title="Interrupted")
    page.goto(f"{live_server.url}/sessions/{broken.pk}/")
    summary = page.locator("#violations")
    assert summary.is_visible()
    assert "interrupted_exchange" in summary.inner_text()
    # The summary links to the message where the problem is: on this page, it scrolls there without a reload
    # and leaves the ?at= permalink in the address bar.
    page.evaluate("window.__same_document = true")
    summary.locator("a[href*='#m-']").first.click()
    page.wait_for_url(re.compile(r"\?at=(\d+)#m-\1$"))
    assert page.evaluate("window.__same_document") is True
    seq = page.url.rsplit("#m-", 1)[1]
    assert page.evaluate("document.querySelector(':target') && document.querySelector(':target').id") == f"m-{seq}"
    flagged = page.locator("article.has-violation")
    assert flagged.count() >= 1
    assert page.locator("#m-2 .call").count() == 2
    assert page.locator("#m-5.is-error").is_visible()
    screenshot(page, "session-detail")


def test_it_loads_a_long_session_in_pages(logged_in_page, live_server, make_session):
    page = logged_in_page
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(650)]
    long = make_session(messages, title="Long")
    page.goto(f"{live_server.url}/sessions/{long.pk}/")
    assert page.locator("article.msg").count() == 300
    assert "300 of 650 shown" in page.locator(".load-more").inner_text()
    page.click(".load-more a.button")
    page.wait_for_selector("#m-599")
    assert page.locator("article.msg").count() == 600
    assert "600 of 650 shown" in page.locator(".load-more").last.inner_text()
    page.click(".load-more a.button")
    page.wait_for_selector("#m-649")
    assert page.locator("article.msg").count() == 650
    assert page.locator(".load-more a.button").count() == 0


def test_it_shows_agent_content_as_text_and_never_runs_it(logged_in_page, live_server, make_session):
    page = logged_in_page
    evil = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
    session = make_session(
        [
            {"role": "user", "content": evil},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "e1", "type": "function", "function": {"name": "<b>bold</b>", "arguments": evil}}]},
            {"role": "tool", "tool_call_id": "e1", "content": evil},
        ],
        title=evil,
    )
    for url in (f"/sessions/{session.pk}/", "/"):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__pwned") is None
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    assert evil in page.locator("#m-0").inner_text()
    assert page.locator("#m-1 b").count() == 0


def test_it_opens_a_permalink_past_the_first_page_and_scrolls_to_it(logged_in_page, live_server, make_session):
    page = logged_in_page
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(700)]
    long = make_session(messages, title="Seven hundred")
    page.goto(f"{live_server.url}/sessions/{long.pk}/#m-650")
    # The first page has no #m-650: the page script opens the page holding it (?at=650) and the browser scrolls.
    page.wait_for_url(re.compile(r"\?at=650#m-650$"))
    target = page.locator("#m-650")
    target.wait_for()
    page.wait_for_function(
        "() => { const r = document.getElementById('m-650').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )
    assert "messages 600–699 of 700" in page.locator(".load-more").inner_text()
    assert page.locator("a.load-earlier").count() == 1
    # The message's own permalink is the ?at= link, which works without the script too.
    assert target.locator("a.seq").get_attribute("href") == f"/sessions/{long.pk}/?at=650#m-650"
    screenshot(page, "session-permalink")


def test_it_filters_as_you_type_without_htmx_syntax_errors(logged_in_page, live_server, make_session):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    make_session([{"role": "user", "content": "hi"}], title="Just hello")
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.add_init_script(
        "document.addEventListener('htmx:syntax:error', () => {"
        " window.__htmx_syntax_errors = (window.__htmx_syntax_errors || 0) + 1; });"
    )
    page.goto(f"{live_server.url}/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__htmx_syntax_errors || 0") == 0
    assert not [e for e in errors if "htmx" in e.lower() or "syntax" in e.lower()]
    page.evaluate("window.__same_document = true")
    page.locator("#id_q").press_sequentially("Tokyo")  # typing, no submit: the input trigger sends it
    page.wait_for_url(re.compile(r"q=Tokyo"))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Just hello')")
    assert page.evaluate("window.__same_document") is True


def test_it_keeps_a_long_external_id_from_widening_the_table(logged_in_page, live_server, agent):
    from agents.memory.schema import Conversation, Message
    from agents.store import writing

    page = logged_in_page
    page.set_viewport_size({"width": 1280, "height": 800})
    long_id = "sha256:" + "9f" * 32
    for title in ("", "Titled"):
        writing.session_store(
            agent=agent,
            conversation=Conversation(external_id=long_id + title, title=title or None,
                                      messages=[Message(role="user", content="hi")]),
        )
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("table.data")
    fits = page.evaluate(
        "() => { const t = document.querySelector('table.data');"
        " return t.getBoundingClientRect().right <= document.documentElement.clientWidth; }"
    )
    assert fits
    assert page.locator(f".ext-id[title='{long_id}Titled']").count() == 1
    assert page.locator("th", has_text="Started").is_visible()


def test_it_keeps_the_user_and_log_out_on_screen_on_a_phone(logged_in_page, live_server, make_session):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/")
    for locator in (page.locator(".topbar-user .muted"), page.get_by_role("button", name="Log out"),
                    page.get_by_role("link", name="Trimming lab")):
        box = locator.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, locator
    assert page.evaluate("document.querySelector('.topbar').scrollWidth <= 390")
    screenshot(page, "session-list-390px")


def test_it_says_why_a_token_bound_the_browser_rejects_is_not_applied(logged_in_page, live_server, make_session):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    page.goto(f"{live_server.url}/")
    page.fill("input[name=min_tokens]", "-3")
    page.keyboard.press("Tab")
    message = page.locator("#session-filters [data-validation-message]")
    message.wait_for(state="visible")
    assert message.inner_text().startswith("Min tokens: ")
    assert "0" in message.inner_text() and "still shows the filters before this change" in message.inner_text()
    assert "min_tokens" not in page.url
    screenshot(page, "list-min-tokens-rejected")
    # A value the browser accepts goes out, and the message goes.
    page.fill("input[name=min_tokens]", "5")
    page.keyboard.press("Tab")
    page.wait_for_url(re.compile(r"min_tokens=5"))
    assert message.is_hidden()
    assert page.locator("#session-table").get_by_text("Paris and Tokyo").is_visible()


def test_a_permalink_opened_logged_out_lands_on_its_message_after_login(page, live_server, alice, make_session):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(700)]
    long = make_session(messages, title="Seven hundred")
    page.goto(f"{live_server.url}/sessions/{long.pk}/?at=650#m-650")
    assert "/login/" in page.url
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit], input[type=submit]")
    # The login's redirect keeps ?at=650 but not #m-650 (a fragment does not travel through the form's POST).
    page.wait_for_url(re.compile(r"\?at=650#m-650$"))
    page.wait_for_function(
        "() => { const r = document.getElementById('m-650').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )
    assert page.evaluate("() => document.querySelector(':target').id") == "m-650"
    screenshot(page, "permalink-after-login")
