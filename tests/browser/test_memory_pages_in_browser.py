"""The memory pages in Chromium, on files the libraries wrote (AgentScope's two session saves and its mem0 export, a
Letta agent file, mem0's history.db), imported through the one import path: search and filter a store, open a
record, diff two of its versions, follow a read to the message that carried it; light and dark, 1440 and 390 px,
with no console error."""
from __future__ import annotations

from pathlib import Path

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
from tests.memory_pages import import_friday, import_letta, import_mem0_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def memory(project, tmp_path: Path) -> dict[str, models.Agent]:
    friday = import_friday(project, tmp_path)
    letta = import_letta(project)
    import_mem0_history(project)
    return {"friday": friday, "letta": letta}



def test_a_user_searches_a_store_opens_a_record_diffs_it_and_reaches_the_message_that_read_it(
        logged_in_page, live_server, memory):
    page = logged_in_page
    errors = console_errors(page)
    friday = memory["friday"]
    store = friday.memory_stores.get(kind="records")
    page.goto(f"{live_server.url}/agents/{friday.pk}/memory/")
    assert page.locator("#stores tr.current-row").inner_text().startswith("long-term memory of Friday")
    assert page.locator("#records tbody tr").count() == 2
    # Search: htmx swaps the table, the URL keeps the search.
    page.fill("#rf-q", "trains")
    page.wait_for_function("() => location.search.includes('q=trains')")
    htmx_idle(page)
    assert page.locator("#records tbody tr").count() == 1
    assert page.locator("#records mark.hit").inner_text() == "trains"
    # A filter that keeps nothing says so; one that cannot apply says why, beside the form.
    page.select_option("#rf-state", "deleted")
    page.wait_for_function("() => location.search.includes('state=deleted')")
    htmx_idle(page)
    assert "No record matches these filters." in page.locator("#records").inner_text()
    page.select_option("#rf-state", "")
    page.fill("#rf-scope", "nope")
    page.press("#rf-scope", "Enter")
    page.wait_for_function("() => location.search.includes('scope=nope')")
    htmx_idle(page)
    assert "Scope: expected user_id=" in page.locator("#filter-errors").inner_text()
    assert page.locator("#records tbody tr").count() == 1  # the search still applies
    # Open the record; its last change, word by word.
    page.click("#records td.record-id a")
    page.wait_for_selector("#word-diff")
    record = store.records.get(text__contains="trains")
    assert page.url.endswith(f"/memory/records/{record.pk}/")
    assert page.locator("#word-diff ins.ins").inner_text().strip() == "high-speed"
    # Any two versions, at an address to share.
    page.fill("#diff-from", "2")
    page.fill("#diff-to", "1")
    page.click(".diff-form button[type=submit]")
    page.wait_for_function("() => location.search.includes('from=2') && location.search.includes('to=1')")
    htmx_idle(page)
    assert page.locator("#word-diff del.del").inner_text().strip() == "high-speed"
    page.reload()
    assert page.locator("#word-diff del.del").inner_text().strip() == "high-speed"
    # The read: its query, and the message that carried it.
    read = page.locator("#reads tbody tr").first
    assert "Make me a plan for the trip." in read.inner_text()
    read.locator("a.read-message").click()
    page.wait_for_selector("#m-7")
    assert "?at=7" in page.url and page.url.endswith("#m-7")
    assert page.evaluate("() => document.querySelector(':target')?.id") == "m-7"
    # From the session page, back to the agent's memory.
    page.click("#agent-memory-link")
    page.wait_for_selector("#stores")
    assert errors == []


def test_a_blocks_fill_and_a_shared_store_read_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice,
                                                                                     memory):
    friday, letta = memory["friday"], memory["letta"]
    record = models.MemoryRecord.objects.get(text="User prefers high-speed trains over flights")
    shared = models.MemoryStore.objects.get(agent__isnull=True)
    pages = {
        "memory": f"/agents/{friday.pk}/memory/",
        "memory-blocks": f"/agents/{letta.pk}/memory/",
        "memory-shared": f"/agents/{friday.pk}/memory/?store={shared.pk}",
        "record": f"/memory/records/{record.pk}/",
    }
    for scheme, page, errors in in_each_scheme(browser, live_server):
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state()
            assert_readable(page, ("h1", ".facts dt", "#stores td.title-cell a, .timeline-head",
                                   "#records td.record-text, #reads td.query-cell", ".kind-tag"), scheme, name)
            if name == "memory-blocks":
                assert page.locator("meter.fill-meter").count() == 2
                assert "/ 20,000" in page.locator("#records .fill-numbers").first.inner_text()
            if name == "memory-shared":
                assert "shared by Alpha" in page.locator("#stores tr.current-row").inner_text()
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                if width == 390:
                    assert page.evaluate(OVERFLOW) == [], (scheme, name)
                screenshot(page, f"memory-{scheme}-{name}-{width}")
            page.set_viewport_size({"width": 1440, "height": 900})
        assert errors == [], scheme
