"""The trimming lab in a real Chromium with 2026's strategies: cleared results and arguments marked beside what
was stored, summaries inserted where the framework puts them."""
from __future__ import annotations

import pytest

from agents.memory.trimming import strategy_spec, trim
from agents.store import reading
from tests.browser.conftest import htmx_idle, screenshot
from tests.reference.canonical import CANONICAL_DICTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_marks_cleared_results_and_inserted_summaries(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(CANONICAL_DICTS, title="Weather, then a hotel")
    messages, counts = reading.session_messages_with_counts(session)
    params = {"trigger": 0, "keep": 1, "clear_tool_inputs": True}
    expected = trim(messages, strategy_spec("langchain_clear_tool_uses", params),
                    counter=session.token_counter, token_counts=counts)
    assert [e.index for e in expected.edited] == [2, 3, 4]  # two results and their calls' message

    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/?strategy=langchain_clear_tool_uses&trigger=0&keep=1"
              "&clear_tool_inputs=true")
    page.wait_for_selector("#lab-result .lab-stats")
    assert page.locator("article.lab-edited").count() == len(expected.edited)
    assert page.locator("article.lab-edited .lab-original").count() == len(expected.edited)
    first = page.locator("article.lab-edited").nth(1)  # the first cleared result
    assert first.locator(".text").first.inner_text() == "[cleared]"
    first.locator("summary:has-text('As stored')").click()
    assert first.locator(".lab-original .text").inner_text() == "Oslo: 3°C, rain"
    screenshot(page, "trimming-lab-2026-cleared")

    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/?strategy=langchain_summarization&trigger_messages=2"
              "&keep_messages=3")
    page.wait_for_selector("#lab-result article.lab-inserted")
    inserted = page.locator("article.lab-inserted")
    assert inserted.count() == 1
    assert "[summary of 6 messages]" in inserted.inner_text() and "500 tok" in inserted.inner_text()
    screenshot(page, "trimming-lab-2026-summary")


def test_it_takes_tool_names_true_false_and_all_in_the_form(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(CANONICAL_DICTS, title="Weather, then a hotel")
    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/?strategy=anthropic_clear_tool_uses")
    page.wait_for_selector("input[name=clear_tool_inputs]")
    page.fill("input[name=trigger_tool_uses]", "1")
    page.fill("input[name=keep_tool_uses]", "0")
    page.fill("input[name=exclude_tools]", "search_hotels")
    page.fill("input[name=clear_tool_inputs]", "true")
    page.wait_for_function("document.querySelectorAll('#lab-result article.lab-edited').length === 3")
    assert page.locator("#lab-result article.lab-edited .json").first.inner_text() == "{}"  # Oslo's input cleared
    assert "kept unchanged: tool search_hotels is in exclude_tools" in page.locator("#lm-8").inner_text()
    screenshot(page, "trimming-lab-2026-form")
    page.select_option("#lab-strategy", "anthropic_clear_thinking")
    page.wait_for_selector("input[name=keep_thinking_turns]")
    htmx_idle(page)
    page.fill("input[name=keep_thinking_turns]", "0")
    page.wait_for_selector("#error-keep_thinking_turns:not(:empty)")
    page.fill("input[name=keep_thinking_turns]", "all")
    page.wait_for_selector("#lab-result .lab-stats")
    assert page.locator("#error-keep_thinking_turns").inner_text() == ""
