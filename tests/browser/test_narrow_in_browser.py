"""At 390 px (a phone) no page scrolls sideways: tables scroll inside their box, long unbroken text wraps."""
from __future__ import annotations

import json

import pytest

from tests.browser.conftest import screenshot
from tests.conversations import chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

UNBROKEN = json.dumps({"rows": ["x" * 300, {"id": "y" * 200}], "token": "z" * 400}, separators=(",", ":"))


def _overflow(page) -> list[str]:
    """The page's sideways overflow, and which elements stick out past the viewport's right edge."""
    return page.evaluate(
        """() => {
          const width = document.documentElement.clientWidth;
          const out = [];
          const scrolled = document.documentElement.scrollWidth;
          if (scrolled > width) out.push(`document ${scrolled} > ${width}`);
          for (const e of document.querySelectorAll('body *')) {
            const r = e.getBoundingClientRect();
            if (r.width && r.right > width + 1) {
              let p = e.parentElement, clipped = false;
              while (p) {
                const o = getComputedStyle(p).overflowX;
                if (o === 'auto' || o === 'scroll' || o === 'hidden') { clipped = true; break; }
                p = p.parentElement;
              }
              if (!clipped) out.push(`${e.tagName.toLowerCase()}.${e.className} right=${Math.round(r.right)}`);
            }
          }
          return out.slice(0, 12);
        }"""
    )


def test_no_page_scrolls_sideways_on_a_phone(logged_in_page, live_server, make_session):
    from agents.models import ExportRecord, Label

    page = logged_in_page
    session = make_session(
        chat(4)
        + [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c9",
                        "type": "function",
                        "function": {"name": "lookup_everything_at_once", "arguments": UNBROKEN},
                    }
                ],
            },
            # Marked as an error: the header's list of tool errors shows its preview too.
            {"role": "tool", "tool_call_id": "c9", "content": UNBROKEN, "is_error": True},
        ],
        title="A long title that goes on and on about the weather in many cities at once",
        external_id="e" * 64,
    )
    # A label row (name, colour, Save, Delete) is the widest row of the project settings.
    Label.objects.create(project=session.agent.project, name="hallucination", color="#b42318")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.click("summary:has-text('Export')")
    with page.expect_download():
        page.click(".export-menu button:has-text('Download')")
    assert ExportRecord.objects.count() == 1
    page.set_viewport_size({"width": 390, "height": 844})
    pages = {
        "list": "/",
        "session": f"/sessions/{session.pk}/",
        "exports": "/exports/",
        "export": f"/sessions/{session.pk}/export/",
        "report": "/lab/report/?s=buffered&s=safe_token_budget&s=langchain_last",
        "lab": f"/sessions/{session.pk}/lab/?strategy=buffered&buffer_size=3",
        "compare": f"/sessions/{session.pk}/lab/compare/",
        "import": "/import/",
        "settings": f"/projects/{session.agent.project.slug}/settings/",
        "agent": f"/agents/{session.agent_id}/",
        "diff": f"/sessions/{session.pk}/diff/?trim=buffered:buffer_size=3",
    }
    problems = {}
    for name, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state()
        screenshot(page, f"narrow-390-{name}")
        found = _overflow(page)
        if found:
            problems[name] = found
    assert not problems, problems
