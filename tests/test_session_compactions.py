"""A compaction on the session page: one event in the chain, before the message at its seq, saying what went out
(linked) and what summary came in (escaped, folded); a session without compactions reads none."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _chat(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n)]


def _call(session: models.Session, name: str, *, reply: int, sent: list[int]) -> models.LlmCall:
    return models.LlmCall.objects.create(session=session, trace_id="t" * 32, span_id=name * 16, placed=True,
                                         sent=sent, reply_seq=reply)


def _compaction(session: models.Session, key: str, **fields) -> models.Compaction:
    return models.Compaction.objects.create(session=session, external_id=key, at=T0, **fields)


def _get(client, session: models.Session, query: dict | None = None) -> tuple[int, str, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(session.get_absolute_url(), query or {})
    assert response.status_code == 200
    return len(ctx.captured_queries), response.content.decode(), [q["sql"] for q in ctx.captured_queries]


def _events(page: str) -> list[str]:
    return re.findall(r'<aside id="compaction-\d+" class="compaction-event".*?</aside>', page, re.S)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<details.*?</details>", "", re.sub(r"<(?!/?details)[^>]+>", "", html),
                                      flags=re.S)).strip()


@pytest.fixture
def compacted(make_session) -> models.Session:
    """Ten messages; the call behind #7 was passed back a summary at #5 and sent #0, #5 and #6 only."""
    session = make_session(_chat(10))
    call = _call(session, "a", reply=7, sent=[0, 5, 6])
    _compaction(session, "t:part:c1", seq=5, llm_call=call, source="input",
                summary='<script>alert("x")</script> Alice is vegan & booked Rome')
    return session


def test_it_shows_what_went_out_and_the_summary_before_the_message_that_passed_it_back(alice_client, compacted):
    _, page, _ = _get(alice_client, compacted)
    [event] = _events(page)
    assert _text(event) == "Compacted: 4 messages went out (#1\u2013#4), a summary came in"
    url = compacted.get_absolute_url()
    assert f'<a href="{url}?at=1#m-1">#1</a>\u2013<a href="{url}?at=4#m-4">#4</a>' in event
    # In the chain: after #4, right before #5.
    assert page.index('id="m-4"') < page.index(event) < page.index('id="m-5"')
    end = page.index(event) + len(event)
    assert page[end:page.index("<article", end)].strip() == ""


def test_it_folds_the_summary_and_escapes_it(alice_client, compacted):
    _, page, _ = _get(alice_client, compacted)
    [event] = _events(page)
    assert ('<details class="compaction-summary"><summary>Summary</summary><div class="compaction-text">'
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Alice is vegan &amp; booked Rome"
            "</div></details>") in event
    assert "<script>alert" not in page


def test_a_summary_a_reply_brought_says_what_the_next_call_was_not_sent(alice_client, make_session):
    session = make_session(_chat(8))
    making = _call(session, "a", reply=3, sent=[0, 1, 2])  # the call that wrote the summary was sent everything
    _call(session, "b", reply=5, sent=[0, 3, 4])
    _compaction(session, "t:part:c1", seq=3, llm_call=making, source="output", summary="so far")
    _, page, _ = _get(alice_client, session)
    [event] = _events(page)
    assert _text(event) == "Compacted: 2 messages went out (#1\u2013#2), a summary came in"
    assert page.index('id="m-2"') < page.index(event) < page.index('id="m-3"')


def test_a_flag_without_a_captured_call_or_summary_says_so(alice_client, make_session):
    session = make_session(_chat(6))
    _compaction(session, "t:span:k4", seq=2, source="flag")
    _compaction(session, "t:span:k9", seq=None, source="flag")  # on no message: not in the chain
    _, page, _ = _get(alice_client, session)
    [event] = _events(page)
    assert _text(event) == "Compacted: what went out is not recorded, no summary captured"
    assert "compaction-summary" not in event
    assert page.index('id="m-1"') < page.index(event) < page.index('id="m-2"')


def test_a_page_loaded_over_htmx_shows_its_compactions(alice_client, make_session):
    session = make_session(_chat(6))
    _compaction(session, "t:part:c1", seq=4, source="input", summary="so far")
    page = alice_client.get(session.get_absolute_url(), {"after": 2}, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in page
    [event] = _events(page)
    assert page.index(event) < page.index('id="m-4"')


def test_a_session_without_compactions_reads_none_and_one_with_them_one_range(alice_client, make_session,
                                                                               compacted):
    plain = make_session(_chat(10))
    plain_count, page, sql = _get(alice_client, plain)
    assert "compaction-event" not in page
    # Only the session's own query asks whether it has any (an EXISTS); no query of the compactions themselves.
    touching = [s for s in sql if "agents_compaction" in s]
    assert len(touching) == 1 and 'FROM "agents_session"' in touching[0]
    count, _, sql = _get(alice_client, compacted)
    assert count == plain_count + 1
    assert len([s for s in sql if 'FROM "agents_compaction"' in s and "agents_session" not in s.split("FROM")[1]]) == 1


def test_a_page_costs_the_same_queries_wherever_it_stands_in_a_long_compacted_session(alice_client, make_session):
    session = make_session(_chat(1200))
    for n, seq in enumerate(range(50, 1200, 100)):
        _compaction(session, f"c{n}", seq=seq, source="input", summary=f"summary {n}")
    counts = []
    for query in ({}, {"at": 650}, {"at": 1150}):
        count, page, _ = _get(alice_client, session, query)
        counts.append(count)
        assert _events(page)
    assert counts == [counts[0]] * 3


def test_a_compaction_live_capture_saw_is_shown_where_its_reply_stands(alice_client, project):
    """Through the real OTLP receiver: a reply brings a compaction part; the next call is passed back only it and
    the new question, so the first question went out."""
    from agents.projects import keys as projects_keys
    from tests.otlp_memory_spans import post, request, span

    key = projects_keys.api_key_create(project=project, name="agent").key
    part = {"type": "compaction", "id": "cmp_1", "content": "Alice is vegan; <b>booked</b> Rome."}
    summarised = {"role": "assistant", "parts": [{"type": "text", "content": "Noted."}, part]}
    compacting = span("k1", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "session.id": "prefs-1",
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "Go on"}]}]',
        "gen_ai.output.messages": json.dumps([summarised])}, start=1)
    passed_back = span("k2", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "session.id": "prefs-1", "gen_ai.conversation.compacted": True,
        "gen_ai.input.messages": json.dumps([
            summarised, {"role": "user", "parts": [{"type": "text", "content": "And then?"}]}]),
        "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "Ok"}]}]',
    }, start=3)
    reply = post(alice_client, key, request(compacting, passed_back))
    assert reply.partial_success.rejected_spans == 0
    session = models.Session.objects.get(agent__project=project, external_id="prefs-1")
    assert list(models.LlmCall.objects.filter(session=session).order_by("reply_seq").values_list(
        "reply_seq", "sent")) == [(1, [0]), (3, [1, 2])]
    _, page, _ = _get(alice_client, session)
    [event] = _events(page)
    assert _text(event) == "Compacted: 1 message went out (#0), a summary came in"
    assert f'<a href="{session.get_absolute_url()}?at=0#m-0">#0</a>' in event
    assert "Alice is vegan; &lt;b&gt;booked&lt;/b&gt; Rome." in event
    assert page.index('id="m-0"') < page.index(event) < page.index('id="m-1"')
