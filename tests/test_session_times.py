"""The session page shows what is stored and was hidden: each message's time and the gap since the message before,
the session's tags and metadata, the usage a provider reported, the tool definitions sent."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models


@pytest.fixture
def timed(make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                            {"role": "user", "content": "<b>tag?</b>"}],
                           title="Timed", metadata={"tags": ["prod", "<i>eu</i>"], "run": {"id": 7}})
    times = ["2026-11-30T10:00:00+00:00", "2026-11-30T10:00:02.500000+00:00", "2026-11-30T11:05:09+00:00"]
    for seq, when in enumerate(times):
        models.Message.objects.filter(session=session, seq=seq).update(created_at=when)
    return session


def test_it_shows_each_messages_time_and_the_gap_since_the_one_before(alice_client, timed):
    page = alice_client.get(timed.get_absolute_url()).content.decode()
    assert '<time datetime="2026-11-30T10:00:00+00:00" title="2026-11-30 10:00:00 UTC">10:00:00</time>' in page
    first = page.split('id="m-0"')[1].split("</article>")[0]
    assert 'class="gap"' not in first  # nothing before the first message
    assert '<span class="gap" title="Since the message before">+2.5 s</span>' in page
    assert '<span class="gap" title="Since the message before">+1 h 5 min</span>' in page


def test_a_later_page_takes_the_gap_of_its_first_message_from_the_message_before(alice_client, make_session):
    session = make_session([{"role": "user", "content": f"m{i}"} for i in range(305)])
    models.Message.objects.filter(session=session, seq=299).update(created_at="2026-11-30T10:00:00+00:00")
    models.Message.objects.filter(session=session, seq=300).update(created_at="2026-11-30T10:03:07+00:00")
    with CaptureQueriesContext(connection) as timed_page:
        page = alice_client.get(session.get_absolute_url(), {"at": 300}).content.decode()
    assert "+3 min 7 s" in page.split('id="m-300"')[1].split("</article>")[0]
    models.Message.objects.filter(session=session, seq=300).update(created_at=None)
    with CaptureQueriesContext(connection) as plain_page:
        alice_client.get(session.get_absolute_url(), {"at": 300})
    assert len(timed_page.captured_queries) == len(plain_page.captured_queries) + 1  # one row, by (session, seq)


def test_it_shows_the_sessions_tags_and_metadata_escaped(alice_client, timed):
    page = alice_client.get(timed.get_absolute_url()).content.decode()
    assert '<span class="tag">prod</span>' in page and '<span class="tag">&lt;i&gt;eu&lt;/i&gt;</span>' in page
    metadata = page.split('class="session-metadata"')[1].split("</details>")[0]
    assert "&quot;run&quot;: {" in metadata and "&quot;id&quot;: 7" in metadata
    assert "<i>" not in metadata


def test_a_session_without_times_or_metadata_shows_neither(alice_client, make_session):
    session = make_session([{"role": "user", "content": "hi"}])
    page = alice_client.get(session.get_absolute_url()).content.decode()
    assert 'class="msg-time' not in page and "session-metadata" not in page and "session-tags" not in page


def _import(tmp_path, project, name: str, data: object) -> models.Session:
    """Through the real import (reader, detection, row writer): what the page shows is what a reader kept."""
    from agents.transfer import imports

    path = tmp_path / name
    path.write_text(json.dumps(data))
    imports.import_file(path, project=project, agent="Usage bot")
    return models.Session.objects.latest("id")


def test_it_shows_the_usage_a_reader_kept_on_each_message(alice_client, project, tmp_path):
    session = _import(tmp_path, project, "lc.json", [
        {"type": "human", "data": {"content": "hi"}},
        {"type": "ai", "data": {"content": "hello", "usage_metadata": {
            "input_tokens": 12345, "output_tokens": 56, "total_tokens": 12401,
            "input_token_details": {"cache_read": 10000}, "note": "<img src=x onerror=alert(1)>"}}},
    ])
    assert session.source_format == "langchain"
    page = alice_client.get(session.get_absolute_url()).content.decode()
    reply = page.split('id="m-1"')[1].split("</article>")[0]
    usage = reply.split('class="msg-usage')[1].split("</div>")[0]
    shown = (("input_tokens", "12,345"), ("output_tokens", "56"), ("input_token_details.cache_read", "10,000"))
    for key, value in shown:
        assert f'<span class="mono">{key}</span> {value}' in usage
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in usage
    assert 'class="msg-usage' not in page.split('id="m-0"')[1].split("</article>")[0]  # none stored: none shown


def test_it_shows_the_tool_definitions_a_reader_kept(alice_client, project, tmp_path):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    session = _import(tmp_path, project, "anthropic.json", {
        "system": "You tell the weather.",
        "tools": [{"name": "get_weather", "description": "The <b>weather</b> now", "input_schema": schema}],
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
    })
    assert session.source_format == "anthropic"
    page = alice_client.get(session.get_absolute_url()).content.decode()
    tools = page.split('id="tool-definitions"')[1].split("</details>")[0]
    assert "(1, sent with the messages)" in tools
    assert '<dt class="tool-name">get_weather</dt>' in tools
    assert "The &lt;b&gt;weather&lt;/b&gt; now" in tools and "<b>" not in tools
    assert "&quot;required&quot;: [" in tools and "&quot;city&quot;" in tools


def test_a_session_without_tools_shows_no_tool_definitions(alice_client, timed):
    assert "tool-definitions" not in alice_client.get(timed.get_absolute_url()).content.decode()
