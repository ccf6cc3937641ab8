"""Recalls in the trimming lab (issue 27, "Memory in the lab"): for the strategy shown, which recalls the trimmed list
still holds and which it drops (``recall_trimmed``), whether a persisted injection piles up; the compare view's
counts per column; the report's recalls dropped per strategy. On the files AgentScope and AutoGen wrote, for every
strategy of the registry."""
from __future__ import annotations

import csv
import io
import itertools
import json
import re
import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_tasks_db.management.commands.db_worker import Worker

from agents import models
from agents.lab.trimming import session_trim
from agents.memory.findings import ItemFacts, RecallFacts
from agents.memory.ledger import folded
from agents.memory.trimmed_recalls import recalls_in_trim
from agents.memory.trimming import STRATEGIES, StrategySpec, TrimResult, spec_from_text, strategy_spec
from agents.transfer import imports
from tests.conversations import chat
from tests.paths import MEMORY_SAMPLES

REPORT = "/lab/report/"


def import_memory_sessions(project: models.Project, folder: Path) -> list[models.Session]:
    """AgentScope's third turn (five recalls on user messages, knowledge and long-term memory) and AutoGen's second
    run (``ListMemory``'s message, added again on the second run), imported as test_memory_findings_stored does."""
    folder.mkdir(parents=True, exist_ok=True)
    agentscope = Path(shutil.copy(MEMORY_SAMPLES / "agentscope/session_user_1_turn3.json", folder / "user_1_trip.json"))
    out = []
    for source in (agentscope, MEMORY_SAMPLES / "autogen/assistant_state_after_run2.json"):
        report = imports.import_file(source, project=project)
        out.append(models.Session.objects.get(pk=report.sessions[0].session_id))
    return out


@pytest.fixture
def memory_sessions(project, tmp_path) -> list[models.Session]:
    return import_memory_sessions(project, tmp_path / "f")


def lab_url(session: models.Session) -> str:
    return reverse("agents:session_lab", args=[session.pk])


def carried(session: models.Session, result: TrimResult) -> tuple[set[int], set[int]]:
    """The recalls (their ids) whose carrying message ``result`` keeps and drops, told from the trimmed list itself:
    the input messages its items came from are kept, every other input message is dropped."""
    kept = {source for source in result.sources if source is not None}
    dropped = set(range(session.message_count)) - kept
    rows = models.Recall.objects.filter(session=session).values_list("pk", "seq")
    return {pk for pk, seq in rows if seq in kept}, {pk for pk, seq in rows if seq in dropped}


def piles_up(session: models.Session, kept: set[int]) -> bool:
    """Whether the same recalled text is held by two kept recalls on different messages, the earlier persisted."""
    recalls = models.Recall.objects.filter(pk__in=kept).prefetch_related("items").order_by("seq", "id")
    seen: dict[str, int] = {}
    for recall in recalls:
        for item in recall.items.all():
            first = seen.get(folded(item.text))
            if first is not None and first != recall.seq:
                return True
            if recall.persisted:
                seen.setdefault(folded(item.text), recall.seq)
    return False


def listed(html: str, list_id: str) -> set[int]:
    """The recall ids a list of the lab's recalls section shows."""
    found = re.search(rf'<ul class="recall-list" id="{list_id}">(.*?)</ul>', html, re.S)
    return {int(pk) for pk in re.findall(r'data-recall="(\d+)"', found.group(1))} if found else set()


# --- the core: plain values --------------------------------------------------------------------------------------


def facts(seq: int | None, *texts: str, persisted: bool = True) -> RecallFacts:
    return RecallFacts(session="s", seq=seq, store="kb", at=None, items=[ItemFacts(t, None, None) for t in texts],
                       persisted=persisted, query="q")


def test_it_sorts_recalls_by_their_carrying_message_and_keeps_an_edited_ones():
    recalls = [facts(1, "a"), facts(4, "b"), facts(6, "c"), facts(None, "d"), facts(12, "e")]
    found = recalls_in_trim(recalls, kept=[0, 4, 5, 6], dropped={1, 2, 3}, edited=[4], sent_before=10)
    assert [(p.index, p.edited) for p in found.kept] == [(1, True), (2, False)]
    assert [p.index for p in found.dropped] == [0]
    # Not a message of the input (the system prompt, or a message after the call): the trim does not decide.
    assert [p.index for p in found.elsewhere] == [3, 4]
    assert found.edited == 1 and found.piled_up == []


def test_it_says_a_persisted_injection_piles_up_only_when_both_copies_are_kept():
    recalls = [facts(1, "Prefers trains"), facts(5, "Prefers  trains "), facts(8, "other")]
    both = recalls_in_trim(recalls, kept=[0, 1, 5, 8], dropped=[2, 3, 4, 6, 7], sent_before=9)
    assert [(f.kind, f.index) for f in both.piled_up] == [("repeated_injection", 5)]
    assert recalls_in_trim(recalls, kept=[5, 8], dropped=[0, 1, 2, 3, 4, 6, 7], sent_before=9).piled_up == []
    # The first copy not persisted (sent once, not kept in the list by the framework): no pile-up to speak of.
    transient = [facts(1, "Prefers trains", persisted=False), facts(5, "Prefers trains")]
    assert recalls_in_trim(transient, kept=[1, 5], dropped=[], sent_before=9).piled_up == []


# --- the lab, every strategy of the registry ---------------------------------------------------------------------


# Beside its defaults (which keep every message of these short files for most strategies), each strategy with
# parameters tight enough to drop some: the carrying messages are kept by some and dropped by others.
TIGHT = {
    "adk_compaction": "compaction_interval=1,overlap_size=0",
    "anthropic_clear_tool_uses": "trigger_input_tokens=1,keep_tool_uses=0",
    "buffered": "buffer_size=3",
    "head_and_tail": "head_size=1,tail_size=2",
    "langchain_clear_tool_uses": "trigger=1,keep=0",
    "langchain_first": "max_tokens=150",
    "langchain_last": "max_tokens=150",
    "langchain_summarization": "trigger_messages=4,keep_messages=3",
    "last_turns": "max_turns=1",
    "llamaindex_buffer": "token_limit=150",
    "maf_sliding_window": "keep_last_groups=2",
    "maf_summarization": "target_count=2,threshold=1",
    "maf_truncation": "max_n=4,compact_to=2",
    "openai_session_limit": "limit=3",
    "openmanus_window": "max_messages=3",
    "safe_token_budget": "max_tokens=150",
    "safe_window": "max_messages=3",
    "sk_truncation": "target_count=3",
    "strands_sliding_window": "window_size=3",
    "strands_summarizing": "preserve_recent_messages=2",
    "token_limited": "token_limit=150",
}


def variants(name: str) -> list[tuple[StrategySpec, dict[str, str]]]:
    """The strategy with its defaults and, where it has one, with TIGHT's parameters; each with the lab's query."""
    out = [(strategy_spec(STRATEGIES[name]), {"strategy": name})]
    if name in TIGHT:
        spec = spec_from_text(f"{name}:{TIGHT[name]}")
        out.append((spec, {"strategy": name, **dict(p.split("=") for p in TIGHT[name].split(","))}))
    return out


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_labs_recalls_are_those_whose_message_each_strategy_keeps_or_drops(alice_client, memory_sessions,
                                                                               name):
    for (spec, query), session in itertools.product(variants(name), memory_sessions):
        result = session_trim(session=session, specs=[spec]).results[0]
        kept, dropped = carried(session, result)
        assert kept | dropped == set(session.recalls.values_list("pk", flat=True))  # every recall is on a message
        response = alice_client.get(lab_url(session), query)
        assert response.status_code == 200 and response.context["spec"].text == spec.text
        shown = response.context["recalls"]
        assert {r.pk for r, _edited in shown.kept} == kept, (spec.text, session.source_format)
        assert {r.pk for r in shown.dropped} == dropped, (spec.text, session.source_format)
        edited = {e.index for e in result.edited}
        assert {r.pk for r, is_edited in shown.kept if is_edited} == {
            pk for pk, seq in session.recalls.values_list("pk", "seq") if seq in edited}
        assert bool(shown.found.piled_up) == piles_up(session, kept), (spec.text, session.source_format)
        html = response.content.decode()
        assert listed(html, "recalls-kept") == kept and listed(html, "recalls-dropped") == dropped
        assert f'id="recalls-dropped-count">{len(dropped)}<' in html
        # The trim API says the same of the recalls.
        answer = alice_client.get(f"/api/sessions/{session.pk}/trim/", query)
        assert answer.status_code == 200, answer.content
        recalls = answer.json()["recalls"]
        assert (recalls["kept"], recalls["dropped"], recalls["elsewhere"]) == (len(kept), len(dropped), 0)
        assert {r["id"] for r in recalls["kept_recalls"]} == kept
        assert {r["id"] for r in recalls["dropped_recalls"]} == dropped
        assert {r["id"] for r in recalls["kept_recalls"] if r["edited"]} == {r.pk for r, e in shown.kept if e}
        assert bool(recalls["piled_up"]) == piles_up(session, kept), (spec.text, session.source_format)


def test_some_strategies_drop_recalls_and_some_keep_a_piled_up_injection(memory_sessions):
    # So that the test above is about something: the registry's defaults drop recalls on these files, and keep
    # AutoGen's memory message twice (its second run added it again).
    agentscope, autogen = memory_sessions
    dropping, piling = set(), set()
    for name in STRATEGIES:
        for (spec, _query), session in itertools.product(variants(name), memory_sessions):
            kept, dropped = carried(session, session_trim(session=session, specs=[spec]).results[0])
            if dropped:
                dropping.add((spec.text, session.pk))
            if piles_up(session, kept):
                piling.add((spec.text, session.pk))
    assert {pk for _, pk in dropping} == {agentscope.pk, autogen.pk}
    assert {pk for _, pk in piling} == {agentscope.pk, autogen.pk}
    assert len([1 for _, pk in dropping if pk == autogen.pk]) >= 8


def test_the_lab_lists_each_recall_with_its_store_query_and_items_linked_to_its_message(alice_client,
                                                                                       memory_sessions):
    agentscope, _ = memory_sessions
    response = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "4"})
    html = response.content.decode()
    # buffered keeps the last 4 messages (16-19): every recall (on #2, #7, #8, #13, #14) is dropped.
    assert response.context["recalls"].dropped_count == 5 and response.context["recalls"].kept_count == 0
    dropped = re.search(r'<ul class="recall-list" id="recalls-dropped">(.*?)</ul>', html, re.S).group(1)
    session_url = agentscope.get_absolute_url()
    assert f'href="{session_url}#m-13">#13</a>' in dropped
    assert "long-term memory of Friday" in dropped and "knowledge of Friday" in dropped
    assert "Book the train for Thursday morning" in dropped and "3 items" in dropped and "2 items" in dropped
    assert "recall_trimmed" in html and 'id="recalls-not-piled"' in html
    # Kept whole: every recall is held, and the knowledge recalled on each turn is sent three times.
    whole = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "100"})
    assert whole.context["recalls"].kept_count == 5 and whole.context["recalls"].dropped_count == 0
    assert 'id="recalls-piled"' in whole.content.decode() and "repeated_injection" in whole.content.decode()


def test_a_recall_on_a_message_sent_edited_stays_and_says_so(alice_client, make_session):
    messages = chat(2)
    messages[2] = {**messages[2], "content": "From memory: the user is in Paris."}  # text sent with the call
    session = make_session(messages)
    recall = models.Recall.objects.create(session=session, seq=2, query="where is the user?", persisted=True,
                                          item_count=1)
    models.RecallItem.objects.create(recall=recall, rank=1, text="The user is in Paris.")
    response = alice_client.get(lab_url(session), {"strategy": "strip_thoughts"})
    shown = response.context["recalls"]
    assert [(r.pk, edited) for r, edited in shown.kept] == [(recall.pk, True)] and shown.dropped_count == 0
    html = response.content.decode()
    assert "1 on a message sent edited: the recall stays" in html and ">kept, edited</span>" in html


def test_it_escapes_what_the_recall_holds(alice_client, memory_sessions):
    agentscope, _ = memory_sessions
    recall = agentscope.recalls.get(seq=13)
    recall.query = '<script>alert("q")</script>'
    recall.save(update_fields=["query"])
    models.MemoryStore.objects.filter(pk=recall.store_id).update(name="<b>store</b>")
    html = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "4"}).content.decode()
    assert '<script>alert("q")' not in html and "&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;" in html
    assert "<b>store</b>" not in html and "&lt;b&gt;store&lt;/b&gt;" in html


def test_it_shows_the_recalls_in_the_htmx_result_and_at_a_call_of_the_replay(alice_client, memory_sessions):
    agentscope, _ = memory_sessions
    fragment = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "4"},
                                HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result")
    html = fragment.content.decode()
    assert html.lstrip().startswith('<section id="lab-result"') and 'id="lab-recalls"' in html
    # At the call that produced #9, the list sent holds #0-#8: the recalls on #13 and #14 come later.
    steps = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "100"}).context["replay"]
    step = next(k for k, s in enumerate(steps.steps) if s.call == 9)
    at = alice_client.get(lab_url(agentscope), {"strategy": "buffered", "buffer_size": "100", "step": step})
    shown = at.context["recalls"]
    assert {r.seq for r, _ in shown.kept} == {2, 7, 8} and shown.elsewhere_count == 2


def test_a_session_of_another_project_shows_none_of_its_recalls(alice_client, other_project, tmp_path):
    theirs = import_memory_sessions(other_project, tmp_path / "theirs")[0]
    assert alice_client.get(lab_url(theirs), {"strategy": "buffered"}).status_code == 404
    assert alice_client.get(reverse("agents:session_lab_compare", args=[theirs.pk])).status_code == 404
    # Nor does the report count them: alice's report covers her sessions only.
    html = alice_client.get(REPORT, {"s": COLUMNS}).content.decode()
    assert 'class="report-row"' not in html
    assert [int(x) for x in re.findall(r'data-recalls-dropped="(\d+)"', html)] == [0, 0, 0]


def recall_reads(request) -> int:
    """The queries of ``request()`` that read recalls (not the session's own, which says whether it has any)."""
    with CaptureQueriesContext(connection) as ctx:
        request()
    return sum(1 for q in ctx.captured_queries if 'FROM "agents_recall"' in q["sql"] and "EXISTS" not in q["sql"])


def test_the_labs_recalls_cost_one_query_and_none_without_memory(alice_client, memory_sessions, make_session):
    agentscope, _ = memory_sessions
    plain = make_session(chat(3))
    for session in (agentscope, plain):
        alice_client.get(lab_url(session), {"strategy": "buffered"})  # the trim and the replay cached
    assert recall_reads(lambda: alice_client.get(lab_url(agentscope), {"strategy": "buffered"})) == 1
    compare = reverse("agents:session_lab_compare", args=[agentscope.pk])
    assert recall_reads(lambda: alice_client.get(compare, {"s": COLUMNS})) == 1
    assert recall_reads(lambda: alice_client.get(lab_url(plain), {"strategy": "buffered"})) == 0
    response = alice_client.get(lab_url(plain), {"strategy": "buffered"})
    assert not response.context["recalls"].any and 'id="lab-recalls"' not in response.content.decode()


# --- compare and the report ---------------------------------------------------------------------------------------

COLUMNS = ["buffered:buffer_size=4", "buffered:buffer_size=100", "openmanus_window:max_messages=3"]


def test_the_compare_view_counts_each_columns_recalls_kept_and_dropped(alice_client, memory_sessions):
    for session in memory_sessions:
        response = alice_client.get(reverse("agents:session_lab_compare", args=[session.pk]), {"s": COLUMNS})
        html = response.content.decode()
        counts = re.findall(r'data-recalls-kept="(\d+)" data-recalls-dropped="(\d+)"', html)
        expected = []
        for text in COLUMNS:
            kept, dropped = carried(session, session_trim(session=session, specs=[spec_from_text(text)]).results[0])
            expected.append((str(len(kept)), str(len(dropped))))
        assert counts == expected
        assert any(int(d) for _, d in counts) and any(int(k) for k, _ in counts)
    fragment = alice_client.get(reverse("agents:session_lab_compare", args=[memory_sessions[0].pk]),
                                {"s": COLUMNS}, HTTP_HX_REQUEST="true")
    assert "data-recalls-dropped=" in fragment.content.decode()


def test_the_report_counts_the_recalls_each_strategy_drops_over_the_sessions(alice_client, memory_sessions,
                                                                            make_session):
    make_session(chat(6), title="No memory")
    response = alice_client.get(REPORT, {"s": COLUMNS})
    html = response.content.decode()
    expected = []
    for text in COLUMNS:
        expected.append(sum(
            len(carried(s, session_trim(session=s, specs=[spec_from_text(text)]).results[0])[1])
            for s in memory_sessions))
    assert [int(x) for x in re.findall(r'data-recalls-dropped="(\d+)"', html)] == expected
    assert expected[0] > 0 and expected[1] == 0
    out = json.loads(alice_client.get(REPORT, {"s": COLUMNS, "download": "json"}).content)
    assert [s["recalls_dropped"] for s in out["summaries"]] == expected
    by_session = {row["session"]: [c["recalls_dropped"] for c in row["cells"]] for row in out["rows"]}
    assert sum(v[0] for v in by_session.values()) == expected[0]
    lines = list(csv.reader(io.StringIO(alice_client.get(REPORT, {"s": COLUMNS, "download": "csv"}).content.decode())))
    # The new column comes last; the earlier ones keep their places.
    assert lines[0][:14] == ["session", "title", "project", "agent", "messages", "tokens_before", "strategy",
                             "tokens_after", "kept", "errors", "question_lost", "budget_exceeded",
                             "first_broken_call", "error"]
    assert lines[0][14] == "recalls_dropped"
    assert sum(int(line[14]) for line in lines[1:] if line[6] == COLUMNS[0]) == expected[0]


def test_the_report_reads_recalls_once_and_none_for_sessions_without_memory(alice_client, make_session,
                                                                           memory_sessions):
    def report():
        return alice_client.get(REPORT, {"s": COLUMNS})

    assert recall_reads(report) == 1
    for _ in range(5):
        make_session(chat(3))
    assert recall_reads(report) == 1
    models.Recall.objects.all().delete()
    assert recall_reads(report) == 0


# A worker closes its connections between tasks (django-tasks' db_worker), as a real one does: on PostgreSQL that
# closes the test's transaction too, so this test commits for real (as tests/test_background_jobs.py does).
@pytest.mark.django_db(transaction=True)
def test_a_report_run_in_the_background_counts_the_same_recalls_dropped(alice_client, memory_sessions, settings,
                                                                       tmp_path):
    settings.MEMORYVIZ_JOB_DIR = str(tmp_path / "jobs")
    inline = json.loads(alice_client.get(REPORT, {"s": COLUMNS, "download": "json"}).content)
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 10  # both sessions are longer: the report is a job
    assert alice_client.get(REPORT, {"s": COLUMNS}).status_code == 302
    Worker(queue_names=["default"], interval=0, batch=True, backend_name="default", startup_delay=False,
           max_tasks=None, worker_id="test-worker", excluded_queue_names=[]).run()
    job = models.BackgroundJob.objects.get()
    assert job.status == "done"
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert [int(x) for x in re.findall(r'data-recalls-dropped="(\d+)"', page)] == [
        s["recalls_dropped"] for s in inline["summaries"]]
    background = json.loads(alice_client.get(f"/jobs/{job.pk}/", {"download": "json"}).content)
    assert background["summaries"] == inline["summaries"]
    assert {r["session"]: r["cells"] for r in background["rows"]} == {r["session"]: r["cells"] for r in inline["rows"]}


def test_the_trim_api_says_nothing_of_recalls_for_a_session_without_any(alice_client, make_session):
    session = make_session([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    answer = alice_client.get(f"/api/sessions/{session.pk}/trim/", {"strategy": "safe_window"})
    assert answer.status_code == 200 and "recalls" not in answer.json()


def test_a_message_row_that_carries_a_recall_says_so_and_whether_it_goes(alice_client, memory_sessions):
    agentscope, _autogen = memory_sessions
    carriers = dict(agentscope.recalls.values_list("seq", "store__name"))
    html = alice_client.get(lab_url(agentscope), {"strategy": "safe_window", "max_messages": "6"}).content.decode()
    rows = re.findall(r'<article id="[^"]*" class="msg role-\w+ lab-msg lab-(\w+)[^"]*">(.*?)</article>', html, re.S)
    marked = 0
    for status, body in rows:
        seq = re.search(r'#m-(\d+)"', body)
        if seq is None:
            continue
        note = re.search(r'<p class="lab-recall small">(.*?)</p>', body, re.S)
        if int(seq.group(1)) in carriers:
            assert note is not None, seq.group(1)
            assert carriers[int(seq.group(1))] in note.group(1)
            assert ("recall_trimmed" in note.group(1)) == (status == "dropped")
            marked += 1
        else:
            assert note is None, seq.group(1)
    assert marked >= 1
