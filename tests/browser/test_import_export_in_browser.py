"""Import a real sample through the upload page, then export it, in a real Chromium."""
from __future__ import annotations

import json

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
    document = json.loads(open(path, encoding="utf-8").read())
    assert document["format"] == "memoryviz"
    [stored] = document["sessions"]
    assert [m["content"] for m in stored["messages"]] == ["Bonjour, 東京の天気は?", "Il fait beau."]
