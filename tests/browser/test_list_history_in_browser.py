"""The session list's filters and the browser's Back and Forward: full pages, a form that matches the table."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import htmx_idle, screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONE = {"violations": ["on"]}
TWO = {"violations": ["on"], "errors": ["on"]}
ORPHAN = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "stray"}]
FAILED_TOOL = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": True},
    {"role": "tool", "tool_call_id": "nope", "content": "stray"},
]


def _query(url: str) -> dict[str, list[str]]:
    from urllib.parse import parse_qs, urlsplit

    query = parse_qs(urlsplit(url).query)
    query.pop("sort", None)  # the table's sort travels with the filters
    return query


def _at(filters: dict[str, list[str]]):
    return lambda url: "/sessions/" not in url and _query(url) == filters


def _titles(page) -> set[str]:
    return set(page.locator("#session-table td.title-cell > a").all_inner_texts())


def _form_state(page) -> dict[str, object]:
    return page.evaluate(
        "() => { const f = document.getElementById('session-filters');"
        " return {violations: f.elements.violations.checked, errors: f.elements.errors.checked,"
        " q: f.elements.q.value}; }"
    )


def _is_full_page(page) -> bool:
    # The stylesheet applied (the top bar is a dark sticky bar) and the sidebar form is there: not a bare fragment.
    return page.evaluate(
        "() => !!document.querySelector('header.topbar') && !!document.getElementById('session-filters')"
        " && getComputedStyle(document.querySelector('header.topbar')).position === 'sticky'"
    )


def test_it_restores_full_pages_and_a_matching_form_on_back_and_forward(logged_in_page, live_server, make_session):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    make_session(ORPHAN, title="Broken orphan")
    broken_and_failed = make_session(FAILED_TOOL, title="Failed and broken")
    page.goto(f"{live_server.url}/")
    page.check("input[name=violations]")
    page.wait_for_url(_at(ONE))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Paris and Tokyo')")
    page.check("input[name=errors]")
    page.wait_for_url(_at(TWO))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Broken orphan')")
    assert _titles(page) == {"Failed and broken"}

    page.click("text=Failed and broken")
    page.wait_for_url(re.compile(rf"/sessions/{broken_and_failed.pk}/$"))

    page.go_back()
    page.wait_for_url(_at(TWO))
    page.wait_for_selector("#session-table")
    assert _is_full_page(page)
    assert _titles(page) == {"Failed and broken"}
    assert _form_state(page) == {"violations": True, "errors": True, "q": ""}
    screenshot(page, "session-list-after-back")

    page.go_back()  # the first filter, pushed by htmx
    page.wait_for_url(_at(ONE))
    page.wait_for_function("() => document.querySelector('#session-table').innerText.includes('Broken orphan')")
    assert _is_full_page(page)
    assert _titles(page) == {"Broken orphan", "Failed and broken"}
    assert _form_state(page) == {"violations": True, "errors": False, "q": ""}

    page.go_forward()
    page.wait_for_url(_at(TWO))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Broken orphan')")
    assert _is_full_page(page)
    assert _form_state(page) == {"violations": True, "errors": True, "q": ""}

    page.go_back()
    page.wait_for_url(_at(ONE))
    page.wait_for_function("() => document.querySelector('#session-table').innerText.includes('Broken orphan')")
    # The next change keeps the filter the URL has: typing a search adds to it.
    page.locator("#id_q").press_sequentially("orphan")
    page.wait_for_url(_at({"violations": ["on"], "q": ["orphan"]}))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Failed and broken')")
    assert _titles(page) == {"Broken orphan"}


def test_it_shows_the_errors_of_the_filters_the_swapped_table_was_asked_for(logged_in_page, live_server, make_session):
    page = logged_in_page
    make_session(TRAVEL, title="Paris and Tokyo")
    make_session(ORPHAN, title="Broken orphan")
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("#session-table")
    errors = page.locator("#filter-errors")
    assert errors.inner_text() == ""
    # A table asked for with a filter the server refuses (a sort or page link keeps the URL's filters): htmx swaps
    # the table only, and the sidebar says why a filter was ignored.
    page.evaluate(
        "(url) => htmx.ajax('GET', url, {source: '#session-filters', target: '#session-table', swap: 'outerHTML'})",
        f"{live_server.url}/?min_tokens=abc",
    )
    page.wait_for_function("() => document.querySelector('#filter-errors').innerText.includes('Min tokens')")
    assert errors.inner_text() == "Min tokens: Enter a whole number."
    assert _titles(page) == {"Paris and Tokyo", "Broken orphan"}
    # The next change asks for valid filters: the old error goes away with the table it explained.
    page.check("input[name=violations]")
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Paris and Tokyo')")
    htmx_idle(page)
    assert errors.inner_text() == ""
    screenshot(page, "session-list-filter-errors-cleared")


def test_it_keeps_the_errors_of_the_urls_filters_when_a_sort_header_swaps_the_table(logged_in_page, live_server,
                                                                                     make_session):
    page = logged_in_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    make_session(TRAVEL, title="Paris and Tokyo")
    make_session(ORPHAN, title="Broken orphan")
    # A link someone shared, with a bad number and a bad date: the page says both beside the form.
    page.goto(f"{live_server.url}/?min_tokens=abc&date_from=yesterday")
    errors = page.locator("#filter-errors")
    both = "Started from: Enter a valid date.\n\nMin tokens: Enter a whole number."
    assert errors.inner_text() == both
    page.evaluate("() => { window.__samePage = true; }")
    # A sort header keeps the URL's filters and swaps the table only (htmx): the sidebar still says why they are
    # ignored, in the same page.
    page.click("#session-table th a:has-text('Tokens')")
    page.wait_for_url(re.compile(r"sort=-tokens"))
    htmx_idle(page)
    assert page.evaluate("() => window.__samePage === true")
    assert errors.is_visible() and errors.inner_text() == both
    assert _titles(page) == {"Paris and Tokyo", "Broken orphan"}
    screenshot(page, "session-list-url-filter-errors-after-sort")
    # A change in the form asks without them (the number and date fields cannot hold such values): the errors go
    # with the filters they were about, the sort stays.
    page.check("input[name=violations]")
    page.wait_for_url(_at(ONE))
    htmx_idle(page)
    assert "min_tokens" not in page.url and "date_from" not in page.url and "sort=-tokens" in page.url
    assert errors.inner_text() == ""
    assert _titles(page) == {"Broken orphan"}
    assert problems == []
