"""Expensive endpoints are throttled per user (one budget for the API and the pages: 429 with Retry-After) and at
most a configured number run at once in a process (503 with Retry-After): never a stalled worker."""
from __future__ import annotations

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections

from agents import throttling

WEATHER = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
]


@pytest.fixture
def session(make_session):
    return make_session(WEATHER)


@pytest.fixture
def two_a_minute(settings):
    settings.MEMORYVIZ_EXPENSIVE_RATE = "2/min"


@pytest.fixture
def free_slots():
    """The process's running count as it was (a test that fills the slots gives them back)."""
    before = throttling.SLOTS.running
    yield
    throttling.SLOTS.running = before


def close_as_a_server_does(response) -> None:
    """Close a response the client dropped. Closing sends ``request_finished``, whose ``close_old_connections``
    would close the test's connection inside its transaction (PostgreSQL then fails the next query); the test
    client keeps it disconnected around a request for the same reason."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def trim_url(session) -> str:
    return f"/api/sessions/{session.pk}/trim/?strategy=buffered&buffer_size=2"


def test_the_trim_api_answers_429_with_retry_after_over_the_rate(alice_client, session, two_a_minute) -> None:
    assert [alice_client.get(trim_url(session)).status_code for _ in range(2)] == [200, 200]
    refused = alice_client.get(trim_url(session))
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "throttled" in refused.json()["error"].lower()


def test_the_lab_page_answers_429_with_retry_after_and_says_when(alice_client, session, two_a_minute) -> None:
    lab = f"/sessions/{session.pk}/lab/?strategy=buffered&buffer_size=2"
    assert alice_client.get(lab).status_code == 200
    assert alice_client.get(lab).status_code == 200
    refused = alice_client.get(lab)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    page = refused.content.decode()
    assert "many long requests" in page and f"Try again in {refused['Retry-After']} second" in page
    # Over htmx, the message alone, for the place the answer would have gone.
    fragment = alice_client.get(lab, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result")
    assert fragment.status_code == 429 and fragment.content.decode().lstrip().startswith('<div id="busy-message"')


def test_the_api_and_the_pages_share_one_budget_per_user(alice_client, client, bob, session, two_a_minute) -> None:
    assert alice_client.get(trim_url(session)).status_code == 200
    export = alice_client.post(f"/sessions/{session.pk}/export/", {"format": "openai"})
    assert export.status_code == 200
    assert b"Weather in Paris?" in b"".join(export.streaming_content)
    assert alice_client.get(f"/sessions/{session.pk}/lab/compare/").status_code == 429
    assert alice_client.get(trim_url(session)).status_code == 429
    # Cheap pages are not counted, and another user has a budget of their own.
    assert alice_client.get("/").status_code == 200
    client.force_login(bob)
    assert client.get("/lab/report/").status_code == 200


def test_a_busy_process_answers_503_with_retry_after_at_once(alice_client, session, settings, free_slots) -> None:
    settings.MEMORYVIZ_EXPENSIVE_CONCURRENCY = 2
    settings.MEMORYVIZ_BUSY_RETRY_SECONDS = 7
    # Two long requests running in this process (as admitted requests hold them).
    assert throttling.SLOTS.take() and throttling.SLOTS.take()
    api = alice_client.get(trim_url(session))
    assert api.status_code == 503 and api["Retry-After"] == "7" and "busy" in api.json()["error"]
    page = alice_client.get(f"/sessions/{session.pk}/lab/")
    assert page.status_code == 503 and page["Retry-After"] == "7" and "server is busy" in page.content.decode()
    upload = alice_client.post("/import/", {})
    assert upload.status_code == 503
    assert alice_client.get("/import/").status_code == 200  # the form itself is cheap
    # So is the export page a GET of an export URL shows; the download (a POST) is not.
    assert alice_client.get(f"/sessions/{session.pk}/export/?format=openai").status_code == 200
    assert alice_client.post(f"/sessions/{session.pk}/export/", {"format": "openai"}).status_code == 503
    throttling.SLOTS.give_back()
    assert alice_client.get(trim_url(session)).status_code == 200
    throttling.SLOTS.give_back()
    assert throttling.SLOTS.running == 0


def test_a_streamed_export_holds_its_slot_until_it_is_sent_or_dropped(
    alice_client, session, settings, free_slots
) -> None:
    settings.MEMORYVIZ_EXPENSIVE_CONCURRENCY = 1
    response = alice_client.post(f"/sessions/{session.pk}/export/", {"format": "openai"})
    assert response.streaming and throttling.SLOTS.running == 1
    assert alice_client.get(trim_url(session)).status_code == 503
    body = b"".join(response.streaming_content)
    assert b"Weather in Paris?" in body and throttling.SLOTS.running == 0
    # A client that goes away before the first chunk: closing the response gives the slot back too.
    dropped = alice_client.post(f"/sessions/{session.pk}/export/", {"format": "openai"})
    assert throttling.SLOTS.running == 1
    close_as_a_server_does(dropped)
    assert throttling.SLOTS.running == 0


def test_a_failing_expensive_view_gives_its_slot_back(alice_client, session, free_slots) -> None:
    assert alice_client.get(f"/api/sessions/{session.pk}/trim/?strategy=nope").status_code == 400
    assert alice_client.get(f"/sessions/{session.pk + 999}/lab/").status_code == 404
    assert throttling.SLOTS.running == 0
