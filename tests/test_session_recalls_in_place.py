"""Recalled memory in place on the session page: the message carrying a recall shows what was recalled (the store, the
query and its parameters, each item with rank and score, linked to its record at the version sent, or said to match
no record) with the text the model read under "as sent"; each later reply sent a persisted recall again says so. On
files the libraries wrote (AgentScope's third turn with mem0's records; AutoGen's save_state after two runs), agent
text escaped everywhere, and a page of a long session with recalls costs the same queries wherever it stands and
whether or not it holds any recall."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.ledger import findings
from agents.transfer import imports
from tests.memory_findings import STALE_RECORD, import_turn3
from tests.paths import MEMORY_SAMPLES

EVIL = "<x-agent onload=alert(1)>&"
ESCAPED = "&lt;x-agent onload=alert(1)&gt;&amp;"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def turn3(project, tmp_path) -> models.Session:
    return import_turn3(project, tmp_path / "mine")


def article(page: str, seq: int) -> str:
    return page.split(f'<article id="m-{seq}"')[1].split("</article>")[0]


def panels(page: str, seq: int) -> list[str]:
    return re.findall(r'<section class="recall-panel".*?</section>', article(page, seq), flags=re.S)


def items(panel: str) -> list[str]:
    return re.findall(r'<li class="recall-item">.*?</li>', panel, flags=re.S)


def sent_again(page: str, seq: int) -> str:
    found = re.search(r'<div class="sent-again-note[^"]*"[^>]*>(.*?)</div>', article(page, seq), flags=re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)) if found else ""


def test_the_long_term_memory_message_shows_its_store_query_and_items_linked_to_record_and_version(
        alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    [panel] = panels(page, 7)
    assert '<span class="recall-store">long-term memory of Friday</span>' in panel
    assert '<q class="recall-query-text">Make me a plan for the trip.</q>' in panel
    assert '<span class="recall-param"><span class="mono">limit</span> 5</span>' in panel
    assert "stays in the list" in panel  # AgentScope keeps the message: persisted
    first, second = items(panel)
    assert "User is planning a trip to Hangzhou next week" in first and "#1" in first
    assert "User prefers trains over flights" in second and "#2" in second
    assert "no score" in first  # AgentScope's long-term memory sends no score
    # Each linked to its record at the version this recall sent: mem0 updated the stale one later (version 2).
    stale = models.MemoryRecord.objects.get(external_id=STALE_RECORD)
    assert stale.version_count == 2
    linked = [i for i in (first, second) if f'href="/memory/records/{stale.pk}/#v-1"' in i]
    assert len(linked) == 1 and "record v1" in linked[0]
    for item in (first, second):
        href = re.search(r'class="recall-record small" href="([^"]+)"', item)
        assert href is not None
        record_page = alice_client.get(href.group(1).split("#")[0]).content.decode()
        assert 'id="v-1"' in record_page  # the anchor the link lands on
        assert re.search(r">\s*User (is planning|prefers)", record_page)
    # The text the model read stays a click away, escaped, under "as sent".
    raw = article(page, 7).split('<details class="as-sent">')[1].split("</details>")[0]
    assert "&lt;long_term_memory&gt;The content below are retrieved from long-term memory" in raw
    assert "<long_term_memory>" not in page
    # The recall itself is one click away: its page, to mark its items and try another limit.
    [recall] = models.Recall.objects.filter(session=turn3, seq=7)
    assert f'<a class="small recall-open" href="/memory/recalls/{recall.pk}/"' in panel
    assert alice_client.get(f"/memory/recalls/{recall.pk}/").status_code == 200


def test_knowledge_items_without_a_record_say_so(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    [panel] = panels(page, 8)
    assert '<span class="recall-store">knowledge of Friday</span>' in panel
    listed = items(panel)
    assert len(listed) == 3
    assert all("matches no record" in i and "recall-record" not in i for i in listed)
    assert "West Lake is the main sight of Hangzhou." in listed[1]
    # Messages carrying no recall keep their text as before, with no panel and no "as sent".
    assert panels(page, 6) == [] and 'class="as-sent"' not in article(page, 6)
    assert "Make me a plan for the trip." in article(page, 6)


def test_each_later_reply_is_marked_with_the_persisted_recalls_it_was_sent_again(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    # #3 received the knowledge of #2 first; #5 again. #9 received #7 and #8 first and #2 again.
    assert sent_again(page, 3) == ""
    assert sent_again(page, 5) == "sent again: recall at #2"
    assert sent_again(page, 9) == "sent again: recall at #2"
    assert sent_again(page, 11) == "sent again: recalls at #8, #7, #2"
    assert sent_again(page, 15) == "sent again: recalls at #8, #7, #2"
    assert sent_again(page, 19) == "sent again: recalls at #14, #13, #8 and 2 earlier"
    link = f'<a href="/sessions/{turn3.pk}/?at=13#m-13" title="Recalled from long-term memory of Friday">#13</a>'
    assert link in article(page, 19)
    # User and tool messages are not calls: not marked.
    assert all(sent_again(page, seq) == "" for seq in (6, 10, 12, 16))


def test_a_later_page_names_the_persisted_recalls_of_earlier_pages(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url(), {"after": 15}).content.decode()
    assert 'id="m-15"' not in page and 'id="m-17"' in page
    assert sent_again(page, 17) == "sent again: recalls at #14, #13, #8 and earlier ones"


def test_autogens_memory_in_the_system_message_says_its_store_is_not_known(alice_client, project) -> None:
    imports.import_file(MEMORY_SAMPLES / "autogen" / "assistant_state_after_run2.json", project=project)
    session = models.Session.objects.get(agent__project=project)
    page = alice_client.get(session.get_absolute_url()).content.decode()
    [panel] = panels(page, 6)
    assert "a store not known" in panel and "(no query)" in panel
    assert [re.sub(r"<[^>]+>", "", re.search(r'<div class="recall-text">(.*?)</div>', i, flags=re.S).group(1))
            for i in items(panel)] == ["The user prefers metric units", "{&#x27;home_city&#x27;: &#x27;Paris&#x27;}"]
    assert sent_again(page, 2) == ""  # the call that received #1 first
    assert sent_again(page, 4) == "sent again: recall at #1"
    assert sent_again(page, 7) == "sent again: recall at #1"


def _session_with_recall(agent: models.Agent, *, text: str, store: str = "s", query: str = "q",
                         params: dict | None = None) -> models.Session:
    session = models.Session.objects.create(agent=agent, external_id=f"one-{len(text)}", message_count=3)
    models.Message.objects.bulk_create([
        models.Message(session=session, seq=0, role="user", content="hello", token_count=1, token_running=1),
        models.Message(session=session, seq=1, role="user", content=f"<memory>{text}</memory>", token_count=1,
                       token_running=2),
        models.Message(session=session, seq=2, role="assistant", content="ok", token_count=1, token_running=3)])
    memory = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=store, kind="records")
    recall = models.Recall.objects.create(session=session, seq=1, store=memory, query=query,
                                          params=params or {"limit": 3, "threshold": 0.5}, at=T0, item_count=1)
    models.RecallItem.objects.create(recall=recall, rank=1, score=0.8312, text=text)
    findings.session_findings_store(session)
    return session


def test_a_hostile_recall_is_escaped_everywhere(alice_client, agent) -> None:
    session = _session_with_recall(agent, text=f"Likes {EVIL}", store=f"store {EVIL}", query=f"what {EVIL}",
                                   params={EVIL: EVIL})
    page = alice_client.get(session.get_absolute_url()).content.decode()
    [panel] = panels(page, 1)
    assert panel.count(ESCAPED) == 5  # store, query, the parameter's name and value, the item
    assert "score 0.831" in panel and "threshold" not in panel
    assert EVIL not in page


def test_a_long_recalled_text_is_folded(alice_client, agent) -> None:
    text = "A fact. " * 100
    session = _session_with_recall(agent, text=text)
    [panel] = panels(alice_client.get(session.get_absolute_url()).content.decode(), 1)
    fold = panel.split('<details class="recall-fold">')[1].split("</details>")[0]
    assert "(800 chars)" in fold and text.strip() in fold
    assert '<span class="recall-param"><span class="mono">threshold</span> 0.5</span>' in panel


def _long_session(agent: models.Agent, messages: int, *, recalls_below: int | None = None) -> models.Session:
    """``messages`` messages (a user message, a memory message, a reply, a user message again, by fours); every memory
    message (below ``recalls_below``) carries a persisted recall of two items, one matching a record."""
    session = models.Session.objects.create(agent=agent, external_id=f"long-{messages}-{recalls_below}",
                                            message_count=messages)
    roles = ("user", "user", "assistant", "user")
    models.Message.objects.bulk_create([
        models.Message(session=session, seq=i, role=roles[i % 4], content=f"m{i}", token_count=3,
                       token_running=3 * (i + 1)) for i in range(messages)], batch_size=2000)
    store = models.MemoryStore.objects.create(project=agent.project, agent=agent, name=f"long {messages}",
                                              kind="records")
    record = models.MemoryRecord.objects.create(store=store, external_id="r1", text="a fact", version_count=1)
    models.RecordVersion.objects.create(record=record, number=1, op="ADD", text="a fact")
    carried = range(1, messages if recalls_below is None else recalls_below, 4)
    rows = models.Recall.objects.bulk_create([
        models.Recall(session=session, seq=seq, store=store, query=f"q{seq}", params={"limit": 2}, persisted=True,
                      at=T0, item_count=2) for seq in carried], batch_size=2000)
    models.RecallItem.objects.bulk_create([
        models.RecallItem(recall=r, rank=rank, score=1 / rank, text="a fact" if rank == 1 else f"other {r.pk}",
                          record=record if rank == 1 else None, version=1 if rank == 1 else None)
        for r in rows for rank in (1, 2)], batch_size=2000)
    findings.session_findings_store(session)
    return session


def _get(client, session: models.Session, query: dict) -> tuple[int, str, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(session.get_absolute_url(), query)
    assert response.status_code == 200
    return len(ctx.captured_queries), response.content.decode(), [q["sql"] for q in ctx.captured_queries]


def test_a_page_costs_the_same_queries_in_a_long_session_wherever_it_stands_with_or_without_recalls(
        alice_client, agent) -> None:
    short = _long_session(agent, 40)
    long = _long_session(agent, 20_000)  # 5,000 persisted recalls, 10,000 items
    elsewhere = _long_session(agent, 20_000, recalls_below=1_000)  # recalls on its first pages only
    assert models.Recall.objects.filter(session=long).count() == 5_000
    counts, pages = [], []
    for session, query in ((short, {}), (long, {}), (long, {"at": 15_000}), (long, {"at": 19_999}),
                           (elsewhere, {"at": 15_000})):
        count, page, sql = _get(alice_client, session, query)
        counts.append(count)
        pages.append(page)
        # What was recalled: one range of (session, seq) joined to the items, and the persisted ones before.
        assert len([s for s in sql if 'FROM "agents_recallitem"' in s or 'JOIN "agents_recallitem"' in s]) == 1
    assert counts == [counts[0]] * 5, counts
    # At 15,000 the page holds 75 recalls, each with its items; each reply was sent the earlier ones again.
    page = pages[2]
    assert page.count('<section class="recall-panel"') == 75
    [panel] = panels(page, 15_001)
    assert "<q class=\"recall-query-text\">q15001</q>" in panel and "matches no record" in panel
    assert re.search(r'href="/memory/records/\d+/#v-1"', panel)
    assert sent_again(page, 15_002) == "sent again: recalls at #14997, #14993, #14989 and earlier ones"
    assert sent_again(page, 15_006) == "sent again: recalls at #15001, #14997, #14993 and earlier ones"
    # A page without recalls of its own still says what its replies were sent again: the last before it.
    assert 'class="recall-panel"' not in pages[4]
    assert sent_again(pages[4], 15_002) == "sent again: recalls at #997, #993, #989 and earlier ones"


def test_a_session_without_recalls_reads_no_recall_for_the_page(alice_client, make_session) -> None:
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    count, page, sql = _get(alice_client, session, {})
    assert not [s for s in sql if "agents_recallitem" in s]
    assert len([s for s in sql if "agents_recall" in s]) == 1  # the findings' aggregate, which counts them
    assert 'class="recall-panel"' not in page and "sent again" not in page


def test_a_reply_whose_captured_call_was_not_sent_the_recall_is_not_marked(alice_client, turn3) -> None:
    # Live capture saw what the calls behind #11 and #15 received: #11's framework had cut #2 to #8 from its
    # input, #15's had kept everything.
    models.LlmCall.objects.create(session=turn3, trace_id="t" * 32, span_id="a" * 16, placed=True,
                                  sent=[0, 1, *range(9, 11)], reply_seq=11)
    models.LlmCall.objects.create(session=turn3, trace_id="t" * 32, span_id="b" * 16, placed=True,
                                  sent=list(range(15)), reply_seq=15)
    page = alice_client.get(turn3.get_absolute_url()).content.decode()
    assert sent_again(page, 11) == ""
    assert sent_again(page, 15) == "sent again: recalls at #8, #7, #2"
    assert sent_again(page, 19) == "sent again: recalls at #14, #13, #8 and 2 earlier"  # no captured call


def test_a_search_hit_in_the_recalled_text_opens_as_sent(alice_client, turn3) -> None:
    page = alice_client.get(turn3.get_absolute_url(), {"q": "maybe useful", "at": 7}).content.decode()
    assert '<details class="as-sent" open>' in article(page, 7)
    assert "<mark" in article(page, 7).split('<details class="as-sent" open>')[1]
    assert '<details class="as-sent">' in article(page, 8)  # no hit there: closed


def test_a_page_loaded_over_htmx_shows_its_recalls(alice_client, turn3) -> None:
    response = alice_client.get(turn3.get_absolute_url(), {"after": 5}, headers={"HX-Request": "true"})
    page = response.content.decode()
    assert "<html" not in page  # the fragment "load more" appends
    assert 'id="m-5"' not in page and len(panels(page, 7)) == 1
    assert sent_again(page, 9) == "sent again: recall at #2"
