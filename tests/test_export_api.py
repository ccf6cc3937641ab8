"""The API's export: one session (POST /api/sessions/{id}/export/) or the list's filters (POST /api/exports/),
through the same path as the pages' export (pages.export_request)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from agents import models
from agents.lab import presets
from agents.memory.formats import FORMATS
from agents.memory.schema import Conversation, Message
from agents.store import writing

CHAT = [Message(role="user", content="hi"), Message(role="assistant", content="hello"),
        Message(role="user", content="again"), Message(role="assistant", content="ok")]


def store(agent: models.Agent, external_id: str, messages: list[Message] = CHAT) -> models.Session:
    return writing.session_store(agent=agent, conversation=Conversation(messages=messages, external_id=external_id))


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def export_url(session: models.Session) -> str:
    return f"/api/sessions/{session.pk}/export/"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_it_exports_a_session_in_each_format_as_the_page_does(alice_client: Any, agent: models.Agent, name: str):
    session = store(agent, "a")
    api = alice_client.post(export_url(session), {"format": name})
    page = alice_client.post(reverse("agents:export_session", args=[session.pk]), {"format": name})
    assert api.status_code == 200, api.content
    assert api["Content-Type"] == page["Content-Type"]
    assert api["Content-Type"].startswith(getattr(FORMATS[name], "media_type", "application/json"))
    assert api["Content-Disposition"].startswith(f'attachment; filename="memoryviz-session-{session.pk}-{name}')
    sent = body(api)
    assert sent and sent == body(page)
    assert list(models.ExportRecord.objects.order_by("id").values_list("interface", flat=True)) == ["api", "web"]


def test_it_exports_a_session_trimmed_by_a_strategy_or_a_preset_from_json(alice_client: Any, agent, alice):
    session = store(agent, "a")
    trimmed = alice_client.post(export_url(session), {"format": "native", "strategy": "buffered",
                                                      "params": "buffer_size=1"}, content_type="application/json")
    conv = json.loads(body(trimmed))["sessions"][0]
    assert len(conv["messages"]) == 1 and conv["metadata"]["trimmed"]["params"]["buffer_size"] == 1
    presets.preset_create(user=alice, project=agent.project, name="two", strategy="buffered",
                          params={"buffer_size": 2}, counter="cl100k")
    by_preset = alice_client.post(f"{export_url(session)}?format=native&preset=two")
    assert by_preset.status_code == 200, by_preset.content
    assert len(json.loads(body(by_preset))["sessions"][0]["messages"]) == 2


def test_a_json_body_gives_params_as_an_object_and_must_be_an_object(alice_client: Any, agent: models.Agent):
    # A JSON client writes the parameters as the presets API takes them, an object: not the text
    # "{'buffer_size': 1}" read as key=value (400), and a body that is no object is refused, not read as "no
    # fields" (which exported the whole session as native).
    session = store(agent, "a")
    for params in ({"buffer_size": 1, "pin_system": False}, "buffer_size=1, pin_system=false"):
        trimmed = alice_client.post(export_url(session), {"format": "native", "strategy": "buffered",
                                                          "params": params}, content_type="application/json")
        assert trimmed.status_code == 200, (params, trimmed.content)
        kept = json.loads(body(trimmed))["sessions"][0]["metadata"]["trimmed"]["params"]
        assert kept == {"buffer_size": 1, "pin_system": False}
    wrong = alice_client.post(export_url(session), {"strategy": "buffered", "params": {"buffer_size": 0}},
                              content_type="application/json")
    assert wrong.status_code == 400 and "params: buffer_size=0: " in wrong.json()["error"]
    for sent in ([1], json.dumps("native"), "3"):
        refused = alice_client.post(export_url(session), sent, content_type="application/json")
        assert refused.status_code == 400 and refused.json() == {"error": "body: expected a JSON object"}, sent
        assert alice_client.post("/api/exports/", sent, content_type="application/json").status_code == 400
    assert models.ExportRecord.objects.count() == 2


def test_it_answers_errors_naming_the_field(alice_client: Any, agent: models.Agent):
    session = store(agent, "a")
    for sent, field in (({"format": "nope"}, "format: unknown format 'nope'"),
                        ({"strategy": "nope"}, "strategy: "),
                        ({"strategy": "buffered", "params": "buffer_size=0"}, "params: buffer_size=0: "),
                        ({"preset": "missing"}, "preset: "),
                        ({"on_invalid": "later"}, "on_invalid: ")):
        response = alice_client.post(export_url(session), sent)
        assert response.status_code == 400, sent
        assert field in response.json()["error"], (sent, response.json())
    assert alice_client.get(export_url(session)).status_code == 405
    assert not models.ExportRecord.objects.exists()


def test_it_answers_404_for_another_projects_session_and_lets_a_viewer_export(agent: models.Agent, bob: User):
    session = store(agent, "a")
    other = models.Project.objects.create(name="Secret", slug="secret")
    hidden = store(models.Agent.objects.create(project=other, name="Spy", slug="spy"), "s")
    models.Membership.objects.create(project=agent.project, user=bob, role=models.Membership.Level.VIEWER)
    client = Client()
    client.force_login(bob)
    missing = client.post(export_url(hidden), {"format": "native"})
    assert missing.status_code == 404 and set(missing.json()) == {"error"}
    assert client.post(export_url(session), {"format": "native"}).status_code == 200
    assert Client().post(export_url(session), {"format": "native"}).status_code in (401, 403)


def test_it_exports_the_lists_filters_and_refuses_another_projects(alice_client: Any, agent: models.Agent):
    store(agent, "clean")
    store(agent, "broken", [Message(role="user", content="x"), Message(role="tool", tool_call_id="gone", content="y")])
    other = models.Project.objects.create(name="Secret", slug="secret")
    store(models.Agent.objects.create(project=other, name="Spy", slug="spy"), "hidden")
    everything = json.loads(body(alice_client.post("/api/exports/", {"format": "native"})))
    assert sorted(s["external_id"] for s in everything["sessions"]) == ["broken", "clean"]
    filtered = alice_client.post("/api/exports/?violations=on", {"format": "native"})
    assert [s["external_id"] for s in json.loads(body(filtered))["sessions"]] == ["broken"]
    refused = alice_client.post("/api/exports/", {"format": "native", "project": "secret"})
    assert refused.status_code == 400 and "project" in refused.json()["error"]
    assert models.ExportRecord.objects.count() == 2


def test_a_big_export_answers_its_background_jobs_url(alice_client: Any, agent: models.Agent, settings):
    settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES = 3
    session = store(agent, "a")
    response = alice_client.post(export_url(session), {"format": "native"})
    assert response.status_code == 202
    job = models.BackgroundJob.objects.get()
    assert response.json()["job"] == f"http://testserver{job.get_absolute_url()}"
    assert job.kind == models.BackgroundJob.Kind.EXPORT and job.params["session_ids"] == [session.pk]


def test_the_schema_documents_the_exports(alice_client: Any):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    text = schema.content.decode()
    assert schema.status_code == 200
    assert "/api/sessions/{session_id}/export/" in text and "/api/exports/" in text
    assert "session_export" in text and "exports_create" in text


def test_a_project_key_exports_a_session_recorded_as_the_keys_creator(agent: models.Agent, alice: User):
    from agents.projects import keys

    session = store(agent, "a")
    key = keys.api_key_create(project=agent.project, name="script", created_by=alice).key
    response = Client().post(export_url(session), {"format": "openai"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200
    assert json.loads(body(response))[0]["content"] == "hi"
    record = models.ExportRecord.objects.get()
    assert (record.user, record.interface, record.project) == (alice, "api", agent.project)


def test_a_project_key_s_big_export_is_a_job_of_the_key_s_creator(agent: models.Agent, alice: User, settings):
    from agents.projects import keys

    settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES = 3
    session = store(agent, "a")
    key = keys.api_key_create(project=agent.project, name="script", created_by=alice).key
    response = Client().post(export_url(session), {"format": "native"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202
    assert models.BackgroundJob.objects.get().user == alice


def test_a_key_made_on_the_command_line_cannot_own_a_background_export(agent: models.Agent, settings):
    from agents.projects import keys

    settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES = 3
    session = store(agent, "a")
    key = keys.api_key_create(project=agent.project, name="cron").key
    response = Client().post(export_url(session), {"format": "native"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    assert "belongs to no one" in response.json()["error"]
    assert not models.BackgroundJob.objects.exists()
