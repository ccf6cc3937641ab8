"""Counting as the model does: an agent's model picks the counter of its sessions; a stored session can be counted
again with another counter, and the counts are stored."""
from __future__ import annotations

import json

import pytest

from agents.memory.schema import Conversation, parse_messages
from agents.memory.tokens import count_messages, total_tokens
from agents.models import Agent, Membership, Message
from agents.store.writing import session_store
from agents.transfer import imports
from tests.conversations import TRAVEL

CJK = [{"role": "user", "content": "東京と大阪の天気を教えてください。明日は雨が降りますか？"},
       {"role": "assistant", "content": "東京は晴れ、大阪は曇りのち雨です。🌦️"}]


def store(agent: Agent, messages: list[dict]):
    return session_store(agent=agent, conversation=Conversation(messages=parse_messages(messages), external_id="x"))


@pytest.mark.parametrize(
    ("model", "counter"),
    [
        ("gpt-4o", "o200k"),
        ("openai/gpt-4.1-mini", "o200k"),
        ("gpt-4-0613", "cl100k"),
        ("claude-sonnet-4", "cl100k"),
        ("", "cl100k"),
    ],
)
def test_it_counts_an_agents_sessions_as_its_model_does(project, model, counter):
    agent = Agent.objects.create(project=project, name="bot", slug="bot", model=model)
    session = store(agent, CJK)

    assert agent.counter == counter and session.token_counter == counter
    expected = count_messages(parse_messages(CJK), counter)
    assert list(session.messages.order_by("seq").values_list("token_count", flat=True)) == expected
    assert session.token_total == total_tokens(expected, counter)


def test_a_counter_chosen_for_the_agent_wins_over_its_model(project):
    agent = Agent.objects.create(project=project, name="bot", slug="bot", model="gpt-4o", token_counter="approx")
    assert store(agent, CJK).token_counter == "approx"


def test_an_import_counts_with_the_agents_counter_unless_told_otherwise(project, tmp_path):
    agent = Agent.objects.create(project=project, name="bot", slug="bot", model="gpt-5")
    travel, cjk = tmp_path / "travel.json", tmp_path / "cjk.json"
    travel.write_text(json.dumps(TRAVEL))
    cjk.write_text(json.dumps(CJK))

    imports.import_file(travel, project=project, agent=agent)
    imports.import_file(cjk, project=project, agent=agent, counter="messages")

    assert sorted(agent.sessions.values_list("token_counter", flat=True)) == ["messages", "o200k"]


def test_the_agent_page_says_what_it_counts_with_and_editors_change_it(alice_client, project):
    agent = Agent.objects.create(project=project, name="bot", slug="bot", model="gpt-4o")
    page = alice_client.get(agent.get_absolute_url()).content.decode()
    assert 'id="agent-counter"><span class="mono">o200k</span>' in page and "as gpt-4o counts" in page

    response = alice_client.post(agent.get_absolute_url(), {"name": "bot", "model": "gpt-4o", "context_window": 128000,
                                                             "token_counter": "cl100k"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.token_counter == "cl100k" and agent.counter == "cl100k"


def test_the_agent_api_shows_and_patches_its_counter(alice_client, project):
    agent = Agent.objects.create(project=project, name="bot", slug="bot", model="o3-mini")
    url = f"/api/agents/{agent.pk}/"
    assert alice_client.get(url).json()["counter"] == "o200k"

    response = alice_client.patch(url, data=json.dumps({"token_counter": "approx"}), content_type="application/json")
    assert response.status_code == 200 and response.json()["token_counter"] == "approx"
    bad = alice_client.patch(url, data=json.dumps({"token_counter": "words"}), content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"].startswith("token_counter:")


# --- counting a stored session again ---------------------------------------------------------------------------


def test_it_counts_a_stored_session_again_and_stores_the_counts(alice_client, make_session):
    session = make_session(TRAVEL)  # the fixture agent counts with cl100k
    assert session.token_counter == "cl100k"

    response = alice_client.post(f"/sessions/{session.pk}/recount/", {"counter": "o200k"})

    assert response.status_code == 302 and response["Location"].endswith("?recounted=1")
    session.refresh_from_db()
    expected = count_messages(parse_messages(TRAVEL), "o200k")
    rows = list(Message.objects.filter(session=session).order_by("seq").values_list("token_count", "token_running"))
    assert [c for c, _ in rows] == expected
    assert [r for _, r in rows] == [sum(expected[: k + 1]) for k in range(len(expected))]
    assert session.token_counter == "o200k" and session.token_total == total_tokens(expected, "o200k")
    page = alice_client.get(response["Location"]).content.decode()
    assert "Counted again with o200k." in page
    # Stored, so the trim API under the session's new counter does not count again.
    trim = alice_client.get(f"/api/sessions/{session.pk}/trim/?strategy=unbounded&counter=o200k").json()
    assert trim["recounted"] is False and trim["tokens_before"] == session.token_total


def test_only_editors_count_a_session_again_and_only_with_a_known_counter(client, alice_client, make_session, project,
                                                                          bob, other_agent):
    session = make_session(TRAVEL)
    other = make_session(TRAVEL, agent=other_agent)
    assert alice_client.post(f"/sessions/{session.pk}/recount/", {"counter": "words"}).status_code == 400
    assert alice_client.post(f"/sessions/{other.pk}/recount/", {"counter": "o200k"}).status_code == 404
    Membership.objects.create(project=project, user=bob, role=Membership.Level.VIEWER)
    client.force_login(bob)  # the same client as alice_client: from here on it is bob
    assert "Count again with" not in client.get(session.get_absolute_url()).content.decode()
    assert client.post(f"/sessions/{session.pk}/recount/", {"counter": "o200k"}).status_code == 403
    session.refresh_from_db()
    assert session.token_counter == "cl100k"
