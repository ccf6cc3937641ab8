"""The snapshots page in Chromium, on the files LangGraph and AgentScope wrote (imported through the one import path):
open a snapshot's tree, pick two on the timeline and compare them, follow a change to its message, page a long
timeline with htmx; light and dark, 1440 and 390 px, with no console error and nothing past the right edge."""
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
from tests.memory_pages import bulk_snapshots, import_friday, import_langgraph_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def agents(project, tmp_path: Path) -> dict[str, models.Agent]:
    langgraph = import_langgraph_history(project)
    return {"friday": import_friday(project, tmp_path), "langgraph": langgraph}


def test_a_user_opens_a_snapshot_compares_two_and_reaches_the_message_a_change_added(
        logged_in_page, live_server, agents):
    page = logged_in_page
    errors = console_errors(page)
    friday = agents["friday"]
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    # From the agent's memory page.
    page.goto(f"{live_server.url}/agents/{friday.pk}/memory/")
    page.click("#memory-snapshots-link")
    page.wait_for_selector("#timeline")
    assert page.locator(".snapshot-timeline .timeline-item").count() == 2
    # Open the later one: its state folded, the first level open.
    page.click(f"#s-{second.pk} a.snapshot-open")
    page.wait_for_selector("#snapshot-tree")
    content = page.locator('#snapshot-tree summary[title="$.memory.content"]')
    assert content.is_visible()
    first_message = page.locator('#snapshot-tree summary[title="$.memory.content[0]"]')
    assert not first_message.is_visible()
    content.click()
    assert first_message.is_visible() and "user: What's the weather in Hangzhou?" in first_message.inner_text()
    # Pick A and B on the timeline and compare: the address says which, to share.
    page.check(f"#s-{first.pk} input[name=a]")
    page.check(f"#s-{second.pk} input[name=b]")
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#changes")
    assert f"a={first.pk}" in page.url and f"b={second.pk}" in page.url and f"snapshot={second.pk}" in page.url
    assert "6 added" in page.locator(".diff-sides-note").inner_text()
    link = page.locator("#changes a.change-message").nth(1)
    assert link.inner_text() == "message #7 in the session"
    link.click()
    page.wait_for_selector("#m-7")
    assert page.evaluate("() => document.querySelector(':target')?.id") == "m-7"
    assert errors == []


def test_a_long_timeline_pages_with_htmx_and_keeps_its_address(logged_in_page, live_server, agent):
    page = logged_in_page
    errors = console_errors(page)
    made = bulk_snapshots(agent, 120)
    page.goto(f"{live_server.url}/agents/{agent.pk}/snapshots/")
    page.click("#timeline-next")
    page.wait_for_function("() => location.search.includes('after=')")
    htmx_idle(page)
    assert page.locator(".snapshot-timeline .timeline-item").first.get_attribute("id") == f"s-{made[50].pk}"
    page.click("#timeline-last")
    page.wait_for_function("() => location.search.includes('before=last')")
    htmx_idle(page)
    assert page.locator(".snapshot-timeline .timeline-item").last.get_attribute("id") == f"s-{made[-1].pk}"
    page.reload()
    assert page.locator(".snapshot-timeline .timeline-item").last.get_attribute("id") == f"s-{made[-1].pk}"
    assert errors == []


def test_the_page_reads_well_in_light_and_dark_at_1440_and_390(browser, live_server, alice, agents):
    friday, langgraph = agents["friday"], agents["langgraph"]
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    checkpoints = list(models.Snapshot.objects.filter(agent=langgraph).order_by("taken_at"))
    pages = {
        "agentscope": f"/agents/{friday.pk}/snapshots/?snapshot={second.pk}&a={first.pk}&b={second.pk}",
        "langgraph": f"/agents/{langgraph.pk}/snapshots/?snapshot={checkpoints[-1].pk}&a={checkpoints[1].pk}"
                     f"&b={checkpoints[-1].pk}",
    }
    for scheme, page, errors in in_each_scheme(browser, live_server):
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state()
            # Open every fold, so that what they hold is measured too.
            page.evaluate("() => document.querySelectorAll('main details').forEach(d => d.open = true)")
            assert_readable(page, ("h1", ".facts dt", ".snapshot-open", ".json-key", ".json-string", ".change-path",
                                   ".change-new pre.change-value", ".timeline-cause", ".op-added", ".pick-side"),
                            scheme, name)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                if width == 390:
                    assert page.evaluate(OVERFLOW) == [], (scheme, name)
                screenshot(page, f"snapshots-{scheme}-{name}-{width}")
            page.set_viewport_size({"width": 1440, "height": 900})
        assert errors == [], scheme
