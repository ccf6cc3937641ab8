"""The recall page in Chromium: a QA person marks items relevant or not and the figures change in place (htmx, CSRF
through the page's hx-headers), the what-if form shows which items a limit keeps and what the window loses, and the
page reads well in light and dark at 1440 and 390 px (contrast, nothing wider than the screen, no console error)."""
from __future__ import annotations

import pytest

from agents import models
from tests.browser.conftest import (
    OVERFLOW,
    assert_readable,
    console_errors,
    htmx_idle,
    in_each_scheme,
    screenshot,
)
from tests.recall_pages import scored_recall

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def recall(agent) -> models.Recall:
    return scored_recall(agent)


def figure(page, name: str) -> str:
    return page.locator(f"#figure-{name} .stat-value").inner_text()


def test_a_qa_person_marks_items_and_tries_a_limit(logged_in_page, live_server, recall, alice):
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}/memory/recalls/{recall.pk}/")
    htmx_idle(page)
    assert figure(page, "marked") == "0 of 3"
    assert figure(page, "precision") == "—"
    page.get_by_role("button", name="Mark #1 relevant").click()
    page.wait_for_function("() => document.querySelector('#figure-marked .stat-value').innerText === '1 of 3'")
    htmx_idle(page)
    assert page.locator("#marks-1 .badge").inner_text() == "relevant"
    assert figure(page, "reciprocal_rank") == "1"
    page.get_by_role("button", name="Mark #2 not relevant").click()
    page.wait_for_function("() => document.querySelector('#figure-marked .stat-value').innerText === '2 of 3'")
    htmx_idle(page)
    page.get_by_role("button", name="Mark #3 not relevant").click()
    page.wait_for_function("() => document.querySelector('#figure-marked .stat-value').innerText === '3 of 3'")
    htmx_idle(page)
    assert figure(page, "precision") == "0.333"
    assert figure(page, "ndcg") == "1"
    # A second mark changes the first.
    page.get_by_role("button", name="Mark #3 relevant").click()
    page.wait_for_function("() => document.querySelector('#figure-precision .stat-value').innerText === '0.667'")
    htmx_idle(page)
    assert list(models.RecallItemMark.objects.filter(author=alice).order_by("item__rank").values_list(
        "item__rank", "relevant")) == [(1, True), (2, False), (3, True)]
    # The store's relevant records, counted: recall appears.
    page.fill("#relevant-total", "4")
    page.locator("#judgement-form button").click()
    page.wait_for_function("() => document.querySelector('#figure-recall .stat-value').innerText === '0.5'")
    htmx_idle(page)
    # The what-if: a limit of 1 keeps #1 and drops the others, and says what the window loses.
    page.fill("#what-if-limit", "1")
    page.locator("#what-if-form button").click()
    page.wait_for_selector("#what-if-summary")
    htmx_idle(page)
    assert page.locator("#what-if-summary").inner_text().startswith("Kept 1 of 3, dropped 2")
    assert "limit=1" in page.url
    assert page.locator("#what-if-2 .mark-dropped").is_visible()
    before, after = (int(t.replace(",", "")) for t in page.locator("#window-part td").all_inner_texts())
    assert after < before
    page.fill("#what-if-threshold", "abc")
    page.locator("#what-if-form button").click()
    page.wait_for_selector("#what-if-error")
    assert page.locator("#what-if-error").inner_text().startswith("score_threshold: ")
    assert errors == []


def test_the_recall_page_reads_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice, recall):
    models.RecallItemMark.objects.create(item=recall.items.get(rank=1), author=alice, relevant=True)
    models.RecallItemMark.objects.create(item=recall.items.get(rank=2), author=alice, relevant=False)
    selectors = ("h1", ".breadcrumbs a", "#recall-query .recall-query-text", ".recall-param", ".stat-label",
                 "#figure-precision .stat-value", "#marks-1 .badge", "#marks-2 .badge", "#marks-3 .muted",
                 "#item-1 .recall-text", "#item-1 .recall-record", "#item-2 .recall-unmatched",
                 "#item-3 td[data-label=Score] .muted", ".mark-form button", "#what-if-summary",
                 "#what-if-2 .mark-dropped", "#what-if-1 .mark-kept", "#window-part th", "#window-total td",
                 "#this-query th", ".store-week th", ".store-week td", ".store-week td .muted")
    for scheme, page, errors in in_each_scheme(browser, live_server):
        page.goto(f"{live_server.url}/memory/recalls/{recall.pk}/?limit=2&score_threshold=0.6")
        page.wait_for_load_state()
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            assert_readable(page, selectors, scheme, width)
            if width == 390:
                assert page.evaluate(OVERFLOW) == [], scheme
            screenshot(page, f"recall-page-{scheme}-{width}")
        assert errors == [], scheme
