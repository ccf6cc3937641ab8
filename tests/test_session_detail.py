from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.store import writing

EXCHANGE = [
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "<script>alert('x')</script> weather?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning": "The user wants the weather; call the tool.",
        "tool_calls": [
            {
                "id": "call_w1",
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": json.dumps({"city": "Paris", "days": list(range(40))}),
                },
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_w1",
        "content": json.dumps({"temp": 12, "rows": ["x" * 50] * 40}),
        "is_error": True,
    },
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
        assert f'href="{exchange.get_absolute_url()}?at={violation["seq"]}#m-{violation["seq"]}"' in content
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
        assert f'href="{exchange.get_absolute_url()}?at={seq}#m-{seq}"' in content


def test_it_shows_the_first_page_of_a_long_session(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url())
    content = response.content.decode()
    assert [m.row.seq for m in response.context["messages"]] == list(range(300))
    assert "300 of 650 shown" in content
    assert 'href="?after=299"' in content and 'hx-get="?after=299"' in content
    assert 'id="shown-start" value="0"' in content  # the button sends where the screen starts (hx-include)
    assert 'id="m-300"' not in content
    assert "load-earlier" not in content


def test_it_loads_the_next_page_as_an_htmx_fragment(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url(), {"after": 299, "start": 0}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert "<html" not in content and "session-header" not in content
    assert 'id="m-300"' in content and 'id="m-599"' in content and 'id="m-299"' not in content
    assert "600 of 650 shown" in content  # appended under the first page: the screen shows 0-599
    assert 'hx-get="?after=599"' in content and 'id="shown-start" value="0"' in content
    first_page_tokens = sum(session.messages.filter(seq__lt=300).values_list("token_count", flat=True))
    first = session.messages.get(seq=300)
    article = content[content.index('id="m-300"'):content.index('id="m-301"')]
    assert f"Σ {first_page_tokens + first.token_count:,}" in article


def test_it_loads_the_last_page_without_a_load_more(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(
        session.get_absolute_url(), {"after": 599, "start": 0}, headers={"HX-Request": "true"}
    ).content.decode()
    assert "650 of 650 shown" in content
    assert "Load" not in content


def test_it_serves_a_later_page_without_javascript(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(session.get_absolute_url(), {"after": 299}).content.decode()
    assert "<html" in content and "Showing from message #300" in content
    assert f'href="{session.get_absolute_url()}?at=300#m-300"' in content


def test_it_links_a_violation_beyond_the_first_page_to_its_page(alice_client, make_session):
    session = make_session(_long(400) + [{"role": "tool", "tool_call_id": "gone", "content": "x"}])
    content = alice_client.get(session.get_absolute_url()).content.decode()
    assert f'href="{session.get_absolute_url()}?at=400#m-400"' in content
    # ... and that link opens the page holding it.
    response = alice_client.get(session.get_absolute_url(), {"at": 400})
    assert 'id="m-400"' in response.content.decode()


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

    session = writing.session_store(agent=agent, conversation=Conversation(external_id="empty"))
    content = alice_client.get(session.get_absolute_url()).content.decode()
    assert "No messages." in content and "0 of 0 shown" in content


def test_it_only_answers_get(alice_client, exchange):
    assert alice_client.post(exchange.get_absolute_url()).status_code == 405
    assert alice_client.post(reverse("agents:session_list")).status_code == 405


def test_it_opens_the_page_holding_a_permalinked_message(alice_client, make_session):
    session = make_session(_long(700))
    response = alice_client.get(session.get_absolute_url(), {"at": 650})
    seqs = [m.row.seq for m in response.context["messages"]]
    # The page starts at the page boundary holding message 650, so every permalink into it opens the same page.
    assert seqs == list(range(600, 700))
    content = response.content.decode()
    assert 'id="m-650"' in content
    assert f'href="{session.get_absolute_url()}?at=650#m-650"' in content
    assert [m.row.seq for m in alice_client.get(session.get_absolute_url(), {"at": 299}).context["messages"]][-1] == 299
    assert [m.row.seq for m in alice_client.get(session.get_absolute_url(), {"at": 300}).context["messages"]][0] == 300


def test_it_counts_a_later_page_from_its_first_message(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(session.get_absolute_url(), {"after": 400}).content.decode()
    assert 'messages <span id="shown-first">401</span>–649 of 650' in content
    assert "650 of 650 shown" not in content
    # Load more from there keeps counting from where the screen starts.
    content = alice_client.get(session.get_absolute_url(), {"after": 100}).content.decode()
    assert 'messages <span id="shown-first">101</span>–400 of 650' in content
    assert 'hx-get="?after=400"' in content and 'id="shown-start" value="101"' in content
    fragment = alice_client.get(
        session.get_absolute_url(), {"after": 400, "start": 101}, headers={"HX-Request": "true"}
    ).content.decode()
    assert 'messages <span id="shown-first">101</span>–649 of 650' in fragment


def test_it_says_there_is_nothing_after_the_last_message(alice_client, make_session):
    session = make_session(_long(650))
    content = alice_client.get(session.get_absolute_url(), {"after": 999999}).content.decode()
    assert "No messages after #999,999" in content
    assert "650 of 650 shown" not in content
    assert f'<a href="{session.get_absolute_url()}">Back to the start of the session</a>' in content


def test_it_links_to_earlier_messages_from_a_later_page(alice_client, make_session):
    session = make_session(_long(1000))
    content = alice_client.get(session.get_absolute_url(), {"at": 700}).content.decode()
    assert 'class="load-earlier" href="?after=299#m-599"' in content
    content = alice_client.get(session.get_absolute_url(), {"after": 100}).content.decode()
    assert f'class="load-earlier" href="{session.get_absolute_url()}#m-100"' in content


def test_it_names_the_tool_of_a_result_whose_call_is_elsewhere(alice_client, make_session):
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_far", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}],
    }
    # The call is the last message of the first page; its result opens the second page.
    session = make_session(_long(299) + [call, {"role": "tool", "tool_call_id": "call_far", "content": "ok"}])
    content = alice_client.get(session.get_absolute_url(), {"at": 300}).content.decode()
    article = content[content.index('id="m-300"'):]
    assert "result of" in article and "lookup_order" in article
    assert f'href="{session.get_absolute_url()}?at=299#m-299"' in article


def test_it_names_the_tool_of_a_late_result(alice_client, make_session):
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_late", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    }
    session = make_session([{"role": "user", "content": "hi"}, call, {"role": "user", "content": "and?"},
                            {"role": "tool", "tool_call_id": "call_late", "content": "sunny"}])
    content = alice_client.get(session.get_absolute_url()).content.decode()
    article = content[content.index('id="m-3"'):]
    assert "result of" in article and "get_weather" in article and "?at=1#m-1" in article


def test_it_explains_the_reply_priming_in_the_header_total(alice_client, exchange):
    content = alice_client.get(exchange.get_absolute_url()).content.decode()
    assert "+3 tokens of reply priming per list under cl100k" in content
    last = exchange.messages.order_by("-seq").first()
    assert exchange.token_total == last.token_running + 3


def test_it_says_when_a_permalinked_message_does_not_exist(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url(), {"at": 5000})
    assert response.status_code == 200
    assert "There is no message #5,000: the session has 650 messages." in response.content.decode()
    # The footer too speaks of that message, not of a page boundary computed from it ("no messages after #4,899").
    footer = response.content.decode().split('<div class="load-more">')[1].split("</div>")[0]
    assert "no message #5,000 (650 in the session, #0–#649)" in footer and "after" not in footer
