"""A memory file through the real import page in Chromium: mem0's history.db (a SQLite database, bytes) uploaded,
previewed with what its memory layers will store, confirmed, and reported; readable in both colour schemes, at a
desk's width and a phone's, without a console error."""
from __future__ import annotations

import pytest

from agents import models
from tests.browser.conftest import assert_readable, screenshot
from tests.paths import MEMORY_SAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

READABLE = [".import-memory h2", ".import-memory .facts dt", ".import-memory .muted", ".import-memory td",
            ".import-memory .badge-ok"]
# The memory section fits the width it is given (its table scrolls inside it, never the page).
FITS = "() => document.querySelector('.import-memory').getBoundingClientRect().right <= window.innerWidth"


def _shown_at_both_widths(page, name: str, scheme: str) -> None:
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(FITS), (name, width)
        assert_readable(page, READABLE, scheme, name, width)
        screenshot(page, f"import-memory-{name}-{scheme}-{width}")
    page.set_viewport_size({"width": 1440, "height": 900})


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_it_uploads_a_mem0_database_previews_its_memory_and_reports_it(browser, live_server, alice, project, scheme):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit]")
        page.wait_for_selector("#session-table")

        page.goto(f"{live_server.url}/import/")
        page.set_input_files("input[type=file]", str(MEMORY_SAMPLES / "mem0" / "history.db"))
        page.click("button:has-text('Preview')")
        page.wait_for_selector(".import-memory")
        assert "mem0" in page.locator("header dl.facts").inner_text()
        preview = page.locator(".import-memory").inner_text()
        assert "What the import will store" in preview and "new" in preview
        assert page.locator(".import-memory tbody tr").count() == 1
        assert not models.MemoryStore.objects.exists()  # nothing stored by the preview
        _shown_at_both_widths(page, "preview", scheme)

        page.click("button:has-text('Import 1 session and 1 memory store')")
        page.wait_for_selector("h1:has-text('Imported history.db')")
        report = page.locator(".import-memory").inner_text()
        assert "Stored with the sessions" in report and "mem0" in report
        _shown_at_both_widths(page, "report", scheme)
        store = models.MemoryStore.objects.get()
        assert (store.kind, store.record_count, store.state) == ("records", 4, "ready")
        assert problems == [], "\n".join(problems)
    finally:
        context.close()
