"""Memory findings in the API and the session list: GET /api/sessions/<id>/memory-findings/ and
/api/memory/stores/<id>/findings/ (each finding where it is, with its advice; counts by kind; ``kind`` filters; paged
like the other lists; scoped to the caller's projects), and the list's "has memory findings" filter (page and API).
On files the libraries wrote (AgentScope's third turn with mem0's records: a stale recall and repeated injections),
and on a mem0 file that stores the same fact twice and rewrites one unchanged, as mem0 1.x does with an eager model."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.urls import reverse

from agents import models
from agents.ledger import findings
from agents.projects import keys
from agents.transfer import imports
from tests.memory_findings import STALE_RECORD, T0, import_turn3, mem0_duplicates


@pytest.fixture
def turn3(project, tmp_path) -> models.Session:
    return import_turn3(project, tmp_path / "mine")


@pytest.fixture
def theirs(other_project, tmp_path) -> models.Session:
    """The same files in another project, which alice is not in."""
    return import_turn3(other_project, tmp_path / "theirs")


def get(client: Any, url: str, **headers: Any) -> Any:
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.content[:500])
    return response.json()


def session_url(session: models.Session, query: str = "") -> str:
    return f"/api/sessions/{session.pk}/memory-findings/{query}"


def store_url(store: models.MemoryStore, query: str = "") -> str:
    return f"/api/memory/stores/{store.pk}/findings/{query}"


# --- a session's findings --------------------------------------------------------------------------------------------


def test_it_lists_a_sessions_findings_on_their_messages_with_what_to_do(alice_client, turn3) -> None:
    data = get(alice_client, session_url(turn3))
    assert (data["session"], data["count"], data["next"], data["previous"]) == (turn3.pk, 4, None, None)
    assert data["counts"] == {"repeated_injection": 3, "stale_recall": 1}
    assert [(f["kind"], f["seq"]) for f in data["results"]] == [
        ("repeated_injection", 8), ("stale_recall", 13), ("repeated_injection", 13), ("repeated_injection", 14)]
    stale = data["results"][1]
    record = models.MemoryRecord.objects.get(store__project=turn3.agent.project, external_id=STALE_RECORD)
    recall = models.Recall.objects.get(session=turn3, seq=13)
    assert recall.at is not None
    assert stale == {
        "id": stale["id"], "kind": "stale_recall", "seq": 13, "recall": recall.pk, "record": record.pk,
        "record_url": f"http://testserver/api/memory/records/{record.pk}/", "version": 1,
        "message": f"item 2 sent version 1 of '{STALE_RECORD}'; the record was at version 2 by then",
        "advice": "Read the record again before sending it, or invalidate cached retrievals when it changes.",
        "at": recall.at.isoformat(),
    }
    assert {f["advice"] for f in data["results"] if f["kind"] == "repeated_injection"} == {
        findings.advice("repeated_injection")}
    # What the rows say: the same findings the service stores.
    assert [f["id"] for f in data["results"]] == list(
        models.MemoryFinding.objects.filter(session=turn3).order_by("seq", "id").values_list("pk", flat=True))


def test_it_lists_one_kind_with_the_counts_of_all(alice_client, turn3) -> None:
    data = get(alice_client, session_url(turn3, "?kind=stale_recall"))
    assert data["count"] == 1 and [f["kind"] for f in data["results"]] == ["stale_recall"]
    assert data["counts"] == {"repeated_injection": 3, "stale_recall": 1}
    data = get(alice_client, session_url(turn3, "?kind=zero_hit_recall"))
    assert (data["count"], data["results"]) == (0, [])


@pytest.mark.parametrize("kind", ["stale", "duplicate_record", "<b>"])
def test_an_unknown_kind_is_refused_naming_the_kinds(alice_client, turn3, kind) -> None:
    response = alice_client.get(session_url(turn3), {"kind": kind})
    assert (response.status_code, response.json()) == (400, {"error": "kind: expected one of " + ", ".join(
        findings.SESSION_KINDS)})


def test_a_sessions_findings_are_paged_like_the_session_list(alice_client, agent) -> None:
    # 120 searches that found nothing, four to a message, in a store whose record they did not read.
    session = models.Session.objects.create(agent=agent, external_id="searches", message_count=60)
    models.Message.objects.bulk_create([models.Message(session=session, seq=i, role="user" if i % 2 else "assistant",
                                                       content=f"m{i}") for i in range(60)])
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="s", kind="records")
    models.Recall.objects.bulk_create([models.Recall(session=session, seq=i // 4, store=store, query=f"q{i}",
                                                     at=T0) for i in range(120)])
    first = get(alice_client, session_url(session))
    assert (first["count"], first["counts"], first["previous"]) == (120, {"zero_hit_recall": 120}, None)
    assert first["next"] == f"http://testserver{session_url(session)}?page=2"
    seen = list(first["results"])
    page = first
    while page["next"]:
        page = get(alice_client, page["next"])
        seen += page["results"]
    assert len(seen) == 120 and len({f["id"] for f in seen}) == 120
    assert [f["seq"] for f in seen] == [i // 4 for i in range(120)]
    kind_page = get(alice_client, session_url(session, "?kind=zero_hit_recall&page=3"))
    assert kind_page["count"] == 120 and len(kind_page["results"]) == 20 and kind_page["next"] is None
    response = alice_client.get(session_url(session, "?page=4"))
    assert (response.status_code, response.json()) == (404, {"error": "page 4: no such page; there are 3 "
                                                                      "(page=1 to page=3)"})


# --- a store's findings ----------------------------------------------------------------------------------------------


def test_it_lists_a_stores_findings_on_their_records(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_duplicates(tmp_path, 3), project=project)
    store = models.MemoryStore.objects.get(project=project)
    data = get(alice_client, store_url(store))
    assert (data["store"], data["count"], data["counts"]) == (store.pk, 3, {"duplicate_record": 2, "noop_write": 1})
    records = dict(models.MemoryRecord.objects.filter(store=store).values_list("external_id", "pk"))
    first, second, third = sorted(records)
    assert [(f["kind"], f["record"], f["version"], f["seq"]) for f in data["results"]] == [
        ("duplicate_record", records[second], None, None), ("duplicate_record", records[third], None, None),
        ("noop_write", records[first], 2, None)]
    assert data["results"][0]["message"] == f"'{second}' holds the same text as '{first}': 'Likes green tea'"
    assert data["results"][0]["record_url"] == f"http://testserver/api/memory/records/{records[second]}/"
    assert data["results"][2]["advice"] == findings.advice("noop_write")
    assert data["results"][2]["at"] == (T0 + dt.timedelta(days=1)).isoformat()
    only = get(alice_client, store_url(store, "?kind=noop_write"))
    assert (only["count"], [f["kind"] for f in only["results"]]) == (1, ["noop_write"])
    assert only["counts"] == data["counts"]
    response = alice_client.get(store_url(store, "?kind=stale_recall"))
    assert (response.status_code, response.json()) == (400, {"error": "kind: expected one of " + ", ".join(
        findings.STORE_KINDS)})


def test_a_stores_findings_are_paged(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_duplicates(tmp_path, 110), project=project)
    store = models.MemoryStore.objects.get(project=project)
    first = get(alice_client, store_url(store, "?kind=duplicate_record"))
    assert first["count"] == 109 and len(first["results"]) == 50
    assert first["next"] == f"http://testserver{store_url(store)}?kind=duplicate_record&page=2"
    seen = [f["record"] for f in first["results"]]
    page = first
    while page["next"]:
        page = get(alice_client, page["next"])
        seen += [f["record"] for f in page["results"]]
    assert sorted(seen) == sorted(models.MemoryRecord.objects.filter(store=store).exclude(
        external_id="00000000-0000-0000-0000-000000000001").values_list("pk", flat=True))
    assert get(alice_client, store_url(store))["count"] == 110


# --- scoped ----------------------------------------------------------------------------------------------------------


def test_another_projects_findings_are_not_found(alice_client, turn3, theirs) -> None:
    store = models.MemoryStore.objects.get(project=theirs.agent.project, kind="records")
    for url in (session_url(theirs), store_url(store), session_url(theirs, "?kind=bogus")):
        response = alice_client.get(url)
        assert (response.status_code, set(response.json())) == (404, {"error"}), url
    assert alice_client.get("/api/sessions/999999/memory-findings/").status_code == 404
    assert alice_client.get("/api/memory/stores/999999/findings/").status_code == 404


def test_a_key_reads_the_findings_of_its_project_and_no_one_reads_them_without_one(
        client, turn3, theirs, project) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='script').key}"}
    assert get(client, session_url(turn3), **auth)["count"] == 4
    assert client.get(session_url(theirs), **auth).status_code == 404
    assert client.get(session_url(turn3)).status_code == 401
    store = models.MemoryStore.objects.get(project=project, kind="records")
    assert get(client, store_url(store), **auth)["count"] == 0
    assert client.get(store_url(store)).status_code == 401


def test_the_schema_documents_both_lists(alice_client) -> None:
    from drf_spectacular.validation import validate_schema

    document = get(alice_client, "/api/schema/?format=json")
    validate_schema(document)
    operations = {op["operationId"]: (path, method) for path, item in document["paths"].items()
                  for method, op in item.items()}
    assert operations["session_memory_findings"] == ("/api/sessions/{session_id}/memory-findings/", "get")
    assert operations["memory_store_findings"] == ("/api/memory/stores/{store_id}/findings/", "get")
    for path in ("/api/sessions/{session_id}/memory-findings/", "/api/memory/stores/{store_id}/findings/"):
        assert {p["name"] for p in document["paths"][path]["get"]["parameters"]} >= {"kind", "page"}
    finding = document["components"]["schemas"]["FindingOut"]
    assert set(finding["properties"]) == {"id", "kind", "seq", "recall", "record", "record_url", "version",
                                          "message", "advice", "at"}
    sessions = document["paths"]["/api/sessions/"]["get"]
    assert "memory_findings" in {p["name"] for p in sessions["parameters"]}


# --- the session list's filter ---------------------------------------------------------------------------------------


@pytest.fixture
def listed(turn3, make_session) -> dict[str, models.Session]:
    plain = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                         title="Plain")
    return {"findings": turn3, "plain": plain}


def test_the_session_list_shows_only_the_sessions_with_memory_findings(alice_client, listed) -> None:
    url = reverse("agents:session_list")
    everything = alice_client.get(url).content.decode()
    assert f'href="{listed["plain"].get_absolute_url()}"' in everything
    page = alice_client.get(url, {"memory_findings": "1"})
    content = page.content.decode()
    assert f'href="{listed["findings"].get_absolute_url()}"' in content
    assert f'href="{listed["plain"].get_absolute_url()}"' not in content
    assert 'name="memory_findings"' in content and "Has memory findings" in content
    assert 'name="memory_findings" id="id_memory_findings" checked' in content
    # The table alone, for htmx, filtered the same way.
    fragment = alice_client.get(url, {"memory_findings": "1"}, HTTP_HX_REQUEST="true").content.decode()
    assert f'href="{listed["plain"].get_absolute_url()}"' not in fragment
    assert f'href="{listed["findings"].get_absolute_url()}"' in fragment


def test_the_api_lists_only_the_sessions_with_memory_findings(alice_client, listed) -> None:
    every = {r["id"] for r in get(alice_client, "/api/sessions/")["results"]}
    assert every == {listed["findings"].pk, listed["plain"].pk}
    only = get(alice_client, "/api/sessions/?memory_findings=1")
    assert [r["id"] for r in only["results"]] == [listed["findings"].pk] and only["count"] == 1
