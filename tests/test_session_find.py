"""Find inside a session: search (?q=) on the session page, its hits marked, counted and stepped through."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.sessions import find

CHAIN = [
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "<script>alert('x')</script> Is the ORDER ACM-123 late?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning": "Look the order up in the warehouse.",
        "tool_calls": [{"id": "call_a1", "type": "function",
                        "function": {"name": "lookup_order", "arguments": json.dumps({"order": "ACM-123"})}}],
    },
    {"role": "tool", "tool_call_id": "call_a1", "content": json.dumps({"status": "stuck in customs"}),
     "is_error": True},
    {"role": "assistant", "content": "Your order is stuck in customs."},
    {"role": "user", "content": "thanks"},
]


@pytest.fixture
def chain(make_session):
    return make_session(CHAIN, title="Order")


def _long(n: int, every: int = 0) -> list[dict]:
    """``n`` plain messages; with ``every``, each ``every``-th one mentions a needle."""
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"message number {i}" + (" needle" if every and i % every == 0 and i else "")}
            for i in range(n)]


def _page(client, session, **query) -> str:
    response = client.get(session.get_absolute_url(), query)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("q, seqs", [
    ("order", [1, 2, 4]),  # content (any case), the tool's name and its arguments
    ("warehouse", [2]),  # reasoning
    ("lookup_order", [2]),  # a tool name
    ("customs", [3, 4]),  # a tool result and a reply
    ("call_a1", [2, 3]),  # a call id given whole: the call and its result
    ("nowhere", []),
])
def test_it_finds_content_reasoning_tool_names_arguments_and_results(alice_client, chain, q, seqs):
    assert find.hit_seqs(chain, q) == seqs
    page = _page(alice_client, chain, q=q, at=0)
    marked = [m for m in range(len(CHAIN)) if f'id="m-{m}" class="msg' in page and
              page.split(f'id="m-{m}" class="')[1].split('"')[0].count("is-hit")]
    assert marked == seqs


def test_it_lands_on_the_first_hit(alice_client, chain):
    response = alice_client.get(chain.get_absolute_url(), {"q": "customs"})
    assert response.status_code == 302
    assert response["Location"] == f"{chain.get_absolute_url()}?q=customs&at=3#m-3"


def test_it_stays_on_the_page_when_nothing_matches(alice_client, chain):
    page = _page(alice_client, chain, q="nowhere")
    assert "no message mentions “nowhere”" in page
    assert 'id="find-next"' not in page and 'id="find-previous"' not in page


def test_it_counts_the_hits_and_steps_between_them(alice_client, chain):
    url = chain.get_absolute_url()
    page = _page(alice_client, chain, q="order", at=2)
    assert "hit 2 of 3" in page
    assert f'id="find-previous" href="{url}?q=order&amp;at=1#m-1"' in page
    assert f'id="find-next" href="{url}?q=order&amp;at=4#m-4"' in page
    assert 'id="m-2" class="msg role-assistant is-hit hit-current" aria-current="true"' in page
    last = _page(alice_client, chain, q="order", at=4)
    assert "hit 3 of 3" in last and 'id="find-next"' not in last
    # Between hits (on a message that does not match): how many, and the nearest either side.
    between = _page(alice_client, chain, q="order", at=3)
    assert "3 messages match" in between
    assert f"{url}?q=order&amp;at=2#m-2" in between and f"{url}?q=order&amp;at=4#m-4" in between


def test_it_escapes_agent_text_before_marking_hits(alice_client, chain):
    page = _page(alice_client, chain, q="script", at=1)
    assert "<script>" not in page
    assert '&lt;<mark class="hit">script</mark>&gt;alert(&#x27;x&#x27;)&lt;/<mark class="hit">script</mark>&gt;' in page
    # A query that looks like markup is text too, in the field and in the marks.
    hostile = _page(alice_client, chain, q="<script>", at=1)
    assert '<mark class="hit">&lt;script&gt;</mark>' in hostile
    assert 'value="&lt;script&gt;"' in hostile


def test_it_marks_hits_in_the_calls_and_opens_folded_reasoning(alice_client, chain):
    page = _page(alice_client, chain, q="ACM-123", at=2)
    assert '<mark class="hit">ACM-123</mark>' in page.split('id="m-2"')[1].split("</article>")[0]
    reasoning = _page(alice_client, chain, q="warehouse", at=2)
    assert '<details class="reasoning" open>' in reasoning


def test_it_opens_the_page_holding_a_deep_hit_and_keeps_the_search_when_loading_more(alice_client, make_session):
    session = make_session(_long(700, every=350))  # needles at 350 and 700-less: only #350
    response = alice_client.get(session.get_absolute_url(), {"q": "needle"})
    assert response["Location"].endswith("?q=needle&at=350#m-350")
    page = _page(alice_client, session, q="needle", at=350)
    assert 'id="m-350"' in page and 'id="m-0"' not in page
    assert "hit 1 of 1" in page
    # The paging links carry the search, so the pages they open keep its marks.
    assert "?after=599&amp;q=needle" in page
    assert "?after=-1&amp;q=needle#m-299" not in page  # the first page is the plain URL
    assert f"{session.get_absolute_url()}?q=needle#m-299" in page
    fragment = alice_client.get(session.get_absolute_url(), {"after": 299, "q": "needle"}, HTTP_HX_REQUEST="true")
    assert '<mark class="hit">needle</mark>' in fragment.content.decode()


def test_it_finds_only_in_the_users_own_sessions(client, bob, chain):
    client.force_login(bob)
    assert client.get(chain.get_absolute_url(), {"q": "order"}).status_code == 404


def test_a_session_opened_from_a_list_search_lands_on_its_first_hit(alice_client, chain):
    listing = alice_client.get(reverse("agents:session_list"), {"q": "customs"}).content.decode()
    link = f"{chain.get_absolute_url()}?q=customs"
    assert link in listing
    response = alice_client.get(link)
    assert response.status_code == 302 and response["Location"].endswith("?q=customs&at=3#m-3")


def test_a_search_page_of_a_10000_message_session_costs_as_many_queries_as_a_short_one(alice_client, make_session):
    short, long = make_session(_long(10, every=3)), make_session(_long(10_000, every=97))
    counts = []
    for session, at in ((short, 3), (long, 9_700), (long, 5_000)):
        with CaptureQueriesContext(connection) as ctx:
            page = _page(alice_client, session, q="needle", at=at)
        counts.append(len(ctx.captured_queries))
        assert "needle" in page
    assert counts[0] == counts[1] == counts[2]
    # The search adds one query (where the place stands among the hits) to the plain page.
    with CaptureQueriesContext(connection) as ctx:
        _page(alice_client, long, at=9_700)
    assert counts[1] == len(ctx.captured_queries) + 1


def test_a_nul_character_in_the_search_is_no_wildcard(alice_client, chain):
    # SQLite's LIKE stops reading its pattern at a NUL (so "\x00customs" matched every message) and PostgreSQL
    # refuses a NUL in a text parameter: the search drops it, as the list's search form refuses it.
    assert find.hit_seqs(chain, "\x00customs") == [3, 4]
    assert find.hit_seqs(chain, "nowhere\x00") == []
    response = alice_client.get(chain.get_absolute_url(), {"q": "\x00"})
    assert response.status_code == 200  # nothing left to look for: the page, not a jump to a "hit"
    answer = alice_client.get(f"/api/sessions/{chain.pk}/messages/", {"q": "\x00"})
    assert answer.status_code == 400 and answer.json()["error"].startswith("q:")
    found = alice_client.get(f"/api/sessions/{chain.pk}/messages/", {"q": "\x00customs"}).json()
    assert [m["seq"] for m in found["messages"]] == [3, 4]
