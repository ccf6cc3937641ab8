"""The aligned compare in a real Chromium under the pages' Content-Security-Policy: change one column's
parameter in its own form and only that column's marks change; the switch shows only the rows where the columns
disagree; columns moved, removed and added in place (htmx, the address follows); a mark's reason shows on keyboard
focus. Screenshots at 1440 and 390 px, light and dark color schemes."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.conversations import chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SPECS = ["buffered:buffer_size=3", "openmanus_window:max_messages=3", "safe_token_budget:max_tokens=200"]
MARKS = """() => Object.fromEntries(Array.from(document.querySelectorAll('tr.aligned-row[id]'),
    (tr) => [tr.id, Array.from(tr.querySelectorAll('.mark'), (m) => m.textContent)]))"""


def _screenshot(page, name: str) -> None:
    # caret="initial": Playwright's caret hiding leaves style="" on fields, which htmx copies on its next swap.
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True, caret="initial")


def test_it_changes_only_the_edited_columns_marks_and_filters_disagreements(logged_in_page, live_server, make_session):
    page = logged_in_page
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    session = make_session(chat(12), title="Weather in twelve cities")
    query = "&".join(f"s={s}" for s in SPECS)
    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/compare/?{query}")
    page.wait_for_selector("#aligned tr.aligned-row")
    before = page.evaluate(MARKS)

    # One column's parameter changes in its own form: only its marks change, in place, and the address follows.
    page.evaluate("window.__same_document = true")
    page.fill("#c2-p-max_messages", "9")
    page.wait_for_url(re.compile(r"max_messages%3D9"))
    page.wait_for_selector("#column-2[data-spec='openmanus_window:max_messages=9'] .compare-facts")
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
    after = page.evaluate(MARKS)
    both = sorted(set(before) & set(after))
    assert both
    assert [before[r][0] for r in both] == [after[r][0] for r in both]
    assert [before[r][2] for r in both] == [after[r][2] for r in both]
    assert [before[r][1] for r in both] != [after[r][1] for r in both]

    # The switch: only the rows the columns disagree on, without a page load.
    page.check("#compare-only")
    page.wait_for_url(re.compile(r"only=1"))
    page.wait_for_function("() => document.querySelectorAll('tr.aligned-row:not(.disagree)').length === 0")
    disagreeing = page.evaluate(MARKS)
    assert disagreeing and all(len(set(marks)) > 1 for marks in disagreeing.values())
    assert page.evaluate("window.__same_document") is True

    # Columns moved and removed in place: the address keeps the columns and the switch.
    page.click("#column-3 .compare-move")
    page.wait_for_url(re.compile(r"s=buffered[^&]*&s=safe_token_budget[^&]*&s=openmanus_window[^&]*&only=1"))
    page.wait_for_selector("#column-2[data-spec='safe_token_budget:max_tokens=200']")
    page.click("#column-3 .compare-remove")
    page.wait_for_url(re.compile(r"s=buffered%3Abuffer_size%3D3&s=safe_token_budget%3Amax_tokens%3D200&only=1$"))
    page.wait_for_function("() => !document.querySelector('#column-3')")
    page.select_option("#compare-add", "openmanus_window")
    page.wait_for_selector("#column-3[data-spec='openmanus_window']")
    page.wait_for_url(re.compile(r"&s=openmanus_window&only=1$"))
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
    assert page.evaluate("window.__same_document") is True

    # A mark's reason on keyboard focus, as on hover.
    mark = page.locator("tr.aligned-row.disagree .mark").first
    mark.focus()
    reason = mark.get_attribute("data-reason")
    assert reason and reason == mark.get_attribute("title")
    shown = mark.evaluate("(m) => getComputedStyle(m, '::after').content")
    assert reason in shown

    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.evaluate("window.scrollTo(0, 0)")
            # The table scrolls inside its panel; the panel fits the width.
            box = page.locator("#aligned").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
            _screenshot(page, f"trimming-lab-compare-aligned-{width}-{scheme}")
    assert refused == []
