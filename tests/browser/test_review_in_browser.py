"""The review queue in a real Chromium, driven by its keys: l and c reach the annotation's label and comment,
d marks the session done and opens the next unreviewed one, s skips; at 1440 and 390 px."""
from __future__ import annotations

import pytest

from agents import models
from tests.browser.conftest import CONTRAST, htmx_idle, screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 390])
def test_it_works_through_the_queue_with_its_keys(logged_in_page, live_server, make_session, project, width):
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    scheme = "dark" if width == 390 else "light"  # the review UI's badges and pills in both schemes
    page.emulate_media(color_scheme=scheme)
    models.Label.objects.create(project=project, name="hallucination", color="#dc2626")
    first = make_session(TRAVEL, title="Paris run")
    second = make_session(TRAVEL, title="Tokyo run")
    third = make_session(TRAVEL, title="Lima run")
    models.Session.objects.filter(pk=third.pk).update(review_status=models.ReviewStatus.DONE)

    page.goto(f"{live_server.url}/")
    page.click("#review-queue")
    page.wait_for_selector(".queue-bar")
    assert page.locator(".queue-bar").inner_text().startswith("Queue: 2 unreviewed")
    opened = page.url
    # The review's choices sit beside their labels at their own width: each select took the whole column.
    panel = page.locator("#review").bounding_box()
    for choice in ("#review-status", "#review-assignee", "#annotate-label"):
        assert page.locator(choice).bounding_box()["width"] < panel["width"] / 2, choice
    word, field = (page.locator(s).bounding_box() for s in ("label[for=review-status]", "#review-status"))
    assert abs(word["y"] + word["height"] / 2 - (field["y"] + field["height"] / 2)) < 8  # on one line

    # l goes to the label, c to the comment; typing there types (s and d are letters of the comment).
    page.keyboard.press("l")
    assert page.evaluate("() => document.activeElement.id") == "annotate-label"
    page.select_option("#annotate-label", "hallucination")
    page.locator("#annotate-label").blur()
    page.keyboard.press("c")
    assert page.evaluate("() => document.activeElement.id") == "annotate-comment"
    page.keyboard.type("said sold out, then booked it")
    page.click("#annotate button[type=submit]")
    htmx_idle(page)
    page.wait_for_selector(".annotation-list .label-chip")
    assert "said sold out, then booked it" in page.locator(".annotation-list").inner_text()
    assert page.url == opened
    # Its Delete reads as a button, not a disabled one: it had the top bar's pale link colour (1.5:1 on white).
    assert page.evaluate(CONTRAST, ".annotation form.inline-form button") >= 4.5
    screenshot(page, f"review-queue-{width}px-{scheme}")
    # In a queue, ? lists the queue's keys with the others.
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("?")
    keys = page.locator("#keys-help")
    keys.wait_for()
    listed = keys.inner_text()
    assert "review queue: skip, done and next" in listed and "annotation: label, comment" in listed
    page.keyboard.press("Escape")
    keys.wait_for(state="hidden")

    # d: this one is done, the next unreviewed one opens.
    assert page.locator(".queue-bar").is_visible()  # annotating kept the queue bar
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    with page.expect_navigation():
        page.keyboard.press("d")
    page.wait_for_selector(".queue-bar")
    done = models.Session.objects.get(pk=opened.split("/sessions/")[1].split("/")[0])
    assert done.review_status == models.ReviewStatus.DONE
    assert page.locator(".queue-bar").inner_text().startswith("Queue: 1 unreviewed")
    assert {first.pk, second.pk} - {done.pk} == {int(page.url.split("/sessions/")[1].split("/")[0])}

    # s skips it, leaving it unreviewed: the queue has nothing after it and says so on the list.
    with page.expect_navigation():
        page.keyboard.press("s")
    page.wait_for_selector("text=The review queue is empty")
    assert models.Session.objects.filter(review_status=models.ReviewStatus.UNREVIEWED).count() == 1

    # An editor (alice is the project's admin) deletes a session from its page, after a confirmation.
    if width != 1440:
        return
    page.goto(f"{live_server.url}{first.get_absolute_url()}")
    page.click("#delete-session")
    page.wait_for_selector("#confirm-delete")
    assert "This cannot be undone" in page.locator(".delete-confirm").inner_text()
    screenshot(page, "session-delete-confirm-1440")
    with page.expect_navigation():
        page.click("#confirm-delete")
    assert "Deleted the session 'Paris run'" in page.locator(".notice-success").inner_text()
    assert not models.Session.objects.filter(pk=first.pk).exists()
