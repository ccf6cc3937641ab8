"""Memory findings flagged in place, like violations: on the session page a summary at the top (how many of each
kind, what to do about it, a link to the first) and each finding on the message it is on, read for the page's range
only (a page of a long session costs what a short one does); on the record page, the record's findings. On files the
libraries wrote (AgentScope's third turn with mem0's records; AutoGen's save_state after two runs), agent text
escaped everywhere."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from agents import models
from agents.ledger import findings
from agents.transfer import imports
from tests.memory_findings import STALE_RECORD, import_turn3, mem0_duplicates
from tests.paths import MEMORY_SAMPLES

EVIL = "<x-agent onload=alert(1)>&"
ESCAPED = "&lt;x-agent onload=alert(1)&gt;&amp;"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def advice(kind: str) -> str:
    """What to do about a kind of finding, as the page writes it (escaped: the advice has apostrophes)."""
    return str(escape(findings.advice(kind)))


@pytest.fixture
def turn3(project, tmp_path) -> models.Session:
    return import_turn3(project, tmp_path / "mine")


def article(page: str, seq: int) -> str:
    return page.split(f'<article id="m-{seq}"')[1].split("</article>")[0]


def notes(page: str, seq: int) -> list[str]:
    return re.findall(r'<div class="memory-finding-note" role="note"><strong>([a-z_]+)</strong>', article(page, seq))


# --- the session page ------------------------------------------------------------------------------------------------


def test_the_session_page_sums_up_its_findings_by_kind_with_what_to_do(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    summary = page.split('<section id="memory-findings"')[1].split("</section>")[0]
    assert "Memory findings <span class=\"muted\">(4)</span>" in summary
    kinds = re.findall(r'<li id="finding-kind-([a-z_]+)">\s*<span class="kind">\1</span> <strong>(\d+)</strong>',
                       summary)
    assert kinds == [("repeated_injection", "3"), ("stale_recall", "1")]  # in DESIGN's order of kinds
    for kind in ("repeated_injection", "stale_recall"):
        assert advice(kind) in summary.split(f'id="finding-kind-{kind}"')[1].split("</li>")[0]
    url = turn3.get_absolute_url()
    assert f'href="{url}?at=8#m-8"' in summary and f'href="{url}?at=13#m-13"' in summary
    assert f'href="/api/sessions/{turn3.pk}/memory-findings/"' in summary
    # The header says how many, linked to the summary.
    assert '<dd id="session-memory-findings"><a href="#memory-findings" class="badge badge-memory"' in page


def test_each_finding_is_flagged_on_the_message_it_is_on(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    assert notes(page, 8) == ["repeated_injection"]
    assert notes(page, 13) == ["stale_recall", "repeated_injection"]
    assert notes(page, 14) == ["repeated_injection"]
    flagged = {int(seq) for seq in re.findall(r'<article id="m-(\d+)" class="[^"]*has-memory-finding', page)}
    assert flagged == {8, 13, 14}
    stale = article(page, 13).split('<div class="memory-finding-note"')[1]
    record = models.MemoryRecord.objects.get(external_id=STALE_RECORD)
    assert f"item 2 sent version 1 of &#x27;{STALE_RECORD}&#x27;; the record was at version 2 by then" in stale
    assert f'href="/memory/records/{record.pk}/"' in stale
    assert f'<div class="finding-advice small">{advice("stale_recall")}</div>' in stale


def test_a_page_without_findings_shows_no_summary_and_no_flag(alice_client, make_session) -> None:
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    page = alice_client.get(session.get_absolute_url()).content.decode()
    assert 'id="memory-findings"' not in page and "memory-finding-note" not in page
    assert 'id="session-memory-findings"' not in page


def test_a_page_loaded_over_htmx_flags_its_messages_without_the_summary(alice_client, turn3) -> None:
    fragment = alice_client.get(turn3.get_absolute_url(), {"after": 10}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="memory-findings"' not in fragment
    assert notes(fragment, 13) == ["stale_recall", "repeated_injection"] and notes(fragment, 14) == [
        "repeated_injection"]


def test_autogens_second_run_is_flagged_where_the_memory_is_sent_again(alice_client, project) -> None:
    imports.import_file(MEMORY_SAMPLES / "autogen" / "assistant_state_after_run2.json", project=project)
    session = models.Session.objects.get(agent__project=project)
    page = alice_client.get(session.get_absolute_url()).content.decode()
    assert notes(page, 6) == ["repeated_injection"]
    assert ("&#x27;The user prefers metric units&#x27; was put into the list at #1 and again at #6" in
            article(page, 6))


def _session_with_searches(agent: models.Agent, messages: int, *, query: str = "q") -> models.Session:
    """``messages`` messages, and on every tenth a search that found nothing (a zero_hit_recall there)."""
    session = models.Session.objects.create(agent=agent, external_id=f"searches-{messages}", message_count=messages)
    models.Message.objects.bulk_create([
        models.Message(session=session, seq=i, role="assistant" if i % 2 else "user", content=f"m{i}",
                       token_count=3, token_running=3 * (i + 1)) for i in range(messages)], batch_size=2000)
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=f"s{messages}",
                                              kind="records")
    models.Recall.objects.bulk_create([models.Recall(session=session, seq=seq, store=store, query=query, at=T0)
                                       for seq in range(0, messages, 10)], batch_size=2000)
    findings.session_findings_store(session)
    return session


def test_the_findings_of_a_page_cost_as_many_queries_in_a_long_session_as_in_a_short_one(alice_client, agent) -> None:
    short, long = _session_with_searches(agent, 20), _session_with_searches(agent, 20_000)
    assert long.memory_finding_count == 2_000
    counts, pages = [], []
    for session, query in ((short, {}), (long, {}), (long, {"at": 15_000})):
        with CaptureQueriesContext(connection) as ctx:
            response = alice_client.get(session.get_absolute_url(), query)
        assert response.status_code == 200
        counts.append(len(ctx.captured_queries))
        pages.append(response.content.decode())
    assert counts[0] == counts[1] == counts[2]
    assert notes(pages[2], 15_000) == ["zero_hit_recall"] and notes(pages[2], 15_001) == []
    # Only the page's flags were read: one range of (session, seq).
    ranges = [q["sql"] for q in ctx.captured_queries if 'FROM "agents_memoryfinding"' in q["sql"]
              and '"seq" >=' in q["sql"]]
    assert len(ranges) == 1
    assert pages[1].count('class="memory-finding-note"') == 30  # 300 messages, one search in ten


def test_a_findings_text_is_escaped_in_the_flag(alice_client, agent) -> None:
    session = _session_with_searches(agent, 4, query=EVIL)
    page = alice_client.get(session.get_absolute_url()).content.decode()
    note = article(page, 0).split('<div class="memory-finding-note"')[1]
    assert ESCAPED in note and EVIL not in page


# --- the record page -------------------------------------------------------------------------------------------------


def test_the_record_page_shows_the_records_findings_with_what_to_do(alice_client, project, tmp_path) -> None:
    imports.import_file(mem0_duplicates(tmp_path, 2, text=f"Likes {EVIL} tea"), project=project)
    first, second = models.MemoryRecord.objects.order_by("external_id")
    page = alice_client.get(f"/memory/records/{first.pk}/").content.decode()
    section = page.split('<section id="findings"')[1].split("</section>")[0]
    assert re.findall(r'<span class="kind">([a-z_]+)</span>', section) == ["noop_write"]
    assert f"version 2 of &#x27;{first.external_id}&#x27; rewrote the same text" in section
    assert '<a href="#v-2" class="mono small" title="The version it is on">v2</a>' in section
    assert advice("noop_write") in section
    page = alice_client.get(f"/memory/records/{second.pk}/").content.decode()
    section = page.split('<section id="findings"')[1].split("</section>")[0]
    assert re.findall(r'<span class="kind">([a-z_]+)</span>', section) == ["duplicate_record"]
    assert ESCAPED in section and EVIL not in page
    assert advice("duplicate_record") in section


def test_a_record_without_findings_shows_none(alice_client, turn3) -> None:
    record = models.MemoryRecord.objects.get(external_id=STALE_RECORD)
    page = alice_client.get(f"/memory/records/{record.pk}/").content.decode()
    assert 'id="findings"' not in page


def test_a_session_without_recalls_reads_one_aggregate_for_its_findings_and_writes_nothing(
        alice_client, make_session) -> None:
    # Stored by a path that does not compute findings (the key is empty): no recall, so nothing to find or store.
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    assert session.memory_findings_key == ""
    with CaptureQueriesContext(connection) as ctx:
        assert alice_client.get(session.get_absolute_url()).status_code == 200
    sql = [q["sql"] for q in ctx.captured_queries]
    assert [s for s in sql if "agents_recall" in s or "agents_memoryfinding" in s] == [
        next(s for s in sql if 'FROM "agents_recall"' in s)]
    assert not [s for s in sql if s.startswith(("UPDATE", "INSERT", "DELETE"))]
