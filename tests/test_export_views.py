from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse

from agents import models
from agents.memory.schema import Conversation, Message
from agents.store import writing

CHAT = [Message(role="user", content="hi"), Message(role="assistant", content="hello", reasoning="r")]
BROKEN = [Message(role="user", content="x"), Message(role="tool", tool_call_id="gone", content="y")]


def store(agent: models.Agent, external_id: str, messages: list[Message], title: str = "") -> models.Session:
    conv = Conversation(messages=messages, external_id=external_id, title=title or None)
    return writing.session_store(agent=agent, conversation=conv)


def body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def test_it_downloads_one_session_as_an_attachment(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    response = alice_client.post(reverse("agents:export_session", args=[session.pk]), {"format": "native"})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith(f'attachment; filename="memoryviz-session-{session.pk}-native')
    assert response["Content-Type"].startswith("application/json")
    doc = json.loads(body(response))
    assert [s["external_id"] for s in doc["sessions"]] == ["a"]
    record = models.ExportRecord.objects.get()
    assert record.user.username == "alice" and record.scope.startswith(f"session {session.pk}")


def test_it_answers_404_for_a_session_of_another_project(alice_client: Any, agent: models.Agent) -> None:
    other = models.Project.objects.create(name="Secret", slug="secret")
    foreign = models.Agent.objects.create(project=other, name="Spy", slug="spy")
    session = store(foreign, "s", CHAT)
    response = alice_client.post(reverse("agents:export_session", args=[session.pk]), {"format": "native"})
    assert response.status_code == 404
    assert models.ExportRecord.objects.count() == 0


def test_it_exports_the_list_with_its_filters(alice_client: Any, agent: models.Agent) -> None:
    store(agent, "clean", CHAT, title="Clean")
    store(agent, "broken", BROKEN, title="Broken")
    other = models.Project.objects.create(name="Secret", slug="secret")
    store(models.Agent.objects.create(project=other, name="Spy", slug="spy"), "hidden", CHAT)
    everything = json.loads(body(alice_client.post(reverse("agents:export_sessions"), {"format": "native"})))
    assert sorted(s["external_id"] for s in everything["sessions"]) == ["broken", "clean"]
    filtered = alice_client.post(reverse("agents:export_sessions"), {"format": "native", "violations": "on"})
    assert [s["external_id"] for s in json.loads(body(filtered))["sessions"]] == ["broken"]
    record = models.ExportRecord.objects.order_by("-id").first()
    assert record.filters == {"violations": "on"} and record.session_count == 1


def test_it_exports_a_session_trimmed_by_a_strategy(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    response = alice_client.post(reverse("agents:export_session", args=[session.pk]),
                                {"format": "native", "strategy": "buffered", "params": "buffer_size=1"})
    assert response.status_code == 200
    conv = json.loads(body(response))["sessions"][0]
    assert len(conv["messages"]) == 1
    assert conv["metadata"]["trimmed"]["params"]["buffer_size"] == 1


def test_it_reads_several_parameters_including_json_lists(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT + [Message(role="user", content="again"), Message(role="assistant", content="ok")])
    response = alice_client.post(
        reverse("agents:export_session", args=[session.pk]),
        {"format": "native", "strategy": "langchain_last",
         "params": 'max_tokens=1000, start_on=["human", "ai"], include_system=false'},
    )
    assert response.status_code == 200
    params = json.loads(body(response))["sessions"][0]["metadata"]["trimmed"]["params"]
    assert (params["max_tokens"], params["start_on"], params["include_system"]) == (1000, ["human", "ai"], False)


def test_it_shows_the_form_with_what_is_wrong_for_bad_export_requests(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    url = reverse("agents:export_session", args=[session.pk])
    for query, needle in [
        ({"format": "yaml"}, "unknown format"),
        ({"format": "native", "strategy": "nope"}, "unknown strategy"),
        ({"format": "native", "strategy": "buffered", "params": "buffer_size=-3"}, "buffer_size"),
        ({"format": "native", "strategy": "buffered", "params": "oops"}, "key=value"),
        ({"format": "openai_jsonl", "on_invalid": "maybe"}, "on_invalid"),
    ]:
        response = alice_client.post(url, query)
        assert response.status_code == 200 and not response.streaming, query
        assert needle in response.content.decode()
    assert models.ExportRecord.objects.count() == 0


def test_it_stops_or_skips_invalid_conversations_in_jsonl(alice_client: Any, agent: models.Agent) -> None:
    store(agent, "clean", CHAT)
    broken = store(agent, "broken", BROKEN, title="Broken one")
    url = reverse("agents:export_sessions")
    stopped = alice_client.post(url, {"format": "openai_jsonl", "on_invalid": "stop"})
    assert stopped.status_code == 200 and not stopped.streaming
    assert f"session {broken.pk} (Broken one)" in stopped.content.decode()
    skipped = alice_client.post(url, {"format": "openai_jsonl", "on_invalid": "skip"})
    assert skipped.status_code == 200 and skipped["X-Memoryviz-Skipped"] == "1"
    assert len(body(skipped).strip().splitlines()) == 1
    log = alice_client.get(reverse("agents:export_log")).content.decode()
    assert "skipped:" in log and "broken" in log


def test_it_lists_only_the_users_own_exports(alice_client: Any, client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    body(alice_client.post(reverse("agents:export_session", args=[session.pk]), {"format": "openai"}))
    page = alice_client.get(reverse("agents:export_log"))
    assert page.status_code == 200
    assert "reasoning on 1 message" in page.content.decode()
    bob = User.objects.create_user("bob", password="pw-bob-12345")
    client.force_login(bob)
    assert "No exports yet" in client.get(reverse("agents:export_log")).content.decode()


def test_it_requires_login(client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    for method in (client.get, client.post):
        assert method(reverse("agents:export_session", args=[session.pk])).status_code == 302


def test_it_puts_export_buttons_on_the_list_with_its_filters_and_on_the_session_page(
    alice_client: Any, agent: models.Agent
) -> None:
    session = store(agent, "broken", BROKEN)
    page = alice_client.get(reverse("agents:session_list"), {"violations": "on", "page": "1"}).content.decode()
    assert f'<form method="post" action="{reverse("agents:export_sessions")}"' in page
    assert 'name="csrfmiddlewaretoken"' in page.split('class="export-menu"')[1].split("</details>")[0]
    assert '<input type="hidden" name="violations" value="on">' in page
    assert 'name="page"' not in page.split('class="export-menu"')[1].split("</details>")[0]
    fragment = alice_client.get(reverse("agents:session_list"), {"violations": "on"}, HTTP_HX_REQUEST="true")
    assert '<input type="hidden" name="violations" value="on">' in fragment.content.decode()
    assert 'name="csrfmiddlewaretoken"' in fragment.content.decode()
    detail = alice_client.get(session.get_absolute_url()).content.decode()
    assert f'<form method="post" action="{reverse("agents:export_session", args=[session.pk])}"' in detail


def test_it_refuses_a_project_filter_outside_the_users_projects_and_exports_nothing(
    alice_client: Any, agent: models.Agent
) -> None:
    store(agent, "mine", CHAT)
    other = models.Project.objects.create(name="Secret", slug="secret")
    store(models.Agent.objects.create(project=other, name="Spy", slug="spy"), "hidden", CHAT)
    response = alice_client.post(reverse("agents:export_sessions"), {"format": "native", "project": "secret"})
    assert response.status_code == 200
    text = response.content.decode()
    assert not response.streaming and "project:" in text and "Nothing was exported" in text
    assert models.ExportRecord.objects.count() == 0


def test_it_refuses_a_bad_date_or_an_agent_of_another_project(alice_client: Any, agent: models.Agent) -> None:
    store(agent, "mine", CHAT)
    second = models.Project.objects.create(name="Second", slug="second")
    models.Membership.objects.create(project=second, user=User.objects.get(username="alice"), role="viewer")
    elsewhere = models.Agent.objects.create(project=second, name="Else", slug="else")
    for query in ({"date_from": "2024-13-45"}, {"min_tokens": "-3"},
                  {"project": agent.project.slug, "agent": str(elsewhere.pk)}):
        response = alice_client.post(reverse("agents:export_sessions"), {"format": "native", **query})
        assert response.status_code == 200, query
        field = "agent" if "agent" in query else next(iter(query))
        assert not response.streaming and f"{field}:" in response.content.decode()
    assert models.ExportRecord.objects.count() == 0


def test_the_export_log_shows_strategy_parameters_as_json(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    alice_client.post(reverse("agents:export_session", args=[session.pk]),
                     {"format": "native", "strategy": "langchain_last",
                      "params": 'max_tokens=1000, start_on=["human", "ai"], include_system=false'}).getvalue()
    page = alice_client.get(reverse("agents:export_log")).content.decode()
    params = models.ExportRecord.objects.get().params
    assert params["include_system"] is False
    shown = json.dumps(params, ensure_ascii=False, sort_keys=True).replace('"', "&quot;")
    assert shown in page
    assert "False" not in page and "&#x27;max_tokens&#x27;" not in page


def test_export_errors_speak_of_the_page_not_of_command_line_options(alice_client: Any, agent: models.Agent) -> None:
    session = store(agent, "a", CHAT)
    response = alice_client.post(reverse("agents:export_session", args=[session.pk]),
                                {"format": "native", "strategy": "buffered", "params": "garbage"})
    assert response.status_code == 200 and not response.streaming
    text = response.content.decode()
    assert "params: &#x27;garbage&#x27;: expected key=value" in text and "--set" not in text


def test_it_downloads_only_on_a_post_with_csrf_and_a_get_shows_the_form(agent: models.Agent, alice: User) -> None:
    from django.test import Client

    session = store(agent, "a", CHAT, title="Kept")
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = reverse("agents:export_session", args=[session.pk])
    # A link (GET) to an export downloads and records nothing: it shows the export form, filled in from the link.
    page = client.get(url, {"format": "openai", "strategy": "buffered", "params": "buffer_size=1"})
    assert page.status_code == 200 and not page.streaming
    text = page.content.decode()
    assert '<form method="post"' in text and 'name="csrfmiddlewaretoken"' in text
    assert '<option value="openai" selected>' in text and 'value="buffer_size=1"' in text
    assert "1 session, 2 messages" in text
    assert models.ExportRecord.objects.count() == 0
    # A POST without the CSRF token is refused; with it, the file comes and the export is recorded.
    assert client.post(url, {"format": "native"}).status_code == 403
    assert models.ExportRecord.objects.count() == 0
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else client.cookies["csrftoken"].value
    response = client.post(url, {"format": "native", "csrfmiddlewaretoken": token})
    assert response.status_code == 200 and response.streaming
    assert json.loads(body(response))["sessions"][0]["external_id"] == "a"
    assert models.ExportRecord.objects.count() == 1


def test_a_get_of_the_list_export_shows_its_filters_and_what_is_wrong(alice_client: Any, agent: models.Agent) -> None:
    store(agent, "broken", BROKEN)
    page = alice_client.get(reverse("agents:export_sessions"), {"violations": "on", "format": "native"})
    text = page.content.decode()
    assert page.status_code == 200 and '<input type="hidden" name="violations" value="on">' in text
    assert "sessions matching violations=on: 1 session, 2 messages" in text
    wrong = alice_client.get(reverse("agents:export_sessions"), {"format": "yaml"})
    assert wrong.status_code == 200 and "unknown format" in wrong.content.decode()
    assert models.ExportRecord.objects.count() == 0


def test_it_refuses_a_jsonl_export_that_would_skip_every_conversation(alice_client: Any, agent: models.Agent) -> None:
    first = store(agent, "b1", BROKEN, title="First broken")
    store(agent, "b2", BROKEN, title="Second broken")
    response = alice_client.post(reverse("agents:export_sessions"), {"format": "openai_jsonl", "on_invalid": "skip"})
    assert response.status_code == 200 and not response.streaming
    text = response.content.decode()
    assert "nothing to export: all 2 conversations break the protocol" in text
    assert f"session {first.pk} (First broken)" in text
    one = alice_client.post(reverse("agents:export_session", args=[first.pk]), {"format": "openai_jsonl"})
    assert one.status_code == 200 and not one.streaming
    assert "nothing to export: the conversation breaks the protocol" in one.content.decode()
    assert models.ExportRecord.objects.count() == 0
    # A strategy that keeps the protocol gives a line per conversation.
    trimmed = alice_client.post(
        reverse("agents:export_sessions"),
        {"format": "openai_jsonl", "strategy": "safe_token_budget", "params": "max_tokens=1000"},
    )
    assert trimmed.status_code == 200 and len(body(trimmed).strip().splitlines()) == 2


def test_it_reads_a_long_params_field_in_linear_time(alice_client: Any, agent: models.Agent) -> None:
    # Issue 9: a 60 KB params= took 20 s to read. Quadratic, this 1 MB field would take hours; linear, a moment.
    session = store(agent, "a", CHAT)
    response = alice_client.post(reverse("agents:export_session", args=[session.pk]),
                                 {"format": "native", "strategy": "buffered",
                                  "params": "buffer_size=1" + ", " * 500_000 + "pin_system=false"})
    assert response.status_code == 200
    assert json.loads(body(response))["sessions"][0]["metadata"]["trimmed"]["params"] == {
        "buffer_size": 1, "pin_system": False}
