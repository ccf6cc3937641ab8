"""Message.token_running: the running token total stored on each row at import, whatever path stored it."""
from __future__ import annotations

import importlib
import io
import itertools
import json
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import models
from agents.memory.schema import Conversation, parse_messages
from agents.memory.tokens import total_tokens
from agents.sessions import chain
from agents.store import mapping, writing
from agents.transfer import imports

fill_migration = importlib.import_module("agents.migrations.0004_message_token_running")


def _varied(n: int, *, ids: bool = False, start: int = 0) -> list[dict[str, Any]]:
    """Alternating user/assistant messages of different lengths, so that token counts differ row to row."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        message: dict[str, Any] = {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": " ".join(f"word{i}-{k}" for k in range(1 + i % 9)),
        }
        if ids:
            message["external_id"] = f"m{i}"
        out.append(message)
    return out


def _assert_running_totals(session: models.Session) -> list[int]:
    """Every row's token_running is the sum of token_count up to and including it; returns the counts."""
    rows = list(session.messages.order_by("seq").values_list("seq", "token_count", "token_running"))
    assert [seq for seq, _, _ in rows] == list(range(len(rows)))
    counts = [count for _, count, _ in rows]
    assert [running for _, _, running in rows] == list(accumulate(counts))
    return counts


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _native(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "memoryviz", "version": 1, "sessions": sessions}


# --- storing ---------------------------------------------------------------------------------------------------


def test_it_carries_the_running_total_across_import_batches(db, tmp_path, agent, monkeypatch) -> None:
    # A small batch size makes a small file span many batches (the real one is 2,000 messages).
    monkeypatch.setattr(writing, "BATCH_SIZE", 7)
    messages = _varied(53)
    progress: list[int] = []
    report = imports.import_file(_write(tmp_path, "big.json", messages), project=agent.project, agent=agent,
                                 on_messages=progress.append)
    assert len(progress) == 8  # 7 full batches and one of 4: the totals crossed every batch boundary
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    counts = _assert_running_totals(session)
    assert len(counts) == 53 and len(set(counts)) > 1
    assert session.token_total == total_tokens([sum(counts)], session.token_counter)


def test_it_continues_the_stored_running_total_when_a_reimport_appends(db, tmp_path, agent, monkeypatch) -> None:
    monkeypatch.setattr(writing, "BATCH_SIZE", 5)
    first = _native([{"external_id": "conv-1", "messages": _varied(12, ids=True)}])
    imports.import_file(_write(tmp_path, "a.json", first), project=agent.project, agent=agent)
    session = models.Session.objects.get(agent=agent, external_id="conv-1")
    stored_before = _assert_running_totals(session)
    grown = _native([{"external_id": "conv-1", "messages": _varied(12, ids=True) + _varied(23, ids=True, start=12)}])
    report = imports.import_file(_write(tmp_path, "b.json", grown), project=agent.project, agent=agent)
    assert (report.sessions[0].status, report.sessions[0].added, report.sessions[0].skipped) == ("updated", 23, 12)
    session.refresh_from_db()
    counts = _assert_running_totals(session)
    assert counts[:12] == stored_before and len(counts) == 35
    assert session.token_total == total_tokens([sum(counts)], session.token_counter)


def test_it_stores_running_totals_through_session_store(make_session) -> None:
    session = make_session(_varied(40))
    counts = _assert_running_totals(session)
    assert session.token_total == total_tokens([sum(counts)], session.token_counter)


def test_it_chains_batches_through_messages_append(agent) -> None:
    messages = parse_messages(_varied(30))
    session = writing.session_create(agent=agent, conversation=Conversation(external_id="batched"))
    # Explicitly, as a streaming caller does: each batch continues the previous batch's total, no query.
    running = 0
    for start in range(0, 20, 6):
        stored = writing.messages_append(session=session, messages=messages[start:start + 6], start_seq=start,
                                         tokens_before=running)
        assert stored.token_running == running + stored.tokens
        running = stored.token_running
    # Without it, the total is read from the stored message before start_seq.
    stored = writing.messages_append(session=session, messages=messages[24:], start_seq=24)
    assert stored.token_running == running + stored.tokens
    _assert_running_totals(session)


def test_it_refuses_to_continue_a_running_total_from_a_gap(agent) -> None:
    session = writing.session_create(agent=agent, conversation=Conversation(external_id="gap"))
    with pytest.raises(ValueError, match=r"messages\[5\]: no stored message at seq 4"):
        writing.messages_append(session=session, messages=parse_messages(_varied(2)), start_seq=5)
    assert not session.messages.exists()


def test_it_builds_rows_continuing_a_running_total(agent) -> None:
    session = models.Session.objects.create(agent=agent, external_id="rows")
    rows, _ = mapping.message_rows(parse_messages(_varied(4)), session=session, start_seq=10,
                                   token_counts=[3, 5, 7, 11], tokens_before=100)
    assert [r.token_running for r in rows] == [103, 108, 115, 126]
    with pytest.raises(ValueError, match="tokens_before is -1"):
        mapping.message_rows(parse_messages(_varied(1)), session=session, token_counts=[1], tokens_before=-1)


_sessions = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), cuts=st.lists(st.integers(0, 40), max_size=5), explicit=st.booleans())
def test_it_stores_the_same_running_totals_however_the_session_is_split(agent, n, cuts, explicit) -> None:
    messages = parse_messages(_varied(n))
    session = writing.session_create(agent=agent, conversation=Conversation(external_id=f"split-{next(_sessions)}"))
    bounds = sorted({0, n, *(c for c in cuts if c <= n)})
    running = 0
    for lo, hi in itertools.pairwise(bounds):
        stored = writing.messages_append(session=session, messages=messages[lo:hi], start_seq=lo,
                                         tokens_before=running if explicit else None)
        running = stored.token_running
    counts = _assert_running_totals(session)
    assert running == sum(counts)


def test_it_stores_running_totals_for_the_demo_data(db) -> None:
    call_command("seed_demo", stdout=io.StringIO())
    sessions = list(models.Session.objects.all())
    assert any(s.message_count >= 5000 for s in sessions)
    for session in sessions:
        counts = _assert_running_totals(session)
        assert session.token_total == (total_tokens([sum(counts)], session.token_counter) if counts else 0)


# --- the migration that fills rows stored before the column ---------------------------------------------------


def test_the_migration_fills_running_totals_of_sessions_stored_before_it(make_session, monkeypatch) -> None:
    sessions = [make_session(_varied(n)) for n in (0, 1, 9, 26)]
    expected = {s.pk: list(s.messages.order_by("seq").values_list("token_running", flat=True)) for s in sessions}
    models.Message.objects.update(token_running=0)  # as the AddField leaves them
    monkeypatch.setattr(fill_migration, "BATCH", 4)  # several pages of sessions and of messages

    class Editor:  # the part of a schema editor RunPython functions use
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]
    fill_migration.fill_token_running(django_apps, editor)
    for session in sessions:
        assert list(session.messages.order_by("seq").values_list("token_running", flat=True)) == expected[session.pk]
        _assert_running_totals(session)


# --- reading ---------------------------------------------------------------------------------------------------


def test_it_takes_a_pages_total_before_it_from_its_first_row(make_session) -> None:
    session = make_session(_varied(75))
    counts = list(session.messages.order_by("seq").values_list("token_count", flat=True))
    page = chain.session_message_page(session, size=30)
    while page.next_after is not None:
        page = chain.session_message_page(session, after=page.next_after, size=30)
        assert page.tokens_before == sum(counts[: page.rows[0].seq])
    assert page.rows[0].seq == 60


def test_it_shows_the_running_total_of_earlier_pages_on_page_two(alice_client, make_session) -> None:
    session = make_session(_varied(650))
    counts = list(session.messages.order_by("seq").values_list("token_count", flat=True))
    size = chain.MESSAGE_PAGE_SIZE
    response = alice_client.get(session.get_absolute_url(), {"after": size - 1})
    views = response.context["messages"]
    assert views[0].row.seq == size
    assert [v.running_total for v in views] == list(accumulate(counts))[size:2 * size]
    content = response.content.decode()
    article = content[content.index(f'id="m-{size}"'):content.index(f'id="m-{size + 1}"')]
    assert f"Σ {sum(counts[: size + 1]):,}" in article


def test_it_reads_a_deep_page_in_as_many_queries_as_the_first(alice_client, make_session,
                                                               django_assert_num_queries) -> None:
    session = make_session(_varied(2000))
    with django_assert_num_queries(1):
        assert len(chain.session_message_page(session).rows) == chain.MESSAGE_PAGE_SIZE
    with django_assert_num_queries(1):
        assert len(chain.session_message_page(session, after=1499).rows) == chain.MESSAGE_PAGE_SIZE
    url = session.get_absolute_url()
    alice_client.get(url)  # warm the session and the user lookups alike for both pages
    before = len(_queries(alice_client, url, {}))
    with django_assert_num_queries(before):
        assert alice_client.get(url, {"after": 1499}).status_code == 200


def _queries(client: Any, url: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url, params).status_code == 200
    return ctx.captured_queries
