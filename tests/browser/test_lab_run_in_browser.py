"""The lab's replayed run, presets and copy buttons in a real Chromium, under the pages' Content-Security-Policy:
the slider and the first-violation link show one call of the run over htmx, a preset is saved and reopened by its
link, "Copy as JSON" puts what the model receives on the clipboard. Screenshots at 1440 and 390 px, light and
dark color schemes."""
from __future__ import annotations

import json
import re

import pytest

from agents.memory.replay import replay, replay_call
from agents.memory.trimming import strategy_spec, trim
from agents.store import reading
from tests.browser.conftest import ARTIFACTS
from tests.conversations import chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch_policy(page) -> list[str]:
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    return refused


def _screenshot(page, name: str) -> None:
    """A full-page shot that leaves the page as it was: Playwright hides the caret by setting a style on every
    field and leaves an empty ``style=""`` behind, which htmx copies when it settles a swap, an inline style the
    policy refuses."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True, caret="initial")


def test_it_steps_through_the_replayed_run_and_keeps_the_setting(logged_in_page, live_server, make_session):
    page = logged_in_page
    refused = _watch_policy(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    session = make_session(chat(6), title="Weather in six cities")
    messages, counts = reading.session_messages_with_counts(session)
    spec = strategy_spec("openmanus_window", {"max_messages": 3})
    run = replay(messages, spec, counter=session.token_counter, token_counts=counts)
    at_violation = replay_call(messages, spec, call=run.steps[2].call, counter=session.token_counter,
                               token_counts=counts)
    first = replay_call(messages, spec, call=run.steps[0].call, counter=session.token_counter, token_counts=counts)

    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/?strategy=openmanus_window&max_messages=3")
    page.wait_for_selector("#lab-replay .replay-chart")
    assert page.locator("#step-now").inner_text().startswith("the whole list, trimmed once")
    page.evaluate("window.__same_document = true")

    # The first violation's link shows that call: what was sent then, and the chart's cursor on it.
    page.click("#first-violation")
    page.wait_for_url(re.compile(r"step=2"))
    page.wait_for_function(f"() => document.querySelector('#kept-count').innerText === '{len(at_violation.kept)}'")
    assert page.locator("#step-now").inner_text().startswith("call 3 of 13: before message #6")
    assert page.locator("#lab-replay .chart-cursor").count() == 1
    assert page.locator("#lab-step").input_value() == "2"
    assert page.locator("#lab-replay .chart-violation").count() > 1

    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar drawn at the top of the full-page shot
            # The replay and the panel below fit the width (the lab's header at 390 px is issue 9's).
            for panel in ("#lab-replay", ".lab-elsewhere", "#lab-form"):
                box = page.locator(panel).bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, (panel, box)
            _screenshot(page, f"trimming-lab-replay-{width}-{scheme}")
    page.set_viewport_size({"width": 1440, "height": 900})

    # The slider moves to another call (keyboard: a person's way, and the change event htmx listens to).
    page.wait_for_load_state("networkidle")
    page.focus("#lab-step")
    page.keyboard.press("Home")
    page.wait_for_url(re.compile(r"step=0"))
    page.wait_for_function("() => document.querySelector('#step-now').innerText.startsWith('call 1 of 13')")
    assert page.locator("#kept-count").inner_text() == str(len(first.kept))
    # A parameter change keeps the chosen call.
    page.fill("input[name=max_messages]", "4")
    page.wait_for_url(re.compile(r"max_messages=4.*step=0|step=0.*max_messages=4"))
    page.keyboard.press("Tab")  # leaving the field sends a change too: let its answer land before clicking on
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__same_document") is True

    # What the model receives at the next call (the whole list trimmed once: what the API gives), as JSON.
    assert page.locator("#elsewhere-whole-list").is_visible()
    page.click("#copy-messages")
    page.wait_for_function("() => document.querySelector('.copy-status').innerText.startsWith('Copied')")
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    whole = trim(messages, strategy_spec("openmanus_window", {"max_messages": 4}), counter=session.token_counter,
                 token_counts=counts)
    assert [m["content"] for m in copied] == [messages[k].content for k in whole.kept]


    # Saved as a preset, reopened by its link on the same call.
    page.fill("#preset-name", "four messages")
    page.click("#preset-save button[type=submit]")
    page.wait_for_url(re.compile(r"preset=four\+messages"))
    assert page.locator("#preset-badge").inner_text().startswith("Preset four messages")
    assert page.locator("#p-max_messages").input_value() == "4"
    assert page.locator("#preset-list a[aria-current]").inner_text() == "four messages"

    # The report's per-call mode: broken at some call beside broken at the end, linked to that call in the lab.
    page.goto(f"{live_server.url}/lab/report/?s=openmanus_window:max_messages=3")
    page.check("#id_per_call")
    page.click("text=Run report")
    page.wait_for_url(re.compile(r"per_call=1"))
    page.wait_for_selector(".summary-row [data-broken-some-call='1']")
    page.evaluate("window.scrollTo(0, 0)")
    _screenshot(page, "trimming-report-per-call")
    page.click(".report-breaks-at")
    page.wait_for_selector("#step-now")
    assert page.locator("#step-now").inner_text().startswith("call 3 of 13")
    assert refused == []


def test_a_long_sessions_replay_follows_the_preview_over_htmx(logged_in_page, live_server, make_session, settings):
    # Past MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES the preview comes first; the page asks for the replay by itself and
    # swaps it in, slider and all, with no page load; the slider then works as for a short session.
    settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES = 10
    page = logged_in_page
    refused = _watch_policy(page)
    session = make_session(chat(6), title="Weather in six cities")
    messages, counts = reading.session_messages_with_counts(session)
    spec = strategy_spec("openmanus_window", {"max_messages": 3})
    run = replay(messages, spec, counter=session.token_counter, token_counts=counts)
    whole = trim(messages, spec, counter=session.token_counter, token_counts=counts)

    page.goto(f"{live_server.url}/sessions/{session.pk}/lab/?strategy=openmanus_window&max_messages=3")
    page.evaluate("window.__same_document = true")
    assert page.locator("#kept-count").inner_text() == str(len(whole.kept))
    page.wait_for_selector("#lab-replay .replay-chart")
    assert page.locator("#replay-pending").count() == 0
    assert page.locator("#lab-step").get_attribute("max") == str(len(run.steps) - 1)
    assert page.evaluate("window.__same_document") is True
    assert page.url.endswith("max_messages=3")  # the part's address is not pushed

    page.click("#first-violation")
    page.wait_for_url(re.compile(r"step=2"))
    page.wait_for_selector("#lab-replay .chart-cursor", state="attached")
    assert page.locator("#step-now").inner_text().startswith("call 3 of 13: before message #6")
    assert page.evaluate("window.__same_document") is True
    assert refused == []
