"""Import a real sample through the upload page, then export it, in a real Chromium."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.models import Session
from tests.browser.conftest import screenshot
from tests.paths import SAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_previews_then_imports_an_uploaded_file(logged_in_page, live_server, project):
    page = logged_in_page
    page.goto(f"{live_server.url}/")
    page.click("nav >> text=Import")
    page.set_input_files("input[type=file]", str(SAMPLES / "anthropic" / "travel.json"))
    page.click("button:has-text('Preview')")
    preview = page.locator("main").inner_text()
    assert "anthropic" in preview.lower()
    assert Session.objects.count() == 0  # nothing is saved by a preview
    screenshot(page, "import-preview")
    page.click("button:has-text('Import 1 session')")
    page.wait_for_load_state()
    assert Session.objects.count() == 1
    session = Session.objects.get()
    assert session.message_count == 10
    assert session.has_errors is True
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    assert page.locator("article.msg").count() == 10
    assert page.locator("article.is-error").count() == 1


def test_it_shows_a_clear_error_for_a_broken_paste(logged_in_page, live_server, project):
    page = logged_in_page
    page.goto(f"{live_server.url}/import/")
    page.fill("textarea[name=text]", '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": 5}]')
    page.click("button:has-text('Preview')")
    alert = page.locator("[role=alert]").first.inner_text()
    assert "messages[1].content" in alert or "[1].content" in alert
    assert Session.objects.count() == 0


def test_it_downloads_a_session_as_native_json(logged_in_page, live_server, make_session):
    page = logged_in_page
    session = make_session(
        [{"role": "user", "content": "Bonjour, 東京の天気は?"}, {"role": "assistant", "content": "Il fait beau."}],
        title="Downloadable",
    )
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.click("summary:has-text('Export')")
    page.select_option("select[name=format]", "native")
    with page.expect_download() as info:
        page.click("button:has-text('Download')")
    path = info.value.path()
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    assert document["format"] == "memoryviz"
    [stored] = document["sessions"]
    assert [m["content"] for m in stored["messages"]] == ["Bonjour, 東京の天気は?", "Il fait beau."]


ORPHAN = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "stray"}]
CLEAN = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]


def test_it_exports_the_filtered_list_with_a_post_and_a_link_downloads_nothing(
    logged_in_page, live_server, make_session
):
    from agents.models import ExportRecord

    page = logged_in_page
    make_session(CLEAN, title="Clean one")
    broken = make_session(ORPHAN, title="Broken one")
    # Filter the list (htmx swaps the table and its Export menu), then export what it shows.
    page.goto(f"{live_server.url}/")
    page.check("input[name=violations]")
    page.wait_for_url(lambda url: "violations=on" in url)
    page.wait_for_function("document.querySelectorAll('#session-table td.title-cell > a').length === 1")
    page.click("summary:has-text('Export these sessions')")
    page.select_option(".export-menu select[name=format]", "native")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.method) if "/export/" in request.url else None)
    with page.expect_download() as info:
        page.click(".export-menu button:has-text('Download')")
    document = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert [s["external_id"] for s in document["sessions"]] == [broken.external_id]
    assert requests == ["POST"]
    assert ExportRecord.objects.get().filters == {"violations": "on"}

    # A link to an export (a GET) shows the export page filled in from it, and records nothing.
    page.goto(f"{live_server.url}/export/?violations=on&format=openai_jsonl&on_invalid=stop")
    assert page.locator("h1").inner_text() == "Export"
    assert "sessions matching violations=on: 1 session, 2 messages" in page.locator("main").inner_text()
    assert page.locator("select[name=format]").input_value() == "openai_jsonl"
    assert ExportRecord.objects.count() == 1
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        screenshot(page, f"export-page-{width}")
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    # Its Download asks to stop on broken conversations: the page says why, nothing is downloaded or recorded.
    page.click("main button:has-text('Download')")
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == "Nothing was exported"
    assert f"session {broken.pk} (Broken one)" in page.locator("[role=alert]").inner_text()
    assert page.locator("select[name=on_invalid]").input_value() == "stop"
    assert ExportRecord.objects.count() == 1
    # Another format downloads the filtered sessions from this page.
    page.select_option("main select[name=format]", "native")
    with page.expect_download() as info:
        page.click("main button:has-text('Download')")
    document = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert [s["external_id"] for s in document["sessions"]] == [broken.external_id]
    assert ExportRecord.objects.count() == 2
