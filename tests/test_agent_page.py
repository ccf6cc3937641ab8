"""The agent page and its JSON twin: editors change an agent's name, description, model and context window; viewers
see them; other projects' agents do not exist."""
from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import User

from agents.models import Agent, Membership

CHAT = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
CHANGE = {"name": "Travel planner", "description": "Books trains.\nAnd hotels.", "model": "gpt-4.1",
          "context_window": "1047576"}


@pytest.fixture
def viewer_client(client, project):
    carol = User.objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=carol, role=Membership.Level.VIEWER)
    client.force_login(carol)
    return client


def _basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {token}"}


# --- the page ------------------------------------------------------------------------------------------------------


def test_it_shows_an_agent_with_its_model_window_and_sessions(alice_client, agent, make_session):
    make_session(CHAT)
    make_session(CHAT)
    html = alice_client.get(f"/agents/{agent.pk}/").content.decode()
    assert "<h1>Travel bot</h1>" in html
    assert 'id="agent-model">gpt-4o<' in html and 'id="agent-window">128,000 tokens<' in html
    assert f'href="/?project=alpha&amp;agent={agent.pk}">2</a>' in html
    assert '<form method="post"' in html and 'name="context_window"' in html and 'value="128000"' in html


def test_it_lets_an_editor_change_the_agent_and_comes_back_to_the_page(alice_client, agent):
    response = alice_client.post(f"/agents/{agent.pk}/", CHANGE)
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
    agent.refresh_from_db()
    assert (agent.name, agent.description, agent.model, agent.context_window) == (
        "Travel planner", "Books trains.\nAnd hotels.", "gpt-4.1", 1_047_576)
    html = alice_client.get(f"/agents/{agent.pk}/").content.decode()
    assert "Saved." in html and 'id="agent-window">1,047,576 tokens<' in html
    assert "Books trains.<br>And hotels." in html


def test_it_answers_htmx_with_the_card_alone(alice_client, agent):
    response = alice_client.post(f"/agents/{agent.pk}/", {**CHANGE, "model": "o3"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="agent-card"') and "<html" not in html
    assert 'role="status">Saved.</p>' in html and 'id="agent-model">o3<' in html
    assert alice_client.get(f"/agents/{agent.pk}/", HTTP_HX_REQUEST="true").content.decode().lstrip().startswith(
        '<section id="agent-card"')


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [("context_window", "0", "Ensure this value is greater than or equal to 1."),
     ("context_window", "lots", "Enter a whole number."),
     ("context_window", "100000001", "Ensure this value is less than or equal to 100000000."),
     ("name", "", "This field is required."),
     ("model", "m" * 201, "Ensure this value has at most 200 characters (it has 201).")],
)
def test_it_shows_what_is_wrong_and_changes_nothing(alice_client, agent, field, value, error):
    for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = alice_client.post(f"/agents/{agent.pk}/", {**CHANGE, field: value}, **htmx)
        assert response.status_code == 200
        assert f'<p class="form-error" id="error-{field}">{error}</p>' in response.content.decode()
    agent.refresh_from_db()
    assert (agent.name, agent.model, agent.context_window) == ("Travel bot", "gpt-4o", 128_000)


def test_it_shows_a_viewer_the_agent_read_only(viewer_client, agent):
    html = viewer_client.get(f"/agents/{agent.pk}/").content.decode()
    assert "<h1>Travel bot</h1>" in html and "agent-form" not in html and "name=\"context_window\"" not in html
    assert "the editors and admins of Alpha can" in html
    assert viewer_client.post(f"/agents/{agent.pk}/", CHANGE).status_code == 403
    agent.refresh_from_db()
    assert agent.model == "gpt-4o"


def test_it_answers_404_for_another_projects_agent(alice_client, other_agent):
    assert alice_client.get(f"/agents/{other_agent.pk}/").status_code == 404
    assert alice_client.post(f"/agents/{other_agent.pk}/", CHANGE).status_code == 404
    assert alice_client.get("/agents/999999/").status_code == 404
    other_agent.refresh_from_db()
    assert other_agent.name == "Beta bot"


def test_it_links_the_agent_from_the_session_page_and_the_list(alice_client, agent, make_session):
    session = make_session(CHAT, title="Trip")
    link = f'href="/agents/{agent.pk}/"'
    assert link in alice_client.get(f"/sessions/{session.pk}/").content.decode()
    assert link in alice_client.get("/").content.decode()


# --- the JSON twin --------------------------------------------------------------------------------------------------


def test_it_gives_an_agent_as_json(client, alice, agent, make_session):
    make_session(CHAT)
    data = client.get(f"/api/agents/{agent.pk}/", **_basic("alice", "pw-alice-123")).json()
    assert data == {
        "id": agent.pk, "url": f"http://testserver/api/agents/{agent.pk}/",
        "page_url": f"http://testserver/agents/{agent.pk}/", "project": "alpha", "name": "Travel bot",
        "slug": "travel-bot", "description": "", "model": "gpt-4o", "context_window": 128_000, "session_count": 1,
        "can_edit": True, "token_counter": "cl100k", "counter": "cl100k",
        "memory_url": f"http://testserver/api/agents/{agent.pk}/memory/",
        "snapshots_url": f"http://testserver/api/agents/{agent.pk}/snapshots/",
    }
    listing = client.get("/api/agents/", **_basic("alice", "pw-alice-123")).json()
    assert [a["id"] for a in listing["results"]] == [agent.pk]


def test_it_patches_only_the_fields_given(client, alice, agent):
    response = client.patch(f"/api/agents/{agent.pk}/", {"context_window": 200_000, "model": "claude-sonnet-4"},
                            content_type="application/json", **_basic("alice", "pw-alice-123"))
    assert response.status_code == 200, response.content
    assert (response.json()["context_window"], response.json()["model"], response.json()["name"]) == (
        200_000, "claude-sonnet-4", "Travel bot")
    agent.refresh_from_db()
    assert (agent.context_window, agent.model, agent.name) == (200_000, "claude-sonnet-4", "Travel bot")


@pytest.mark.parametrize(
    ("body", "error"),
    [({"context_window": 0}, "context_window: Ensure this value is greater than or equal to 1."),
     ({"name": ""}, "name: This field is required."),
     ({"slug": "elsewhere"}, "slug: Extra inputs are not permitted"),
     ([1, 2], "body: expected a JSON object")],
)
def test_it_refuses_a_bad_patch_with_one_error(client, alice, agent, body, error):
    response = client.patch(f"/api/agents/{agent.pk}/", body, content_type="application/json",
                            **_basic("alice", "pw-alice-123"))
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)
    agent.refresh_from_db()
    assert (agent.context_window, agent.name, agent.slug) == (128_000, "Travel bot", "travel-bot")


def test_it_refuses_a_viewers_patch_and_hides_other_projects(client, project, agent, other_agent):
    carol = User.objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=carol, role=Membership.Level.VIEWER)
    auth = _basic("carol", "pw-carol-123")
    assert client.get(f"/api/agents/{agent.pk}/", **auth).json()["can_edit"] is False
    response = client.patch(f"/api/agents/{agent.pk}/", {"model": "x"}, content_type="application/json", **auth)
    assert response.status_code == 403
    assert response.json() == {"error": "changing an agent needs the editor or admin role in its project"}
    for method in ("get", "patch"):
        response = getattr(client, method)(f"/api/agents/{other_agent.pk}/", {"model": "x"},
                                           content_type="application/json", **auth)
        assert response.status_code == 404 and response.json() == {"error": "No such agent."}
    assert Agent.objects.get(pk=other_agent.pk).model == ""
