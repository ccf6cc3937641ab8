"""The recall page (/memory/recalls/<id>/): the recall and its items, QA's relevance marks (roles, one mark per person
and item, changed on a second mark, CSRF), the figures they give, the retrieval what-if and its window figures
(on AgentScope's own files and on a hand-made session), escaping, htmx fragments, and another project's recall."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import models
from agents.ledger import context
from agents.memory.schema import Message
from agents.memory.tokens import get_counter
from tests.memory_pages import import_friday
from tests.recall_pages import scored_recall

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def own_tokens(text: str, counter_name: str = "cl100k") -> int:
    """A text's tokens as the counter counts it in a message, less the message's own overhead."""
    counter = get_counter(counter_name)
    return counter.count(Message(role="user", content=text)) - counter.count(Message(role="user", content=""))


@pytest.fixture
def recall(agent) -> models.Recall:
    return scored_recall(agent)


def member(project: models.Project, name: str, role: str) -> User:
    user = User.objects.create_user(name, password=f"pw-{name}-123")
    models.Membership.objects.create(project=project, user=user, role=role)
    return user


def client_of(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def items_of(recall: models.Recall) -> dict[int, models.RecallItem]:
    return {item.rank: item for item in recall.items.all()}


def test_it_shows_the_recall_and_its_items(alice_client, recall):
    page = alice_client.get(f"/memory/recalls/{recall.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "What does the user eat?" in html
    assert "mem0 (user_id=alice)" in html
    assert f'href="/sessions/{recall.session_id}/?at=1#m-1"' in html
    assert "stays in the list" in html
    assert re.search(r'<span class="mono">limit</span> 3', html)
    record = models.MemoryRecord.objects.get(external_id="rec-1")
    assert f'href="/memory/records/{record.pk}/#v-2"' in html
    assert "matches no record" in html
    for rank, score in ((1, "0.900"), (2, "0.500")):
        assert re.search(rf'<tr id="item-{rank}">.*?{score}', html, re.S)
    assert re.search(r'<tr id="item-3">.*?no score', html, re.S)
    assert f'href="/api/memory/recalls/{recall.pk}/"' in html
    # Nothing marked yet: the figures an unmarked item could change are not given.
    assert re.search(r'id="figure-precision".*?<span class="stat-value">—</span>', html, re.S)
    assert re.search(r'id="figure-marked".*?0 of 3', html, re.S)


def test_an_annotator_marks_an_item_and_a_second_mark_changes_it(alice_client, recall, alice):
    items = items_of(recall)
    url = f"/memory/recalls/{recall.pk}/marks/"
    answer = alice_client.post(url, {"item": items[1].pk, "relevant": "yes"})
    assert answer.status_code == 302 and answer["Location"] == f"/memory/recalls/{recall.pk}/#item-1"
    alice_client.post(url, {"item": items[2].pk, "relevant": "yes"})
    alice_client.post(url, {"item": items[2].pk, "relevant": "no"})  # changes her mark, adds none
    assert list(models.RecallItemMark.objects.filter(author=alice).order_by("item__rank").values_list(
        "item__rank", "relevant")) == [(1, True), (2, False)]
    html = alice_client.get(f"/memory/recalls/{recall.pk}/").content.decode()
    assert re.search(r'id="marks-1"><span class="badge badge-ok">relevant</span>', html)
    assert re.search(r'id="marks-2"><span class="badge badge-error">not relevant</span>', html)
    assert 'aria-pressed="true" aria-label="Mark #1 relevant"' in html
    # #3 unmarked: precision and nDCG over all three wait for it; reciprocal rank and hit do not.
    assert re.search(r'id="figure-precision".*?<span class="stat-value">—</span>', html, re.S)
    assert re.search(r'id="figure-reciprocal_rank".*?<span class="stat-value">1</span>', html, re.S)
    assert re.search(r'id="figure-hit".*?<span class="stat-value">1</span>', html, re.S)
    alice_client.post(url, {"item": items[3].pk, "relevant": "no"})
    html = alice_client.get(f"/memory/recalls/{recall.pk}/").content.decode()
    assert re.search(r'id="figure-precision".*?<span class="stat-value">0.333</span>', html, re.S)  # 1 / 3
    assert re.search(r'id="figure-ndcg".*?<span class="stat-value">1</span>', html, re.S)
    assert re.search(r'id="figure-recall".*?<span class="stat-value">—</span>', html, re.S)  # not counted
    # Her count of the store's relevant records gives recall: 1 relevant found of 2.
    alice_client.post(f"/memory/recalls/{recall.pk}/judgement/", {"relevant_total": "2"})
    html = alice_client.get(f"/memory/recalls/{recall.pk}/").content.decode()
    assert re.search(r'id="figure-recall".*?<span class="stat-value">0.5</span>', html, re.S)
    # Taking a mark back.
    alice_client.post(url, {"item": items[3].pk, "relevant": ""})
    assert not models.RecallItemMark.objects.filter(item=items[3]).exists()


def test_the_marks_form_answers_its_region_over_htmx(alice_client, recall):
    items = items_of(recall)
    answer = alice_client.post(f"/memory/recalls/{recall.pk}/marks/", {"item": items[1].pk, "relevant": "yes"},
                               HTTP_HX_REQUEST="true", HTTP_HX_TARGET="quality")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith('<section id="quality"')
    assert "<header" not in html and 'id="what-if"' not in html
    assert re.search(r'id="figure-marked".*?1 of 3', html, re.S)
    bad = alice_client.post(f"/memory/recalls/{recall.pk}/marks/", {"item": items[1].pk, "relevant": "maybe"},
                            HTTP_HX_REQUEST="true")
    assert bad.status_code == 200 and "relevant: yes, no, or blank" in bad.content.decode()
    bad = alice_client.post(f"/memory/recalls/{recall.pk}/marks/", {"item": "999999", "relevant": "yes"})
    assert bad.status_code == 400 and "item: no item 999999" in bad.content.decode()
    bad = alice_client.post(f"/memory/recalls/{recall.pk}/judgement/", {"relevant_total": "-3"})
    assert bad.status_code == 400 and "relevant_total:" in bad.content.decode()


def test_several_people_mark_and_each_sees_the_counts(recall, project):
    ann = member(project, "annie", models.Membership.Level.ANNOTATOR)
    ed = member(project, "eddie", models.Membership.Level.EDITOR)
    viewer = member(project, "vera", models.Membership.Level.VIEWER)
    items = items_of(recall)
    url = f"/memory/recalls/{recall.pk}/marks/"
    assert client_of(ann).post(url, {"item": items[1].pk, "relevant": "yes"}).status_code == 302
    assert client_of(ed).post(url, {"item": items[1].pk, "relevant": "no"}).status_code == 302
    html = client_of(viewer).get(f"/memory/recalls/{recall.pk}/").content.decode()
    assert re.search(r'id="marks-1"><span class="muted">split</span>\s*<span class="muted">\(1 yes · 1 no\)', html)
    assert "mark-form" not in html and "judgement-form" not in html  # a viewer reads, never marks
    answer = client_of(viewer).post(url, {"item": items[1].pk, "relevant": "yes"})
    assert answer.status_code == 403
    assert models.RecallItemMark.objects.filter(item=items[1]).count() == 2
    assert client_of(viewer).post(f"/memory/recalls/{recall.pk}/judgement/",
                                  {"relevant_total": "1"}).status_code == 403


def test_a_mark_needs_the_csrf_token(recall, alice):
    item = items_of(recall)[1]
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    assert c.post(f"/memory/recalls/{recall.pk}/marks/", {"item": item.pk, "relevant": "yes"}).status_code == 403
    assert not models.RecallItemMark.objects.exists()
    c.get(f"/memory/recalls/{recall.pk}/")
    token = c.cookies["csrftoken"].value
    answer = c.post(f"/memory/recalls/{recall.pk}/marks/", {"item": item.pk, "relevant": "yes"},
                    HTTP_X_CSRFTOKEN=token)
    assert answer.status_code == 302
    assert models.RecallItemMark.objects.get().relevant is True


def test_another_projects_recall_is_not_found(recall, other_project, bob):
    c = client_of(bob)
    item = items_of(recall)[1]
    assert c.get(f"/memory/recalls/{recall.pk}/").status_code == 404
    assert c.post(f"/memory/recalls/{recall.pk}/marks/", {"item": item.pk, "relevant": "yes"}).status_code == 404
    assert c.post(f"/memory/recalls/{recall.pk}/judgement/", {"relevant_total": "1"}).status_code == 404
    assert not models.RecallItemMark.objects.exists()


def test_it_escapes_what_the_agent_wrote(alice_client, recall):
    recall.query = HOSTILE
    recall.params = {HOSTILE: HOSTILE}
    recall.save()
    models.RecallItem.objects.filter(recall=recall, rank=2).update(text=HOSTILE)
    models.MemoryStore.objects.filter(pk=recall.store_id).update(name=HOSTILE)
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?limit=1").content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_the_what_if_drops_by_limit_and_threshold_and_says_what_the_window_loses(alice_client, recall):
    sent = context.reply_context(user=recall.session.agent.project.memberships.get().user,
                                 session_id=recall.session_id, seq=2)
    part = next(p for p in sent.parts if p.part == "recalled_memory")
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?limit=2&score_threshold=0.6").content.decode()
    # limit 2 drops #3; the threshold drops #2 (0.5 < 0.6); #1 is kept.
    assert re.search(r'id="what-if-1">.*?mark-kept', html, re.S)
    dropped_as = r'mark-dropped">dropped</span> <span class="small">'
    assert re.search(r'id="what-if-2">.*?' + dropped_as + "below the threshold", html, re.S)
    assert re.search(r'id="what-if-3">.*?' + dropped_as + "past the limit", html, re.S)
    dropped = own_tokens("User likes trains") + own_tokens("User lives in Paris")
    assert f"dropped <strong>2</strong> ({dropped} tokens)" in html
    assert re.search(rf'id="window-part"><th scope="row" title="recalled_memory">Recalled memory</th>'
                     rf'<td class="num">{part.tokens}</td><td class="num">{part.tokens - dropped}</td>', html)
    assert re.search(rf'id="window-total">.*?<td class="num">{sent.total} .*?<td class="num">{sent.total - dropped} ',
                     html, re.S)
    assert f'href="/sessions/{recall.session_id}/?at=2#m-2"' in html  # the reply that received it first
    # A threshold keeps an item without a score: it cannot judge it.
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?score_threshold=0.95").content.decode()
    assert re.search(r'id="what-if-3">.*?mark-kept">kept</span> <span class="muted small">no score', html, re.S)
    assert "1 item without a score kept whatever the threshold" in html


def test_the_what_if_form_answers_its_region_over_htmx_and_names_a_bad_field(alice_client, recall):
    answer = alice_client.get(f"/memory/recalls/{recall.pk}/?limit=1", HTTP_HX_REQUEST="true",
                              HTTP_HX_TARGET="what-if")
    html = answer.content.decode()
    assert html.lstrip().startswith('<section id="what-if"') and 'id="quality"' not in html
    assert "Kept <strong>1</strong> of 3" in html
    for query, field in (("limit=-1", "limit"), ("score_threshold=abc", "score_threshold"), ("limit=x", "limit"),
                         ("score_threshold=nan", "score_threshold")):
        html = alice_client.get(f"/memory/recalls/{recall.pk}/?{query}").content.decode()
        error = re.search(r'id="what-if-error">([^<]*)<', html)
        assert error and error.group(1).startswith(f"{field}: "), (query, error)


def test_the_what_if_on_agentscopes_own_files(alice_client, project, tmp_path):
    """AgentScope's knowledge recall at #8 (three unscored chunks, carried by a persisted message): a limit of 1
    drops two, and the retrieved documents part of the reply after it loses their tokens."""
    agent = import_friday(project, tmp_path)
    recall = models.Recall.objects.get(session__agent=agent, seq=8)
    assert recall.store.kind == "knowledge"
    reply = models.Message.objects.filter(session=recall.session, seq__gt=8, role="assistant").order_by(
        "seq").values_list("seq", flat=True).first()
    sent = context.reply_context(user=project.memberships.get().user, session_id=recall.session_id, seq=reply)
    part = next(p for p in sent.parts if p.part == "retrieved_documents")
    answer = alice_client.get(f"/api/memory/recalls/{recall.pk}/what-if/?limit=1&score_threshold=0.5").json()
    texts = {item.rank: item.text for item in recall.items.all()}
    dropped = own_tokens(texts[2], recall.session.token_counter) + own_tokens(texts[3], recall.session.token_counter)
    assert [i["kept"] for i in answer["items"]] == [True, False, False]
    assert all(i["unscored"] for i in answer["items"][:1])
    assert answer["tokens_dropped"] == dropped
    assert answer["window"]["part"] == "retrieved_documents" and answer["window"]["seq"] == reply
    assert answer["window"]["part_before"] == part.tokens
    assert answer["window"]["part_after"] == part.tokens - dropped
    assert answer["window"]["total_before"] == sent.total
    assert answer["window"]["total_after"] == sent.total - dropped
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?limit=1").content.decode()
    assert re.search(rf'id="window-part"><th scope="row" title="retrieved_documents">Retrieved documents</th>'
                     rf'<td class="num">{part.tokens}</td>', html)


def test_a_recall_no_reply_received_has_no_window_figures(alice_client, agent, make_session):
    session = make_session([{"role": "user", "content": "<m>User is vegan</m>"}])
    recall = models.Recall.objects.create(session=session, seq=0, query="diet", item_count=1)
    models.RecallItem.objects.create(recall=recall, rank=1, score=0.2, text="User is vegan")
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?score_threshold=0.5").content.decode()
    assert "No reply after message #0: no call received this recall." in html
    assert "dropped <strong>1</strong>" in html


def test_it_shows_an_items_metadata_compact_and_escaped(alice_client, recall):
    # One key: PostgreSQL's jsonb keeps keys in an order of its own.
    models.RecallItem.objects.filter(recall=recall, rank=1).update(metadata={"category": HOSTILE})
    models.RecallItem.objects.filter(recall=recall, rank=2).update(metadata={"long": "x" * 1000})
    html = alice_client.get(f"/memory/recalls/{recall.pk}/").content.decode()
    shown = re.search(r'<tr id="item-1">.*?class="muted small mono item-metadata"[^>]*>([^<]*)</div>', html, re.S)
    assert shown and shown.group(1) == ('{&quot;category&quot;: &quot;&lt;script&gt;alert(\\&quot;x\\&quot;)'
                                        '&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;}')
    cut = re.search(r'<tr id="item-2">.*?item-metadata"[^>]*>([^<]*)</div>', html, re.S)
    assert cut and cut.group(1).endswith("…") and len(cut.group(1)) < 400
    assert not re.search(r'<tr id="item-3">[^/]*?item-metadata', html)
    api = alice_client.get(f"/api/memory/recalls/{recall.pk}/").json()
    assert [i["metadata"] for i in api["items"]] == [{"category": HOSTILE}, {"long": "x" * 1000}, {}]


def test_it_shows_the_store_over_time_as_its_json_does(alice_client, alice, recall):
    import datetime as dt

    monday = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
    models.Recall.objects.filter(pk=recall.pk).update(at=monday)
    for item in recall.items.all():
        models.RecallItemMark.objects.create(item=item, author=alice, relevant=item.rank != 2)
    later = models.Recall.objects.create(session=recall.session, seq=1, store=recall.store, query=recall.query,
                                         at=monday + dt.timedelta(days=9), item_count=2)
    for rank, relevant in ((1, False), (2, True)):
        item = models.RecallItem.objects.create(recall=later, rank=rank, text=f"t{rank}")
        models.RecallItemMark.objects.create(item=item, author=alice, relevant=relevant)
    html = alice_client.get(f"/memory/recalls/{recall.pk}/").content.decode()
    rows = re.findall(r'<tr class="store-week"><th scope="row" class="nowrap">week of ([\d-]+)</th>'
                      r'<td class="num">(\d+)</td><td class="num">([^ ]+) ', html)
    weeks = alice_client.get(f"/api/memory/stores/{recall.store_id}/quality/?period=week").json()["periods"]
    assert rows == [("2026-12-07", "1", "0.5"), ("2026-11-30", "1", "0.667")]  # newest first: 1/2, then 2/3
    assert [(p["start"], p["recalls"], round(p["precision"], 3)) for p in reversed(weeks)] == [
        ("2026-12-07", 1, 0.5), ("2026-11-30", 1, 0.667)]
    # This query's two recalls: MRR (1 + 1/2) / 2.
    assert re.search(r'<tr id="this-query"><th scope="row">this query</th><td class="num">2</td>'
                     r'(?:<td class="num">[^<]+<span class="muted small">\(\d+\)</span></td>){2}'
                     r'<td class="num">0.75 ', html)


def test_the_what_if_reads_the_window_of_the_captured_call_that_received_the_recall(alice_client, alice, recall):
    call = models.LlmCall.objects.create(session=recall.session, trace_id="a" * 32, span_id="b" * 16, sent=[0, 1],
                                         reply_seq=2, placed=True)
    models.Recall.objects.filter(pk=recall.pk).update(llm_call=call)
    sent = context.reply_context(user=alice, session_id=recall.session_id, call_id=call.pk)
    part = next(p for p in sent.parts if p.part == "recalled_memory")
    body = alice_client.get(f"/api/memory/recalls/{recall.pk}/what-if/?limit=1").json()
    dropped = own_tokens("User likes trains") + own_tokens("User lives in Paris")
    assert body["window"] == {"call": call.pk, "seq": 2, "part": "recalled_memory", "window": 128_000,
                              "counter": "cl100k", "part_before": part.tokens, "part_after": part.tokens - dropped,
                              "total_before": sent.total, "total_after": sent.total - dropped}
    html = alice_client.get(f"/memory/recalls/{recall.pk}/?limit=1").content.decode()
    assert f'In the window of <a href="/sessions/{recall.session_id}/calls/{call.pk}/">the captured call</a>' in html
    assert 'id="recall-call">the captured call</a>' in html
