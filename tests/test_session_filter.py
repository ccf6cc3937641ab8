"""The session page's chain filter (?role=, ?tool=): one role, or one tool's calls and their results; paged like
the whole chain (one query a page, however long the session), kept in the URL by every link, inside search and
jumps."""
from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.sessions import find


def _blocks(n: int) -> list[dict]:
    """``n`` turns of four messages: a question, a call (lookup_order on even turns, refund on odd ones), its
    result (an error in turns 0 and 5 of every fifty), a reply."""
    out: list[dict] = []
    for i in range(n):
        tool = "lookup_order" if i % 2 == 0 else "refund"
        call_id = f"call_{i}"
        out += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps({"n": i})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": f"result {i}", "is_error": i % 50 in (0, 5)},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return out


@pytest.fixture
def turns(make_session):
    return make_session(_blocks(10), title="Turns")


def _seqs(response) -> list[int]:
    return [int(seq) for seq in re.findall(r'<article id="m-(\d+)"', response.content.decode())]


def test_it_shows_only_the_role_asked(alice_client, turns):
    response = alice_client.get(turns.get_absolute_url(), {"role": "user"})
    assert response.status_code == 200
    assert _seqs(response) == list(range(0, 40, 4))
    page = response.content.decode()
    assert "Showing only user messages: 10 of 40 messages" in page
    assert '<option value="user" selected>' in page


def test_it_shows_one_tools_calls_with_their_results_each_linked_to_its_call(alice_client, turns):
    response = alice_client.get(turns.get_absolute_url(), {"tool": "refund"})
    # Odd turns: the call (4i+1) and its result (4i+2).
    assert _seqs(response) == [s for i in range(1, 10, 2) for s in (4 * i + 1, 4 * i + 2)]
    page = response.content.decode()
    assert "calls of refund and their results: 10 of 40 messages" in page
    # The messages between are hidden, so a result is not drawn under its call: it links to it.
    result = page.split('id="m-6"')[1].split("</article>")[0]
    assert f'href="{turns.get_absolute_url()}?at=5#m-5"' in result and "refund" in result
    # Both at once: the results of refund only.
    both = alice_client.get(turns.get_absolute_url(), {"tool": "refund", "role": "tool"})
    assert _seqs(both) == [4 * i + 2 for i in range(1, 10, 2)]
    assert "tool messages of tool refund: 5 of 40 messages" in both.content.decode()
    # The tools to choose from are the session's.
    assert '<option value="lookup_order">' in page and '<option value="refund" selected>' in page


def test_it_says_an_unknown_role_and_shows_everything(alice_client, turns):
    response = alice_client.get(turns.get_absolute_url(), {"role": "<b>robot</b>"})
    assert response.status_code == 200
    assert len(_seqs(response)) == 40
    page = response.content.decode()
    assert "is not a role" in page and "<b>robot</b>" not in page


def test_an_unknown_tool_shows_no_messages_and_says_so(alice_client, turns):
    page = alice_client.get(turns.get_absolute_url(), {"tool": "nope"}).content.decode()
    assert "no calls of nope and their results" in page


def test_every_link_of_a_filtered_page_keeps_the_filter(alice_client, make_session):
    session = make_session(_blocks(400))  # 1,600 messages, 400 user messages: two pages of them
    url = session.get_absolute_url()
    response = alice_client.get(url, {"role": "user"})
    assert _seqs(response) == list(range(0, 1200, 4))
    page = response.content.decode()
    assert 'href="?after=1196&amp;role=user"' in page  # load more
    jump = reverse("agents:session_jump", args=[session.pk])
    assert f"{jump}?kind=error&amp;dir=next&amp;from=0&amp;role=user" in page
    assert f'id="jump-last" href="{url}?role=user&amp;at=1599#m-1599"' in page
    assert '<input type="hidden" name="role" value="user">' in page  # find and go-to forms
    assert "user messages from #" in page
    # Load more: the next page of user messages; the address follows it, with the filter.
    more = alice_client.get(url, {"after": 1196, "role": "user", "start": 0}, HTTP_HX_REQUEST="true")
    assert _seqs(more) == list(range(1200, 1600, 4))
    assert more["HX-Push-Url"] == f"{url}?role=user&at=1200"
    assert "(the last)" in more.content.decode()
    # That address (a reload, a shared link) opens the filtered chain from there, and load earlier goes back a page
    # of user messages (from the first, the plain filtered URL).
    back = alice_client.get(url, {"role": "user", "at": 1200})
    assert _seqs(back) == list(range(1200, 1600, 4))
    assert f'href="{url}?role=user#m-1196"' in back.content.decode()
    earlier = alice_client.get(url, {"after": -1, "earlier": 1, "role": "user"}, HTTP_HX_REQUEST="true")
    assert _seqs(earlier) == list(range(0, 1200, 4))
    assert '<span id="shown-first" hx-swap-oob="true">0</span>' in earlier.content.decode()


def test_a_filtered_page_costs_as_many_queries_in_a_10000_message_session_as_in_a_short_one(
    alice_client, make_session
):
    short, long = make_session(_blocks(100)), make_session(_blocks(2_500))
    counts = []
    for session, query in ((short, {"tool": "refund", "at": 200}), (long, {"tool": "refund", "at": 200}),
                           (long, {"tool": "refund", "at": 9_000}), (long, {"role": "assistant", "at": 9_000})):
        with CaptureQueriesContext(connection) as ctx:
            response = alice_client.get(session.get_absolute_url(), query)
        assert response.status_code == 200 and _seqs(response)
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] == counts[2]
    assert counts[3] == counts[0] - 1  # no tool result on the page: no lookup of the calls they answer
    # Against the unfiltered page: the filter's tool choices, the results' calls and the page before (load earlier).
    with CaptureQueriesContext(connection) as ctx:
        alice_client.get(long.get_absolute_url(), {"at": 9_000})
    assert counts[1] <= len(ctx.captured_queries) + 3
    # Load more in the long session: as many as in the short one.
    fragments = []
    for session in (short, long):
        with CaptureQueriesContext(connection) as ctx:
            alice_client.get(session.get_absolute_url(), {"after": 200, "tool": "refund"}, HTTP_HX_REQUEST="true")
        fragments.append(len(ctx.captured_queries))
    assert fragments[0] == fragments[1]


def test_a_search_counts_and_steps_through_the_hits_the_filter_shows(alice_client, turns):
    url = turns.get_absolute_url()
    # "result" is in every tool message; "question" and "answer" are not: within role=tool, all ten results.
    response = alice_client.get(url, {"q": "result", "role": "tool"})
    assert response["Location"] == f"{url}?q=result&role=tool&at=2#m-2"
    page = alice_client.get(url, {"q": "result", "role": "tool", "at": 6}).content.decode()
    assert "hit 2 of 10" in page
    assert f'id="find-next" href="{url}?q=result&amp;role=tool&amp;at=10#m-10"' in page
    # Within the refund tool's messages, "result" matches the five results of refund only.
    refund = find.ChainFilter(tool="refund")
    assert find.hit_seqs(turns, "result", within=refund) == [4 * i + 2 for i in range(1, 10, 2)]
    # A search for what the filter hides finds nothing.
    none = alice_client.get(url, {"q": "question", "role": "tool", "at": 0}).content.decode()
    assert "no message mentions “question”" in none


def test_the_jumps_stay_inside_the_filter(alice_client, turns):
    jump = reverse("agents:session_jump", args=[turns.pk])
    url = turns.get_absolute_url()
    # Tool errors are the results of turns 0, 5: within refund (odd turns), only turn 5's result, #22.
    response = alice_client.get(jump, {"kind": "error", "dir": "next", "from": 0, "tool": "refund"})
    assert response["Location"] == f"{url}?tool=refund&at=22#m-22"
    response = alice_client.get(jump, {"kind": "error", "dir": "next", "from": 22, "tool": "refund"})
    assert response["Location"] == f"{url}?tool=refund&at=22&none=error-next#m-22"
    # User messages with the tool messages shown only: none, and the page says so with the filter kept.
    response = alice_client.get(jump, {"kind": "user", "dir": "next", "from": 2, "role": "tool"})
    assert "role=tool" in response["Location"] and "none=user-next" in response["Location"]


def test_it_filters_only_the_users_own_sessions(client, bob, turns):
    client.force_login(bob)
    assert client.get(turns.get_absolute_url(), {"role": "user"}).status_code == 404


def test_a_filtered_message_shows_the_gap_since_the_message_before_it_in_the_session(alice_client, turns):
    from agents import models

    for seq, when in ((3, "10:00:00"), (4, "10:00:05"), (7, "10:00:30"), (8, "10:01:00")):
        models.Message.objects.filter(session=turns, seq=seq).update(created_at=f"2026-11-30T{when}+00:00")
    page = alice_client.get(turns.get_absolute_url(), {"role": "user"}).content.decode()
    # #4 follows #3 (hidden): 5 s, not since the user message #0 shown above it; #8 follows #7: 30 s.
    gap = '<span class="gap" title="Since the message before">{}</span>'
    assert gap.format("+5.0 s") in page.split('id="m-4"')[1].split("</article>")[0]
    assert gap.format("+30 s") in page.split('id="m-8"')[1].split("</article>")[0]
