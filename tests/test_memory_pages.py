"""The memory pages: an agent's memory (/agents/<id>/memory/: its stores, a store's records searched, filtered,
sorted, paged) and a record (/memory/records/<id>/: versions, the diff of two, reads), on files the libraries wrote
and on stores made in bulk."""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from tests.conversations import TRAVEL
from tests.memory_pages import T0, bulk_store, busy_record, import_friday, import_letta, import_mem0_history


def memory_url(agent: models.Agent, **query: object) -> str:
    url = reverse("agents:agent_memory", args=[agent.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def record_url(record: models.MemoryRecord) -> str:
    return reverse("agents:memory_record", args=[record.pk])


def shown(response) -> list[str]:
    """The external ids of the records a memory page lists, in order."""
    return [row.record.external_id for row in response.context["memory"].records.rows]


@pytest.fixture
def friday(project, tmp_path: Path) -> models.Agent:
    return import_friday(project, tmp_path)


# --- an agent's memory -------------------------------------------------------------------------------------------


def test_it_shows_an_agents_stores_and_the_records_of_the_first_that_holds_any(alice_client, friday, project):
    shared = import_mem0_history(project)
    response = alice_client.get(memory_url(friday))
    assert response.status_code == 200
    page = response.content.decode()
    memory = response.context["memory"]
    # The agent's own stores first (by name), then the one its project shares, marked.
    assert [(row.store.name, row.shared) for row in memory.stores] == [
        ("knowledge of Friday", False), ("long-term memory of Friday", False), ("mem0", True)]
    assert "shared by Alpha" in page
    ltm = memory.stores[1].store
    # The knowledge base was read but its chunks are not in the files: the first store with records opens.
    assert memory.store == ltm
    assert "user_id=user_1 · agent_id=Friday" in page
    assert re.search(r'data-label="Records" class="num">2<.*?data-label="Versions" class="num">3<.*?'
                     r'data-label="Reads" class="num">1<', page, re.S)
    assert sorted(shown(response)) == sorted(ltm.records.values_list("external_id", flat=True))
    assert "User prefers high-speed trains over flights" in page and "1–2 of 2 records" in page
    # Each record opens its page; the store's links open it on the same page.
    record = ltm.records.get(text="User prefers high-speed trains over flights")
    assert f'href="{record_url(record)}"' in page
    assert f'href="{memory_url(friday)}?store={shared.pk}"' in page


def test_it_answers_htmx_with_the_records_alone_and_their_filter_errors_out_of_band(alice_client, friday):
    store = friday.memory_stores.get(kind="records")
    response = alice_client.get(memory_url(friday, store=store.pk, state="gone", q="trains"),
                                headers={"HX-Request": "true"})
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="records"')
    assert 'id="stores"' not in page and "<html" not in page
    assert '<div id="filter-errors" hx-swap-oob="true"><p class="form-error">State: expected one of active, ' \
           'deleted, invalidated</p></div>' in page
    # The search still applies; the state that cannot is left out.
    assert shown(response) == [store.records.get(text__contains="trains").external_id]


def test_it_links_its_json_twins(alice_client, friday):
    store = friday.memory_stores.get(kind="records")
    page = alice_client.get(memory_url(friday, store=store.pk, q="trains", state="active")).content.decode()
    assert f'id="memory-json" href="/api/agents/{friday.pk}/memory/"' in page
    assert f'id="records-json" href="/api/memory/stores/{store.pk}/records/?q=trains&amp;state=active"' in page
    # The twins answer with the same stores and records.
    stores = alice_client.get(f"/api/agents/{friday.pk}/memory/").json()
    assert {s["name"] for s in stores["stores"]} == {"knowledge of Friday", "long-term memory of Friday"}
    records = alice_client.get(f"/api/memory/stores/{store.pk}/records/", {"q": "trains", "state": "active"})
    assert [r["text"] for r in records.json()["results"]] == ["User prefers high-speed trains over flights"]


def test_it_searches_the_records_and_marks_each_hit_escaped(alice_client, agent):
    store = bulk_store(agent, 30)
    models.MemoryRecord.objects.create(store=store, external_id="x", text="<script>alert(1)</script> Trip <b>",
                                       updated_at=T0)
    response = alice_client.get(memory_url(agent, store=store.pk, q="trip"))
    page = response.content.decode()
    assert len(shown(response)) == 31 and "31 records match" in page
    assert '&lt;script&gt;alert(1)&lt;/script&gt; <mark class="hit">Trip</mark> &lt;b&gt;' in page
    assert "<script>alert(1)" not in page
    assert shown(alice_client.get(memory_url(agent, store=store.pk, q="number 17 about"))) == ["r0000017"]


@pytest.mark.parametrize("way", ["scan", "ids", "walk", "common"])
def test_a_search_finds_the_same_records_whichever_way_it_reads_them(alice_client, agent, monkeypatch, way):
    # A small store is read (scan); a big one's matches come from the trigram index, listed by id when they are few
    # (ids), else the store is walked in the sort's order (walk); a text most of its newest records hold is walked
    # at once (common). The thresholds made small to reach each way.
    from agents.ledger import pages

    store = bulk_store(agent, 40)
    if way != "scan":
        monkeypatch.setattr(pages, "SEARCH_SCAN_MAX", 10)
        monkeypatch.setattr(pages, "SEARCH_IDS_INLINE", 39 if way == "ids" else 5)
        monkeypatch.setattr(pages, "SEARCH_COMMON", 5 if way == "common" else 1_000_000)
    response = alice_client.get(memory_url(agent, store=store.pk, q="TRIP", state="active", sort="reads"))
    expected = list(store.records.filter(state="active").order_by("read_count", "id").values_list(
        "external_id", flat=True))
    assert shown(response) == expected
    assert response.context["memory"].records.summary == (
        "1–36 of 5+ records match" if way == "walk" else "1–36 of 36 records match")
    if way == "common":  # told by the probe, not by the trigram index's list
        assert pages._probe(store.records.filter(state="active"), "TRIP") == 36
        assert pages._probe(store.records.all(), "number 17 about") == 1
    assert shown(alice_client.get(memory_url(agent, store=store.pk, q="number 17 about"))) == ["r0000017"]


def test_it_filters_by_state_scope_period_and_reads(alice_client, agent):
    store = bulk_store(agent, 40)

    def ids(**query: object) -> list[str]:
        response = alice_client.get(memory_url(agent, store=store.pk, **query))
        assert response.status_code == 200 and not response.context["memory"].errors, response.context["memory"].errors
        return shown(response)

    assert ids(state="deleted") == ["r0000039", "r0000029", "r0000019", "r0000009"]
    assert ids(scope="user_id=u1", state="deleted") == ["r0000019"]
    assert len(ids(read="never")) == 6 and all(int(i[1:]) % 7 == 0 for i in ids(read="never"))
    assert len(ids(read="yes")) == 34
    # Changed on a day: record i changed at 09:00 + i minutes on March 1st; none on the 2nd.
    assert len(ids(changed_from="2026-03-01", changed_to="2026-03-01")) == 40
    assert ids(changed_from="2026-03-02") == []
    page = alice_client.get(memory_url(agent, store=store.pk, changed_from="2026-03-02")).content.decode()
    assert "No record matches these filters." in page
    # The scope field offers the scopes the records shown carry.
    assert '<option value="user_id=u0">' in alice_client.get(memory_url(agent, store=store.pk)).content.decode()


def test_it_sorts_by_change_reads_versions_and_id(alice_client, agent):
    store = bulk_store(agent, 12)
    models.MemoryRecord.objects.filter(store=store, external_id="r0000005").update(updated_at=None, version_count=4)

    def ids(sort: str) -> list[str]:
        return shown(alice_client.get(memory_url(agent, store=store.pk, sort=sort)))

    # A record without a time of change comes after the others, newest first, and before them oldest first.
    assert ids("-updated")[:2] == ["r0000011", "r0000010"] and ids("-updated")[-1] == "r0000005"
    assert ids("updated")[:2] == ["r0000005", "r0000000"]
    assert ids("-reads")[:4] == ["r0000006", "r0000005", "r0000011", "r0000004"]
    assert ids("-versions")[0] == "r0000005"
    assert ids("id") == sorted(ids("id"))


def test_it_says_what_is_wrong_with_each_filter_and_applies_the_others(alice_client, agent):
    store = bulk_store(agent, 20)
    response = alice_client.get(memory_url(agent, store=store.pk, state="gone", read="maybe", scope="nope",
                                           changed_from="someday", sort="bogus", q="number 1"))
    memory = response.context["memory"]
    assert memory.errors == [
        "Scope: expected user_id=…, agent_id=…, run_id=…", "State: expected one of active, deleted, invalidated",
        "Read: expected never or yes",
        "Sort: expected one of updated, -updated, reads, -reads, versions, -versions, id",
        "Changed from: expected a date, YYYY-MM-DD"]
    page = response.content.decode()
    assert '<div id="filter-errors"><p class="form-error">Scope: expected' in page
    # The search applied; the links keep it and leave out what could not apply.
    assert len(shown(response)) == 11 and memory.query == f"store={store.pk}&q=number+1"


def test_it_pages_by_keyset_with_the_stored_count(alice_client, agent):
    store = bulk_store(agent, 120)
    first = alice_client.get(memory_url(agent, store=store.pk))
    records = first.context["memory"].records
    assert shown(first)[:2] == ["r0000119", "r0000118"] and len(shown(first)) == 50
    assert records.summary == "1–50 of 120 records" and not records.previous_url
    second = alice_client.get(records.next_url)
    assert shown(second)[0] == "r0000069" and second.context["memory"].records.summary == "51–100 of 120 records"
    third = alice_client.get(second.context["memory"].records.next_url)
    assert shown(third)[-1] == "r0000000" and not third.context["memory"].records.next_url
    assert third.context["memory"].records.summary == "101–120 of 120 records"
    back = alice_client.get(third.context["memory"].records.previous_url)
    assert shown(back) == shown(second) and back.context["memory"].records.summary == "51–100 of 120 records"
    back = alice_client.get(back.context["memory"].records.previous_url)
    assert shown(back) == shown(first) and not back.context["memory"].records.previous_url
    # Paging keeps the filters and the sort.
    filtered = alice_client.get(memory_url(agent, store=store.pk, state="active", sort="reads"))
    ids = shown(filtered) + shown(alice_client.get(filtered.context["memory"].records.next_url))
    reads = dict(store.records.values_list("external_id", "read_count"))
    assert len(ids) == 100 and len(set(ids)) == 100 and [reads[i] for i in ids] == sorted(reads[i] for i in ids)
    assert filtered.context["memory"].records.summary == "1–50 of 108 records match"


def test_it_pages_past_records_without_a_time_of_change(alice_client, agent):
    store = bulk_store(agent, 70)
    models.MemoryRecord.objects.filter(store=store, external_id__lt="r0000030").update(updated_at=None)
    for sort in ("-updated", "updated"):
        first = alice_client.get(memory_url(agent, store=store.pk, sort=sort))
        second = alice_client.get(first.context["memory"].records.next_url)
        ids = shown(first) + shown(second)
        assert len(ids) == 70 and len(set(ids)) == 70, sort
        back = alice_client.get(second.context["memory"].records.previous_url)
        assert shown(back) == shown(first), sort


def test_it_shows_a_blocks_fill_against_its_limit(alice_client, project):
    letta = import_letta(project)
    store = letta.memory_stores.get(kind="blocks")
    models.MemoryRecord.objects.create(store=store, external_id="notes", text="x" * 95, char_limit=100)
    models.MemoryRecord.objects.create(store=store, external_id="overflow", text="y" * 130, char_limit=100)
    page = alice_client.get(memory_url(letta, store=store.pk)).content.decode()
    persona = store.records.get(external_id="persona")
    assert (f'<meter class="fill-meter" min="0" max="20000" value="{len(persona.text)}" low="18000" high="20000" '
            f'optimum="0"') in page
    assert f"{len(persona.text)} / 20,000</span> chars · 2%" in page
    assert '95 / 100</span> chars · 95% <span class="badge badge-error">near the limit</span>' in page
    assert ('max="130" value="130" low="90" high="100"' in page
            and '130 / 100</span> chars · 130% <span class="badge badge-violation">over the limit</span>' in page)


def test_it_answers_404_for_another_projects_agent_store_or_record(alice_client, agent, friday, other_agent):
    theirs = bulk_store(other_agent, 3)
    assert alice_client.get(memory_url(other_agent)).status_code == 404
    # A store of another project, or of another agent of the same project, is not this agent's memory.
    assert alice_client.get(memory_url(friday, store=theirs.pk)).status_code == 404
    mine = bulk_store(agent, 3)
    assert alice_client.get(memory_url(friday, store=mine.pk)).status_code == 404
    assert alice_client.get(record_url(theirs.records.first())).status_code == 404
    hidden = bulk_store(agent, 2, name="importing")
    models.MemoryStore.objects.filter(pk=hidden.pk).update(state="importing")
    assert alice_client.get(memory_url(agent, store=hidden.pk)).status_code == 404
    assert alice_client.get(record_url(hidden.records.first())).status_code == 404


def test_it_says_so_when_the_agent_has_no_memory(alice_client, agent):
    page = alice_client.get(memory_url(agent)).content.decode()
    assert "No memory is stored for Travel bot." in page and 'id="records"' not in page


@pytest.mark.parametrize("sort", ["-updated", "reads"])
def test_the_store_page_costs_the_same_queries_at_100_and_10000_records(alice_client, agent, sort, monkeypatch):
    small, big = bulk_store(agent, 100, name="small"), bulk_store(agent, 10_000, name="big")
    counts: dict[str, list[int]] = {}
    # Once before counting: whether the database has the trigram index is asked once per process; and each store's
    # findings, which its health panel reads, are computed on its first view (an import computes them; bulk_store
    # does not).
    alice_client.get(memory_url(agent, store=small.pk, q="trip"))
    alice_client.get(memory_url(agent, store=big.pk))
    for store in (small, big):
        # After r0000050: newest first, the last page, where a nullable sort reads its NULLs too (one more query, at
        # any size); by reads, a page in the middle.
        last = store.records.get(external_id="r0000050")
        for name, query in (("first", {"sort": sort}), ("filtered", {"sort": sort, "state": "active", "q": "trip"}),
                            ("last", {"sort": sort, "after": last.pk})):
            with CaptureQueriesContext(connection) as ctx:
                response = alice_client.get(memory_url(agent, store=store.pk, **query))
            assert response.status_code == 200 and len(shown(response)) >= 45, (name, len(shown(response)))
            counts.setdefault(name, []).append(len(ctx.captured_queries))
            if name == "filtered":
                # A search's matches counted: all of them in the little store; in the big one, a text its newest
                # records all hold, by the probe: more than COUNT_CAP.
                assert response.context["memory"].records.summary == (
                    "1–50 of 90 records match" if store is small else "1–50 of 1,000+ records match")
    assert all(small_count == big_count for small_count, big_count in counts.values()), counts
    # Never a COUNT over the whole store: the stored count, or a count over at most COUNT_CAP + 1 rows. (Except the
    # health panel's, for a store up to pages.HEALTH_ROWS_MAX: here past it, as a store of a million records is.)
    from agents.ledger import pages

    monkeypatch.setattr(pages, "HEALTH_ROWS_MAX", 5_000)
    with CaptureQueriesContext(connection) as ctx:
        alice_client.get(memory_url(agent, store=big.pk, sort=sort))
    assert not [q["sql"] for q in ctx.captured_queries if "COUNT(" in q["sql"] and "memoryrecord" in q["sql"]]


@pytest.mark.parametrize("sort", ["-updated", "updated", "-reads", "reads", "-versions", "versions", "id"])
def test_the_store_page_reads_each_sort_from_an_index(alice_client, agent, sort):
    # A sort the index does not hold makes the database sort the whole store for each page (PostgreSQL did for
    # "-updated": a DESC order is NULLS FIRST to it, its index NULLS LAST). Every query of the page that orders
    # records must be read in the index's order, on the first page and past its anchor.
    store = bulk_store(agent, 200)
    models.MemoryRecord.objects.filter(store=store, external_id__lt="r0000020").update(updated_at=None)
    first = alice_client.get(memory_url(agent, store=store.pk, sort=sort))
    with CaptureQueriesContext(connection) as ctx:
        alice_client.get(first.context["memory"].records.next_url)
        alice_client.get(memory_url(agent, store=store.pk, sort=sort))
    ordered = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('SELECT "agents_memoryrecord"."id"')
               and "ORDER BY" in q["sql"]]
    assert ordered
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_sort = off")  # a sort then shows only where no index gives the order
        for sql in ordered:
            cursor.execute(f"EXPLAIN {sql}")
            plan = [str(row[-1]) for row in cursor.fetchall()]
            # (PostgreSQL's Incremental Sort orders the ids within one value, read in order from the index: fine.)
            full_sorts = [line for line in plan if "TEMP B-TREE FOR ORDER BY" in line
                          or re.match(r"\s*(->\s+)?Sort\s+\(", line)]
            assert full_sorts == [], (sql, plan)


# --- the links to it ---------------------------------------------------------------------------------------------


def test_the_agent_page_the_session_page_and_the_list_link_the_memory(alice_client, friday, agent, make_session,
                                                                      django_assert_max_num_queries):
    plain = make_session(TRAVEL, title="No memory here")
    session = models.Session.objects.get(agent=friday)
    agent_page = alice_client.get(friday.get_absolute_url()).content.decode()
    assert f'<a href="{memory_url(friday)}">2 stores</a>' in agent_page
    assert "none stored" in alice_client.get(agent.get_absolute_url()).content.decode()
    assert f'id="agent-memory-link" href="{memory_url(friday)}"' in alice_client.get(
        session.get_absolute_url()).content.decode()
    assert 'id="agent-memory-link"' not in alice_client.get(plain.get_absolute_url()).content.decode()
    listing = alice_client.get("/").content.decode()
    assert f'class="memory-link" href="{memory_url(friday)}"' in listing
    assert f'href="{memory_url(agent)}"' not in listing
    # One query for the whole page, not one per row.
    for i in range(20):
        make_session(TRAVEL, title=f"More {i}")
    with django_assert_max_num_queries(13):
        alice_client.get("/")


def test_a_store_the_project_shares_gives_each_of_its_agents_a_memory_link(alice_client, agent, make_session,
                                                                           project):
    make_session(TRAVEL, title="Shared memory")
    import_mem0_history(project)
    assert f'class="memory-link" href="{memory_url(agent)}"' in alice_client.get("/").content.decode()


# --- a record ----------------------------------------------------------------------------------------------------


@pytest.fixture
def busy(agent, make_session) -> models.MemoryRecord:
    return busy_record(agent, make_session(TRAVEL, title="Trip"), versions=45, reads=45)


def test_it_shows_a_records_versions_diff_and_reads(alice_client, friday):
    record = models.MemoryRecord.objects.get(text="User prefers high-speed trains over flights")
    response = alice_client.get(record_url(record))
    assert response.status_code == 200
    page = response.content.decode()
    # The versions, newest first, with their op.
    assert [row.version.number for row in response.context["page"].versions] == [2, 1]
    assert re.search(r'id="v-2".*?<span class="op op-update">UPDATE</span>.*?id="v-1".*?op-add">ADD<', page, re.S)
    # The diff of the last two, word by word.
    assert ('<div class="word-diff" id="word-diff">User prefers <ins class="ins">high-speed </ins>trains over '
            'flights</div>') in page
    # The read: its query, rank, the version sent, and a link to the message that carried it.
    session = models.Session.objects.get(agent=friday)
    assert "Make me a plan for the trip." in page
    assert f'href="{session.get_absolute_url()}?at=7#m-7" class="read-message"' in page
    assert '<a href="#v-1" class="mono">v1</a>' in page and not response.context["page"].reads[0].stale
    # And the recall itself, on its own page.
    recall = response.context["page"].reads[0].item.recall
    assert f'<a class="small read-recall" href="/memory/recalls/{recall.pk}/"' in page


def test_it_links_a_version_to_the_message_that_caused_it(alice_client, project):
    letta = import_letta(project)
    record = models.MemoryRecord.objects.get(store__agent=letta, external_id="persona")
    session = models.Session.objects.get(agent=letta)
    page = alice_client.get(record_url(record)).content.decode()
    assert f'<a href="{session.get_absolute_url()}?at=0#m-0" class="cause-link">' in page
    assert "message #0" in page


def test_it_diffs_any_two_versions_at_a_shareable_address(alice_client, busy):
    response = alice_client.get(record_url(busy), {"from": 3, "to": 40})
    diff = response.context["page"].diff
    assert (diff.left.number, diff.right.number, diff.segments) == (
        3, 40, [("=", "the user likes version "), ("-", "3"), ("+", "40")])
    page = response.content.decode()
    assert 'name="from" min="1" max="45" value="3"' in page and 'value="40"' in page
    assert f'id="diff-json" href="/api/memory/records/{busy.pk}/diff/?from=3&amp;to=40"' in page
    # Each version links its changes from the one before, keeping where the rest of the page stands.
    assert f'href="{record_url(busy)}?from=44&amp;to=45#diff"' in page
    wrong = alice_client.get(record_url(busy), {"from": 3, "to": 99}).content.decode()
    assert "No version 99: this record has versions 1 to 45." in wrong


def test_it_marks_a_read_that_sent_an_older_version_than_the_record_had(alice_client, busy):
    reads = alice_client.get(record_url(busy)).context["page"].reads
    # Newest first: read 44 (at minute 44) sent v45 of 45... read i sends v(i+1), or v(i) when i is odd.
    assert [(r.item.version, r.current_then, r.stale) for r in reads[:3]] == [
        (45, 45, False), (43, 44, True), (43, 43, False)]
    page = alice_client.get(record_url(busy)).content.decode()
    assert '<span class="badge badge-error" title="The record was at v44 when this was sent">stale: v44 then</span>' \
        in page


def test_a_read_links_the_version_it_sent_in_the_timeline(alice_client, busy):
    page = alice_client.get(record_url(busy)).context["page"]
    links = {r.item.version: r.version_url for r in page.reads}
    # v45 is on the page (the newest 20 versions: 45 to 26); v25 is on the next page of versions.
    assert links[45] == "#v-45"
    assert links[25] == f"{record_url(busy)}?versions_before=26#v-25"
    assert 'id="v-25"' in alice_client.get(links[25]).content.decode()


def test_it_pages_versions_and_reads_each_on_its_own(alice_client, busy):
    first = alice_client.get(record_url(busy)).context["page"]
    assert [v.version.number for v in first.versions][:2] == [45, 44] and len(first.versions) == 20
    assert not first.versions_paging.newer_url
    older = alice_client.get(first.versions_paging.older_url).context["page"]
    assert [v.version.number for v in older.versions][0] == 25 and older.reads[0].item.pk == first.reads[0].item.pk
    last = alice_client.get(older.versions_paging.older_url).context["page"]
    assert [v.version.number for v in last.versions] == list(range(5, 0, -1)) and not last.versions_paging.older_url
    newer = alice_client.get(last.versions_paging.newer_url).context["page"]
    assert [v.version.number for v in newer.versions] == list(range(25, 5, -1))
    # The reads page on their own and keep the versions' place.
    reads = alice_client.get(older.reads_paging.older_url).context["page"]
    assert len(reads.reads) == 20 and reads.reads[0].item.recall.query == "what does the user like? (24)"
    assert [v.version.number for v in reads.versions][0] == 25
    back = alice_client.get(reads.reads_paging.newer_url).context["page"]
    assert [r.item.pk for r in back.reads] == [r.item.pk for r in first.reads]


@pytest.mark.parametrize("part", ["versions", "diff", "reads"])
def test_it_answers_htmx_with_the_part_asked_for(alice_client, busy, part):
    page = alice_client.get(record_url(busy), {"from": 1, "to": 2},
                            headers={"HX-Request": "true", "HX-Target": part}).content.decode()
    assert page.lstrip().startswith(f'<section id="{part}"')
    assert page.count("<section") == 1 and "<html" not in page


def test_a_record_page_links_its_json_twin(alice_client, busy):
    page = alice_client.get(record_url(busy)).content.decode()
    assert f'id="record-json" href="/api/memory/records/{busy.pk}/"' in page
    twin = alice_client.get(f"/api/memory/records/{busy.pk}/").json()
    assert (twin["id"], twin["versions"][0]["number"]) == (busy.pk, 1)
    diff = alice_client.get(f"/api/memory/records/{busy.pk}/diff/", {"from": 3, "to": 40}).json()
    assert diff["diff"] == [["=", "the user likes version "], ["-", "3"], ["+", "40"]]


def test_a_record_page_escapes_what_the_library_wrote(alice_client, agent, make_session):
    record = busy_record(agent, make_session(TRAVEL), versions=2, reads=1)
    models.RecordVersion.objects.filter(record=record, number=2).update(text="<img src=x onerror=alert(1)>")
    models.Recall.objects.update(query="<script>q()</script>")
    page = alice_client.get(record_url(record)).content.decode()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script>q()" not in page and "&lt;script&gt;q()&lt;/script&gt;" in page


def test_the_record_page_costs_the_same_queries_with_10_or_2000_versions_and_reads(alice_client, agent, make_session):
    session = make_session(TRAVEL)
    small = busy_record(agent, session, versions=10, reads=10)
    big = busy_record(agent, session, versions=2000, reads=2000)
    counts = []
    for record in (small, big):
        for query in ({}, {"versions_before": 5, "reads_after": 0}):
            with CaptureQueriesContext(connection) as ctx:
                assert alice_client.get(record_url(record), query).status_code == 200
            counts.append(len(ctx.captured_queries))
    assert counts[:2] == counts[2:], counts


def test_a_records_time_is_read_as_written(alice_client, busy):
    # 45 versions one a minute from T0: the last at 09:44 UTC.
    assert busy.updated_at == T0 + dt.timedelta(minutes=44)
    assert '<time datetime="2026-03-01T09:44:00+00:00"' in alice_client.get(record_url(busy)).content.decode()
