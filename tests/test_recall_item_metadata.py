"""A recalled item keeps what the library said of it beside its text (issue 26: "items (id, content, score,
metadata)"): from AutoGen's memory query events, from live retrieval spans (a JSON object kept as one, anything else
kept as text), from the write API; shown by the recalls API and carried by a native export and back."""
from __future__ import annotations

import io
import json
from pathlib import Path

from agents import models
from agents.projects import keys as projects_keys
from agents.transfer import exports, imports
from tests.otlp_memory_spans import post, request, span
from tests.paths import MEMORY_SAMPLES

AUTOGEN = MEMORY_SAMPLES / "autogen"


def item_metadata(project: str) -> list[list[dict[str, object]]]:
    recalls = models.Recall.objects.filter(session__agent__project__slug=project).order_by("session_id", "seq", "id")
    return [[i.metadata for i in r.items.order_by("rank")] for r in recalls]


def test_autogens_memory_contents_keep_their_mime_type_and_metadata_through_import_and_native_export(
        db, tmp_path: Path) -> None:
    imports.import_file(AUTOGEN / "task_result_run2.json", project="ag")
    written = json.loads((AUTOGEN / "task_result_run2.json").read_text())
    event = next(m for m in written["messages"] if m["type"] == "MemoryQueryEvent")
    assert item_metadata("ag") == [[{"mime_type": c["mime_type"], "metadata": c["metadata"]}
                                    for c in event["content"]]]

    session = models.Session.objects.get(agent__project__slug="ag")
    out = io.StringIO()
    exports.export_to(exports.export_plan(sessions=models.Session.objects.filter(pk=session.pk), format="native",
                                          scope="t"), out)
    path = tmp_path / "export.json"
    path.write_text(out.getvalue())
    imports.import_file(path, project="copy")
    assert item_metadata("copy") == item_metadata("ag")


def test_a_retrievals_document_metadata_is_kept_as_sent_and_shown_by_the_api(client, alice, db) -> None:
    project = models.Project.objects.create(name="Live", slug="live")
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    key = projects_keys.api_key_create(project=project, name="agent").key
    documents = json.dumps([
        {"id": "doc-1", "score": 0.7, "content": "Trains to Rome leave hourly",
         "metadata": {"source": "timetable.pdf", "page": 3}},
        {"id": "doc-2", "score": 0.5, "content": "Rome has two airports", "metadata": "not <json>"},
        {"id": "doc-3", "score": 0.2, "content": "Buses are slower"}])
    post(client, key, request(
        span("turn", "invoke_agent", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}),
        span("r1", "retrieval kb", {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "kb",
                                    "gen_ai.retrieval.query.text": "rome trains",
                                    "gen_ai.retrieval.documents": documents}, parent="turn", start=1),
        span("c1", "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                   "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                                       {"type": "text", "content": "Context: Trains to Rome leave hourly."}]}])},
             parent="turn", start=2)))
    assert item_metadata("live") == [[{"source": "timetable.pdf", "page": 3}, {"metadata_text": "not <json>"}, {}]]

    session = models.Session.objects.get(agent__project=project)
    client.force_login(alice)
    answer = client.get(f"/api/sessions/{session.pk}/recalls/")
    assert answer.status_code == 200
    [recall] = answer.json()["recalls"]
    assert [(i["rank"], i["metadata"]) for i in recall["items"]] == [
        (1, {"source": "timetable.pdf", "page": 3}), (2, {"metadata_text": "not <json>"}), (3, {})]


def test_the_write_api_stores_an_items_metadata(client, project, agent) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {projects_keys.api_key_create(project=project, name='w').key}"}
    session = agent.sessions.create(external_id="s1", title="t")
    models.Message.objects.create(session=session, seq=0, role="user", content="Context: Alice is vegan")
    body = {"id": "read-1", "session": session.pk, "seq": 0, "query": "diet",
            "items": [{"text": "Alice is vegan", "score": 0.9, "metadata": {"categories": ["food"]}},
                      {"text": "Alice runs"}]}
    answer = client.post("/api/memory/writes/recalls/", data=json.dumps(body), content_type="application/json", **auth)
    assert answer.status_code == 201, answer.content
    [recall] = models.Recall.objects.filter(session=session)
    assert [i.metadata for i in recall.items.order_by("rank")] == [{"categories": ["food"]}, {}]
    refused = client.post("/api/memory/writes/recalls/", content_type="application/json", **auth,
                          data=json.dumps({**body, "id": "read-2", "items": [{"text": "x", "metadata": "loose"}]}))
    assert refused.status_code == 400
    assert "items.0.metadata" in refused.content.decode() or "items[0].metadata" in refused.content.decode()
    assert models.Recall.objects.filter(session=session).count() == 1
