"""The diff in a real Chromium: two sessions ticked in the list, a folded run opened over htmx, a trimmed view from
the session page; at desktop and phone widths."""
from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.conversations import two_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_compares_two_ticked_sessions_and_opens_a_folded_run(logged_in_page, live_server, make_session):
    page = logged_in_page
    first, second = two_runs()
    a = make_session(first, title="Trip planner, run 1")
    b = make_session(second, title="Trip planner, run 2")

    page.goto(f"{live_server.url}/")
    page.check(f"input[name=session][value='{a.pk}']")
    page.check(f"input[name=session][value='{b.pk}']")
    page.click("#compare-form button")
    page.wait_for_selector(".diff-rows")
    assert page.url.endswith(f"/sessions/{a.pk}/diff/?with={b.pk}")

    # Changed words and arguments are marked on their side.
    assert page.locator(".diff-cell .del", has_text="Tokyo").count() == 2
    assert page.locator(".diff-cell .ins", has_text="Osaka").count() == 2
    assert page.locator(".diff-cell .ins", has_text="units").count() == 1
    assert page.locator(".diff-cell .ins", has_text="10").count() == 1
    assert page.locator(".kind-left_only").count() == 1
    page.set_viewport_size({"width": 1440, "height": 1000})
    screenshot(page, "diff-two-runs-1440")

    # The folded run opens in place, without a page load.
    folds = page.locator(".diff-fold")
    before = page.locator(".diff-row").count()
    page.evaluate("window.__same_document = true")
    label = folds.first.locator("a").inner_text()
    hidden = int(label.split()[1])
    folds.first.locator("a").click()
    page.wait_for_function(f"() => document.querySelectorAll('.diff-row').length === {before + hidden}")
    assert page.evaluate("window.__same_document") is True
    assert page.locator(".diff-row.kind-same").first.is_visible()


def test_it_compares_a_session_with_a_trimmed_view_from_the_session_page(logged_in_page, live_server, make_session):
    page = logged_in_page
    first, _ = two_runs()
    session = make_session(first, title="Trip planner, run 1")

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.click("text=Compare with…")
    page.wait_for_selector("#diff-trim")
    screenshot(page, "diff-choose-1440")
    page.fill("#diff-trim", "head_and_tail:head_size=2,tail_size=3")
    page.locator("#diff-trim").press("Enter")
    page.wait_for_selector(".diff-rows")
    assert page.locator(".kind-right_only .diff-kind").inner_text() == "inserted"
    assert page.locator(".kind-right_only").get_by_text("Skipped").count() >= 1
    assert page.locator(".kind-left_only .diff-kind").first.inner_text() == "dropped"
    screenshot(page, "diff-trimmed-1440")


def test_it_stacks_the_sides_on_a_phone(browser, live_server, alice, make_session):
    first, second = two_runs()
    a, b = make_session(first, title="Trip planner, run 1"), make_session(second, title="Trip planner, run 2")
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{live_server.url}/sessions/{a.pk}/diff/?with={b.pk}")
        page.wait_for_selector(".diff-rows")
        # Nothing wider than the screen; A above B.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        row = page.locator(".diff-row.kind-changed").first
        cells = row.locator(".diff-cell")
        top_a, top_b = cells.nth(0).bounding_box()["y"], cells.nth(1).bounding_box()["y"]
        assert top_b > top_a
        screenshot(page, "diff-two-runs-390")
    finally:
        context.close()
