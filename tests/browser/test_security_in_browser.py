"""The Content-Security-Policy in a real Chromium: every page works under it without one violation, and it
refuses a script that an escaping bug would let into a page."""
from __future__ import annotations

import re

import pytest

from agents.models import Session
from tests.browser.conftest import screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch_policy(page) -> list[str]:
    """Every CSP report Chromium makes (it logs each refused script, style or eval as a console error)."""
    refused: list[str] = []
    page.on(
        "console", lambda m: refused.append(f"{page.url}: {m.text}") if "Content Security Policy" in m.text else None
    )
    return refused


def test_it_runs_every_page_under_the_policy_without_a_violation(logged_in_page, live_server, make_session, alice):
    page = logged_in_page
    refused = _watch_policy(page)
    session = make_session(TRAVEL, title="Paris and Tokyo")
    session.agent.context_window = 400  # so that the window meters show
    session.agent.save()
    make_session([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "stray"}],
                 title="Broken orphan")
    base = live_server.url

    page.goto(f"{base}/")
    page.check("input[name=violations]")  # htmx swaps the table
    page.wait_for_url(re.compile(r"violations=on"))
    page.wait_for_function("() => !document.querySelector('#session-table').innerText.includes('Paris and Tokyo')")

    page.goto(f"{base}/sessions/{session.pk}/")
    meter = page.locator("#m-1 meter.meter")
    assert meter.is_visible() and float(meter.get_attribute("value")) > 0
    screenshot(page, "session-detail-under-csp")

    page.goto(f"{base}/sessions/{session.pk}/lab/?strategy=buffered&buffer_size=3")
    page.wait_for_selector("#lab-result .lab-stats")
    page.fill("input[name=buffer_size]", "0")  # the lab answers 400 and app.js swaps the errors in
    page.wait_for_selector("#error-buffer_size:has-text('greater than 0')")
    page.goto(f"{base}/sessions/{session.pk}/lab/compare/?s=buffered:buffer_size=3&s=unbounded&s=last_turns")
    assert page.locator(".compare-grid.columns-3 .compare-column").count() == 3
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.compare-grid')).gridTemplateColumns.split(' ').length")
        == 3
    )
    for url in ("/import/", "/exports/", "/lab/report/", "/api/"):
        page.goto(f"{base}{url}")
        page.wait_for_load_state("networkidle")
    page.goto(f"{base}/api/docs/")  # Swagger UI builds the operations from the schema with its own scripts
    page.wait_for_selector(".opblock-summary-path >> text=/api/sessions/")
    page.goto(f"{base}/api/redoc/")
    page.wait_for_selector("text=/api/sessions/", timeout=20_000)

    alice.is_superuser = alice.is_staff = True
    alice.save()
    page.goto(f"{base}/admin/agents/session/{session.pk}/change/")
    page.click(".select2-selection")  # the agent autocomplete (select2) opens and asks the server
    page.wait_for_selector(".select2-results__option:has-text('Travel bot')")
    page.goto(f"{base}/admin/agents/agent/add/")
    page.locator("input[name=name]").press_sequentially("Prepopulated Slug")  # admin JS fills the slug as you type
    page.wait_for_function("() => document.querySelector('input[name=slug]').value === 'prepopulated-slug'")
    # Redoc's "API docs by Redocly" logo comes from Redocly's CDN: the policy keeps it out, as meant.
    assert [r for r in refused if "cdn.redoc.ly" in r]
    refused = [r for r in refused if "cdn.redoc.ly" not in r]
    assert refused == [], "\n".join(refused)


def test_it_refuses_a_script_that_got_into_the_page(logged_in_page, live_server, make_session):
    page = logged_in_page
    refused = _watch_policy(page)
    session = make_session(TRAVEL)
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    # As if an escaping bug had let an agent's message through as markup.
    page.evaluate("""() => {
        const div = document.createElement('div');
        div.innerHTML = '<img src="/nope" onerror="window.__pwned = 1">';
        document.body.append(div);
        const script = document.createElement('script');
        script.textContent = 'window.__pwned = 2';
        document.body.append(script);
    }""")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert len(refused) >= 2
    assert Session.objects.count() == 1


def test_agent_markdown_is_formatted_and_never_runs(logged_in_page, live_server, make_session):
    page = logged_in_page
    refused = _watch_policy(page)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    session = make_session([
        {"role": "user", "content": "Plan my trip"},
        {"role": "assistant", "content": (
            "## Plan\nA **short** trip:\n\n- [the map](javascript:window.__pwned=1)\n- <img src=x onerror=alert(1)>\n"
            "- [tickets](https://tickets.example/a)\n\n| day | city |\n|---|---|\n| 1 | Paris |\n\n"
            "```\n<script>window.__pwned = 2</script>\n```")},
    ], title="Markdown")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    formatted = page.locator("#m-1 .text.markdown")
    assert formatted.locator("h2").inner_text() == "Plan" and formatted.locator("strong").inner_text() == "short"
    assert formatted.locator("img, script, iframe").count() == 0
    links = formatted.locator("a")
    assert links.count() == 1 and links.get_attribute("rel") == "noopener nofollow noreferrer"
    assert "[the map](javascript:window.__pwned=1)" in formatted.inner_text()
    # The text as written, one click away, in place of the formatted one.
    page.click("#m-1 .raw-view summary")
    assert not formatted.is_visible()
    assert "A **short** trip:" in page.locator("#m-1 .raw-view .text").inner_text()
    page.click("#m-1 .raw-view summary")
    assert formatted.is_visible()
    assert page.evaluate("window.__pwned") is None and dialogs == [] and refused == []
    screenshot(page, "markdown-1440-light")
    page.set_viewport_size({"width": 390, "height": 900})
    page.emulate_media(color_scheme="dark")
    page.locator("#m-1").scroll_into_view_if_needed()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    whole = screenshot(page, "markdown-390-dark")
    page.locator("#m-1").screenshot(path=str(whole.with_name("markdown-390-dark-message.png")))
