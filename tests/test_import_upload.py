from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents import models
from agents.transfer.uploads import upload_dir
from tests.paths import MEMORY_SAMPLES, SAMPLES

WEATHER: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
    {"role": "assistant", "content": "18°C in Paris."},
]


def counts() -> tuple[int, int, int, int]:
    return (models.Agent.objects.count(), models.Session.objects.count(), models.Message.objects.count(),
            models.ToolCall.objects.count())


def upload(name: str, data: Any) -> SimpleUploadedFile:
    raw = data if isinstance(data, bytes) else (data if isinstance(data, str) else json.dumps(data)).encode()
    return SimpleUploadedFile(name, raw, content_type="application/json")


def preview(client: Any, project: models.Project, **fields: Any) -> Any:
    data = {"project": project.slug, "agent": "", "new_agent": "", "format": "", "text": ""} | fields
    return client.post(reverse("agents:import_upload"), data)


def confirm_fields(html: str) -> dict[str, str]:
    form = html[html.index('action="/import/confirm/"'):]
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', form))


def test_it_shows_the_upload_form(alice_client: Any, project: models.Project) -> None:
    response = alice_client.get(reverse("agents:import_upload"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'enctype="multipart/form-data"' in body and "csrfmiddlewaretoken" in body
    assert project.name in body


def test_it_previews_then_imports_on_confirm(alice_client: Any, project: models.Project) -> None:
    before = counts()
    response = preview(alice_client, project, new_agent="Weather bot", file=upload("weather.json", WEATHER))
    assert response.status_code == 200
    body = response.content.decode()
    assert "openai" in body and "weather.json" in body
    assert counts() == before  # nothing saved by the preview
    fields = confirm_fields(body)
    assert fields["new_agent"] == "Weather bot" and len(fields["token"]) >= 20
    done = alice_client.post(reverse("agents:import_confirm"), fields)
    assert done.status_code == 200
    session = models.Session.objects.get(agent__name="Weather bot")
    assert session.message_count == 4 and session.agent.project == project
    assert session.get_absolute_url() in done.content.decode()
    # The upload is gone once imported: confirming twice imports nothing more.
    again = alice_client.post(reverse("agents:import_confirm"), fields)
    assert again.status_code == 200 and "upload the file again" in again.content.decode()
    assert models.Session.objects.count() == before[1] + 1


def test_it_imports_pasted_json(alice_client: Any, project: models.Project) -> None:
    response = preview(alice_client, project, new_agent="paste", text=json.dumps(WEATHER))
    assert response.status_code == 200
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(response.content.decode()))
    assert done.status_code == 200
    assert models.Session.objects.filter(agent__slug="paste").count() == 1


def test_it_previews_violations_and_what_is_already_imported(alice_client: Any, project: models.Project) -> None:
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
    first = preview(alice_client, project, new_agent="bot", text=json.dumps(orphan))
    assert "orphan_tool_result" in first.content.decode()
    alice_client.post(reverse("agents:import_confirm"), confirm_fields(first.content.decode()))
    second = preview(alice_client, project, new_agent="bot", text=json.dumps(orphan))
    assert "already imported" in second.content.decode()


BAD_INPUTS = [
    ("malformed.json", b'[{"role": "user", "content": "hi"'),
    ("shape.json", b'{"messages": 42}'),
    ("garbage.bin", bytes(range(256)) * 64),
    ("deep.json", b"[" * 50_000 + b"]" * 50_000),
    ("empty.json", b""),
    ("no-call-id.json", json.dumps([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]).encode()),
    ("surrogate.json", b'[{"role": "user", "content": "half \\ud800 a character"}]'),
    ("long-number.json", b'[{"role": "user", "content": "a", "n": ' + b"9" * 4400 + b"}]"),
    ("utf32.json", json.dumps([{"role": "user", "content": "a"}]).encode("utf-32")),
]


@pytest.mark.parametrize(("name", "raw"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_it_answers_bad_uploads_with_a_clear_error(alice_client: Any, project: models.Project, name: str,
                                                    raw: bytes) -> None:
    before = counts()
    response = preview(alice_client, project, new_agent="bot", file=upload(name, raw))
    assert response.status_code == 200
    body = response.content.decode()
    assert (name in body or "empty" in body) and "form-error" in body and "Traceback" not in body
    assert counts() == before


def test_it_imports_a_tool_result_without_its_call_and_flags_it(alice_client: Any, project: models.Project) -> None:
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "gone", "content": "x"}]
    response = preview(alice_client, project, new_agent="bot", file=upload("orphan.json", orphan))
    assert response.status_code == 200
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(response.content.decode()))
    assert done.status_code == 200
    session = models.Session.objects.get(agent__slug="bot")
    assert session.violation_count >= 1 and session.message_count == 2


def test_it_imports_a_repeated_message_id_once_and_says_so(alice_client: Any, project: models.Project) -> None:
    # The same message id twice: the second is reported as not added, never a 500 from the unique index.
    msgs = [dict(WEATHER[0], external_id="same"), dict(WEATHER[0], external_id="same")]
    doc = {"format": "memoryviz", "version": 1, "sessions": [{"external_id": "s", "messages": msgs}]}
    response = preview(alice_client, project, new_agent="bot", file=upload("dup.json", doc))
    assert response.status_code == 200
    assert "1 message(s) not added" in response.content.decode()
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(response.content.decode()))
    assert done.status_code == 200
    assert "1 message(s) not added" in done.content.decode()
    assert models.Message.objects.filter(session__external_id="s").count() == 1


def test_it_refuses_a_huge_paste_without_saving(alice_client: Any, project: models.Project) -> None:
    before = counts()
    response = preview(alice_client, project, new_agent="bot", text="[" + " " * (6 * 1024 * 1024) + "]")
    assert response.status_code == 200
    assert counts() == before


def test_it_needs_a_file_or_text(alice_client: Any, project: models.Project) -> None:
    response = preview(alice_client, project, new_agent="bot")
    assert response.status_code == 200
    assert "Choose a file or paste JSON" in response.content.decode()


def test_it_forbids_viewers(client: Any, project: models.Project) -> None:
    viewer = User.objects.create_user("victor", password="pw-victor-123")
    models.Membership.objects.create(project=project, user=viewer, role=models.Membership.Level.VIEWER)
    client.force_login(viewer)
    assert client.get(reverse("agents:import_upload")).status_code == 403
    before = counts()
    response = preview(client, project, new_agent="bot", text=json.dumps(WEATHER))
    assert response.status_code == 403
    assert counts() == before


def test_it_forbids_a_viewer_of_one_project_importing_there(client: Any, project: models.Project) -> None:
    user = User.objects.create_user("mixed", password="pw-mixed-123")
    other = models.Project.objects.create(name="Beta", slug="beta")
    models.Membership.objects.create(project=project, user=user, role=models.Membership.Level.VIEWER)
    models.Membership.objects.create(project=other, user=user, role=models.Membership.Level.EDITOR)
    client.force_login(user)
    assert client.get(reverse("agents:import_upload")).status_code == 200
    assert preview(client, project, new_agent="bot", text=json.dumps(WEATHER)).status_code == 403
    assert preview(client, other, new_agent="bot", text=json.dumps(WEATHER)).status_code == 200


def test_it_does_not_let_another_user_confirm_an_upload(
    alice_client: Any, client: Any, project: models.Project
) -> None:
    response = preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER))
    fields = confirm_fields(response.content.decode())
    mallory = User.objects.create_user("mallory", password="pw-mallory-123")
    models.Membership.objects.create(project=project, user=mallory, role=models.Membership.Level.EDITOR)
    from django.test import Client

    other = Client()
    other.force_login(mallory)
    assert other.post(reverse("agents:import_confirm"), fields).status_code == 200
    assert models.Session.objects.count() == 0
    (upload_dir() / f"{project.memberships.get(user__username='alice').user.pk}-{fields['token']}.upload").unlink()


def test_it_refuses_an_agent_of_another_project(alice_client: Any, project: models.Project) -> None:
    other = models.Project.objects.create(name="Beta", slug="beta")
    models.Membership.objects.create(project=other, user=project.memberships.get().user, role="admin")
    foreign = models.Agent.objects.create(project=other, name="Other", slug="other")
    response = preview(alice_client, project, agent=str(foreign.pk), text=json.dumps(WEATHER))
    assert response.status_code == 200
    assert "is not an agent of" in response.content.decode()


def test_it_requires_login(client: Any) -> None:
    response = client.get(reverse("agents:import_upload"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_refuses_a_file_over_the_upload_limit(alice_client: Any, project: models.Project, settings: Any) -> None:
    settings.MEMORYVIZ_MAX_UPLOAD_BYTES = 1024 * 1024
    big = json.dumps([{"role": "user", "content": "x" * 1000}] * 1500).encode()  # about 1.5 MB
    before = counts()
    response = preview(alice_client, project, new_agent="bot", file=upload("huge.json", big))
    assert response.status_code == 200
    assert "the limit is 1,048,576" in response.content.decode()
    assert counts() == before


def test_it_imports_a_big_upload_streamed_from_disk(alice_client: Any, project: models.Project) -> None:
    # Bigger than FILE_UPLOAD_MAX_MEMORY_SIZE, so Django spools it to a temporary file first.
    msgs = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "y" * 300} for i in range(8000)
    ]
    response = preview(alice_client, project, new_agent="bulk", file=upload("big.json", msgs))
    assert response.status_code == 200
    assert "8,000" in response.content.decode()
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(response.content.decode()))
    assert done.status_code == 200
    assert models.Session.objects.get(agent__slug="bulk").message_count == 8000


def test_it_keeps_uploads_in_the_configured_folder(alice_client: Any, project: models.Project, settings: Any,
                                                   tmp_path: Any) -> None:
    settings.MEMORYVIZ_UPLOAD_DIR = str(tmp_path / "shared-uploads")
    response = preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER))
    token = confirm_fields(response.content.decode())["token"]
    assert [p.name.endswith(f"-{token}.upload") for p in (tmp_path / "shared-uploads").iterdir()] == [True]
    alice_client.post(reverse("agents:import_confirm"), confirm_fields(response.content.decode()))
    assert list((tmp_path / "shared-uploads").iterdir()) == []


def section(html: str, label: str) -> str | None:
    """The text of the page section with this aria-label, or None when there is none."""
    match = re.search(rf'<section[^>]*aria-label="{label}"[^>]*>(.*?)</section>', html, re.S)
    return match.group(1) if match else None


def test_it_lists_warnings_apart_from_what_will_not_be_imported(alice_client: Any, project: models.Project) -> None:
    orphan = [{"role": "tool", "tool_call_id": "zz", "content": "x"}, {"role": "user", "content": "hi"}]
    response = preview(alice_client, project, new_agent="bot", text=json.dumps(orphan))
    html = response.content.decode()
    warnings = section(html, "Warnings")
    assert warnings is not None and "imported and flagged" in warnings
    assert section(html, "Will not be imported") is None and "Will not be imported" not in html
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(html)).content.decode()
    assert "imported and flagged" in (section(done, "Warnings") or "")
    assert section(done, "Not imported") is None and "Not imported" not in done


def test_it_lists_dropped_messages_under_will_not_be_imported(alice_client: Any, project: models.Project) -> None:
    msgs = [dict(WEATHER[0], external_id="same"), dict(WEATHER[0], external_id="same")]
    doc = {"format": "memoryviz", "version": 1, "sessions": [{"external_id": "s", "messages": msgs}]}
    html = preview(alice_client, project, new_agent="bot", file=upload("dup.json", doc)).content.decode()
    assert "1 message(s) not added" in (section(html, "Will not be imported") or "")
    assert section(html, "Warnings") is None
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(html)).content.decode()
    assert "1 message(s) not added" in (section(done, "Not imported") or "")


def test_it_warns_that_timestamps_without_a_zone_are_read_as_utc(alice_client: Any, project: models.Project) -> None:
    raw = (SAMPLES / "agentscope" / "travel.json").read_bytes()
    html = preview(alice_client, project, new_agent="bot", file=upload("scope.json", raw)).content.decode()
    assert "read as UTC" in (section(html, "Warnings") or "")
    assert "read as UTC" not in (section(html, "Will not be imported") or "")


def detected_format(html: str) -> str:
    match = re.search(r"<dt>Format</dt><dd[^>]*>([^<]*)<", html)
    assert match, "the preview names the format"
    return match.group(1).strip()


def test_it_detects_an_uploaded_jsonl_file_as_the_command_line_does(alice_client: Any,
                                                                    project: models.Project) -> None:
    raw = (SAMPLES / "openai_jsonl" / "travel.jsonl").read_bytes()
    response = preview(alice_client, project, new_agent="bot", file=upload("travel.jsonl", raw))
    assert response.status_code == 200
    html = response.content.decode()
    assert detected_format(html) == "openai_jsonl"
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(html))
    assert done.status_code == 200 and detected_format(done.content.decode()) == "openai_jsonl"
    assert models.Session.objects.get(agent__slug="bot").source_format == "openai_jsonl"


def test_it_reads_several_pasted_json_lines_as_jsonl(alice_client: Any, project: models.Project) -> None:
    rows = [json.dumps({"messages": WEATHER}), json.dumps({"messages": WEATHER[:1]})]
    for newline in ("\n", "\r\n"):  # a browser sends a textarea's lines with CRLF
        html = preview(alice_client, project, new_agent="bot", text=newline.join(rows) + newline).content.decode()
        assert detected_format(html) == "openai_jsonl"
        assert "<dt>Conversations</dt><dd>2</dd>" in html


def test_the_preview_says_the_format_was_detected_and_offers_another(alice_client: Any,
                                                                    project: models.Project) -> None:
    one_line = json.dumps({"messages": WEATHER})
    html = preview(alice_client, project, new_agent="bot", text=one_line).content.decode()
    assert detected_format(html) == "openai" and "detected" in html
    # The preview offers the format select again, for the same upload (its token), without pasting again.
    form = html[html.index('id="reformat"'):]
    form = form[:form.index("</form>")]
    assert 'name="format"' in form and 'value="openai_jsonl"' in form
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', form))
    again = alice_client.post(reverse("agents:import_upload"), fields | {"format": "openai_jsonl"})
    assert again.status_code == 200
    html = again.content.decode()
    assert detected_format(html) == "openai_jsonl" and "chosen" in html
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(html))
    assert done.status_code == 200
    assert models.Session.objects.get(agent__slug="bot").source_format == "openai_jsonl"


def test_it_refuses_a_file_and_pasted_json_together(alice_client: Any, project: models.Project) -> None:
    before, stored = counts(), set(upload_dir().glob("*.upload"))
    response = preview(alice_client, project, new_agent="bot", file=upload("weather.json", WEATHER),
                       text=json.dumps(WEATHER))
    assert response.status_code == 200
    assert "Choose one: a file or pasted JSON, not both." in response.content.decode()
    assert counts() == before
    assert set(upload_dir().glob("*.upload")) <= stored  # nothing kept for a confirm


def test_its_errors_speak_of_the_page_not_of_command_line_options(alice_client: Any,
                                                                  project: models.Project) -> None:
    response = preview(alice_client, project, new_agent="bot", text=json.dumps([{"shape": "unknown"}]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "unknown format" in html and "--format" not in html and "Format list" in html


def test_the_report_names_an_already_imported_session_by_its_title(alice_client: Any,
                                                                   project: models.Project) -> None:
    for _ in range(2):
        html = preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER)).content.decode()
        done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(html)).content.decode()
    session = models.Session.objects.get(agent__slug="bot")
    assert session.title == "Weather in Paris?" and "already imported" in done
    link = re.search(rf'<a href="{session.get_absolute_url()}">([^<]*)</a>', done)
    assert link and link.group(1) == "Weather in Paris?"


def agent_options(html: str) -> list[str]:
    select = re.search(r'<select name="agent"[^>]*>(.*?)</select>', html, re.S)
    assert select, "the page has the agent select"
    return [label.strip() for label in re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1))]


def test_the_agent_select_offers_only_the_chosen_projects_agents(alice_client: Any, project: models.Project) -> None:
    other = models.Project.objects.create(name="Beta", slug="beta")
    models.Membership.objects.create(project=other, user=project.memberships.get().user, role="admin")
    models.Agent.objects.create(project=project, name="Mine", slug="mine")
    models.Agent.objects.create(project=other, name="Theirs", slug="theirs")
    alpha = alice_client.get(reverse("agents:import_upload"), {"project": "alpha"}).content.decode()
    assert agent_options(alpha)[1:] == ["Mine"]
    beta = alice_client.get(reverse("agents:import_upload"), {"project": "beta"}).content.decode()
    assert agent_options(beta)[1:] == ["Theirs"]
    # Without a project named, the select shows the first project (Alpha) and so its agents.
    assert agent_options(alice_client.get(reverse("agents:import_upload")).content.decode())[1:] == ["Mine"]
    # A form sent back with errors keeps offering the agents of the project it names.
    bad = preview(alice_client, other, new_agent="x", text="").content.decode()
    assert agent_options(bad)[1:] == ["Theirs"]
    # With htmx, changing the project fetches this page for that project and swaps in its agent select.
    around_select = re.search(r'<div hx-get=[^>]*>\s*<select name="project"', alpha).group(0)
    assert (
        f'hx-get="{reverse("agents:import_upload")}"' in around_select and 'hx-include="#id_project"' in around_select
    )
    assert 'hx-select="#id_agent"' in around_select and 'hx-target="#id_agent"' in around_select


def test_the_paste_box_is_big_enough_to_read(alice_client: Any, project: models.Project) -> None:
    html = alice_client.get(reverse("agents:import_upload")).content.decode()
    textarea = re.search(r'<textarea[^>]*name="text"[^>]*>', html).group(0)
    assert int(re.search(r'rows="(\d+)"', textarea).group(1)) >= 16


def test_it_says_that_a_file_without_a_message_imports_nothing(alice_client: Any, project: models.Project) -> None:
    before = counts()
    response = preview(alice_client, project, new_agent="bot", file=upload("empty.json", "[]"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "empty.json: has no message, so there is nothing to import." in body and "empty.json: empty.json" not in body
    assert "Import 1 session" not in body
    assert counts() == before


def test_it_limits_how_many_uploads_a_user_keeps_waiting(alice_client: Any, client: Any, project: models.Project,
                                                         settings: Any) -> None:
    settings.MEMORYVIZ_UPLOADS_PER_USER = 2
    for _ in range(2):
        assert preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER)).status_code == 200
    refused = preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER))
    assert refused.status_code == 200
    assert "Uploads waiting for your confirmation: 2, the most one user may keep" in refused.content.decode()
    assert len(list(upload_dir().glob("*.upload"))) == 2
    # The quota is the user's: another editor still uploads.
    bob = User.objects.create_user("bob2", password="pw-bob2-123")
    models.Membership.objects.create(project=project, user=bob, role=models.Membership.Level.EDITOR)
    client.force_login(bob)
    assert preview(client, project, new_agent="bot", text=json.dumps(WEATHER)).status_code == 200


def test_it_limits_the_bytes_a_user_keeps_waiting(alice_client: Any, project: models.Project, settings: Any) -> None:
    text = json.dumps(WEATHER)
    settings.MEMORYVIZ_UPLOAD_BYTES_PER_USER = len(text.encode()) * 3 // 2
    assert preview(alice_client, project, new_agent="bot", text=text).status_code == 200
    refused = preview(alice_client, project, new_agent="bot", text=text)
    assert refused.status_code == 200 and "one user may keep" in refused.content.decode()
    assert len(list(upload_dir().glob("*.upload"))) == 1


def test_it_removes_uploads_left_unconfirmed_past_the_configured_time(alice_client: Any, project: models.Project,
                                                                      settings: Any) -> None:
    import os
    import time

    settings.MEMORYVIZ_UPLOAD_TTL_SECONDS = 600
    first = confirm_fields(preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER)).content.decode())
    [waiting] = upload_dir().glob("*.upload")
    old = time.time() - 601
    os.utime(waiting, (old, old))
    preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER[:1]))  # any upload purges
    assert not waiting.exists()
    expired = alice_client.post(reverse("agents:import_confirm"), first)
    assert expired.status_code == 200 and "expired" in expired.content.decode()
    assert models.Session.objects.count() == 0


def test_the_preview_names_agents_by_their_names_not_their_slugs(alice_client: Any, project: models.Project) -> None:
    existing = models.Agent.objects.create(project=project, name="Travel Planner (EU)", slug="travel-eu")
    html = preview(alice_client, project, agent=str(existing.pk), text=json.dumps(WEATHER)).content.decode()
    cells = re.findall(r"</td>\s*<td>([^<]*)</td>\s*<td class=\"num\">", html)
    assert cells == ["Travel Planner (EU)"], cells
    # A new agent: the name typed, not the slug it will get.
    html = preview(alice_client, project, new_agent="Météo Bot", text=json.dumps(WEATHER)).content.decode()
    assert re.findall(r"</td>\s*<td>([^<]*)</td>\s*<td class=\"num\">", html) == ["Météo Bot"]


def test_reading_an_upload_as_a_wrong_format_keeps_it_and_the_previous_preview(alice_client: Any,
                                                                              project: models.Project) -> None:
    html = preview(alice_client, project, new_agent="bot", text=json.dumps(WEATHER)).content.decode()
    form = html[html.index('id="reformat"'):]
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', form[:form.index("</form>")]))
    wrong = alice_client.post(reverse("agents:import_upload"), fields | {"format": "anthropic"})
    assert wrong.status_code == 200
    text = wrong.content.decode()
    assert "Read as anthropic: pasted JSON: messages[2].role: expected user or assistant" in text
    assert "The preview below is still the one read as openai (detected)." in text
    assert detected_format(text) == "openai"
    # The upload is still there: the preview's Import button imports it, as read before.
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(text))
    assert done.status_code == 200
    assert models.Session.objects.get(agent__slug="bot").source_format == "openai"


# --- the memory layers ------------------------------------------------------------------------------------------

MEMORY_MODELS = (models.MemoryStore, models.MemoryRecord, models.RecordVersion, models.Recall, models.RecallItem,
                 models.Snapshot)


def memory_counts() -> list[int]:
    return [m.objects.count() for m in MEMORY_MODELS]


def sample(path: Any, name: str | None = None) -> SimpleUploadedFile:
    # What a browser sends for a file it has no type for (a .db, an .af): bytes, not text.
    return SimpleUploadedFile(name or path.name, path.read_bytes(), content_type="application/octet-stream")


def memory_section(html: str) -> str:
    """The memory layers' part of a preview, report or job page, as text with its tags and spaces folded."""
    found = re.search(r'<section class="import-memory"[^>]*>(.*?)</section>', html, re.S)
    assert found, "no memory section"
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def confirm_button(html: str) -> str:
    return " ".join(re.search(r'<button type="submit" class="button primary">([^<]*)</button>', html).group(1).split())


def test_it_previews_a_mem0_database_upload_and_imports_its_memory(alice_client: Any, project: models.Project) -> None:
    before = counts(), memory_counts()
    response = preview(alice_client, project, file=sample(MEMORY_SAMPLES / "mem0" / "history.db"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "form-error" not in body and detected_format(body) == "mem0"
    shown = memory_section(body)
    assert "What the import will store beside the sessions (nothing is stored yet" in shown
    assert "Memory stores 1 Records 4 Versions 6 Recalls 0 (0 items) Snapshots 0" in shown
    assert "mem0 records facts kept across sessions new" in shown
    assert confirm_button(body) == "Import 1 session and 1 memory store"
    assert (counts(), memory_counts()) == before  # the preview stores nothing
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(body))
    assert done.status_code == 200
    report = memory_section(done.content.decode())
    assert "Stored with the sessions:" in report and "Records added 4 Versions added 6" in report
    assert "mem0 records facts kept across sessions new" in report
    store = models.MemoryStore.objects.get()
    assert (store.project, store.kind, store.source_format, store.record_count, store.version_count,
            store.state) == (project, "records", "mem0", 4, 6, "ready")


def test_it_imports_a_letta_agent_file_with_its_blocks(alice_client: Any, project: models.Project) -> None:
    response = preview(alice_client, project, file=sample(MEMORY_SAMPLES / "letta" / "memgpt_agent_with_convo.v1.af"))
    body = response.content.decode()
    assert response.status_code == 200 and detected_format(body) == "letta_af"
    shown = memory_section(body)
    assert "core_memory blocks labelled text with a character limit new" in shown
    assert "Snapshots 1" in shown
    assert confirm_button(body) == "Import 1 session and 1 memory store"
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(body))
    assert done.status_code == 200
    assert "core_memory blocks" in memory_section(done.content.decode())
    store = models.MemoryStore.objects.get()
    assert (store.kind, store.agent.name, store.record_count, store.version_count) == ("blocks", "memgpt_agent", 2, 7)
    assert set(store.records.values_list("external_id", "char_limit")) == {("human", 5000), ("persona", 5000)}
    assert models.Snapshot.objects.get().agent == store.agent
    assert models.Session.objects.get(agent=store.agent).message_count == 91


def test_a_file_of_memory_alone_says_what_it_imports_and_then_that_it_joins(alice_client: Any,
                                                                           project: models.Project) -> None:
    component = MEMORY_SAMPLES / "autogen" / "list_memory_component.json"
    body = preview(alice_client, project, file=sample(component)).content.decode()
    assert confirm_button(body) == "Import 1 memory store"
    assert "already imported" not in body  # a file without sessions is not "nothing new"
    assert "user_prefs list" in memory_section(body)
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(body))
    assert done.status_code == 200 and "Records added 2" in memory_section(done.content.decode())
    # Its store is the project's (the file names no agent): no empty agent named after the format either.
    assert not models.Agent.objects.exists()
    again = preview(alice_client, project, file=sample(component)).content.decode()
    assert "user_prefs list a list sent whole joined adds to the project's store" in memory_section(again)
    assert confirm_button(again) == "Import into 1 memory store"
    assert models.MemoryStore.objects.count() == 1


def test_the_report_says_plainly_which_recalled_items_match_no_record(alice_client: Any,
                                                                     project: models.Project) -> None:
    # AutoGen's save_state carries ListMemory's memory message twice, and names no store it was read from.
    state = MEMORY_SAMPLES / "autogen" / "assistant_state_after_run2.json"
    body = preview(alice_client, project, new_agent="assistant", file=sample(state)).content.decode()
    assert "Recalls 2 (4 items)" in memory_section(body)
    assert "matched to the records of their store when the file is imported" in memory_section(body)
    done = alice_client.post(reverse("agents:import_confirm"), confirm_fields(body)).content.decode()
    assert ("4 of the 4 recalled items match no record: they are kept as sent, marked unmatched"
            in memory_section(done))
    assert models.RecallItem.objects.filter(record__isnull=True).count() == 4


def test_a_memory_store_named_with_markup_is_shown_as_text(alice_client: Any, project: models.Project) -> None:
    component = json.loads((MEMORY_SAMPLES / "autogen" / "list_memory_component.json").read_text())
    component["config"]["name"] = "<img src=x onerror=alert(1)>"
    body = preview(alice_client, project, file=upload("component.json", component)).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in body


def test_the_file_input_takes_any_file_and_names_the_memory_files(alice_client: Any, project: models.Project) -> None:
    html = alice_client.get(reverse("agents:import_upload")).content.decode()
    file_input = re.search(r'<input type="file"[^>]*>', html).group(0)
    assert "accept=" not in file_input  # detection reads the content: a .db, .sqlite3 or .af is as welcome
    assert "a Letta .af or a SQLite database" in html and "history.db" in html


def test_it_refuses_a_database_over_the_upload_limit(alice_client: Any, project: models.Project,
                                                     settings: Any) -> None:
    settings.MEMORYVIZ_MAX_UPLOAD_BYTES = 10_000
    before = counts(), memory_counts()
    response = preview(alice_client, project, file=sample(MEMORY_SAMPLES / "mem0" / "history.db"))
    assert "history.db: the file is 20,480 bytes; the limit is 10,000." in response.content.decode()
    assert (counts(), memory_counts()) == before
