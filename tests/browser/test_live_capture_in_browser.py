"""Live capture in a real browser: a receiving session shows new messages within two seconds, without a reload."""
from __future__ import annotations

import pytest

from agents import models
from agents.capture import ingest
from agents.memory.otlp import Batch, Span
from agents.projects import keys
from tests import genai_spans
from tests.browser.conftest import screenshot
from tests.genai_spans import text

pytestmark = pytest.mark.browser

TRACE = "ef" * 16


def chat_span(n: int, inputs: list[dict], output: dict) -> Span:
    return genai_spans.chat_span(n, inputs, output, trace=TRACE, session_id="live-1")


def test_a_receiving_session_shows_new_messages_within_two_seconds_without_a_reload(
    logged_in_page, live_server, project
):
    api_key = keys.api_key_create(project=project, name="agent").api_key
    system = {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}
    hello, hi = text("user", "Hello"), text("assistant", "Hi! How can I help?")
    ingest.otlp_ingest(api_key=api_key, batch=Batch(spans=[chat_span(1, [system, hello], hi)]))
    session = models.Session.objects.get(external_id="live-1")
    page = logged_in_page
    page.goto(f"{live_server.url}{session.get_absolute_url()}")
    assert page.locator(".badge-live").first.is_visible()
    assert page.locator(".sent-note").first.inner_text().startswith("sent with 2 of 2 messages")
    page.evaluate("window.__notReloaded = true")
    ask, answer = text("user", "Weather in Rome?"), text("assistant", "24°C and clear.")
    ingest.otlp_ingest(api_key=api_key, batch=Batch(spans=[chat_span(2, [system, ask], answer)]))  # trimmed
    page.wait_for_selector("#m-4", timeout=2_000)
    assert page.evaluate("window.__notReloaded") is True
    assert "24°C and clear." in page.locator("#m-4").inner_text()
    assert page.locator("#session-message-count").inner_text() == "5"
    session.refresh_from_db()
    assert page.locator("#session-token-total").inner_text().startswith(f"{session.token_total:,}")
    assert page.locator("dd#session-violation-count").count() == 1  # swapped in place, not added beside
    assert "sent with 2 of 4 messages; 2 left out by the framework" in page.locator("#m-4 .sent-note").inner_text()
    screenshot(page, "live-session")
    page.click("#m-4 .sent-note a")
    page.wait_for_load_state()
    assert "… 2 stored messages not sent …" in page.content()
    screenshot(page, "live-call-sent")


def test_an_admin_creates_a_key_on_the_settings_page_and_sees_it_once(logged_in_page, live_server, project):
    page = logged_in_page
    page.goto(f"{live_server.url}/projects/")
    page.click("text=API keys")
    page.fill("#key-name", "travel-agent in production")
    page.click("button:has-text('Create key')")
    page.wait_for_selector(".key-once")
    key = page.locator(".key-once").input_value()
    assert key.startswith("mvz_") and keys.api_key_authenticate(key=key).name == "travel-agent in production"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=" in page.locator(".code-block").inner_text()
    screenshot(page, "project-api-keys")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Revoke')")
    page.wait_for_selector("text=revoked")
    assert page.locator(".key-once").count() == 0
    assert models.ApiKey.objects.get().revoked_at is not None
