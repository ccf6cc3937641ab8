"""The review API: annotations, review status and assignee, search inside a session, and the role policy over
every endpoint (a table of endpoints × roles: who may, who gets 403, who gets 404)."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import models
from agents.models import Membership
from agents.projects import keys

CHAIN = [
    {"role": "system", "content": "You book trips."},
    {"role": "user", "content": "Find me a flight to Lisbon."},
    {"role": "assistant", "content": None, "reasoning": "The user wants LISBON flights; search first.",
     "tool_calls": [{"id": "call_flt_1", "type": "function",
                     "function": {"name": "search_flights",
                                  "arguments": "{\"to\": \"LIS\", \"cabin\": \"economy\"}"}}]},
    {"role": "tool", "tool_call_id": "call_flt_1", "content": "{\"error\": \"upstream timeout\"}", "is_error": True},
    {"role": "assistant", "content": "The flight search timed out; try again?"},
    {"role": "user", "content": "Yes please."},
]
ROLES = ["viewer", "annotator", "editor", "admin"]


@pytest.fixture
def session(make_session):
    return make_session(CHAIN, title="Lisbon")


@pytest.fixture
def members(project) -> dict[str, User]:
    """One user per role in the project (alice, its admin, is there already)."""
    out = {}
    for role in ROLES:
        user = User.objects.create_user(f"{role}-user", password="pw")
        Membership.objects.create(project=project, user=user, role=role)
        out[role] = user
    return out


@pytest.fixture
def label(project) -> models.Label:
    return models.Label.objects.create(project=project, name="hallucination", color="#dc2626")


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def send(client: Client, method: str, path: str, body: Any = None, **headers: str):
    if body is None:
        return getattr(client, method)(path, **headers)
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json", **headers)


# --- the table ------------------------------------------------------------------------------------------------


@dataclass
class Endpoint:
    name: str
    method: str
    path: Callable[[models.Session, models.Annotation], str]
    body: Any
    least: str  # the least role that may
    ok: int  # the status it answers then
    changed: Callable[[models.Session, models.Annotation], bool] | None = None  # what the write did


def _gone(model: type, pk: int) -> bool:
    return not model.objects.filter(pk=pk).exists()


ENDPOINTS = [
    Endpoint("read a session", "get", lambda s, a: f"/api/sessions/{s.pk}/", None, "viewer", 200),
    Endpoint("read its messages", "get", lambda s, a: f"/api/sessions/{s.pk}/messages/", None, "viewer", 200),
    Endpoint("search its messages", "get", lambda s, a: f"/api/sessions/{s.pk}/messages/?q=lisbon", None,
             "viewer", 200),
    Endpoint("read its annotations", "get", lambda s, a: f"/api/sessions/{s.pk}/annotations/", None, "viewer", 200),
    Endpoint("annotate a message", "post", lambda s, a: f"/api/sessions/{s.pk}/annotations/",
             {"seq": 3, "label": "hallucination", "comment": "timeout not retried"}, "annotator", 201,
             lambda s, a: models.Annotation.objects.filter(session=s, message__seq=3).exists()),
    Endpoint("change one's annotation", "patch", lambda s, a: f"/api/sessions/{s.pk}/annotations/{a.pk}/",
             {"comment": "second look"}, "annotator", 200,
             lambda s, a: models.Annotation.objects.get(pk=a.pk).comment == "second look"),
    Endpoint("delete one's annotation", "delete", lambda s, a: f"/api/sessions/{s.pk}/annotations/{a.pk}/", None,
             "annotator", 204, lambda s, a: _gone(models.Annotation, a.pk)),
    Endpoint("set the review status", "patch", lambda s, a: f"/api/sessions/{s.pk}/", {"review_status": "done"},
             "annotator", 200, lambda s, a: models.Session.objects.get(pk=s.pk).review_status == "done"),
    Endpoint("append messages", "post", lambda s, a: f"/api/sessions/{s.pk}/messages/",
             {"messages": [{"role": "assistant", "content": "Done."}]}, "editor", 201,
             lambda s, a: models.Session.objects.get(pk=s.pk).message_count == len(CHAIN) + 1),
    Endpoint("edit its agent", "patch", lambda s, a: f"/api/agents/{s.agent_id}/", {"description": "books trains"},
             "editor", 200, lambda s, a: models.Agent.objects.get(pk=s.agent_id).description == "books trains"),
    Endpoint("delete a session", "delete", lambda s, a: f"/api/sessions/{s.pk}/", None, "editor", 204,
             lambda s, a: _gone(models.Session, s.pk)),
]


@pytest.mark.parametrize("who", [*ROLES, "outsider", "anonymous", "api key"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_lets_each_role_do_what_it_may_and_no_more(endpoint, who, session, members, label, bob, other_project):
    headers: dict[str, str] = {}
    if who == "api key":
        client = Client()
        key = keys.api_key_create(project=session.agent.project, name="ci").key
        headers["HTTP_AUTHORIZATION"] = "Bearer " + key
        role: str | None = "editor"  # a key acts as an editor of its project, writing as the user who made it
        author = None
    else:
        user = {"outsider": bob, "anonymous": None}.get(who, members.get(who))
        client = client_for(user)
        role = who if who in ROLES else None
        author = user
    # "One's annotation": written by whoever asks (a key writes as its maker, here nobody: its name).
    annotation = models.Annotation.objects.create(
        session=session, message=session.messages.get(seq=1), comment="first look", author=author,
        author_name="" if author else (f"api key {models.ApiKey.objects.first().prefix}" if who == "api key" else "x"),
    )
    response = send(client, endpoint.method, endpoint.path(session, annotation), endpoint.body, **headers)
    allowed = role is not None and Membership.ORDER.index(role) >= Membership.ORDER.index(endpoint.least)
    if allowed:
        assert response.status_code == endpoint.ok, (who, endpoint.name, response.content)
        if endpoint.changed is not None:
            assert endpoint.changed(session, annotation), (who, endpoint.name)
    elif who == "anonymous":
        assert response.status_code == 401, (who, endpoint.name, response.status_code)
    elif who == "outsider":
        # Another project's session does not exist for them: 404, never 403 (which would tell it exists).
        assert response.status_code == 404, (who, endpoint.name, response.status_code)
    else:
        assert response.status_code == 403, (who, endpoint.name, response.status_code, response.content)
        assert "error" in response.json() and endpoint.least in response.json()["error"]
    if not allowed:
        assert models.Session.objects.filter(pk=session.pk).exists()
        fresh = models.Session.objects.get(pk=session.pk)
        assert fresh.review_status == "unreviewed" and fresh.message_count == len(CHAIN)
        assert fresh.agent.description == ""
        assert models.Annotation.objects.get(pk=annotation.pk).comment == "first look"
        assert models.Annotation.objects.filter(session=session).count() == 1


def test_the_table_covers_every_role_and_every_write():
    assert {e.least for e in ENDPOINTS} == {"viewer", "annotator", "editor"}
    assert {e.method for e in ENDPOINTS} == {"get", "post", "patch", "delete"}


# --- annotations ----------------------------------------------------------------------------------------------


def test_it_annotates_a_message_and_the_whole_session_and_lists_them(alice_client, session, label):
    on_message = send(alice_client, "post", f"/api/sessions/{session.pk}/annotations/",
                      {"seq": 3, "label": "hallucination", "comment": "the timeout is never retried"})
    assert on_message.status_code == 201, on_message.content
    created = on_message.json()
    assert created["seq"] == 3 and created["label"] == "hallucination" and created["color"] == "#dc2626"
    assert created["author"] == "alice" and created["mine"] is True
    whole = send(alice_client, "post", f"/api/sessions/{session.pk}/annotations/",
                 {"seq": None, "comment": "flaky run"})
    assert whole.status_code == 201 and whole.json()["seq"] is None and whole.json()["label"] is None
    listed = alice_client.get(f"/api/sessions/{session.pk}/annotations/").json()["annotations"]
    assert [(a["seq"], a["comment"]) for a in listed] == [(3, "the timeout is never retried"), (None, "flaky run")] or \
        [(a["seq"], a["comment"]) for a in listed] == [(None, "flaky run"), (3, "the timeout is never retried")]


@pytest.mark.parametrize(("body", "error"), [
    ({"seq": 99, "comment": "x"}, "seq: no message #99; the session has 6"),
    ({"seq": 1, "label": "nope"}, "label: no label 'nope' in this project; labels: hallucination"),
    ({"seq": 1}, "comment: write a comment or choose a label"),
    ({"seq": 1, "comment": "x", "colour": "red"}, "colour"),
    ({"seq": -1, "comment": "x"}, "seq"),
    ({"seq": 1, "comment": "x" * 10_001}, "comment: at most 10,000 characters"),
    ([1, 2], "body: expected a JSON object"),
])
def test_it_refuses_a_bad_annotation_naming_the_field(alice_client, session, label, body, error):
    response = send(alice_client, "post", f"/api/sessions/{session.pk}/annotations/", body)
    assert response.status_code == 400
    assert error in response.json()["error"]
    assert not models.Annotation.objects.exists()


def test_only_the_author_edits_an_annotation_and_an_admin_may_delete_any(session, members, label):
    annotator, other = members["annotator"], User.objects.create_user("carol")
    Membership.objects.create(project=session.agent.project, user=other, role="annotator")
    mine = send(client_for(annotator), "post", f"/api/sessions/{session.pk}/annotations/",
                {"seq": 2, "comment": "mine"}).json()
    path = f"/api/sessions/{session.pk}/annotations/{mine['id']}/"
    assert send(client_for(other), "patch", path, {"comment": "hijacked"}).status_code == 403
    assert send(client_for(other), "delete", path).status_code == 403
    assert send(client_for(members["editor"]), "patch", path, {"comment": "hijacked"}).status_code == 403
    changed = send(client_for(annotator), "patch", path, {"label": "hallucination"})
    assert changed.status_code == 200
    assert changed.json()["label"] == "hallucination" and changed.json()["comment"] == "mine"
    cleared = send(client_for(annotator), "patch", path, {"label": None, "comment": ""})
    assert cleared.status_code == 400 and "delete it instead" in cleared.json()["error"]
    assert send(client_for(members["admin"]), "patch", path, {"comment": "admin edit"}).status_code == 403
    assert send(client_for(members["admin"]), "delete", path).status_code == 204
    assert not models.Annotation.objects.filter(pk=mine["id"]).exists()


def test_an_annotation_of_another_session_is_not_found_through_this_one(alice_client, make_session, session):
    other = make_session(CHAIN, title="other")
    annotation = models.Annotation.objects.create(session=other, comment="there")
    assert send(alice_client, "delete", f"/api/sessions/{session.pk}/annotations/{annotation.pk}/").status_code == 404
    assert models.Annotation.objects.filter(pk=annotation.pk).exists()


# --- review status and assignee -------------------------------------------------------------------------------


def test_the_list_filters_by_review_status_under_the_name_the_api_gives_it(alice_client, session, make_session):
    # The summaries say "review_status" and PATCH takes it: ?review_status=done was ignored (every session
    # listed), as the list's own name for that filter is "status"; both now filter, and a wrong value is a 400.
    other = make_session(CHAIN, title="Porto")
    send(alice_client, "patch", f"/api/sessions/{session.pk}/", {"review_status": "done"})
    for name in ("review_status", "status"):
        listed = alice_client.get("/api/sessions/", {name: "done"}).json()["results"]
        assert [row["id"] for row in listed] == [session.pk], name
    unreviewed = alice_client.get("/api/sessions/", {"review_status": "unreviewed"}).json()["results"]
    assert [row["id"] for row in unreviewed] == [other.pk]
    wrong = alice_client.get("/api/sessions/", {"review_status": "finished"})
    assert wrong.status_code == 400 and wrong.json()["error"].startswith("review_status: ")
    both = alice_client.get("/api/sessions/", {"review_status": "done", "status": "unreviewed"})
    assert both.status_code == 400 and "not both" in both.json()["error"]
    names = {p["name"] for p in alice_client.get("/api/schema/?format=json").json()["paths"]["/api/sessions/"]["get"]
             ["parameters"]}
    assert {"review_status", "label", "assignee", "violations", "min_tokens"} <= names


def test_it_sets_review_status_and_assignee_and_shows_them_in_the_summary(alice_client, session, members):
    response = send(alice_client, "patch", f"/api/sessions/{session.pk}/",
                    {"review_status": "in_review", "assignee": "annotator-user"})
    assert response.status_code == 200, response.content
    assert response.json()["review_status"] == "in_review" and response.json()["assignee"] == "annotator-user"
    listed = alice_client.get("/api/sessions/").json()["results"][0]
    assert listed["review_status"] == "in_review" and listed["assignee"] == "annotator-user"
    only_status = send(alice_client, "patch", f"/api/sessions/{session.pk}/", {"review_status": "done"})
    assert only_status.json()["assignee"] == "annotator-user"
    nobody = send(alice_client, "patch", f"/api/sessions/{session.pk}/", {"assignee": None})
    assert nobody.json()["assignee"] is None and nobody.json()["review_status"] == "done"


@pytest.mark.parametrize(("body", "error"), [
    ({"review_status": "finished"}, "review_status: 'finished' is not one of unreviewed, in_review, done"),
    ({"review_status": None}, "review_status: one of unreviewed, in_review, done"),
    ({"assignee": "bob"}, "assignee: 'bob' is not a member of project alpha"),
    ({"assignee": "viewer-user"}, "assignee: viewer-user is a viewer here and cannot review"),
    ({"title": "x"}, "title"),
])
def test_it_refuses_a_bad_review_update(alice_client, session, members, bob, body, error):
    response = send(alice_client, "patch", f"/api/sessions/{session.pk}/", body)
    assert response.status_code == 400 and error in response.json()["error"]
    assert models.Session.objects.get(pk=session.pk).review_status == "unreviewed"


# --- search inside a session ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("q", "seqs"), [
    ("lisbon", [1, 2]),  # content, and reasoning in any case
    ("search_flights", [2]),  # a tool name
    ("economy", [2]),  # the arguments
    ("upstream timeout", [3]),  # a result
    ("call_flt_1", [2, 3]),  # a call id, whole: the call and its result
    ("timed out", [4]),
    ("nothing like this", []),
])
def test_it_returns_the_messages_that_match(alice_client, session, q, seqs):
    data = alice_client.get(f"/api/sessions/{session.pk}/messages/", {"q": q}).json()
    assert [m["seq"] for m in data["messages"]] == seqs
    assert data["count"] == len(seqs) and data["q"] == q


def test_it_pages_the_matches_by_seq(alice_client, make_session):
    chain = [{"role": "user", "content": f"parcel {i}"} if i % 2 == 0 else {"role": "assistant", "content": "ok"}
             for i in range(40)]
    session = make_session(chain)
    first = alice_client.get(f"/api/sessions/{session.pk}/messages/", {"q": "parcel", "limit": 7}).json()
    assert [m["seq"] for m in first["messages"]] == [0, 2, 4, 6, 8, 10, 12] and first["count"] == 20
    second = alice_client.get(first["next"]).json()
    assert [m["seq"] for m in second["messages"]][:2] == [14, 16]
    assert alice_client.get(f"/api/sessions/{session.pk}/messages/", {"q": " "}).status_code == 400


def test_a_search_costs_the_same_queries_however_many_matches(
    alice_client, make_session, django_assert_max_num_queries
):
    session = make_session([{"role": "user", "content": f"parcel {i}"} for i in range(300)])
    with django_assert_max_num_queries(8):
        response = alice_client.get(f"/api/sessions/{session.pk}/messages/", {"q": "parcel", "limit": 200})
    assert len(response.json()["messages"]) == 200
