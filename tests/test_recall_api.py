"""The recall page's JSON twins: GET /api/memory/recalls/<id>/ (items, marks, figures), POST .../marks/ (by rank or
id, changed by a second mark, taken back; relevant_total), GET .../what-if/, and a store's retrieval quality per
period and per query (GET /api/memory/stores/<id>/quality/), each figure written as its arithmetic; roles, API keys,
CSRF, another project's recall and store, bad parameters, and the OpenAPI schema."""
from __future__ import annotations

import datetime as dt
import math

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import models
from agents.projects import keys

T0 = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)  # a Monday


def log2(x: float) -> float:
    return math.log2(x)


@pytest.fixture
def store(agent) -> models.MemoryStore:
    return models.MemoryStore.objects.create(project=agent.project, agent=agent, name="mem0", kind="records")


def a_recall(session: models.Session, store: models.MemoryStore | None, query: str, scores: list[float | None],
             *, at: dt.datetime | None = None, seq: int = 0) -> models.Recall:
    recall = models.Recall.objects.create(session=session, seq=seq, store=store, query=query, at=at,
                                          item_count=len(scores))
    models.RecallItem.objects.bulk_create([models.RecallItem(recall=recall, rank=rank, score=score,
                                                             text=f"{query} item {rank}")
                                           for rank, score in enumerate(scores, start=1)])
    return recall


def mark(recall: models.Recall, user: User, marks: list[bool | None]) -> None:
    for item in recall.items.order_by("rank"):
        relevant = marks[item.rank - 1]
        if relevant is not None:
            models.RecallItemMark.objects.create(item=item, author=user, relevant=relevant)


@pytest.fixture
def session(make_session) -> models.Session:
    return make_session([{"role": "user", "content": "<memory>trip item 1 trip item 2 trip item 3</memory>"},
                         {"role": "assistant", "content": "Noted."}])


@pytest.fixture
def recall(session, store) -> models.Recall:
    return a_recall(session, store, "trip", [0.9, 0.6, 0.3], at=T0)


def member(project: models.Project, name: str, role: str) -> Client:
    user = User.objects.create_user(name, password=f"pw-{name}-123")
    models.Membership.objects.create(project=project, user=user, role=role)
    c = Client()
    c.force_login(user)
    return c


def post(c: Client, url: str, body: dict) -> tuple[int, dict]:
    answer = c.post(url, body, content_type="application/json")
    return answer.status_code, answer.json()


def test_it_answers_the_recall_with_its_marks_and_figures(alice_client, recall, alice, project):
    carol = User.objects.create_user("carol")
    models.Membership.objects.create(project=project, user=carol, role=models.Membership.Level.ANNOTATOR)
    mark(recall, alice, [True, False, None])
    mark(recall, carol, [True, True, None])  # #2 split: not counted as marked
    models.RecallJudgement.objects.create(recall=recall, author=carol, relevant_total=4)
    models.RecallJudgement.objects.create(recall=recall, author=alice, relevant_total=3)
    body = alice_client.get(f"/api/memory/recalls/{recall.pk}/").json()
    assert body["id"] == recall.pk and body["query"] == "trip" and body["seq"] == 0
    assert body["page_url"] == f"http://testserver/memory/recalls/{recall.pk}/"
    assert [i["marks"] for i in body["items"]] == [
        {"relevant": 2, "not_relevant": 0, "relevance": True, "mine": True},
        {"relevant": 1, "not_relevant": 1, "relevance": None, "mine": False},
        {"relevant": 0, "not_relevant": 0, "relevance": None, "mine": None},
    ]
    assert body["judgements"] == 2 and body["my_relevant_total"] == 3
    assert body["quality"] == {"k": 3, "items": 3, "marked": 1, "relevant": 1, "relevant_total": 4,
                               "precision": None, "recall": None, "reciprocal_rank": 1.0, "ndcg": None, "hit": 1.0}
    # At k=1 the first item decides all but reciprocal rank (which it decides too).
    q = alice_client.get(f"/api/memory/recalls/{recall.pk}/?k=1").json()["quality"]
    assert (q["precision"], q["recall"], q["ndcg"], q["hit"]) == (1.0, pytest.approx(1 / 4), 1.0, 1.0)
    assert alice_client.get(f"/api/memory/recalls/{recall.pk}/?k=0").json()["error"].startswith("k: ")


def test_a_mark_by_rank_or_id_is_changed_by_a_second_and_taken_back_by_null(alice_client, recall, alice):
    url = f"/api/memory/recalls/{recall.pk}/marks/"
    items = {i.rank: i for i in recall.items.all()}
    status, body = post(alice_client, url, {"rank": 1, "relevant": True})
    assert status == 200 and body["items"][0]["marks"]["mine"] is True
    post(alice_client, url, {"item": items[2].pk, "relevant": True})
    status, body = post(alice_client, url, {"rank": 2, "relevant": False})
    assert status == 200
    assert models.RecallItemMark.objects.filter(item=items[2]).count() == 1
    assert models.RecallItemMark.objects.get(item=items[2]).relevant is False
    status, body = post(alice_client, url, {"rank": 3, "relevant": True})
    assert body["quality"]["precision"] == pytest.approx(2 / 3)
    assert body["quality"]["ndcg"] == pytest.approx((1 + 1 / log2(4)) / (1 + 1 / log2(3)))
    status, body = post(alice_client, url, {"relevant_total": 5})
    assert status == 200 and body["quality"]["recall"] == pytest.approx(2 / 5)
    status, body = post(alice_client, url, {"rank": 3, "relevant": None})
    assert body["items"][2]["marks"]["mine"] is None and body["quality"]["precision"] is None
    status, body = post(alice_client, url, {"relevant_total": None})
    assert body["quality"]["relevant_total"] is None
    assert not models.RecallJudgement.objects.exists()


@pytest.mark.parametrize(("body", "error"), [
    ({"rank": 9, "relevant": True}, "rank: no item at rank 9 in recall"),
    ({"item": 999999, "relevant": True}, "item: no item 999999 in recall"),
    ({"relevant": True}, "item: give the item's id (item) or its rank (rank), or relevant_total alone"),
    ({"rank": 1}, "relevant: true, false, or null"),
    ({"rank": 1, "item": 1, "relevant": True}, "item: give the item's id (item) or its rank (rank), one of them"),
    ({"rank": 1, "relevant": "maybe"}, "relevant: "),
    ({"relevant_total": -1}, "relevant_total: "),
    ({"rank": 1, "relevant": True, "note": "x"}, "note: "),
])
def test_a_bad_mark_is_refused_naming_the_field(alice_client, recall, body, error):
    status, answer = post(alice_client, f"/api/memory/recalls/{recall.pk}/marks/", body)
    assert status == 400 and answer["error"].startswith(error), answer
    assert not models.RecallItemMark.objects.exists()


def test_a_viewer_reads_but_may_not_mark(recall, project):
    viewer = member(project, "vera", models.Membership.Level.VIEWER)
    assert viewer.get(f"/api/memory/recalls/{recall.pk}/").status_code == 200
    status, body = post(viewer, f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": True})
    assert status == 403
    assert body == {"error": "this needs the annotator or editor or admin role in project alpha; yours is viewer"}
    # Refused before anything else is looked at: a bad body gets the same answer.
    status, _ = post(viewer, f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 99})
    assert status == 403
    annotator = member(project, "annie", models.Membership.Level.ANNOTATOR)
    assert post(annotator, f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": True})[0] == 200
    assert not models.RecallItemMark.objects.filter(author__username="vera").exists()


def test_an_api_key_marks_as_the_user_who_made_it(client, recall, project, alice):
    made = keys.api_key_create(project=project, name="qa script", created_by=alice).key
    answer = client.post(f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": False},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {made}")
    assert answer.status_code == 200
    assert models.RecallItemMark.objects.get().author == alice
    nobodys = keys.api_key_create(project=project, name="cli").key
    answer = client.post(f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": True},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {nobodys}")
    assert answer.status_code == 403 and "made on the command line" in answer.json()["error"]


def test_a_logged_in_post_needs_the_csrf_token(recall, alice):
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    answer = c.post(f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": True},
                    content_type="application/json")
    assert answer.status_code == 403 and "CSRF" in answer.json()["error"]
    assert not models.RecallItemMark.objects.exists()


def test_another_projects_recall_and_store_are_not_found(recall, store, bob, other_project):
    c = Client()
    c.force_login(bob)
    for url in (f"/api/memory/recalls/{recall.pk}/", f"/api/memory/recalls/{recall.pk}/what-if/?limit=1",
                f"/api/memory/stores/{store.pk}/quality/"):
        assert c.get(url).status_code == 404, url
    assert post(c, f"/api/memory/recalls/{recall.pk}/marks/", {"rank": 1, "relevant": True})[0] == 404


def test_the_what_if_answers_each_items_fate_and_names_a_bad_parameter(alice_client, recall):
    body = alice_client.get(f"/api/memory/recalls/{recall.pk}/what-if/?limit=2&score_threshold=0.65").json()
    assert [(i["rank"], i["kept"], i["reason"]) for i in body["items"]] == [
        (1, True, ""), (2, False, "below the threshold"), (3, False, "past the limit")]
    assert body["kept"] == 1 and body["dropped"] == 2
    assert body["tokens_dropped"] == body["items"][1]["tokens"] + body["items"][2]["tokens"]
    window = body["window"]
    assert window["seq"] == 1 and window["part"] == "recalled_memory"
    context = alice_client.get(f"/api/sessions/{recall.session_id}/context/?seq=1").json()
    part = next(p for p in context["parts"] if p["part"] == "recalled_memory")
    assert (window["part_before"], window["total_before"], window["window"]) == (
        part["tokens"], context["total"], context["window"])
    assert window["part_after"] == part["tokens"] - body["tokens_dropped"]
    assert window["total_after"] == context["total"] - body["tokens_dropped"]
    for query, field in (("limit=-1", "limit"), ("score_threshold=abc", "score_threshold"),
                         ("limit=1.5", "limit"), ("score_threshold=inf", "score_threshold")):
        answer = alice_client.get(f"/api/memory/recalls/{recall.pk}/what-if/?{query}")
        assert answer.status_code == 400 and answer.json()["error"].startswith(f"{field}: "), (query, answer.json())
    nothing = alice_client.get(f"/api/memory/recalls/{recall.pk}/what-if/").json()
    assert nothing["dropped"] == 0 and nothing["window"]["total_after"] == nothing["window"]["total_before"]


def test_a_stores_quality_per_week_month_and_query(alice_client, alice, session, store, recall, agent):
    mark(recall, alice, [True, False, True])
    models.RecallJudgement.objects.create(recall=recall, author=alice, relevant_total=4)
    diet = a_recall(session, store, "diet", [0.8, 0.7], at=T0 + dt.timedelta(days=8))
    mark(diet, alice, [False, True])
    a_recall(session, store, "unmarked", [0.5], at=T0)  # no mark: gives no figure
    elsewhere = models.MemoryStore.objects.create(project=agent.project, agent=agent, name="other", kind="records")
    mark(a_recall(session, elsewhere, "trip", [0.5], at=T0), alice, [False])
    body = alice_client.get(f"/api/memory/stores/{store.pk}/quality/").json()
    trip = {"precision": 2 / 3, "recall": 2 / 4, "rr": 1, "ndcg": (1 + 1 / log2(4)) / (1 + 1 / log2(3)), "hit": 1}
    diet_q = {"precision": 1 / 2, "rr": 1 / 2, "ndcg": (1 / log2(3)) / 1, "hit": 1}
    overall = body["overall"]
    assert overall["recalls"] == 2
    assert overall["precision"] == pytest.approx((trip["precision"] + diet_q["precision"]) / 2)
    assert overall["recall"] == pytest.approx(trip["recall"])  # only where counted
    assert overall["mrr"] == pytest.approx((trip["rr"] + diet_q["rr"]) / 2)
    assert overall["ndcg"] == pytest.approx((trip["ndcg"] + diet_q["ndcg"]) / 2)
    assert overall["hit_rate"] == 1
    assert overall["counted"] == {"precision": 2, "recall": 1, "reciprocal_rank": 2, "ndcg": 2, "hit": 2}
    assert [(p["start"], p["end"], p["recalls"]) for p in body["periods"]] == [
        ("2026-11-30", "2026-12-07", 1), ("2026-12-07", "2026-12-14", 1)]
    assert body["periods"][1]["precision"] == pytest.approx(diet_q["precision"])
    assert {q["query"]: q["mrr"] for q in body["queries"]} == {"trip": 1, "diet": pytest.approx(1 / 2)}
    months = alice_client.get(f"/api/memory/stores/{store.pk}/quality/?period=month&k=1").json()
    assert [(p["start"], p["end"]) for p in months["periods"]] == [("2026-11-01", "2026-12-01"),
                                                                   ("2026-12-01", "2027-01-01")]
    assert months["k"] == 1 and months["overall"]["precision"] == pytest.approx((1 + 0) / 2)
    assert months["overall"]["recall"] == pytest.approx(1 / 4)
    for query, field in (("period=year", "period"), ("k=0", "k"), ("k=abc", "k"), ("k=101", "k")):
        answer = alice_client.get(f"/api/memory/stores/{store.pk}/quality/?{query}")
        assert answer.status_code == 400 and answer.json()["error"].startswith(f"{field}: "), answer.json()


def test_a_recall_without_a_time_counts_in_its_sessions_start(alice_client, alice, make_session, store):
    started = make_session([{"role": "user", "content": "hi"}], started_at=T0 + dt.timedelta(days=3))
    mark(a_recall(started, store, "q", [0.1]), alice, [True])
    body = alice_client.get(f"/api/memory/stores/{store.pk}/quality/").json()
    assert [(p["start"], p["precision"]) for p in body["periods"]] == [("2026-11-30", 1.0)]


def test_the_schema_documents_the_recall_endpoints(alice_client):
    from drf_spectacular.validation import validate_schema

    document = alice_client.get("/api/schema/?format=json").json()
    validate_schema(document)
    operations = {op["operationId"]: (path, method) for path, item in document["paths"].items()
                  for method, op in item.items()}
    assert operations["memory_recall"] == ("/api/memory/recalls/{recall_id}/", "get")
    assert operations["memory_recall_marks"] == ("/api/memory/recalls/{recall_id}/marks/", "post")
    assert operations["memory_recall_what_if"] == ("/api/memory/recalls/{recall_id}/what-if/", "get")
    assert operations["memory_store_quality"] == ("/api/memory/stores/{store_id}/quality/", "get")
    schemas = document["components"]["schemas"]
    for name in ("RecallDetailOut", "WhatIfOut", "StoreQualityOut", "MarkIn"):
        assert schemas[name].get("examples"), name
    what_if = document["paths"]["/api/memory/recalls/{recall_id}/what-if/"]["get"]
    assert {p["name"] for p in what_if["parameters"]} >= {"limit", "score_threshold"}
    marks = document["paths"]["/api/memory/recalls/{recall_id}/marks/"]["post"]
    assert "403" in marks["responses"]


def _queries(client: Client, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_quality_costs_the_same_queries_however_many_recalls_and_marks(alice_client, alice, session, store):
    marked = a_recall(session, store, "trip", [0.9, 0.1], at=T0)
    mark(marked, alice, [True, False])
    url = f"/api/memory/stores/{store.pk}/quality/"
    few = _queries(alice_client, url)
    recalls = models.Recall.objects.bulk_create([models.Recall(session=session, seq=0, store=store, query=f"q{i}",
                                                               at=T0, item_count=1) for i in range(20_000)])
    items = models.RecallItem.objects.bulk_create([models.RecallItem(recall=r, rank=1, text="x") for r in recalls])
    models.RecallItemMark.objects.bulk_create([models.RecallItemMark(item=i, author=alice, relevant=n % 2 == 0)
                                               for n, i in enumerate(items[:300])])
    assert _queries(alice_client, url) == few
    body = alice_client.get(url).json()
    assert body["overall"]["recalls"] == 301 and body["queries_total"] == 301 and len(body["queries"]) == 100
    assert body["overall"]["precision"] == pytest.approx((1 / 2 + 150 * 1 + 150 * 0) / 301)
    page = f"/memory/recalls/{marked.pk}/"
    few = _queries(alice_client, page), _queries(alice_client, f"/api/memory/recalls/{marked.pk}/")
    many = a_recall(session, store, "many", [0.5] * 200, at=T0)
    mark(many, alice, [True] * 200)
    assert (_queries(alice_client, f"/memory/recalls/{many.pk}/"),
            _queries(alice_client, f"/api/memory/recalls/{many.pk}/")) == few
