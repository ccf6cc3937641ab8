"""The JSON API: the pages' twins, scoped to the user's projects, one error shape."""
from __future__ import annotations

import base64
import itertools

import pytest

from tests.conversations import TRAVEL

ORPHAN = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "zz", "content": "stray"}]


@pytest.fixture
def travel(make_session):
    return make_session(TRAVEL, title="Travel")


def test_it_lists_only_the_users_sessions(alice_client, travel, make_session, other_agent):
    make_session(ORPHAN, agent=other_agent, title="Secret")
    data = alice_client.get("/api/sessions/").json()
    assert data["count"] == 1
    row = data["results"][0]
    assert row["title"] == "Travel"
    assert row["message_count"] == 6
    assert row["has_errors"] is True
    assert row["violation_count"] == 0
    assert row["project"] == "alpha"


def test_it_filters_like_the_page(alice_client, travel, make_session):
    make_session(ORPHAN, title="Broken")
    assert [r["title"] for r in alice_client.get("/api/sessions/?violations=on").json()["results"]] == ["Broken"]
    assert [r["title"] for r in alice_client.get("/api/sessions/?tool=get_weather").json()["results"]] == ["Travel"]
    assert [r["title"] for r in alice_client.get("/api/sessions/?q=Tokyo").json()["results"]] == ["Travel"]


def test_it_rejects_a_bad_filter_with_the_error_shape(alice_client, travel):
    response = alice_client.get("/api/sessions/?min_tokens=lots")
    assert response.status_code == 400
    assert response.json()["error"].startswith("min_tokens:")


def test_it_refuses_an_agent_of_another_project_than_the_chosen_one(
    alice_client, travel, alice, other_project, other_agent
):
    from agents.models import Membership

    Membership.objects.create(project=other_project, user=alice)
    response = alice_client.get(f"/api/sessions/?project=alpha&agent={other_agent.pk}")
    assert response.status_code == 400
    assert response.json() == {"error": "agent: Beta bot is not an agent of Alpha."}


def test_it_returns_404_for_another_projects_session(alice_client, make_session, other_agent):
    secret = make_session(ORPHAN, agent=other_agent)
    for url in (f"/api/sessions/{secret.pk}/", f"/api/sessions/{secret.pk}/messages/",
                f"/api/sessions/{secret.pk}/trim/?strategy=unbounded"):
        response = alice_client.get(url)
        assert response.status_code == 404, url
        assert "error" in response.json()


def test_it_requires_authentication(client, travel):
    for url in ("/api/", "/api/sessions/", f"/api/sessions/{travel.pk}/", f"/api/sessions/{travel.pk}/trim/"):
        response = client.get(url)
        # 401 with a Basic challenge: a script without credentials learns how to authenticate.
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"].startswith("Basic"), url
        assert "error" in response.json()


def test_it_still_lets_a_logged_in_browser_in(alice_client, travel):
    assert alice_client.get("/api/sessions/").status_code == 200


def test_it_accepts_basic_auth(client, travel):
    token = base64.b64encode(b"alice:pw-alice-123").decode()
    response = client.get("/api/sessions/", HTTP_AUTHORIZATION=f"Basic {token}")
    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_it_shows_a_session_with_its_violations(alice_client, make_session):
    broken = make_session(ORPHAN, title="Broken")
    data = alice_client.get(f"/api/sessions/{broken.pk}/").json()
    assert data["violation_count"] == 1
    assert [v["kind"] for v in data["violations"]] == ["orphan_tool_result"]
    assert data["violations"][0]["index"] == 1


def test_it_pages_messages_by_seq(alice_client, travel):
    first = alice_client.get(f"/api/sessions/{travel.pk}/messages/?limit=4").json()
    assert [m["seq"] for m in first["messages"]] == [0, 1, 2, 3]
    assert first["messages"][2]["tool_calls"][1]["id"] == "c2"
    assert first["messages"][2]["tool_calls"] == TRAVEL[2]["tool_calls"]  # "type": "function" included
    assert all(m["token_count"] > 0 for m in first["messages"])
    second = alice_client.get(first["next"]).json()
    assert [m["seq"] for m in second["messages"]] == [4, 5]
    assert second["messages"][0]["is_error"] is True
    assert second["next"] is None


def test_it_gives_valid_openai_input_from_a_page_of_messages(alice_client, travel):
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    page = alice_client.get(f"/api/sessions/{travel.pk}/messages/").json()
    keys = {"role", "content", "tool_calls", "tool_call_id", "name"}
    sent = [{k: v for k, v in m.items() if k in keys} for m in page["messages"]]
    for message in TypeAdapter(list[ChatCompletionMessageParam]).validate_python(sent):
        if message["role"] == "assistant" and message.get("tool_calls"):
            assert {c["type"] for c in message["tool_calls"]} == {"function"}


@pytest.mark.parametrize("page", ["999", "0", "two"])
def test_it_answers_a_page_out_of_range_with_the_error_shape(alice_client, travel, page):
    response = alice_client.get(f"/api/sessions/?page={page}")
    assert response.status_code == 404
    assert response.json() == {"error": f"page {page}: no such page; there are 1 (page=1 to page=1)"}


def test_it_rejects_a_bad_page_size(alice_client, travel):
    response = alice_client.get(f"/api/sessions/{travel.pk}/messages/?limit=0")
    assert response.status_code == 400
    assert "limit" in response.json()["error"]


def test_it_trims_a_stored_session_with_a_strategy(alice_client, travel):
    data = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=buffered&buffer_size=2").json()
    assert data["strategy"] == "buffered"
    # AutoGen counts the two results as one message: the last 2 are [results, final answer], and the leading
    # result run is removed, as AutoGen removes one; the pinned system message stays in front.
    assert data["kept"] == [0, 5]
    assert data["dropped"] == [
        {"from": 1, "to": 2, "reason": data["dropped"][0]["reason"]},
        {"from": 3, "to": 4, "reason": data["dropped"][1]["reason"]},
    ]
    assert data["tokens_after"] < data["tokens_before"]
    assert data["recounted"] is False and data["detail"] == "compact"
    assert "explanation" not in data and "messages" not in data


def _long_session(make_session, turns: int):
    messages = [{"role": "system", "content": "You are a travel assistant."}]
    for k in range(turns):
        messages += [
            {"role": "user", "content": f"Weather in city {k}?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": "18°C"},
            {"role": "assistant", "content": f"It is 18°C in city {k}."},
        ]
    return make_session(messages, title="Long")


def test_it_answers_a_long_trim_in_runs_of_dropped_messages(alice_client, make_session):
    session = _long_session(make_session, 500)  # 2,001 messages
    url = f"/api/sessions/{session.pk}/trim/?strategy=buffered&buffer_size=4"
    compact = alice_client.get(url)
    full = alice_client.get(url + "&detail=full").json()
    data = compact.json()
    assert data["kept"] == full["kept"] == [0, 1997, 1998, 1999, 2000]
    # One run per reason, however long the session: the pinned system message is kept, 1..1996 dropped.
    assert [(r["from"], r["to"]) for r in data["dropped"]] == [(1, 1996)]
    assert data["dropped"][0]["reason"] == full["dropped"][0]["reason"]
    assert len(compact.content) < 3_000
    # The full form is the trim command's contract, one entry per dropped input message.
    assert [d["index"] for d in full["dropped"]] == list(range(1, 1997))
    assert len(full["explanation"]) == 2001 and len(full["messages"]) == 5
    assert full["detail"] == "full"
    assert len(alice_client.get(url + "&messages=1").json()["messages"]) == 5


def test_it_expands_runs_into_what_the_full_form_lists(alice_client, travel):
    for query in ("strategy=buffered&buffer_size=2", "strategy=openmanus_window&max_messages=2",
                  "strategy=safe_token_budget&max_tokens=20&counter=messages"):
        url = f"/api/sessions/{travel.pk}/trim/?{query}"
        runs = alice_client.get(url).json()["dropped"]
        full = alice_client.get(url + "&detail=full").json()["dropped"]
        expanded = [{"index": i, "reason": r["reason"]} for r in runs for i in range(r["from"], r["to"] + 1)]
        assert expanded == full, query
        for a, b in itertools.pairwise(runs):
            assert a["to"] + 1 < b["from"] or a["reason"] != b["reason"]


@pytest.mark.parametrize(("query", "says"), [("detail=everything", "detail=everything: expected compact or full"),
                                             ("messages=maybe", "messages=maybe: expected 1 or 0"),
                                             ("counter=gpt2", "unknown counter 'gpt2'; valid: approx")])
def test_it_rejects_bad_trim_options_with_the_error_shape(alice_client, travel, query, says):
    response = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=unbounded&{query}")
    assert response.status_code == 400
    assert says in response.json()["error"]


def test_it_trims_with_the_stored_counts_unless_another_counter_is_asked_for(alice_client, travel):
    from agents.memory.schema import parse_messages
    from agents.memory.tokens import count_messages, get_counter, total_tokens

    assert travel.token_counter == "cl100k"
    base = f"/api/sessions/{travel.pk}/trim/?strategy=unbounded"
    stored = alice_client.get(base).json()
    same = alice_client.get(base + "&counter=cl100k").json()
    assert stored == same and stored["recounted"] is False and stored["counter"] == "cl100k"
    assert stored["tokens_before"] == travel.token_total
    approx = alice_client.get(base + "&counter=approx").json()
    assert approx["recounted"] is True and approx["counter"] == "approx"
    assert approx["tokens_before"] == total_tokens(count_messages(parse_messages(TRAVEL), "approx"), "approx")
    # The budget is read in the chosen counter's units: messages.
    by_count = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=buffered&buffer_size=2"
                                "&counter=messages").json()
    per_list = get_counter("messages").per_list
    assert by_count["recounted"] is True
    assert (by_count["tokens_before"], by_count["tokens_after"]) == (6 + per_list, 2 + per_list)


def test_it_lists_o200k_and_recounts_a_stored_session_with_it(alice_client, travel):
    from agents.memory.schema import parse_messages
    from agents.memory.tokens import count_messages

    assert alice_client.get("/api/").json()["counters"] == ["approx", "cl100k", "messages", "o200k"]
    response = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=unbounded&counter=o200k").json()
    assert response["recounted"] is True and response["counter"] == "o200k"
    per_message = count_messages(parse_messages(TRAVEL), "o200k")
    assert response["tokens_before"] == sum(per_message) + 3 != travel.token_total  # stored counts are cl100k


def test_it_reads_a_repeated_trim_parameter_as_a_list(alice_client, travel):
    base = f"/api/sessions/{travel.pk}/trim/?strategy=langchain_last&max_tokens=1000"
    repeated = alice_client.get(base + "&end_on=human&end_on=ai").json()
    assert repeated["params"]["end_on"] == ["human", "ai"]
    for written in ("&end_on=human,ai", '&end_on=["human","ai"]'):
        assert alice_client.get(base + written).json() == repeated, written


def test_it_explains_an_unknown_strategy(alice_client, travel):
    response = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=nope")
    assert response.status_code == 400
    assert "buffered" in response.json()["error"]


def test_it_lists_strategies_and_formats(alice_client):
    strategies = {s["name"]: s for s in alice_client.get("/api/strategies/").json()["strategies"]}
    assert "safe_token_budget" in strategies
    assert "buffer_size" in strategies["buffered"]["params"]["properties"]
    formats = {f["name"] for f in alice_client.get("/api/formats/").json()["formats"]}
    assert {"native", "openai", "anthropic", "autogen", "langchain"} <= formats


def test_it_reads_only_the_columns_a_trim_needs(alice_client, travel):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=unbounded").status_code == 200
    select = next(q["sql"] for q in queries if 'FROM "agents_message"' in q["sql"] and '"token_count"' in q["sql"])
    assert '"token_count"' in select and '"tool_calls"' in select
    assert '"token_running"' not in select


def test_the_trim_url_the_browsable_api_links_to_answers_without_a_strategy(alice_client, travel):
    # The browsable API's breadcrumbs link to /trim/ without a query: it answers the recommended strategy, and says so.
    page = alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=buffered", HTTP_ACCEPT="text/html")
    assert f'<a href="/api/sessions/{travel.pk}/trim/">' in page.content.decode()
    response = alice_client.get(f"/api/sessions/{travel.pk}/trim/")
    assert response.status_code == 200
    data = response.json()
    assert data["strategy"] == "safe_token_budget" and data["params"]["max_tokens"] == 4000
    assert data["note"].startswith("no strategy given: safe_token_budget (memoryviz's recommendation)")
    assert data["note"].endswith("/api/strategies/")
    # A strategy that is named but unknown is still an error.
    assert alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=nope").status_code == 400
    assert "note" not in alice_client.get(f"/api/sessions/{travel.pk}/trim/?strategy=buffered").json()


def test_the_browsable_api_shows_docstring_literals_as_code_not_backticks(alice_client, travel):
    html = alice_client.get(f"/api/sessions/{travel.pk}/trim/", HTTP_ACCEPT="text/html").content.decode()
    description = html.split('<div class="pull-left">')[1].split("</div>")[0]
    assert "``" not in description
    assert "<code>?strategy=NAME&amp;&lt;param&gt;=&lt;value&gt;...</code>" in description
    assert description.count("<p>") >= 3
