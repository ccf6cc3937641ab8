"""The write API (create a session, append messages idempotently, import a file) and its OpenAPI schema."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import models
from agents.models import Membership
from agents.projects import keys
from agents.store import reading
from tests.paths import SAMPLES


@pytest.fixture
def key(project) -> str:
    return keys.api_key_create(project=project, name="script").key


@pytest.fixture
def auth(key) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def post_json(client, path: str, body, **headers):
    return client.post(path, data=json.dumps(body), content_type="application/json", **headers)


WEATHER = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Rome?", "id": "u1"},
    {
        "role": "assistant",
        "id": "a1",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}
        ],
    },
]


def test_a_key_creates_a_session_in_its_project_with_its_first_messages(client, project, auth):
    response = post_json(client, "/api/sessions/", {"agent": "Travel bot", "external_id": "run-1", "title": "Rome",
                                                     "messages": WEATHER}, **auth)
    assert response.status_code == 201, response.content
    data = response.json()
    session = models.Session.objects.get(pk=data["id"])
    assert (session.agent.project, session.agent.name, session.external_id) == (project, "Travel bot", "run-1")
    assert data["message_count"] == 3 and data["token_total"] > 0 and session.last_activity_at is not None
    assert [m.external_id for m in reading.session_messages(session)] == [None, "u1", "a1"]
    again = post_json(client, "/api/sessions/", {"agent": "travel-bot", "external_id": "run-1"}, **auth)
    assert again.status_code == 409 and "already has this session" in again.json()["error"]


def test_appending_messages_is_idempotent_by_id_and_keeps_the_summaries_right(client, project, auth):
    session_id = post_json(client, "/api/sessions/", {"agent": "bot", "messages": WEATHER}, **auth).json()["id"]
    result = {"role": "tool", "tool_call_id": "c1", "content": "24°C", "id": "t1"}
    answer = {"role": "assistant", "content": "24°C in Rome.", "id": "a2"}
    first = post_json(client, f"/api/sessions/{session_id}/messages/", {"messages": [result, answer]}, **auth)
    assert first.status_code == 201 and first.json()["added"] == 2 and first.json()["seqs"] == [3, 4]
    retried = post_json(client, f"/api/sessions/{session_id}/messages/", {"messages": [result, answer]}, **auth)
    assert retried.status_code == 200 and retried.json() == {
        "session": session_id, "added": 0, "skipped": ["t1", "a2"], "seqs": [], "message_count": 5}
    session = models.Session.objects.get(pk=session_id)
    assert session.message_count == 5 and session.violation_count == 0
    rows = list(session.messages.order_by("seq"))
    assert rows[-1].token_running == sum(r.token_count for r in rows)
    assert session.token_total == rows[-1].token_running + 3  # cl100k's reply priming, once per list
    orphan = {"role": "tool", "tool_call_id": "nope", "content": "?"}
    post_json(client, f"/api/sessions/{session_id}/messages/", {"messages": [orphan]}, **auth)
    session.refresh_from_db()
    assert session.violation_count == 1 and session.violations[0]["kind"] == "orphan_tool_result"
    assert session.violations[0]["seq"] == 5


@pytest.mark.parametrize("body, words", [
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0]: a tool message needs the tool_call_id"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "user", "content": "bad\u0000text"}]}, "NUL character"),
    ([1, 2], "body: expected a JSON object"),
])
def test_appending_bad_messages_says_where_and_stores_nothing(client, project, auth, body, words):
    session_id = post_json(client, "/api/sessions/", {"agent": "bot", "messages": WEATHER[:2]}, **auth).json()["id"]
    response = post_json(client, f"/api/sessions/{session_id}/messages/", body, **auth)
    assert response.status_code == 400 and words in response.json()["error"]
    assert models.Message.objects.filter(session_id=session_id).count() == 2


def test_writing_needs_the_editor_role(client, project, make_session):
    session = make_session([{"role": "user", "content": "Hi"}])
    viewer = User.objects.create_user("vic", password="pw-vic-12345")
    Membership.objects.create(project=project, user=viewer, role=Membership.Level.VIEWER)
    client.force_login(viewer)
    response = post_json(
        client, f"/api/sessions/{session.pk}/messages/", {"messages": [{"role": "user", "content": "x"}]}
    )
    assert response.status_code == 403
    response = post_json(client, "/api/sessions/", {"agent": "bot", "project": "alpha"})
    assert response.status_code == 403 and "no such project where you may write" in response.json()["error"]
    assert models.Session.objects.count() == 1


def test_a_key_cannot_write_to_another_project(client, project, other_agent, auth):
    response = post_json(client, "/api/sessions/", {"agent": "bot", "project": "beta"}, **auth)
    assert response.status_code == 403


def test_it_imports_a_file_in_any_format_through_the_import_service(client, project, auth):
    sample = SAMPLES / "anthropic" / "travel.json"
    with open(sample, "rb") as handle:
        response = client.post("/api/import/", {"file": handle, "agent": "travel-bot"}, **auth)
    assert response.status_code == 201, response.content
    report = response.json()
    assert report["format"] == "anthropic" and report["project"] == "alpha" and report["saved"] is True
    assert report["sessions_imported"] == 1 and report["messages_imported"] > 0
    session = models.Session.objects.get(pk=report["sessions"][0]["session_id"])
    assert session.agent.slug == "travel-bot" and session.message_count == report["messages_imported"]


def test_a_file_it_cannot_read_is_refused_with_the_place_and_nothing_is_stored(client, project, auth, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"messages": [{"role": "user", "content": "Hi"}, {"role": "tool", "content": "x"}]}')
    with open(bad, "rb") as handle:
        response = client.post("/api/import/", {"file": handle, "format": "openai"}, **auth)
    assert response.status_code == 400
    assert response.json()["error"].startswith("broken.json: ") and "Nothing was imported." in response.json()["error"]
    assert models.Session.objects.count() == 0
    assert client.post("/api/import/", {}, **auth).json() == {
        "error": "file: send the history as a multipart file field named file"
    }


def test_the_openapi_schema_documents_reading_and_writing_and_the_key(client, auth):
    assert client.get("/api/schema/").status_code == 401
    response = client.get("/api/schema/?format=json", **auth)
    assert response.status_code == 200
    document = json.loads(response.content)
    assert document["openapi"].startswith("3.1")
    assert {"get", "post"} <= set(document["paths"]["/api/sessions/"])
    assert "post" in document["paths"]["/api/sessions/{session_id}/messages/"]
    assert "post" in document["paths"]["/api/import/"]
    assert document["components"]["securitySchemes"]["projectApiKey"]["scheme"] == "bearer"
    assert "SessionCreate" in document["components"]["schemas"]


def test_the_api_docs_are_served_from_our_own_static_files(alice_client):
    assert Client().get("/api/docs/").status_code in (302, 401, 403)  # like every page
    client = alice_client
    page = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower() and "unpkg" not in page.lower()
    assert client.get("/api/redoc/").status_code == 200


def test_a_file_without_a_message_imports_nothing_and_says_so(client, project, auth, tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    with open(empty, "rb") as handle:
        response = client.post("/api/import/", {"file": handle}, **auth)
    assert response.status_code == 400
    assert response.json() == {
        "error": "empty.json: has no message, so there is nothing to import. Nothing was imported."
    }
    assert models.Session.objects.count() == 0
