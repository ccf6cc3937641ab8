"""Recalled memory in place in Chromium, on AgentScope's third turn with mem0's records (imported through the one import
path): the message carrying the long-term memory shows what was recalled, one click from the record at the version
sent; the text the model read opens under "as sent"; a later reply says which persisted recalls it was sent again.
Light and dark, 1440 and 390 px, readable, nothing wider than the screen, no console error."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents import models
from tests.browser.conftest import OVERFLOW, assert_readable, console_errors, in_each_scheme, screenshot
from tests.memory_findings import STALE_RECORD, import_turn3

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def turn3(project, tmp_path: Path) -> models.Session:
    return import_turn3(project, tmp_path / "turn3")


def test_a_user_reads_what_was_recalled_and_follows_an_item_to_its_record_version(logged_in_page, live_server,
                                                                                   turn3):
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}{turn3.get_absolute_url()}")
    panel = page.locator("#m-7 .recall-panel")
    assert panel.is_visible()
    assert panel.locator(".recall-store").inner_text() == "long-term memory of Friday"
    assert panel.locator(".recall-query-text").inner_text() == "Make me a plan for the trip."
    assert panel.locator(".recall-text").all_inner_texts() == [
        "User is planning a trip to Hangzhou next week", "User prefers trains over flights"]
    assert page.locator("#m-8 .recall-unmatched").count() == 3
    # The raw text is folded under "as sent" and opens on a click.
    raw = page.locator("#m-7 details.as-sent")
    assert not raw.locator(".text").is_visible()
    raw.locator("summary").click()
    assert "<long_term_memory>" in raw.locator(".text").inner_text()
    assert page.locator("#m-11 .sent-again-note").inner_text() == "sent again: recalls at #8, #7, #2"
    stale = models.MemoryRecord.objects.get(external_id=STALE_RECORD)
    link = panel.locator(f'a.recall-record[href="/memory/records/{stale.pk}/#v-1"]')
    assert link.inner_text() == "record v1"
    link.click()
    page.wait_for_function("() => location.hash === '#v-1'")
    page.locator("#v-1").wait_for()  # the new page has the hash from its first byte, not yet the row
    assert page.evaluate("() => document.querySelector(':target')?.id") == "v-1"
    assert errors == []


def test_recalls_read_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice, turn3):
    selectors = ("#m-7 .recall-store", "#m-7 .recall-head strong", "#m-7 .recall-query-text",
                 "#m-7 .recall-query .muted", "#m-7 .recall-param", "#m-7 .recall-rank", "#m-7 .recall-score",
                 "#m-7 .recall-text", "#m-7 .recall-record", "#m-7 .recall-persisted", "#m-8 .recall-unmatched",
                 "#m-7 .as-sent summary", "#m-11 .sent-again-note", "#m-11 .sent-again-note a")
    for scheme, page, errors in in_each_scheme(browser, live_server):
        page.goto(f"{live_server.url}{turn3.get_absolute_url()}")
        page.wait_for_load_state()
        assert_readable(page, selectors, scheme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:
                assert page.evaluate(OVERFLOW) == [], scheme
            page.locator("#m-7").scroll_into_view_if_needed()
            assert page.locator("#m-7 .recall-panel").is_visible()
            page.locator("#m-7").screenshot(path=str(screenshot(page, f"recalls-{scheme}-{width}")
                                                     .with_name(f"recalls-m7-{scheme}-{width}.png")))
        assert errors == [], scheme
