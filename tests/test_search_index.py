"""The session list's text search through its trigram index (FTS5 on SQLite, pg_trgm on PostgreSQL): the same
sessions as a plain scan, the messages read once per request, and the filter's tool names stored."""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agents import access, models
from agents.sessions.list_page import SESSIONS_PER_PAGE
from agents.store import listing

TEXTS = [
    "Weather in Paris?", "PARIS is sunny", "an éclair in Paris", "ÉCLAIR", "100% sure_thing", 'He said "hi"',
    "tabs\tand\nnewlines", "日本語のテキスト", "naïve café", "call_abc123 answered", "", "ab",
]
QUERIES = [
    "paris", "Paris", "PARIS", "éclair", "ÉCLAIR", "clair", "100%", "_thing", "% s", '"hi"', "hi", "ab", "a", "zz",
    "日本語", "本語の", "café", "CAFÉ", "ïve", "and\nnew", "call_abc123", "in Paris", "weather in paris?", "sure_",
]


@contextmanager
def without_index(settings) -> Iterator[None]:
    """The plain scan: the index is not asked for (and on PostgreSQL the planner may not use it either)."""
    settings.MEMORYVIZ_SEARCH_INDEX = False
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET enable_bitmapscan = off")
            cursor.execute("SET enable_indexscan = off")
    try:
        yield
    finally:
        settings.MEMORYVIZ_SEARCH_INDEX = True
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("RESET enable_bitmapscan")
                cursor.execute("RESET enable_indexscan")


def found(user, q: str) -> list[int]:
    return list(listing.sessions_filtered(user, listing.SessionFilters(q=q)).values_list("pk", flat=True))


@pytest.fixture
def stored(make_session, other_agent) -> list[models.Session]:
    sessions = [make_session([{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}])
                for text in TEXTS]
    # Someone else's session with the same words is never found for alice, with the index or without.
    make_session([{"role": "user", "content": "Weather in Paris? PARIS éclair"}], agent=other_agent)
    return sessions


def test_the_index_exists_on_this_database(db) -> None:
    assert listing.search_indexed()


def test_it_finds_the_same_sessions_with_and_without_its_index(stored, alice, settings) -> None:
    with_index = {q: found(alice, q) for q in QUERIES}
    with without_index(settings):
        plain = {q: found(alice, q) for q in QUERIES}
    assert with_index == plain
    assert with_index["paris"] and with_index["100%"] and with_index["日本語"]
    assert with_index["zz"] == []


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet="aAbBéÉ_%\" x", min_size=0, max_size=12), min_size=1, max_size=6),
       q=st.text(alphabet="aAbBéÉ_%\" x", min_size=1, max_size=5))
def test_any_text_and_query_find_the_same_sessions_either_way(make_session, alice, settings, texts, q) -> None:
    for text in texts:
        make_session([{"role": "user", "content": text}])
    with_index = found(alice, q)
    with without_index(settings):
        plain = found(alice, q)
    assert with_index == plain


def test_it_keeps_the_index_in_step_with_every_write(stored, alice, make_session) -> None:
    target = make_session([{"role": "user", "content": "unique zebra words"}])
    assert found(alice, "zebra") == [target.pk]
    models.Message.objects.filter(session=target).update(content="unique okapi words")
    assert found(alice, "zebra") == [] and found(alice, "okapi") == [target.pk]
    target.delete()
    assert found(alice, "okapi") == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            # FTS5 compares every indexed row with the messages table: nothing stale, nothing missing.
            cursor.execute("INSERT INTO agents_message_fts(agents_message_fts, rank) VALUES ('integrity-check', 1)")


def _message_reads(queries: list[dict[str, str]]) -> list[str]:
    return [q["sql"] for q in queries if "agents_message" in q["sql"]]


def test_it_reads_messages_once_per_list_request(stored, alice_client) -> None:
    with CaptureQueriesContext(connection) as ctx:
        response = alice_client.get("/?q=paris")
    page = response.content.decode()
    # A session found by a list search opens on its first hit: its link carries the query.
    assert response.status_code == 200 and f'href="/sessions/{stored[0].pk}/?q=paris"' in page
    assert f'href="/sessions/{stored[4].pk}/' not in page
    reads = _message_reads(ctx.captured_queries)
    assert len(reads) == 1, reads
    if connection.vendor == "sqlite":
        assert "agents_message_fts" in reads[0]


def _list_search_parameters(client, q: str) -> int:
    """The most parameters any one query of a list request for ``q`` carried."""
    widest = [0]

    def spy(execute, sql, params, many, context):
        widest[0] = max(widest[0], len(params or ()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        response = client.get("/", {"q": q})
    assert response.status_code == 200
    return widest[0]


def test_the_sessions_found_go_into_the_list_s_queries_as_one_parameter(make_session, alice, alice_client) -> None:
    """However many sessions the index finds, the list's count and page carry them in one parameter on
    PostgreSQL: a placeholder per id made each query one that psycopg parses again at every execution (too long
    for its cache) and Django prepares id by id. Either way the list counts and shows the sessions found."""
    def sightings(animal: str, count: int) -> list[models.Session]:
        return [make_session([{"role": "user", "content": f"a {animal}, sighting {k}"}]) for k in range(count)]

    few, many = sightings("quokka", SESSIONS_PER_PAGE + 2), sightings("wombat", 2 * SESSIONS_PER_PAGE)
    make_session([{"role": "user", "content": "nothing to see"}])
    assert sorted(found(alice, "quokka")) == sorted(s.pk for s in few)
    assert sorted(found(alice, "wombat")) == sorted(s.pk for s in many)
    page = alice_client.get("/", {"q": "wombat"}).content.decode()
    assert sum(f'href="/sessions/{s.pk}/?q=wombat"' in page for s in many) == SESSIONS_PER_PAGE
    assert f"{len(many)} sessions" in page
    # Both pages show a full page of sessions (the widest query: the page's rows' labels); only how many were
    # found differs.
    with_few = _list_search_parameters(alice_client, "quokka")
    with_many = _list_search_parameters(alice_client, "wombat")
    if connection.vendor == "postgresql":
        assert with_many == with_few <= SESSIONS_PER_PAGE, (with_few, with_many)


def _loops_over_messages(plan: dict) -> list[int]:
    """How many times each scan of agents_message in an EXPLAIN ANALYZE (JSON) plan ran."""
    loops = [plan["Actual Loops"]] if plan.get("Relation Name") == "agents_message" else []
    for child in plan.get("Plans", []):
        loops += _loops_over_messages(child)
    return loops


def test_the_matching_messages_are_read_once_whatever_plan_joins_them_to_the_scope(make_session, alice,
                                                                                      alice_client) -> None:
    """The index lookup finds the matching messages by themselves, then keeps those of sessions in the user's
    scope: on PostgreSQL, even a planner told to join by nested loops (as it chose on a low guess of the scope's
    size: every message of each session in scope read by the session's index, 1.6 s at 1,000,000 messages) reads
    the messages once. On both databases the list finds the same sessions."""
    mine = [make_session([{"role": "user", "content": f"turn {k}"} for k in range(30)]
                         + [{"role": "assistant", "content": "a numbat, at last" if k % 2 else "nothing"}])
            for k in range(12)]
    with CaptureQueriesContext(connection) as ctx:
        page = alice_client.get("/", {"q": "numbat"}).content.decode()
    assert sorted(found(alice, "numbat")) == sorted(s.pk for s in mine[1::2])
    assert all(f'href="/sessions/{s.pk}/?q=numbat"' in page for s in mine[1::2])
    if connection.vendor == "postgresql":
        lookup = next(q["sql"] for q in ctx.captured_queries if 'FROM "agents_message"' in q["sql"])
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE agents_message")
            cursor.execute("SET enable_hashjoin = off")
            cursor.execute("SET enable_mergejoin = off")
            cursor.execute("SET enable_seqscan = off")  # the sessions' own index over agents_message is an option
            try:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + lookup)
                plan = cursor.fetchone()[0]
            finally:
                cursor.execute("RESET ALL")
        plan = plan[0]["Plan"] if isinstance(plan, list) else json.loads(plan)[0]["Plan"]
        assert _loops_over_messages(plan) == [1], json.dumps(plan, indent=1)


def test_a_text_shorter_than_a_trigram_is_found_by_a_plain_scan(stored, alice, alice_client) -> None:
    with CaptureQueriesContext(connection) as ctx:
        assert alice_client.get("/?q=ab").status_code == 200
    assert not any("agents_message_fts" in q["sql"] for q in ctx.captured_queries)
    assert found(alice, "ab") == [s.pk for s in access.sessions_for_user(alice).filter(
        pk__in=models.Message.objects.filter(content__icontains="ab").values("session_id"))]


def test_it_suggests_tool_names_stored_per_project_without_reading_tool_calls(make_session, alice_client,
                                                                                other_agent) -> None:
    make_session([{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "book_hotel", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sun"},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"}])
    make_session([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "secret_tool", "arguments": "{}"}}]}], agent=other_agent)
    with CaptureQueriesContext(connection) as ctx:
        page = alice_client.get("/").content.decode()
    assert '<option value="book_hotel">' in page and '<option value="get_weather">' in page
    assert "secret_tool" not in page
    assert not any("agents_toolcall" in q["sql"] for q in ctx.captured_queries)


def test_the_table_fragment_skips_the_filter_choices(make_session, alice_client) -> None:
    make_session([{"role": "user", "content": "hello"}])
    with CaptureQueriesContext(connection) as ctx:
        response = alice_client.get("/?page=1", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'id="session-table"' in response.content.decode()
    assert not any("agents_toolname" in q["sql"] or "agents_toolcall" in q["sql"] for q in ctx.captured_queries)


def test_an_import_that_fails_leaves_no_tool_name(db, tmp_path, agent) -> None:
    import json

    from agents.transfer import imports

    good = {"external_id": "a", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "leaky_tool", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}]}
    bad = {"external_id": "b", "messages": [{"role": "user", "content": "x", "name": "n" * 300}]}
    path = tmp_path / "n.json"
    path.write_text(json.dumps({"format": "memoryviz", "version": 1, "sessions": [good, bad]}))
    with pytest.raises(imports.ImportFailed):
        imports.import_file(path, project=agent.project, agent=agent)
    assert not models.ToolName.objects.filter(name="leaky_tool").exists()
    path.write_text(json.dumps({"format": "memoryviz", "version": 1, "sessions": [good]}))
    imports.import_file(path, project=agent.project, agent=agent)
    assert models.ToolName.objects.filter(project=agent.project, name="leaky_tool").exists()
