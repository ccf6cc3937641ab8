"""The trimming lab in a real Chromium: a parameter change re-renders the preview over htmx, no page load."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.memory.trimming import strategy_spec, trim
from agents.store import reading
from tests.browser.conftest import screenshot
from tests.conversations import chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_updates_the_preview_when_a_parameter_changes(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(chat(12), title="Weather in twelve cities")
    messages, counts = reading.session_messages_with_counts(session)
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
    page.fill("[name=s] >> nth=0", "clear_non_system")
    page.click("text=Run report")
    page.wait_for_url(re.compile(r"q=Open"))
    page.wait_for_function("() => document.querySelectorAll('.report-row').length === 1")
    assert page.locator(".summary-row[data-spec=clear_non_system] [data-questions-lost='1']").count() == 1
    assert page.evaluate("window.__same_document") is True


def test_invalid_input_keeps_the_page_and_says_why_under_debug(logged_in_page, live_server, make_session, settings):
    # Under `make run` (DEBUG) django-htmx's script replaces the whole document with any 400 answer to htmx: the lab
    # and the report answer invalid input with 200 and the errors.
    import json

    settings.DEBUG = True
    page = logged_in_page
    session = make_session(chat(8), title="Weather in eight cities")
    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/")
    page.fill("input[name=buffer_size]", "0")
    page.wait_for_selector("#error-buffer_size:has-text('greater than 0')")
    assert page.locator(".lab-header h1").inner_text() == "Trimming lab"
    assert page.locator("#lab-result").get_by_text("No preview").is_visible()

    # The trimmed view exports from the lab, as its Export menu says.
    page.fill("input[name=buffer_size]", "3")
    page.wait_for_selector("#lab-result .lab-stats")
    kept = int(page.locator("#kept-count").inner_text())
    page.click("#lab-result summary:has-text('Export this trimmed view')")
    page.select_option("#lab-result select[name=format]", "native")
    with page.expect_download() as info:
        page.click("#lab-result button:has-text('Download')")
    [exported] = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))["sessions"]
    assert len(exported["messages"]) == kept and exported["metadata"]["trimmed"]["params"]["buffer_size"] == 3

    # The report: an invalid box is left out and said so in the result; a box keeps its value as typed.
    page.goto(f"{live_server.url}/lab/report/?s=buffered")
    page.wait_for_selector(".report-summary")
    page.fill("[name=s] >> nth=0", "nope")
    page.fill("[name=s] >> nth=1", "token_limited:token_limit=100")
    page.press("[name=s] >> nth=1", "Enter")
    page.wait_for_selector(".report-left-out")
    assert page.locator("h1").first.inner_text() == "Trimming across sessions"
    assert "strategy box 1, nope: unknown strategy 'nope'" in page.locator(".report-left-out").inner_text()
    assert page.locator(".summary-row[data-spec='token_limited:token_limit=100']").count() == 1
    box = page.locator("[name=s] >> nth=1")
    assert box.input_value() == "token_limited:token_limit=100"
    # The box shows all of it (a one-line field showed "token_limited:token_limit=1").
    assert box.evaluate("(b) => b.scrollWidth <= b.clientWidth && b.scrollHeight <= b.clientHeight")
    screenshot(page, "trimming-report-left-out")
    # Ordered in place by a column's header; the tokens saved drawn as a chart.
    page.click(".report-table a.report-order:has-text('after') >> nth=0")
    page.wait_for_url(re.compile(r"order=after-1"))
    page.wait_for_selector(".report-table th[aria-sort='ascending']")
    assert page.locator("#savings-chart rect.savings-bar").count() == 1
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "trimming-report-ordered")
    # No valid box at all: the old report goes, the message says why.
    page.fill("[name=s] >> nth=1", "")
    page.click("text=Run report")
    page.wait_for_selector("#report-result:has-text('Name at least one valid strategy')")
    assert page.locator(".report-row").count() == 0
    assert page.locator("header.topbar").count() == 1


def test_the_picker_groups_strategies_by_framework_and_shows_each_before_it_is_picked(
    logged_in_page, live_server, make_session
):
    from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry

    page = logged_in_page
    session = make_session(chat(4), title="Weather")
    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/")
    # Grouped by framework, in the catalog's order, each option a human name.
    groups = page.evaluate("""() => Array.from(document.querySelectorAll('#lab-strategy optgroup'),
        (g) => [g.label, Array.from(g.querySelectorAll('option'), (o) => [o.value, o.textContent])])""")
    catalog = strategies_by_framework()
    assert groups == [[framework, [[e.name, e.title] for e in entries]] for framework, entries in catalog]
    assert ["buffered", "AutoGen: buffered context"] in dict(groups)["AutoGen"]

    # Before picking: every strategy's description, parameters with their defaults and framework version.
    page.click("summary:has-text('All strategies, by framework')")
    entry = strategy_entry("strands_sliding_window")
    item = page.locator(".strategy-browser li", has_text=entry.label.capitalize()).first
    item.wait_for(state="visible")
    text = item.inner_text()
    assert entry.version in text and entry.description.split(".")[0] in text
    for p in entry.parameters():
        assert f"{p['name']}={p['default_text']}" in text
    screenshot(page, "trimming-lab-picker")

    # Picked from there (a link): the lab shows it, its description, version and parameter fields.
    item.locator("a").first.click()
    page.wait_for_url(re.compile(r"strategy=strands_sliding_window"))
    page.wait_for_selector("#strategy-about:has-text('strands-agents')")
    assert page.locator("#lab-strategy").input_value() == "strands_sliding_window"
    assert page.locator("#strategy-about").inner_text().startswith(entry.title)
    for p in entry.parameters():
        assert page.locator(f"[name={p['name']}]").count() >= 1
    # Picked from the select: the description follows without a page load.
    page.evaluate("window.__same_document = true")
    page.select_option("#lab-strategy", "openmanus_window")
    page.wait_for_selector("#strategy-about:has-text('OpenManus: memory window')")
    assert page.evaluate("window.__same_document") is True
    assert "OpenManus snapshot" in page.locator("#strategy-about").inner_text()
