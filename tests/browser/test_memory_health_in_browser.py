"""The Health panel of the agent's memory page in Chromium (issue 27, store health by period): the records read most
and the queries that found nothing, linked, and the per-period table, on a store written through the memory write
API over five weeks; switching to months; light and dark, 1440 and 390 px: text at contrast >= 4.5, no sideways
overflow at 390, no console error."""
from __future__ import annotations

import pytest

from agents import models
from tests.browser.conftest import OVERFLOW, assert_readable, in_each_scheme, screenshot
from tests.memory_health import health_store

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_health_panel_lists_links_and_periods_in_light_and_dark_at_1440_and_390(
        browser, live_server, client, alice, project, agent):
    store = health_store(client, project, agent)
    record = models.MemoryRecord.objects.get(store=store, external_id="r0")
    for scheme, page, errors in in_each_scheme(browser, live_server):
        page.goto(f"{live_server.url}/agents/{agent.pk}/memory/?store={store.pk}")
        page.wait_for_load_state()
        first = page.locator("#health-most-read tbody tr").first
        assert "Fact number 0 about Alice" in first.inner_text() and "14" in first.inner_text()
        assert page.locator("#health-most-read tbody tr").count() == 10
        assert page.locator("#health-zero-queries tbody tr").count() == 10
        assert page.locator("#health-zero-queries tbody tr").first.locator("td").first.inner_text() == "q0"
        assert page.locator("#health-periods tbody tr").count() == 6
        assert page.locator("#health-periods th").first.inner_text().lower() == "week of"
        assert_readable(page, ("#health-most-read td.title-cell a", "#health-most-read td.num",
                               "#health-zero-queries td.title-cell", "#health-zero-queries td a",
                               "#health-zero-queries td .muted", "#health-periods th", "#health-periods td.num",
                               "#health-periods td .muted", "#health-period-links a", "#health-period-links strong",
                               "#health-most-read-title"), scheme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:
                assert page.evaluate(OVERFLOW) == [], scheme
            page.locator("#store-health").screenshot(path=str(screenshot(page, f"health-{scheme}-{width}")))
        page.set_viewport_size({"width": 1440, "height": 900})
        # By month: three months, the store still shown; then to the record read most.
        page.click("#health-period-links a:text('month')")
        page.wait_for_load_state()
        assert page.locator("#health-periods tbody tr").count() == 3
        assert f"store={store.pk}" in page.url and "health=month" in page.url
        page.click("#health-most-read tbody tr >> nth=0 >> a")
        page.wait_for_load_state()
        assert page.url.endswith(f"/memory/records/{record.pk}/")
        assert errors == [], scheme
