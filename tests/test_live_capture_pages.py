"""The pages of live capture: what each call was sent, the list of it, the live tail, the list by activity."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from agents import models
from agents.capture import ingest
from agents.memory.chain import find_violations
from agents.memory.otlp import Batch, Span
from agents.projects import keys
from agents.store import reading, writing
from tests import genai_spans
from tests.genai_spans import text

TRACE = "cd" * 16
SYSTEM = {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}


def tool_call(call_id: str) -> dict:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": "get_weather", "arguments": {"city": "Rome"}}],
    }


def tool_result(call_id: str) -> dict:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": "24°C"}]}


def chat_span(n: int, inputs: list[dict], output: dict, session_id: str = "trip-1") -> Span:
    return genai_spans.chat_span(n, inputs, output, trace=TRACE, session_id=session_id, model="gpt-4o")


@pytest.fixture
def api_key(project) -> models.ApiKey:
    return keys.api_key_create(project=project, name="agent").api_key


@pytest.fixture
def trimmed_session(project, api_key) -> models.Session:
    """Three calls; the third was sent the system prompt and the last two messages only, which starts its list
    with a tool result whose call was left out."""
    u1, a1 = text("user", "Weather in Rome?"), tool_call("c1")
    r1, a2 = tool_result("c1"), text("assistant", "24°C in Rome.")
    u2, a3 = text("user", "Thanks!"), text("assistant", "You're welcome!")
    spans = [
        chat_span(1, [SYSTEM, u1], a1),
        chat_span(2, [SYSTEM, u1, a1, r1], a2),
        chat_span(3, [SYSTEM, r1, a2, u2], a3),
    ]
    ingest.otlp_ingest(api_key=api_key, batch=Batch(spans=spans))
    return models.Session.objects.get(external_id="trip-1")


def test_the_session_page_says_on_each_reply_what_its_call_was_sent(alice_client, trimmed_session):
    page = alice_client.get(trimmed_session.get_absolute_url()).content.decode()
    assert "sent with 2 of 2 messages" in page
    assert "sent with 4 of 4 messages" in page
    assert "sent with 4 of 6 messages</a>; 2 left out by the framework" in page
    assert "1 violation in what was sent" in page
    assert page.count('class="sent-note') == 3


def test_the_call_page_lists_exactly_what_the_call_received_with_its_violations(alice_client, trimmed_session):
    call = trimmed_session.llm_calls.get(span_id=f"{3:016x}")
    assert call.sent == [0, 3, 4, 5] and call.reply_seq == 6
    assert [v["kind"] for v in call.sent_violations] == ["leading_tool_result"]
    response = alice_client.get(f"/sessions/{trimmed_session.pk}/calls/{call.pk}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Sent with 4 of the 6 messages stored before its reply; <strong>2 left out by the framework</strong>" in page
    assert "… 2 stored messages not sent …" in page
    assert page.index("Be brief.") < page.index("24°C") < page.index("24°C in Rome.") < page.index("Thanks!")
    assert "leading_tool_result" in page


def test_the_call_page_of_a_session_in_another_project_is_not_found(client, bob, other_project, trimmed_session):
    client.force_login(bob)
    call = trimmed_session.llm_calls.first()
    assert client.get(f"/sessions/{trimmed_session.pk}/calls/{call.pk}/").status_code == 404


def test_a_receiving_session_has_a_live_badge_and_a_tail_that_polls_for_new_messages(
    alice_client, trimmed_session, api_key
):
    page = alice_client.get(trimmed_session.get_absolute_url()).content.decode()
    assert 'class="badge badge-live"' in page
    assert 'hx-get="?after=6&amp;live=1" hx-trigger="every 1s"' in page
    # Nothing new yet: the tail answers only itself.
    quiet = alice_client.get(
        trimmed_session.get_absolute_url() + "?after=6&live=1", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="m-' not in quiet and 'hx-get="?after=6&amp;live=1"' in quiet
    u3 = text("user", "Book it.")
    inputs = [
        SYSTEM,
        text("assistant", "24°C in Rome."),
        text("user", "Thanks!"),
        text("assistant", "You're welcome!"),
        u3,
    ]
    ingest.otlp_ingest(api_key=api_key, batch=Batch(spans=[chat_span(4, inputs, text("assistant", "Booked."))]))
    tail = alice_client.get(
        trimmed_session.get_absolute_url() + "?after=6&live=1", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="m-7"' in tail and 'id="m-8"' in tail and "Booked." in tail and "<html" not in tail
    assert 'hx-get="?after=8&amp;live=1"' in tail
    # The header's figures follow: messages, tokens and violations as stored now (out of band).
    trimmed_session.refresh_from_db()
    assert f'<dd id="session-message-count" hx-swap-oob="true">{trimmed_session.message_count}</dd>' in tail
    assert f'<span id="session-token-total" hx-swap-oob="true">{trimmed_session.token_total:,}' in tail
    assert '<dd id="session-violation-count" hx-swap-oob="true">' in tail
    assert 'hx-swap-oob' not in quiet


def test_a_session_without_recent_activity_has_no_badge_and_no_poll(alice_client, trimmed_session):
    models.Session.objects.filter(pk=trimmed_session.pk).update(last_activity_at=timezone.now() - dt.timedelta(hours=1))
    page = alice_client.get(trimmed_session.get_absolute_url()).content.decode()
    assert "badge-live" not in page and "live=1" not in page
    tail = alice_client.get(
        trimmed_session.get_absolute_url() + "?after=6&live=1", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "live=1" not in tail


def test_the_list_sorts_by_last_activity(alice_client, make_session, trimmed_session):
    older = make_session([{"role": "user", "content": "Hi"}])
    models.Session.objects.filter(pk=older.pk).update(imported_at=timezone.now() - dt.timedelta(days=1))
    page = alice_client.get("/?sort=-activity").content.decode()
    assert page.index(trimmed_session.title) < page.index(older.external_id)
    page = alice_client.get("/?sort=activity").content.decode()
    assert page.index(older.external_id) < page.index(trimmed_session.title)
    assert "Last activity" in page


def test_the_projects_page_links_admins_to_their_keys(alice_client, project):
    page = alice_client.get("/projects/").content.decode()
    assert '/projects/alpha/settings/' in page and "API keys" in page
    assert 'href="/api/docs/"' in page


def test_stored_summaries_stay_those_of_the_whole_chain_as_calls_arrive(project, api_key):
    """Running totals, counts and violations written batch by batch equal those of the finished chain checked
    at once, even when a late call rolls the session back."""
    u1, a1, r1 = text("user", "Weather?"), tool_call("c1"), tool_result("c1")
    a2, u2 = text("assistant", "24°C."), text("user", "And tomorrow?")
    a3 = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c2", "name": "get_weather", "arguments": {"day": 2}}],
    }
    u3, a4 = text("user", "Never mind."), text("assistant", "OK.")  # c2 is never answered: a violation
    spans = [chat_span(1, [SYSTEM, u1], a1), chat_span(2, [SYSTEM, u1, a1, r1], a2),
             chat_span(3, [SYSTEM, u1, a1, r1, a2, u2], a3), chat_span(4, [SYSTEM, a2, u2, a3, u3], a4)]
    for span in (spans[0], spans[3], spans[1], spans[2]):  # the 2nd and 3rd come late: the session is replayed
        ingest.otlp_ingest(api_key=api_key, batch=Batch(spans=[span]))
    session = models.Session.objects.get(external_id="trip-1")
    messages = reading.session_messages(session)
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    rows = list(session.messages.order_by("seq"))
    running = 0
    for row in rows:
        running += row.token_count
        assert row.token_running == running
    assert session.message_count == 9 and session.token_total == running + 3
    expected = [writing.violation_record(v) for v in find_violations(messages)]
    assert session.violations == expected and session.violation_count == 1
    assert expected[0]["kind"] in ("unanswered_tool_call", "interrupted_exchange")
    assert [c.sent for c in session.llm_calls.order_by("order_ns")][-1] == [0, 4, 5, 6, 7]


def test_calls_that_continue_a_session_created_by_another_path_find_its_messages(client, project, api_key):
    """A session started through the API (or an import) goes on live: what the calls resend is not stored twice."""
    key = keys.api_key_create(project=project, name="script").key
    body = {"agent": "travel-agent", "external_id": "trip-1",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Rome?"}]}
    assert client.post("/api/sessions/", data=json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 201
    ingest.otlp_ingest(
        api_key=api_key,
        batch=Batch(spans=[chat_span(1, [SYSTEM, text("user", "Weather in Rome?")], text("assistant", "24°C."))]),
    )
    session = models.Session.objects.get(external_id="trip-1")
    assert [m.content for m in reading.session_messages(session)] == ["Be brief.", "Weather in Rome?", "24°C."]
    assert session.llm_calls.get().sent == [0, 1]
