"""Jumps on the session page: next/previous tool error, violation and user message from a place, the tool errors
listed in the header, "go to #N" and "last message"."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

CHAIN = [
    {"role": "system", "content": "You fetch things."},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "<b>boom</b> one", "is_error": True},
    {"role": "assistant", "content": "Let me try another way."},
    {"role": "user", "content": "second question"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_2", "type": "function", "function": {"name": "fetch_page", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "boom two", "is_error": True},
    {"role": "tool", "tool_call_id": "ghost", "content": "a result nobody asked for"},
    {"role": "assistant", "content": "Done."},
]


@pytest.fixture
def chain(make_session):
    session = make_session(CHAIN, title="Two failures")
    assert {v["seq"] for v in session.violations} == {8}
    return session


def _jump(client, session, **query):
    return client.get(reverse("agents:session_jump", args=[session.pk]), query)


@pytest.mark.parametrize("kind, direction, start, target", [
    ("error", "next", None, 3),
    ("error", "next", 3, 7),
    ("error", "prev", 7, 3),
    ("error", "prev", None, 7),  # from the end: the last one
    ("user", "next", 1, 5),
    ("user", "prev", 5, 1),
    ("violation", "next", 0, 8),
    ("violation", "prev", 9, 8),
])
def test_it_jumps_to_the_next_or_previous_one_from_the_place(alice_client, chain, kind, direction, start, target):
    query = {"kind": kind, "dir": direction, **({"from": start} if start is not None else {})}
    response = _jump(alice_client, chain, **query)
    assert response.status_code == 302
    assert response["Location"] == f"{chain.get_absolute_url()}?at={target}#m-{target}"


def test_it_keeps_the_search_when_jumping(alice_client, chain):
    response = _jump(alice_client, chain, kind="error", dir="next", **{"from": 3}, q="boom")
    assert response["Location"] == f"{chain.get_absolute_url()}?q=boom&at=7#m-7"


def test_it_stays_and_says_so_when_there_is_none_that_way(alice_client, chain):
    response = _jump(alice_client, chain, kind="error", dir="next", **{"from": 7})
    assert response["Location"] == f"{chain.get_absolute_url()}?at=7&none=error-next#m-7"
    page = alice_client.get(response["Location"]).content.decode()
    assert '<p class="notice small" role="status" id="jump-none">No tool error after #7.</p>' in page
    before = alice_client.get(_jump(alice_client, chain, kind="user", dir="prev", **{"from": 1})["Location"])
    assert "No user message before #1." in before.content.decode()


def test_it_refuses_an_unknown_jump(alice_client, chain):
    response = _jump(alice_client, chain, kind="everything")
    assert response.status_code == 400


def test_it_jumps_only_in_the_users_own_sessions(client, bob, chain):
    client.force_login(bob)
    assert _jump(client, chain, kind="error").status_code == 404


def test_it_lists_the_tool_errors_in_the_header_with_their_tools(alice_client, chain):
    page = alice_client.get(chain.get_absolute_url()).content.decode()
    assert '<a href="#tool-errors" class="badge badge-error">2</a>' in page
    errors = page.split('id="tool-errors"')[1].split("</section>")[0]
    assert "Tool errors <span class=\"muted\">(2)</span>" in errors
    for seq, tool in ((3, "lookup"), (7, "fetch_page")):
        assert f'href="{chain.get_absolute_url()}?at={seq}#m-{seq}" class="seq-link">#{seq}</a>' in errors
        assert f'<span class="tool-name">{tool}</span>' in errors
    assert "&lt;b&gt;boom&lt;/b&gt; one" in errors  # the preview is agent text: escaped


def test_it_links_the_jumps_from_the_place_and_offers_go_to_and_the_last_message(alice_client, chain):
    url = chain.get_absolute_url()
    jump = reverse("agents:session_jump", args=[chain.pk])
    page = alice_client.get(url, {"at": 5}).content.decode()
    for kind in ("error", "violation", "user"):
        assert f'id="jump-{kind}-next" href="{jump}?kind={kind}&amp;dir=next&amp;from=5"' in page
        assert f'id="jump-{kind}-prev" href="{jump}?kind={kind}&amp;dir=prev&amp;from=5"' in page
    assert f'id="jump-last" href="{url}?at=9#m-9"' in page
    assert '<input type="number" id="goto-at" name="at" min="0" max="9"' in page


def test_a_clean_session_offers_no_error_or_violation_jumps(alice_client, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    page = alice_client.get(session.get_absolute_url()).content.decode()
    assert 'id="jump-user-next"' in page
    assert 'id="jump-error-next"' not in page and 'id="jump-violation-next"' not in page
    assert 'id="tool-errors"' not in page


def _long(n: int) -> list[dict]:
    """A long session with a failing tool call every 60 messages and an orphan result every 500."""
    out: list[dict] = []
    while len(out) < n:
        i = len(out)
        if i % 500 == 499:
            out.append({"role": "tool", "tool_call_id": f"ghost_{i}", "content": "orphan"})
        elif i % 60 == 10:
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "probe", "arguments": "{}"}}]})
            out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"failed {i}", "is_error": True})
        else:
            out.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
    return out[:n]


def test_the_page_and_its_jumps_cost_as_many_queries_in_a_10000_message_session_as_in_a_short_one(
    alice_client, make_session
):
    short, long = make_session(_long(600)), make_session(_long(10_000))
    assert long.message_count == 10_000 and long.has_errors and long.violations
    counts = []
    # Pages alike: each holds an orphan result (#499, #9499), whose call is looked for once.
    for session, at in ((short, 300), (long, 300), (long, 9_300)):
        with CaptureQueriesContext(connection) as ctx:
            assert alice_client.get(session.get_absolute_url(), {"at": at}).status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] == counts[2]
    jumps = []
    for session, start in ((short, 300), (long, 9_000)):
        for kind in ("error", "violation", "user"):
            with CaptureQueriesContext(connection) as ctx:
                assert _jump(alice_client, session, kind=kind, **{"from": start}).status_code == 302
            jumps.append(len(ctx.captured_queries))
    # A violation is found in the session's stored list: one query fewer than an error or a user message.
    assert jumps[:3] == jumps[3:] and jumps[0] == jumps[2] == jumps[1] + 1
    # The header lists every tool error of the long session (fewer than the 200 it lists at most).
    page = alice_client.get(long.get_absolute_url()).content.decode()
    errors = page.split('id="tool-errors"')[1].split("</section>")[0]
    assert errors.count('class="seq-link">#') == long.messages.filter(is_error=True).count() > 150
