"""A record's page in a real browser follows the record live: a version written through the write API appears in
its timeline within seconds, the counts change, and the page is not reloaded."""
from __future__ import annotations

import json

import pytest
from django.utils import timezone

from agents import models
from agents.projects import keys
from tests.browser.conftest import console_errors, screenshot

pytestmark = pytest.mark.browser



def _writer(client, project):
    """A write through the write API with a new key of ``project``: write(path, body)."""
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='agent').key}"}

    def write(path: str, body: object) -> None:
        response = client.post(f"/api/memory/writes/{path}/", data=json.dumps(body),
                               content_type="application/json", **auth)
        assert response.status_code in (200, 201), response.content

    return write

def test_a_record_page_shows_a_new_version_as_it_arrives(logged_in_page, live_server, client, project, agent):
    write = _writer(client, project)

    def version(n: int, text: str) -> dict[str, object]:
        return {"id": f"e{n}", "record": "mem-1", "op": "ADD" if n == 1 else "UPDATE", "text": text,
                "at": timezone.now().isoformat()}

    write("stores", {"id": "prefs", "name": "Preferences", "agent": agent.name})
    write("versions", {"store": "prefs", "versions": [version(1, "Alice is vegetarian")]})
    record = models.MemoryRecord.objects.get(external_id="mem-1")
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}/memory/records/{record.pk}/")
    assert page.locator("#record-live .badge-live").is_visible()
    page.evaluate("window.__notReloaded = true")
    write("versions", {"store": "prefs", "versions": [version(2, "Alice is vegan <script>alert(1)</script>")]})
    page.wait_for_selector("#v-2", timeout=5_000)
    assert page.evaluate("window.__notReloaded") is True
    assert "Alice is vegan <script>alert(1)</script>" in page.locator("#v-2").inner_text()
    assert page.locator("#record-counts-versions dd").inner_text() == "2"
    assert page.locator("#record-head .record-body").inner_text() == "Alice is vegan <script>alert(1)</script>"
    assert page.locator("#diff .diff-form").count() == 1  # two versions now: the diff is offered
    assert page.locator("#versions").count() == 1 and page.locator("#record-live").count() == 1
    screenshot(page, "record-live")
    assert errors == []


def test_the_memory_page_shows_a_new_record_as_it_arrives(logged_in_page, live_server, client, project, agent):
    write = _writer(client, project)

    def version(record: str, text: str) -> dict[str, object]:
        return {"id": f"w-{record}", "record": record, "op": "ADD", "text": text, "at": timezone.now().isoformat()}

    write("stores", {"id": "prefs", "name": "Preferences", "agent": agent.name})
    write("versions", {"store": "prefs", "versions": [version("mem-1", "Alice is vegetarian")]})
    page = logged_in_page
    errors = console_errors(page)
    page.goto(f"{live_server.url}/agents/{agent.pk}/memory/")
    assert page.locator("#memory-live .badge-live").is_visible()
    page.evaluate("window.__notReloaded = true")
    write("versions", {"store": "prefs", "versions": [version("mem-2", "Alice runs <b>daily</b>")]})
    page.wait_for_selector("#records :text('Alice runs <b>daily</b>')", timeout=5_000)
    assert page.evaluate("window.__notReloaded") is True
    assert page.locator("#records").count() == 1 and page.locator("#memory-live").count() == 1
    assert page.locator("#stores td[data-label='Records']").first.inner_text() == "2"
    assert page.locator("#health-records").inner_text() == "2" and page.locator("#store-health").count() == 1
    screenshot(page, "memory-live")
    assert errors == []
