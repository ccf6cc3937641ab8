"""The diff page, its htmx fragment and its JSON twin: two sessions, or a session against a trimmed view."""
from __future__ import annotations

import copy
import re

import pytest
from django.urls import reverse

from agents.diff import diffs
from agents.memory.schema import parse_messages
from agents.memory.trimming import strategy_spec, trim
from agents.models import Membership
from tests.conversations import TRAVEL


def second_run(*, city: str = "Lyon", answer: str = "Paris is 18°C; Lyon timed out.") -> list[dict]:
    """TRAVEL run again: other call ids, the second call asks for another city, the answer reworded, and the user
    adds a message at the end."""
    run = copy.deepcopy(TRAVEL)
    run[2]["tool_calls"][0]["id"] = "x1"
    run[2]["tool_calls"][1]["id"] = "x2"
    run[2]["tool_calls"][1]["function"]["arguments"] = f'{{"city": "{city}"}}'
    run[3]["tool_call_id"] = "x1"
    run[4]["tool_call_id"] = "x2"
    run[5]["content"] = answer
    run.append({"role": "user", "content": "Thanks!"})
    return run


def diff_url(session_id: int, **query: str) -> str:
    from urllib.parse import urlencode

    return reverse("agents:session_diff", args=[session_id]) + ("?" + urlencode(query) if query else "")


def long_run(n: int, *, change_at: int | None = None) -> list[dict]:
    out: list[dict] = [{"role": "system", "content": "You are terse."}]
    for k in range(1, n):
        text = f"message {k // 2}" if k != change_at else "a different message"
        out.append({"role": "user" if k % 2 else "assistant", "content": text})
    return out


# --- the page ----------------------------------------------------------------------------------------------------


def test_it_shows_two_runs_side_by_side_with_changed_words_and_arguments_marked(alice_client, make_session):
    a, b = make_session(TRAVEL, title="Run 1"), make_session(second_run(), title="Run 2")

    response = alice_client.get(diff_url(a.pk, **{"with": str(b.pk)}))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Two sessions compared" in html and "Run 1" in html and "Run 2" in html
    # Tokyo struck on A, Lyon marked on B: in the answer and in the second call's arguments.
    assert html.count('<span class="del">Tokyo</span>') == 2
    assert html.count('<span class="ins">Lyon</span>') == 2
    assert "$.city" in html
    # Counts: system, user, both results identical (ids differ, not what they say); the call and answer changed.
    assert re.search(r"4 identical</span>\s*<span class=\"count-changed\">2 changed</span>", html)
    assert "0 only in A" in html and "1 only in B" in html
    assert "Thanks!" in html


def test_it_folds_identical_runs_and_opens_one_as_an_htmx_fragment(alice_client, make_session):
    a, b = make_session(long_run(60)), make_session(long_run(60, change_at=30))

    page = alice_client.get(diff_url(a.pk, **{"with": str(b.pk)})).content.decode()
    assert "Show 29 identical messages" in page and "Show 28 identical messages" in page
    href = re.search(r'href="(\?with=\d+&amp;rows=0-29)"', page).group(1).replace("&amp;", "&")

    fragment = alice_client.get(diff_url(a.pk) + href, HTTP_HX_REQUEST="true")

    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert "<html" not in text and "diff-header" not in text
    assert text.count('class="diff-row kind-same"') == 29
    assert "Show" not in text
    # Without htmx the same link is a page of its own, with the way back.
    whole = alice_client.get(diff_url(a.pk) + href).content.decode()
    assert "Rows 0–28 unfolded" in whole and "Back to the whole comparison" in whole


def test_it_pages_a_long_pair_in_bounded_html(alice_client, make_session, monkeypatch):
    monkeypatch.setattr(diffs, "BLOCKS_PER_PAGE", 20)
    a = make_session(long_run(400))
    b = make_session([m for k, m in enumerate(long_run(400)) if k % 10 != 5])  # 40 messages missing

    first = alice_client.get(diff_url(a.pk, **{"with": str(b.pk)})).content.decode()

    assert "Page 1 of" in first
    assert first.count('class="diff-row ') + first.count('class="diff-fold"') == 20
    assert "40 only in A" in first
    assert alice_client.get(diff_url(a.pk, **{"with": str(b.pk), "page": "2"})).status_code == 200


def test_it_diffs_a_session_against_a_trimmed_view_with_the_strategys_reasons(alice_client, make_session):
    session = make_session(TRAVEL + [{"role": "user", "content": f"question {k}"} for k in range(6)])

    response = alice_client.get(diff_url(session.pk, trim="head_and_tail:head_size=1,tail_size=2"))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Session against its trimmed view" in html
    assert "head_and_tail:head_size=1,tail_size=2" in html
    assert "dropped" in html and "inserted" in html and "Skipped" in html
    assert "open in the lab" in html


def test_it_marks_stripped_thoughts_as_an_edit(alice_client, make_session):
    session = make_session([{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": "hello", "reasoning": "they greeted me"}])

    html = alice_client.get(diff_url(session.pk, trim="strip_thoughts")).content.decode()

    assert "1 edited" in html
    assert '<span class="del">they greeted me</span>' in html


def test_it_escapes_what_the_agents_wrote(alice_client, make_session):
    a = make_session([{"role": "user", "content": "<script>alert(1)</script> hi"}])
    b = make_session([{"role": "user", "content": "<img src=x onerror=alert(2)> hi"}])

    html = alice_client.get(diff_url(a.pk, **{"with": str(b.pk)})).content.decode()

    assert "<script" not in html.replace('<script src="/static/', "") and "<img" not in html
    assert '<span class="del">&lt;</span>' not in html  # the same "<" on both sides is not a change
    assert "&lt;" in html and "script" in html and "onerror" in html


def test_it_offers_the_choices_without_a_second_side(alice_client, make_session):
    a, b = make_session(TRAVEL, title="Run 1"), make_session(second_run(), title="Run 2")

    html = alice_client.get(diff_url(a.pk)).content.decode()

    assert 'name="with"' in html and 'name="trim"' in html
    assert f'href="?with={b.pk}"' in html and "Run 2" in html


def test_it_says_what_is_wrong_with_a_trim_spec(alice_client, make_session):
    session = make_session(TRAVEL)

    response = alice_client.get(diff_url(session.pk, trim="buffered:buffer_size=-3"))

    assert response.status_code == 200
    assert "buffer_size" in response.content.decode()
    nope = alice_client.get(diff_url(session.pk, trim="nope"))
    assert nope.status_code == 200 and "nope" in nope.content.decode() and "diff-row" not in nope.content.decode()


def test_it_compares_only_sessions_the_user_can_see(alice_client, make_session, other_agent, alice):
    mine = make_session(TRAVEL)
    theirs = make_session(TRAVEL, agent=other_agent)

    assert alice_client.get(diff_url(mine.pk, **{"with": str(theirs.pk)})).status_code == 404
    assert alice_client.get(diff_url(theirs.pk, **{"with": str(mine.pk)})).status_code == 404
    assert alice_client.get(diff_url(mine.pk, **{"with": "abc"})).status_code == 404

    # A session of another project the user is a member of can be compared.
    Membership.objects.create(project=other_agent.project, user=alice, role=Membership.Level.VIEWER)
    assert alice_client.get(diff_url(mine.pk, **{"with": str(theirs.pk)})).status_code == 200


def test_it_costs_the_same_queries_for_a_long_pair(alice_client, make_session, django_assert_max_num_queries):
    short = [make_session(long_run(10)), make_session(long_run(10, change_at=4))]
    long = [make_session(long_run(1500)), make_session(long_run(1500, change_at=700))]

    for a, b in (short, long):
        with django_assert_max_num_queries(8):
            assert alice_client.get(diff_url(a.pk, **{"with": str(b.pk)})).status_code == 200


# --- where it is reached from --------------------------------------------------------------------------------


def test_it_opens_the_diff_of_two_sessions_ticked_in_the_list(alice_client, make_session):
    a, b = make_session(TRAVEL), make_session(second_run())

    listing = alice_client.get(reverse("agents:session_list")).content.decode()
    assert 'id="compare-form"' in listing
    assert f'name="session" value="{a.pk}" form="compare-form"' in listing

    response = alice_client.get(reverse("agents:session_compare") + f"?session={b.pk}&session={a.pk}")
    assert response.status_code == 302
    assert response["Location"] == diff_url(a.pk, **{"with": str(b.pk)})

    one = alice_client.get(reverse("agents:session_compare") + f"?session={a.pk}")
    assert one.status_code == 200 and "you selected 1" in one.content.decode()


def test_it_links_the_session_page_and_the_lab_to_the_diff(alice_client, make_session):
    session = make_session(TRAVEL)

    page = alice_client.get(session.get_absolute_url()).content.decode()
    assert f'href="{diff_url(session.pk)}"' in page

    lab = alice_client.get(reverse("agents:session_lab", args=[session.pk]) + "?strategy=buffered&buffer_size=2")
    assert diff_url(session.pk, trim="buffered:buffer_size=2").replace("&", "&amp;") in lab.content.decode()


# --- the JSON twin -----------------------------------------------------------------------------------------------


def api_url(session_id: int, other_id: int | None = None) -> str:
    if other_id is None:
        return reverse("api:session_diff", args=[session_id])
    return reverse("api:session_diff_with", args=[session_id, other_id])


def test_it_answers_the_diff_of_two_sessions_as_json(alice_client, make_session):
    a, b = make_session(TRAVEL), make_session(second_run())

    data = alice_client.get(api_url(a.pk, b.pk)).json()

    assert data["left"]["id"] == a.pk and data["right"]["id"] == b.pk
    assert data["counts"] == {"same": 4, "changed": 2, "left_only": 0, "right_only": 1}
    assert data["exact"] is True
    call = next(r for r in data["blocks"] if r["kind"] == "changed" and "tool_calls" in r["changes"])
    assert call["changes"]["tool_calls"][1]["paths"] == [
        {"path": "$.city", "op": "changed", "left": "Tokyo", "right": "Lyon"}
    ]
    assert data["blocks"][-1] == {"kind": "right_only", "left": None, "right": 6}
    assert alice_client.get(api_url(a.pk) + f"?with={b.pk}").json()["counts"] == data["counts"]


def test_it_windows_the_json_rows_and_adds_messages_when_asked(alice_client, make_session):
    a, b = make_session(long_run(30)), make_session(long_run(30, change_at=20))

    data = alice_client.get(api_url(a.pk, b.pk) + "?start=18&limit=5&context=0&messages=1").json()

    assert (data["start"], data["stop"], data["rows"]) == (18, 23, 30)
    assert [blk["kind"] for blk in data["blocks"]] == ["same", "same", "changed", "same", "same"]
    assert data["blocks"][2]["left_message"]["content"] == "message 10"
    assert data["blocks"][2]["right_message"]["content"] == "a different message"
    folded = alice_client.get(api_url(a.pk, b.pk) + "?context=0").json()["blocks"]
    assert folded[0] == {"kind": "fold", "of": "same", "left": 0, "right": 0, "count": 20}


def test_it_answers_a_trimmed_view_diff_as_json(alice_client, make_session):
    session = make_session(TRAVEL)

    data = alice_client.get(api_url(session.pk) + "?trim=buffered:buffer_size=2").json()

    result = trim(parse_messages(TRAVEL), strategy_spec("buffered", {"buffer_size": 2}))
    assert data["right"] is None
    assert data["trim"]["strategy"] == "buffered" and data["trim"]["params"]["buffer_size"] == 2
    assert data["counts"] == {"same": len(result.kept), "changed": 0, "left_only": len(result.dropped),
                              "right_only": len(result.inserted)}
    assert data["counts"]["left_only"] > 0
    dropped = [b for b in data["blocks"] if b["kind"] == "left_only"]
    assert dropped[0]["note"] == result.dropped[0].reason


@pytest.mark.parametrize("query, message", [
    ("", "say what to compare with"),
    ("?trim=buffered:buffer_size=-1", "trim: invalid parameters for strategy 'buffered'"),
    ("?with=x", "with=x: expected a session id"),
    ("?with=1&limit=99999", "limit=99999: expected a whole number up to 5000"),
    ("?with=1&start=-2", "start=-2: expected a whole number"),
    ("?with=1&messages=maybe", "messages=maybe: expected 1 or 0"),
])
def test_it_answers_bad_diff_queries_with_one_error(alice_client, make_session, query, message):
    session = make_session(TRAVEL)

    response = alice_client.get(api_url(session.pk) + query)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)


def test_it_scopes_the_json_diff_to_the_users_projects(client, alice_client, make_session, other_agent):
    mine, theirs = make_session(TRAVEL), make_session(TRAVEL, agent=other_agent)

    assert alice_client.get(api_url(mine.pk, theirs.pk)).status_code == 404
    assert alice_client.get(api_url(theirs.pk, mine.pk)).status_code == 404
    client.logout()
    assert client.get(api_url(mine.pk, mine.pk)).status_code == 401
