"""Memory findings in Chromium, on files the libraries wrote (AgentScope's third turn, whose long-term memory sends an
old version of a record mem0 had updated, and mem0's records), imported through the one import path: the summary at
the top of the session page leads to the first message of a kind, whose flag links to the record; the record page
lists its findings. Light and dark, 1440 and 390 px, readable, nothing wider than the screen, no console error."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents import models
from tests.browser.conftest import OVERFLOW, assert_readable, console_errors, in_each_scheme, screenshot
from tests.memory_findings import STALE_RECORD, import_turn3, mem0_duplicates

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def flagged(project, tmp_path: Path) -> dict[str, str]:
    session = import_turn3(project, tmp_path / "turn3")
    from agents.transfer import imports

    imports.import_file(mem0_duplicates(tmp_path / "dup", 2, text="Prefers <b>window</b> seats"), project=project)
    rewritten = models.MemoryRecord.objects.get(external_id="00000000-0000-0000-0000-000000000001")
    return {"session": session.get_absolute_url(), "record": f"/memory/records/{rewritten.pk}/"}



def test_a_user_follows_a_finding_from_the_summary_to_its_message_and_its_record(logged_in_page, live_server,
                                                                                   flagged):
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}{flagged['session']}")
    summary = page.locator("#memory-findings")
    assert summary.is_visible()
    assert page.locator("#session-memory-findings").inner_text() == "4"
    assert summary.locator("li .kind").all_inner_texts() == ["repeated_injection", "stale_recall"]
    assert "Read the record again before sending it" in summary.locator("#finding-kind-stale_recall").inner_text()
    summary.locator("#finding-kind-stale_recall a").click()
    page.wait_for_function("() => location.hash === '#m-13'")
    page.locator("#m-13").wait_for()  # the new page has the hash from its first byte, not yet the row
    assert page.evaluate("() => document.querySelector(':target')?.id") == "m-13"
    flags = page.locator("#m-13 .memory-finding-note")
    assert flags.count() == 2 and flags.first.is_visible()
    assert flags.first.locator("strong").inner_text() == "stale_recall"
    assert "the record was at version 2 by then" in flags.first.inner_text()
    flags.first.locator("a").click()
    page.wait_for_selector("#versions")
    record = models.MemoryRecord.objects.get(external_id=STALE_RECORD)
    assert page.url.endswith(f"/memory/records/{record.pk}/")
    assert errors == []


def test_findings_read_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice, flagged):
    checks = {
        "session": ("#memory-findings h2", "#memory-findings .kind", "#memory-findings .finding-advice",
                    "#m-13 .memory-finding-note", "#m-13 .memory-finding-note strong",
                    "#m-13 .memory-finding-note .finding-advice", "#session-memory-findings a"),
        "record": ("#findings h2", "#findings .kind", "#findings li.record-finding", "#findings .finding-advice"),
    }
    for scheme, page, errors in in_each_scheme(browser, live_server):
        for name, selectors in checks.items():
            page.goto(f"{live_server.url}{flagged[name]}")
            page.wait_for_load_state()
            assert_readable(page, selectors, scheme, name)
            if name == "record":
                # The agent's markup stays text.
                assert page.locator("#findings b").count() == 0
                assert "noop_write" in page.locator("#findings").inner_text()
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                if width == 390:
                    assert page.evaluate(OVERFLOW) == [], (scheme, name)
                if name == "session":
                    page.locator("#m-13").scroll_into_view_if_needed()
                    assert page.locator("#m-13 .memory-finding-note").first.is_visible()
                screenshot(page, f"memory-findings-{scheme}-{name}-{width}")
            page.set_viewport_size({"width": 1440, "height": 900})
        assert errors == [], scheme
