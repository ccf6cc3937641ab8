"""A store's health on the agent's memory page (/agents/<id>/memory/, issue 27): the panel shows the figures of its
JSON twin (GET /api/memory/stores/<id>/health/) for every store the libraries' files make, escaped; another project's
store stays not found; and past ledger.pages' bounds (HEALTH_ROWS_MAX records or versions, HEALTH_READS_MAX reads)
the page links the twin instead of counting, so its queries do not grow with the store."""
from __future__ import annotations

import dataclasses
import datetime as dt
import html
from pathlib import Path

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from agents.ledger import pages
from agents.transfer import imports
from tests.memory_findings import mem0_duplicates
from tests.memory_pages import bulk_store, import_friday, import_letta, import_mem0_history

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
FIGURES = {"records": "health-records", "reads": "health-reads", "writes": "health-writes",
           "noop_writes": "health-noop-writes", "duplicates": "health-duplicates", "tokens_recalled": "health-tokens"}


def memory_url(agent: models.Agent, **query: object) -> str:
    url = reverse("agents:agent_memory", args=[agent.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def shown_figure(page: str, dom_id: str) -> str:
    """The text a figure's cell starts with ("1,234" or "75%")."""
    start = page.index(f'id="{dom_id}">') + len(f'id="{dom_id}">')
    return page[start:page.index("<", start)].strip()


def searched_with_nothing_found(project: models.Project, store: models.MemoryStore) -> None:
    """Three searches of ``store`` from a session of the project: two found nothing, one found a record."""
    session = models.Session.objects.filter(agent__project=project).order_by("pk").first()
    assert session is not None
    record = store.records.order_by("external_id").first()
    for n in range(3):
        recall = models.Recall.objects.create(session=session, seq=0, store=store, query=f"tea {n}", at=T0,
                                              item_count=int(n == 2))
        if n == 2:
            models.RecallItem.objects.create(recall=recall, record=record, version=2, rank=1, text="Likes green tea")


def test_the_panel_shows_the_figures_of_its_json_twin(alice_client, project, tmp_path: Path) -> None:
    friday = import_friday(project, tmp_path / "friday")
    letta = import_letta(project)
    import_mem0_history(project)
    imports.import_file(mem0_duplicates(tmp_path / "dup", 4), project=project)
    searched_with_nothing_found(project, models.MemoryStore.objects.get(project=project, scope__user_id="dana"))
    seen = []
    for agent in (friday, letta):
        for row in alice_client.get(memory_url(agent)).context["memory"].stores:
            response = alice_client.get(memory_url(agent, store=row.store.pk))
            assert response.status_code == 200
            health = response.context["memory"].health
            twin = alice_client.get(health.json_url)
            assert twin.status_code == 200
            expected = twin.json()
            shown = dataclasses.asdict(health.figures)
            lists = ("most_read", "zero_hit_queries", "periods")
            assert {k: v for k, v in shown.items() if k not in lists} == {
                k: v for k, v in expected.items() if k not in lists}, row.store.name
            assert [(r["record"], r["reads"]) for r in shown["most_read"]] == [
                (r["record"], r["reads"]) for r in expected["most_read"]]
            assert [(q["query"], q["count"]) for q in shown["zero_hit_queries"]] == [
                (q["query"], q["count"]) for q in expected["zero_hit_queries"]]
            assert [p["start"].isoformat() for p in shown["periods"]] == [p["start"] for p in expected["periods"]]
            page = response.content.decode()
            assert f'href="{health.json_url}"' in page
            for figure, dom_id in FIGURES.items():
                assert shown_figure(page, dom_id) == f"{expected[figure]:,}", (row.store.name, figure)
            never_read = (f"{round(100 * expected['never_read'] / expected['records'])}%" if expected["records"]
                          else "—")
            assert shown_figure(page, "health-never-read") in (never_read, "<1%", ">99%")
            assert shown_figure(page, "health-zero-hits") == f"{expected['zero_hit_recalls']:,}"
            seen.append(expected)
    assert len(seen) >= 4
    # Each figure is counted in one of these stores, so the comparison above compares something.
    for figure in ("records", "never_read", "zero_hit_recalls", "reads", "writes", "noop_writes", "duplicates",
                   "tokens_recalled"):
        assert any(health[figure] for health in seen), figure
    # The duplicated store: 4 records, 3 never read; 3 searches, 2 of which found nothing.
    page = alice_client.get(memory_url(friday, store=models.MemoryStore.objects.get(
        project=project, scope__user_id="dana").pk)).content.decode()
    assert shown_figure(page, "health-never-read") == "75%"
    assert "67% of reads" in page
    assert (shown_figure(page, "health-duplicates"), shown_figure(page, "health-noop-writes")) == ("3", "1")


def test_the_panel_escapes_the_stores_name(alice_client, agent) -> None:
    bulk_store(agent, 3, name="<script>alert(1)</script>")
    page = alice_client.get(memory_url(agent)).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert f"Health of {html.escape('<script>alert(1)</script>')}" in page


def test_an_htmx_request_gets_the_records_without_counting_the_health(alice_client, agent) -> None:
    store = bulk_store(agent, 30)
    response = alice_client.get(memory_url(agent, store=store.pk, q="trip"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response.context["memory"].health is None
    assert 'id="store-health"' not in response.content.decode()


def test_another_projects_store_is_not_found(alice_client, agent, other_agent) -> None:
    theirs = bulk_store(other_agent, 3)
    bulk_store(agent, 3)
    assert alice_client.get(memory_url(agent, store=theirs.pk)).status_code == 404
    assert alice_client.get(memory_url(other_agent, store=theirs.pk)).status_code == 404
    assert alice_client.get(reverse("api:memory_store_health", args=[theirs.pk])).status_code == 404


def test_past_the_bound_the_page_links_the_health_and_its_queries_do_not_grow(alice_client, agent,
                                                                               monkeypatch) -> None:
    # The bound made small, so that stores past it are quick to write: 100 records is under it, 400 and 4,000 past.
    monkeypatch.setattr(pages, "HEALTH_ROWS_MAX", 200)
    small = bulk_store(agent, 100, name="small")
    big, bigger = bulk_store(agent, 400, name="big"), bulk_store(agent, 4000, name="bigger")
    alice_client.get(memory_url(agent, store=small.pk))  # its findings computed once (an import would have)
    counts = []
    for store in (small, big, bigger):
        with CaptureQueriesContext(connection) as ctx:
            response = alice_client.get(memory_url(agent, store=store.pk))
        assert response.status_code == 200
        health = response.context["memory"].health
        page = response.content.decode()
        if store is small:
            assert health.figures is not None and health.figures.records == 100
            assert 'id="health-figures"' in page
        else:
            assert health.figures is None
            assert 'id="health-figures"' not in page and 'id="health-deferred"' in page
            assert f'<a href="{health.json_url}">compute health</a>' in page
            # Nothing of the health counted: no COUNT over the records, no recall or version read.
            sql = [q["sql"] for q in ctx.captured_queries]
            assert not [s for s in sql if "COUNT(" in s and "memoryrecord" in s], sql
            assert not [s for s in sql if "agents_recall" in s or "agents_recordversion" in s], sql
            counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts
    # The twin computes it on demand.
    assert alice_client.get(reverse("api:memory_store_health", args=[bigger.pk])).json()["records"] == 4000


def test_the_bound_reads_the_stores_versions_and_reads_too(alice_client, agent, monkeypatch) -> None:
    # tokens_recalled reads every recalled text and the findings every version: a store of few records read or
    # written very often is past the bound as well.
    monkeypatch.setattr(pages, "HEALTH_ROWS_MAX", 200)
    monkeypatch.setattr(pages, "HEALTH_READS_MAX", 100)
    read, written = bulk_store(agent, 10, name="read"), bulk_store(agent, 10, name="written")
    models.MemoryStore.objects.filter(pk=read.pk).update(read_count=101)
    models.MemoryStore.objects.filter(pk=written.pk).update(version_count=201)
    for store in (read, written):
        assert alice_client.get(memory_url(agent, store=store.pk)).context["memory"].health.figures is None
    models.MemoryStore.objects.filter(pk=read.pk).update(read_count=100)
    assert alice_client.get(memory_url(agent, store=read.pk)).context["memory"].health.figures is not None

