"""The trimming lab in a real Chromium: a parameter change re-renders the preview over htmx, no page load."""
from __future__ import annotations

import re

import pytest

from agents import services
from agents.memory.trimming import strategy_spec, trim
from tests.browser.conftest import screenshot
from tests.conversations import chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_updates_the_preview_when_a_parameter_changes(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(chat(12), title="Weather in twelve cities")
    messages, counts = services.session_messages_with_counts(session)
    expected = trim(messages, strategy_spec("buffered", {"buffer_size": 3}),
                    counter=session.token_counter, token_counts=counts)

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.click("text=Preview trimming")
    page.wait_for_selector("#lab-result")
    page.evaluate("window.__same_document = true")
    page.fill("input[name=buffer_size]", "3")
    page.wait_for_url(re.compile(r"buffer_size=3"))
    page.wait_for_function(f"() => document.querySelector('#kept-count').innerText === '{len(expected.kept)}'")
    assert page.evaluate("window.__same_document") is True  # htmx swapped the result; no full page load
    assert page.locator("#tokens-after").inner_text() == f"{expected.tokens_after:,}"
    assert page.locator("article.lab-kept").count() == len(expected.kept)

    # An invalid value is named next to its field, and the next valid one clears it.
    page.fill("input[name=buffer_size]", "0")
    page.wait_for_selector("#error-buffer_size:has-text('greater than 0')")
    assert page.locator("#lab-result").get_by_text("No preview").is_visible()
    page.fill("input[name=buffer_size]", "3")
    page.wait_for_selector("#lab-result .lab-stats")
    assert page.locator("#error-buffer_size").inner_text() == ""

    # Another strategy brings its own parameters.
    page.select_option("#lab-strategy", "head_and_tail")
    page.wait_for_selector("input[name=tail_size]")
    page.wait_for_selector("#lab-result article.lab-inserted")
    assert page.evaluate("window.__same_document") is True
    page.fill("input[name=tail_size]", "4")
    page.wait_for_url(re.compile(r"tail_size=4"))
    page.wait_for_selector("#lab-result article.lab-inserted")
    screenshot(page, "trimming-lab")


def test_it_compares_and_reports_in_the_browser(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(chat(12), title="Weather in twelve cities")
    make_session(chat(3) + [{"role": "user", "content": "And tomorrow?"}], title="Open question")
    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/")
    page.click("#compare-link")
    page.wait_for_selector(".compare-column")
    assert page.locator(".compare-column").count() == 2
    page.select_option("#compare-add", "head_and_tail")
    page.get_by_role("button", name="Add", exact=True).click()
    page.wait_for_url(re.compile(r"s=head_and_tail"))
    assert page.locator(".compare-column").count() == 3
    screenshot(page, "trimming-lab-compare")
    page.click("text=Trimming lab")
    page.wait_for_selector(".report-summary")
    assert page.locator(".report-row").count() == 2
    screenshot(page, "trimming-lab-report")
    page.evaluate("window.__same_document = true")
    page.fill("input[name=q]", "Open question")
    page.fill("input[name=s] >> nth=0", "clear_non_system")
    page.click("text=Run report")
    page.wait_for_url(re.compile(r"q=Open"))
    page.wait_for_function("() => document.querySelectorAll('.report-row').length === 1")
    assert page.locator(".summary-row[data-spec=clear_non_system] [data-questions-lost='1']").count() == 1
    assert page.evaluate("window.__same_document") is True
