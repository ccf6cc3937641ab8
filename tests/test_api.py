"""The JSON API: the pages' twins, scoped to the user's projects, one error shape."""
from __future__ import annotations

import base64

import pytest

TRAVEL = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18°C"},
    {"role": "tool", "tool_call_id": "c2", "content": "timeout", "is_error": True},
    {"role": "assistant", "content": "Paris is 18°C; Tokyo timed out."},
]
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


def test_it_returns_404_for_another_projects_session(alice_client, make_session, other_agent):
    secret = make_session(ORPHAN, agent=other_agent)
    for url in (f"/api/sessions/{secret.pk}/", f"/api/sessions/{secret.pk}/messages/",
                f"/api/sessions/{secret.pk}/trim/?strategy=unbounded"):
        response = alice_client.get(url)
        assert response.status_code == 404, url
        assert "error" in response.json()


def test_it_requires_authentication(client, travel):
    response = client.get("/api/sessions/")
    assert response.status_code in (401, 403)
    assert "error" in response.json()


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
    assert all(m["token_count"] > 0 for m in first["messages"])
    second = alice_client.get(first["next"]).json()
    assert [m["seq"] for m in second["messages"]] == [4, 5]
    assert second["messages"][0]["is_error"] is True
    assert second["next"] is None


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
    assert {d["index"] for d in data["dropped"]} == {1, 2, 3, 4}
    assert data["tokens_after"] < data["tokens_before"]


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
