"""Memory written during a session, in Chromium, on Letta's own agent file: the message whose core_memory_* call
edited a block says what it wrote, one click from the record's page at that version. Light and dark, 1440 and
390 px, readable, nothing wider than the screen, no console error."""
from __future__ import annotations

import pytest

from agents import models
from agents.transfer import imports
from tests.browser.conftest import OVERFLOW, assert_readable, in_each_scheme, screenshot
from tests.paths import MEMORY_SAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def letta(alice) -> models.Session:
    imports.import_file(MEMORY_SAMPLES / "letta" / "memgpt_agent_with_convo.v1.af", project="letta")
    project = models.Project.objects.get(slug="letta")
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    return models.Session.objects.get(agent__project=project)


def test_a_user_follows_a_block_edit_to_its_version(browser, live_server, letta):
    human = models.RecordVersion.objects.get(session=letta, seq=5, record__external_id__endswith="human")
    selectors = ("#m-5 .memory-writes .recall-head strong", "#m-5 .memory-write-item .op",
                 "#m-5 .memory-write-item a", "#m-5 .memory-write-item .recall-store",
                 "#m-5 .memory-writes .recall-text")
    for scheme, page, errors in in_each_scheme(browser, live_server):
        page.goto(f"{live_server.url}{letta.get_absolute_url()}?at=5")
        panel = page.locator("#m-5 .memory-writes")
        assert panel.is_visible()
        assert "First name: Sarah" in panel.inner_text()
        assert_readable(page, selectors, scheme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:
                assert page.evaluate(OVERFLOW) == [], (scheme, page.evaluate(OVERFLOW))
            page.locator("#m-5").scroll_into_view_if_needed()
            page.locator("#m-5").screenshot(path=str(screenshot(page, f"writes-{scheme}-{width}")
                                                     .with_name(f"writes-m5-{scheme}-{width}.png")))
        link = panel.locator(f'a[href^="/memory/records/{human.record_id}/"]')
        link.click()
        page.wait_for_function(f"() => location.hash === '#v-{human.number}'")
        # The hash is the new page's from its first byte: wait for the version's row itself (is_visible does not).
        page.locator(f"#v-{human.number}").wait_for(state="visible")
        assert page.locator(f"#v-{human.number}").is_visible()
        assert errors == [], scheme
