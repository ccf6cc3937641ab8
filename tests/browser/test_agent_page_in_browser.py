"""The agent page in a real Chromium: an editor changes the model and context window over htmx, and the session
page measures against the new window; a viewer sees the agent read-only."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from agents.models import Membership
from tests.browser.conftest import screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_lets_an_editor_change_the_agent_from_the_session_page(logged_in_page, live_server, make_session, agent):
    page = logged_in_page
    session = make_session(TRAVEL, title="Paris and Tokyo")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.get_by_role("link", name="Travel bot", exact=True).last.click()
    page.wait_for_url(re.compile(rf"/agents/{agent.pk}/$"))
    page.evaluate("window.__same_document = true")
    page.fill("input[name=model]", "gpt-4.1-mini")
    page.fill("input[name=context_window]", "400")
    page.fill("textarea[name=description]", "Plans trips; calls get_weather.")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("#agent-card .notice-success:has-text('Saved.')")
    assert page.evaluate("window.__same_document") is True  # htmx swapped the card
    assert page.locator("#agent-window").inner_text() == "400 tokens"
    assert page.locator("#agent-model").inner_text() == "gpt-4.1-mini"
    screenshot(page, "agent-page-saved")

    # The browser keeps a window under 1 from being sent (min=1); blanks pass it, and the server names the field.
    page.fill("input[name=name]", "   ")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("#error-name")
    assert page.locator("#error-name").inner_text() == "This field is required."
    assert page.locator("h1").inner_text() == "Travel bot"

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    assert "400 tokens" in page.locator(".facts").inner_text()
    # The running totals are now measured against 400 tokens: the meters show it.
    assert float(page.locator("#m-5 meter.meter").get_attribute("value")) > 10


def test_it_shows_a_viewer_the_agent_read_only(page, live_server, agent, project):
    carol = User.objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=carol, role=Membership.Level.VIEWER)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", "pw-carol-123")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/agents/{agent.pk}/")
    assert page.locator("h1").inner_text() == "Travel bot"
    assert page.locator("form.agent-form").count() == 0
    assert "editors and admins of Alpha can" in page.locator(".read-only-note").inner_text()
    screenshot(page, "agent-page-viewer")
