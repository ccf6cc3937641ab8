from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import services

EXCHANGE = [
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "<script>alert('x')</script> weather?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning": "The user wants the weather; call the tool.",
        "tool_calls": [{"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris", "days": list(range(40))})}}],
    },
    {"role": "tool", "tool_call_id": "call_w1", "content": json.dumps({"temp": 12, "rows": ["x" * 50] * 40}), "is_error": True},
    {"role": "user", "content": "thanks"},
    {"role": "tool", "tool_call_id": "ghost", "content": "late"},
    {"role": "assistant", "content": "Bye <b>now</b>"},
]


def _long(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(n)]


@pytest.fixture
def exchange(make_session):
    return make_session(EXCHANGE, title="Paris weather", source_format="openai")


def test_it_renders_the_header_with_the_counts(alice_client, exchange, agent):
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    assert "<h1>Paris weather</h1>" in content
    for fact in (agent.name, agent.model, "128,000 tokens", "openai", f"{exchange.token_total:,}", "Violations"):
        assert fact in content


def test_it_escapes_agent_content(alice_client, exchange):
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    assert "<script>alert" not in content
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in content
    assert "Bye &lt;b&gt;now&lt;/b&gt;" in content


def test_it_summarises_violations_and_links_to_the_messages(alice_client, exchange):
    exchange.refresh_from_db()
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    assert 'id="violations"' in content
    for violation in exchange.violations:
        assert f'href="{exchange.get_absolute_url()}#m-{violation["seq"]}"' in content
        assert violation["kind"] in content
    assert 'id="m-5" class="msg role-tool has-violation"' in content


def test_it_marks_the_violating_message_with_the_sentence(alice_client, exchange):
    exchange.refresh_from_db()
    orphan = next(v for v in exchange.violations if v["kind"] == "orphan_tool_result")
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    article = content[content.index('id="m-5"'):content.index('id="m-6"')]
    assert orphan["message"] in article


def test_it_shows_tokens_and_the_running_total(alice_client, exchange):
    rows = list(exchange.messages.order_by("seq"))
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    running = 0
    for row in rows:
        running += row.token_count
        article = content[content.index(f'id="m-{row.seq}"'):]
        assert f"{row.token_count} tok" in article[:2000]
        assert f"Σ {running:,}" in article[:2000]


def test_it_shows_tool_calls_errors_and_reasoning(alice_client, exchange):
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    assert "get_weather" in content and "call_w1" in content
    assert '&quot;city&quot;: &quot;Paris&quot;,\n' in content  # long arguments are pretty-printed
    assert 'class="msg role-tool in-exchange is-error"' in content
    assert '<details class="reasoning">' in content and "call the tool." in content
    assert '<details class="folded">' in content  # the long JSON result is folded


def test_it_gives_each_message_a_permalink(alice_client, exchange):
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    for seq in range(len(EXCHANGE)):
        assert f'href="{exchange.get_absolute_url()}#m-{seq}"' in content


def test_it_shows_the_first_page_of_a_long_session(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url())
    content = response.content.decode()
    assert [m.row.seq for m in response.context["messages"]] == list(range(300))
    assert "300 of 650 shown" in content
    assert 'href="?after=299"' in content and 'hx-get="?after=299"' in content
    assert 'id="m-300"' not in content


def test_it_loads_the_next_page_as_an_htmx_fragment(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url(), {"after": 299}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert "<html" not in content and "session-header" not in content
    assert 'id="m-300"' in content and 'id="m-599"' in content and 'id="m-299"' not in content
    assert "600 of 650 shown" in content
    assert 'hx-get="?after=599"' in content
    first_page_tokens = sum(session.messages.filter(seq__lt=300).values_list("token_count", flat=True))
    first = session.messages.get(seq=300)
    article = content[content.index('id="m-300"'):content.index('id="m-301"')]
    assert f"Σ {first_page_tokens + first.token_count:,}" in article


def test_it_loads_the_last_page_without_a_load_more(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(session.get_absolute_url(), {"after": 599}, headers={"HX-Request": "true"}).content.decode()
    assert "650 of 650 shown" in content
    assert "Load" not in content


def test_it_serves_a_later_page_without_javascript(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(session.get_absolute_url(), {"after": 299}).content.decode()
    assert "<html" in content and "Showing from message #300" in content
    assert 'href="?after=299#m-300"' in content


def test_it_links_a_violation_beyond_the_first_page_to_its_page(alice_client, make_session):
    session = make_session(_long(400) + [{"role": "tool", "tool_call_id": "gone", "content": "x"}])
    content = alice_client.get(session.get_absolute_url()).content.decode()
    assert f'href="{session.get_absolute_url()}?after=399#m-400"' in content


def test_it_reads_a_page_of_a_long_session_in_as_many_queries_as_a_short_one(alice_client, make_session):
    short, long = make_session(_long(10)), make_session(_long(1500))
    counts = []
    for url in (short.get_absolute_url(), long.get_absolute_url(), long.get_absolute_url() + "?after=899"):
        with CaptureQueriesContext(connection) as ctx:
            assert alice_client.get(url).status_code == 200
        counts.append(len(ctx.captured_queries))
    # A later page takes the total before it from its first row's stored running total: no extra query.
    assert counts[0] == counts[1] == counts[2]


def test_it_ignores_a_bad_after(alice_client, exchange):
    response = alice_client.get(exchange.get_absolute_url(), {"after": "abc"})
    assert response.status_code == 200
    assert len(response.context["messages"]) == len(EXCHANGE)


def test_it_shows_a_session_without_messages(alice_client, agent):
    from agents.memory.schema import Conversation

    session = services.session_store(agent=agent, conversation=Conversation(external_id="empty"))
    content = alice_client.get(session.get_absolute_url()).content.decode()
    assert "No messages." in content and "0 of 0 shown" in content


def test_it_only_answers_get(alice_client, exchange):
    assert alice_client.post(exchange.get_absolute_url()).status_code == 405
    assert alice_client.post(reverse("agents:session_list")).status_code == 405
