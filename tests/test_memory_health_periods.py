"""A store's health by period (GET /api/memory/stores/<id>/health/?period=day|week|month&since=&until=,
agents/ledger/health.py, issue 27): per period its reads, zero-hit share, writes, no-op writes, rewrites, records
written, tokens recalled per session and per call; the records read most and the queries that found nothing. Each
figure agrees with a count made directly from the rows, read one by one in Python with periods of its own (ISO
calendar weeks, calendar months); bad parameters are refused naming the field."""
from __future__ import annotations

import datetime as dt
import html
import re
from collections import defaultdict
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from agents.memory.tokens import cl100k_encoding
from tests.memory_health import at, health_store


@pytest.fixture
def store(client, project, agent) -> models.MemoryStore:
    return health_store(client, project, agent)


# --- counted directly from the rows ---------------------------------------------------------------------------------


def period_of(when: dt.datetime, period: str) -> str:
    """The period's start as the API writes it, by the calendar (not by the code under test)."""
    day = when.astimezone(dt.UTC).date()
    if period == "week":
        year, week, _ = day.isocalendar()
        day = dt.date.fromisocalendar(year, week, 1)
    elif period == "month":
        day = day.replace(day=1)
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).isoformat()


def within(when: dt.datetime | None, since: dt.datetime | None, until: dt.datetime | None) -> bool:
    return when is not None and (since is None or when >= since) and (until is None or when < until)


def counted_from_rows(store: models.MemoryStore, period: str, since: dt.datetime | None = None,
                      until: dt.datetime | None = None) -> dict[str, Any]:
    encoding = cl100k_encoding()
    periods: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "reads": 0, "zero_hit_recalls": 0, "writes": 0, "noop_writes": 0, "rewrites": 0, "records_written": set(),
        "tokens_recalled": 0, "sessions": set(), "calls": set()})
    items: dict[int, list[models.RecallItem]] = defaultdict(list)
    for item in models.RecallItem.objects.all():
        items[item.recall_id].append(item)
    read_counts: dict[int, int] = defaultdict(int)
    missed: dict[str, list[models.Recall]] = defaultdict(list)
    for recall in models.Recall.objects.filter(store=store):
        if not within(recall.at, since, until):
            continue
        got = items[recall.pk]
        one = periods[period_of(recall.at, period)]
        one["reads"] += 1
        one["zero_hit_recalls"] += not got
        one["sessions"].add(recall.session_id)
        one["calls"].add(("call", recall.llm_call_id) if recall.llm_call_id else ("message", recall.session_id,
                                                                                  recall.seq)
                         if recall.seq is not None else ("recall", recall.pk))
        for item in got:
            one["tokens_recalled"] += len(encoding.encode_ordinary(item.text))
            read_counts[item.record_id] += 1
        if not got:
            missed[recall.query].append(recall)
    for record in models.MemoryRecord.objects.filter(store=store):
        chain = list(record.versions.order_by("number"))
        for i, version in enumerate(chain):
            if not within(version.at, since, until):
                continue
            one = periods[period_of(version.at, period)]
            one["writes"] += 1
            one["records_written"].add(record.pk)
            one["rewrites"] += i > 0 and version.op != "DELETE"
            one["noop_writes"] += (i > 0 and version.op == "UPDATE" and version.text == chain[i - 1].text
                                   and version.value == chain[i - 1].value)
    shown = []
    for start in sorted(periods):
        one = periods[start]
        sessions, calls = len(one["sessions"]), len(one["calls"])
        shown.append({
            "start": start, "reads": one["reads"], "zero_hit_recalls": one["zero_hit_recalls"],
            "zero_hit_share": round(one["zero_hit_recalls"] / one["reads"], 4) if one["reads"] else None,
            "writes": one["writes"], "noop_writes": one["noop_writes"], "rewrites": one["rewrites"],
            "records_written": len(one["records_written"]), "tokens_recalled": one["tokens_recalled"],
            "sessions": sessions, "calls": calls,
            "tokens_per_session": round(one["tokens_recalled"] / sessions, 1) if sessions else None,
            "tokens_per_call": round(one["tokens_recalled"] / calls, 1) if calls else None})
    records = {r.pk: r for r in models.MemoryRecord.objects.filter(store=store)}
    most = sorted(read_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    lasts = {query: max(rows, key=lambda r: (r.at, r.pk)) for query, rows in missed.items()}
    queries = sorted(missed, key=lambda q: (-len(missed[q]), -lasts[q].at.timestamp(), q))[:10]
    return {
        "periods": shown,
        "most_read": [(pk, records[pk].text[:120], n, f"http://testserver/memory/records/{pk}/") for pk, n in most],
        "zero_hit_queries": [(q, len(missed[q]), lasts[q].at.isoformat(), lasts[q].session_id,
                              f"http://testserver/sessions/{lasts[q].session_id}/?at={lasts[q].seq}#m-{lasts[q].seq}")
                             for q in queries],
    }


def answered(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "periods": data["periods"],
        "most_read": [(r["record"], r["head"], r["reads"], r["url"]) for r in data["most_read"]],
        "zero_hit_queries": [(q["query"], q["count"], q["last_at"], q["last_session"], q["last_session_url"])
                             for q in data["zero_hit_queries"]],
    }


# --- the tests ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("period", ["day", "week", "month"])
def test_each_period_agrees_with_a_count_made_directly_from_the_rows(client, alice, store, period) -> None:
    client.force_login(alice)
    response = client.get(f"/api/memory/stores/{store.pk}/health/?period={period}")
    assert response.status_code == 200, response.content[:300]
    data = response.json()
    assert answered(data) == counted_from_rows(store, period)
    assert data["period"] == period and data["since"] is None and data["until"] is None
    # Not all zero: every figure counts something in some period; the lists are full (more than ten of each).
    for figure in ("reads", "zero_hit_recalls", "writes", "noop_writes", "rewrites", "records_written",
                   "tokens_recalled", "sessions", "calls"):
        assert any(p[figure] for p in data["periods"]), figure
    assert len(data["most_read"]) == 10 and len(data["zero_hit_queries"]) == 10
    # The periods add up to the store's totals (every read and write here has a time).
    assert sum(p["reads"] for p in data["periods"]) == data["reads"]
    assert sum(p["writes"] for p in data["periods"]) == data["writes"]
    assert sum(p["noop_writes"] for p in data["periods"]) == data["noop_writes"] == 2
    assert sum(p["tokens_recalled"] for p in data["periods"]) == data["tokens_recalled"]
    expected_count = {"day": 37, "week": 6, "month": 3}[period]  # 26 February to 3 April
    assert len(data["periods"]) == expected_count


def test_since_and_until_narrow_the_periods_and_the_lists(client, alice, store) -> None:
    client.force_login(alice)
    since, until = at(3.5), at(17.25)
    data = client.get(f"/api/memory/stores/{store.pk}/health/", {
        "period": "week", "since": since.isoformat(), "until": until.isoformat()}).json()
    assert answered(data) == counted_from_rows(store, "week", since, until)
    assert (data["since"], data["until"]) == (since.isoformat(), until.isoformat())
    whole = client.get(f"/api/memory/stores/{store.pk}/health/?period=week").json()
    assert sum(p["reads"] for p in data["periods"]) < data["reads"] == whole["reads"]
    # A date alone is its midnight, UTC; without a period the lists are narrowed and no period is listed.
    data = client.get(f"/api/memory/stores/{store.pk}/health/?since=2026-03-10").json()
    assert data["periods"] == [] and data["since"] == "2026-03-10T00:00:00+00:00"
    expected = counted_from_rows(store, "day", dt.datetime(2026, 3, 10, tzinfo=dt.UTC))
    assert answered(data)["most_read"] == expected["most_read"]
    assert answered(data)["zero_hit_queries"] == expected["zero_hit_queries"]


@pytest.mark.parametrize(("query", "field"), [
    ("period=year", "period"), ("period=", "period"), ("since=garbage", "since"), ("until=2026-13-01", "until"),
    ("since=2026-03-10&until=2026-03-01", "until"),
])
def test_bad_parameters_are_refused_naming_the_field(alice_client, project, query, field) -> None:
    store = models.MemoryStore.objects.create(project=project, name="s", kind="records", source_format="api")
    response = alice_client.get(f"/api/memory/stores/{store.pk}/health/?{query}")
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(f"{field}"), response.json()


def test_the_schema_documents_the_periods_with_an_example(alice_client) -> None:
    from drf_spectacular.validation import validate_schema

    document = alice_client.get("/api/schema/?format=json").json()
    validate_schema(document)
    operation = document["paths"]["/api/memory/stores/{store_id}/health/"]["get"]
    assert {p["name"] for p in operation["parameters"] if p["in"] == "query"} == {"period", "since", "until"}
    assert "400" in operation["responses"]
    schema = document["components"]["schemas"]["StoreHealthOut"]
    assert {"period", "since", "until", "most_read", "zero_hit_queries", "periods"} <= set(schema["properties"])
    [example] = schema["examples"]
    assert example["periods"][0]["tokens_per_call"] == 105.0 and example["most_read"][0]["reads"] == 12
    for name in ("PeriodOut", "RecordReadOut", "QueryMissedOut"):
        assert name in document["components"]["schemas"]


# --- on the agent's memory page -------------------------------------------------------------------------------------


def panel(client, agent: models.Agent, store: models.MemoryStore, **query: str) -> tuple[Any, str]:
    response = client.get(reverse("agents:agent_memory", args=[agent.pk]), {"store": store.pk, **query})
    assert response.status_code == 200
    page = response.content.decode()
    return response, page[page.index('id="store-health"'):page.index("</section>", page.index('id="store-health"'))]


def test_the_panel_shows_the_lists_linked_and_the_periods_of_its_json_twin(client, alice, agent, store) -> None:
    for _ in range(20):  # the query asked most that found nothing: listed first, escaped
        models.Recall.objects.create(session=models.Session.objects.get(external_id="s1"), seq=1, store=store,
                                     query="<script>alert(1)</script>", at=at(35.9), item_count=0)
    client.force_login(alice)
    response, shown = panel(client, agent, store)
    health = response.context["memory"].health
    assert health.period == "week" and health.json_url.endswith("?period=week")
    twin = client.get(health.json_url).json()
    for row in twin["most_read"]:
        assert f'<a href="/memory/records/{row["record"]}/">{html.escape(row["head"])}</a>' in shown
    rows = re.findall(r'<td class="num" data-label="Reads">(\d+)</td>', shown)
    assert rows[:10] == [str(r["reads"]) for r in twin["most_read"]]
    for row in twin["zero_hit_queries"]:
        assert html.escape(row["query"]) in shown
        assert f'href="{row["last_session_url"].removeprefix("http://testserver")}"' in shown.replace("&amp;", "&")
    assert "<script>alert(1)</script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    # The table: the latest periods first, each row the twin's figures.
    starts = re.findall(r'data-label="Week of">([0-9-]+)</td>', shown)
    assert starts == [p["start"][:10] for p in reversed(twin["periods"])]
    writes = re.findall(r'data-label="Writes">(\d+)</td>', shown)
    assert writes == [str(p["writes"]) for p in reversed(twin["periods"])]
    missed = re.findall(r'data-label="Found nothing">(\d+)(?: <span class="muted small">([^<]+)</span>)?</td>', shown)
    assert missed == [(str(p["zero_hit_recalls"]), f"{round(100 * p['zero_hit_share'])}%" if p["zero_hit_recalls"]
                       else "") for p in reversed(twin["periods"])]
    assert all(m[1] for m in missed)  # every week has a search that found nothing here
    # By month: a link that keeps the store.
    month = re.search(r'<a href="([^"]*health=month[^"]*)">month</a>', shown)
    assert month is not None and f"store={store.pk}" in month.group(1)
    response, shown = panel(client, agent, store, health="month")
    assert re.findall(r'data-label="Month">([0-9-]+)</td>', shown) == ["2026-04", "2026-03", "2026-02"]
    # An unknown period is the default one, not an error: the page's links are made by the page.
    assert panel(client, agent, store, health="year")[0].context["memory"].health.period == "week"


def test_the_panels_queries_do_not_grow_with_the_reads(client, alice, agent, store) -> None:
    client.force_login(alice)
    url = reverse("agents:agent_memory", args=[agent.pk])
    with CaptureQueriesContext(connection) as few:
        client.get(url, {"store": store.pk})
    session = models.Session.objects.get(external_id="s2")
    record = store.records.order_by("pk").first()
    for n in range(600):  # four times the reads, over more weeks
        recall = models.Recall.objects.create(session=session, seq=n % 4, store=store, query=f"more {n % 40}",
                                              at=at(n / 10), item_count=n % 2)
        if n % 2:
            models.RecallItem.objects.create(recall=recall, record=record, version=1, rank=1, text=record.text)
    with CaptureQueriesContext(connection) as many:
        client.get(url, {"store": store.pk})
    assert len(many.captured_queries) == len(few.captured_queries)
