"""The snapshots page (/agents/<id>/snapshots/): an agent's snapshots on a timeline, one opened as a folded tree, two
compared by ledger.reading's diff (the API's), on the files LangGraph and AgentScope wrote, imported as a user would."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import models
from agents.ledger import snapshots as snapshot_pages
from tests.memory_pages import bulk_snapshots, import_friday, import_langgraph_history


def page_url(agent: models.Agent, **query: object) -> str:
    url = reverse("agents:agent_snapshots", args=[agent.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def langgraph(project) -> models.Agent:
    return import_langgraph_history(project)


@pytest.fixture
def friday(project, tmp_path: Path) -> models.Agent:
    """AgentScope's two saves of one session (and its mem0 memory)."""
    return import_friday(project, tmp_path)


def test_it_shows_an_agents_snapshots_oldest_first_with_their_parents_steps_and_messages(alice_client, langgraph):
    response = alice_client.get(page_url(langgraph))
    assert response.status_code == 200
    page = response.context["page"]
    stored = list(models.Snapshot.objects.filter(agent=langgraph).order_by("taken_at"))
    assert [row.snapshot.pk for row in page.rows] == [s.pk for s in stored]
    # Each one's parent is the one before it; the first has none.
    assert [row.snapshot.parent_id for row in page.rows] == [None] + [s.pk for s in stored[:-1]]
    assert [row.snapshot.step for row in page.rows] == [-1, 0, 1, 2, 3]
    assert page.summary == "1–5 of 5" and page.paging.next_url == ""
    html = response.content.decode()
    for row in page.rows[1:]:
        parent = row.snapshot.parent
        assert f'href="{page_url(langgraph)}?snapshot={parent.pk}#snapshot" class="mono snapshot-parent">' \
               f'{parent.external_id}</a>' in html
        # Its changes from its parent, one click away.
        assert row.diff_url == page_url(langgraph, a=parent.pk, b=row.snapshot.pk)
    # Each reaches the thread at the last message it holds (the first, before any message, the thread itself).
    session = models.Session.objects.get(external_id="thread-1")
    assert [row.message_url for row in page.rows] == [f"/sessions/{session.pk}/"] + [
        f"/sessions/{session.pk}/?at={seq}#m-{seq}" for seq in (0, 1, 2, 3)]
    assert f'href="/sessions/{session.pk}/?at=3#m-3" class="snapshot-message">' in html
    assert f'href="{reverse("api:agent_snapshots", args=[langgraph.pk])}"' in html


def test_agentscopes_saves_follow_each_other_in_the_session(alice_client, friday):
    page = alice_client.get(page_url(friday)).context["page"]
    first, second = (row.snapshot for row in page.rows)
    assert (first.seq, second.seq, second.parent_id) == (5, 11, first.pk)
    assert page.rows[1].diff_from == "parent"


def test_it_opens_a_snapshot_as_a_folded_tree_of_its_whole_state(alice_client, friday):
    snapshot = models.Snapshot.objects.filter(agent=friday).order_by("-seq").first()
    response = alice_client.get(page_url(friday, snapshot=snapshot.pk))
    opened = response.context["page"].opened
    assert opened.snapshot == snapshot and opened.tree.cuts == [] and not opened.tree.stopped
    html = response.content.decode()
    section = html[html.index('<section id="snapshot"'):html.index("</section>", html.index('<section id="snapshot"'))]
    # AgentScope's state_dict: its memory, long-term memory, toolkit, plan notebook and the rest, each folded.
    tops = [n.key for n in opened.tree.nodes if n.path.count(".") == 1 and n.path.startswith("$.") and n.kind != "more"
            and "[" not in n.path]
    # In the file's order on SQLite; PostgreSQL's jsonb keeps an object's keys in an order of its own.
    expected = ["memory", "long_term_memory", "toolkit", "plan_notebook", "name", "_sys_prompt"]
    assert (tops if connection.vendor == "sqlite" else sorted(tops)) == (
        expected if connection.vendor == "sqlite" else sorted(expected))
    assert section.count("<details") == section.count("</details>") > 20
    assert '<summary title="$.memory.content"><span class="json-key">content</span> ' \
           '<span class="json-count tree-messages">11 messages</span></summary>' in section
    # A message's summary says who spoke and what; its fields are inside.
    assert "user: What&#x27;s the weather in Hangzhou? I&#x27;m going there next week, by train." in section
    assert '<summary title="$.plan_notebook.current_plan"><span class="json-key">current_plan</span>' in section
    assert f'href="{reverse("api:snapshot_detail", args=[snapshot.pk])}" id="snapshot-json"' in section
    assert f'href="/sessions/{snapshot.session_id}/?at=11#m-11"' in section


def test_a_huge_state_is_shown_bounded_and_says_what_was_cut(alice_client, agent):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}", "id": f"m{i}"}
                for i in range(10_000)]
    value = {"memory": {"content": messages}, "notes": "x" * 50_000, "deep": {}}
    node = value["deep"]
    for _ in range(60):
        node["d"] = {}
        node = node["d"]
    snapshot = models.Snapshot.objects.create(agent=agent, external_id="big", value=value)
    response = alice_client.get(page_url(agent, snapshot=snapshot.pk))
    tree = response.context["page"].opened.tree
    assert tree.shown <= snapshot_pages.TREE_NODES
    assert "$.memory.content: 9,800 of 10,000 items not shown" in tree.cuts
    assert f"$.notes: {50_000 - snapshot_pages.TEXT_SHOWN:,} of 50,000 characters not shown" in tree.cuts
    assert any("nested deeper than" in cut for cut in tree.cuts)
    html = response.content.decode()
    assert "… 9,800 more not shown" in html and "This state is large" in html
    assert len(html) < 1_000_000  # the 10,000 messages are not all rendered


def test_a_state_of_more_values_than_the_tree_holds_stops_and_says_so(agent):
    value = {f"k{i}": [{"a": i, "b": [i, i]} for _ in range(50)] for i in range(100)}
    tree = snapshot_pages.snapshot_tree(value)
    assert tree.stopped and tree.shown == snapshot_pages.TREE_NODES
    assert tree.cuts[-1] == f"the state holds more than {snapshot_pages.TREE_NODES:,} values: the rest is not shown"
    opened = sum(n.kind == "open" for n in tree.nodes)
    assert opened == sum(n.kind == "close" for n in tree.nodes)  # every <details> it opens, it closes


def test_two_snapshots_side_by_side_list_what_the_api_lists(alice_client, friday):
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    response = alice_client.get(page_url(friday, a=first.pk, b=second.pk))
    compare = response.context["page"].compare
    api = alice_client.get(reverse("api:snapshot_diff", args=[first.pk, second.pk]),
                           {"limit": snapshot_pages.DIFF_CHANGES}).json()
    assert compare.total == api["total"] and compare.counts == api["counts"] and compare.total > 0
    assert [(r.path, r.op, r.message) for r in compare.rows] == [
        (c["path"], c["op"], c.get("message")) for c in api["changes"]]
    for row, change in zip(compare.rows, api["changes"], strict=True):
        for side in ("old", "new"):
            value = change[side]
            if getattr(row, side):
                assert getattr(row, side) == (value if isinstance(value, str) else json.dumps(
                    value, indent=2, ensure_ascii=False))
    # By message: turn 2's messages are added after turn 1's, not changed at every index.
    added = [r for r in compare.rows if r.op == "added" and r.path.startswith("$.memory.content[")]
    assert [r.path for r in added] == [f"$.memory.content[{k}]" for k in range(5, 11)]
    # Each reaches its message in the session, found by its id (the session starts with the system prompt).
    assert [r.message_seq for r in added] == list(range(6, 12))
    # A whole message added says who said what; the plan's tool call by name.
    assert [r.said for r in added][:4] == [
        "user: Make me a plan for the trip.",
        "user: <long_term_memory>The content below are retrieved from long-term memory, which maybe usef…",
        "user: <retrieved_knowledge>Use the following content from the knowledge base(s) if it's helpful…",
        "assistant: (calls create_plan)"]
    # The plan made in turn 2: nothing before, a long object after, folded on its own side only.
    plan = next(r for r in compare.rows if r.path == "$.plan_notebook.current_plan")
    assert (plan.op, plan.old, plan.old_folded, plan.new_folded) == ("changed", "null", False, True)
    html = response.content.decode()
    assert f'href="/sessions/{second.session_id}/?at=7#m-7">message #7 in the session</a>' in html
    assert f'href="{reverse("api:snapshot_diff", args=[first.pk, second.pk])}?limit=200" id="compare-json"' in html
    # The shared address opens the same diff; swapped, what was added is removed.
    swapped = alice_client.get(compare.swap_url).context["page"].compare
    assert (swapped.left, swapped.right) == (second, first)
    assert swapped.counts == {"added": compare.counts["removed"], "removed": compare.counts["added"],
                              "changed": compare.counts["changed"]}


def test_langgraph_checkpoints_diff_by_message_and_link_each_to_the_thread(alice_client, langgraph):
    stored = list(models.Snapshot.objects.filter(agent=langgraph).order_by("taken_at"))
    compare = alice_client.get(page_url(langgraph, a=stored[1].pk, b=stored[4].pk)).context["page"].compare
    added = [(r.path, r.message_seq) for r in compare.rows if r.op == "added" and "messages[" in r.path]
    assert added == [("$.values.messages[1]", 1), ("$.values.messages[2]", 2), ("$.values.messages[3]", 3)]


def test_one_snapshot_alone_is_not_a_diff(alice_client, langgraph):
    snapshot = models.Snapshot.objects.filter(agent=langgraph).first()
    response = alice_client.get(page_url(langgraph, a=snapshot.pk))
    assert response.status_code == 200 and response.context["page"].compare is None
    assert "Pick two snapshots to compare: a and b." in response.content.decode()


def test_what_an_agent_wrote_is_escaped_never_run(alice_client, agent):
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    parent = models.Snapshot.objects.create(agent=agent, external_id=evil, value={evil: evil, "list": [evil]})
    child = models.Snapshot.objects.create(agent=agent, external_id=evil + "2", parent=parent, value={
        evil: evil * 100, "list": [evil, {"role": "user", "content": evil}], "javascript:x": 1})
    response = alice_client.get(page_url(agent, snapshot=child.pk, a=parent.pk, b=child.pk))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    # No element the page makes runs anything: scripts are files, no handler, no javascript: link.
    tags = _tags(html)
    assert [a for _tag, a in tags if any(name.startswith("on") for name in a)] == []
    assert [a for tag, a in tags if tag == "script" and "src" not in a] == []
    assert [a for _tag, a in tags if any(str(v).startswith("javascript:") for v in a.values())] == []
    assert "script-src 'self'" in response["Content-Security-Policy"]


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    found: list[tuple[str, dict[str, str | None]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, dict(attrs)))

    Tags().feed(html)
    return found


def test_another_projects_agent_or_snapshot_is_not_found(alice_client, agent, other_agent, langgraph):
    theirs = models.Snapshot.objects.create(agent=other_agent, external_id="theirs", value={"secret": 1})
    other_of_mine = models.Snapshot.objects.create(agent=agent, external_id="other agent", value={})
    mine = models.Snapshot.objects.filter(agent=langgraph).first()
    assert alice_client.get(page_url(other_agent)).status_code == 404
    assert alice_client.get(page_url(langgraph, snapshot=theirs.pk)).status_code == 404
    assert alice_client.get(page_url(langgraph, a=mine.pk, b=theirs.pk)).status_code == 404
    assert alice_client.get(page_url(langgraph, a=theirs.pk, b=mine.pk)).status_code == 404
    # Another agent's snapshot is not this page's, even in the same project.
    assert alice_client.get(page_url(langgraph, snapshot=other_of_mine.pk)).status_code == 404
    # A cursor of another agent opens the first page, never its rows.
    page = alice_client.get(page_url(langgraph, after=theirs.pk)).context["page"]
    assert [row.snapshot.agent_id for row in page.rows] == [langgraph.pk] * 5




def test_the_timeline_pages_by_keyset_oldest_to_newest_and_back(alice_client, agent):
    made = bulk_snapshots(agent, 120)
    untimed = models.Snapshot.objects.create(agent=agent, external_id="no time", value={})
    first = alice_client.get(page_url(agent)).context["page"]
    # The one without a time first, as the API lists them.
    assert [r.snapshot.pk for r in first.rows] == [untimed.pk] + [s.pk for s in made[:49]]
    assert first.summary == "1–50 of 121" and first.paging.previous_url == ""
    second = alice_client.get(first.paging.next_url).context["page"]
    assert [r.snapshot.pk for r in second.rows] == [s.pk for s in made[49:99]]
    assert second.summary == "51–100 of 121"
    last = alice_client.get(second.paging.last_url).context["page"]
    assert [r.snapshot.pk for r in last.rows] == [s.pk for s in made[-50:]]
    assert last.paging.next_url == "" and last.paging.last_url == ""
    back = alice_client.get(last.paging.previous_url).context["page"]
    assert [r.snapshot.pk for r in back.rows] == [s.pk for s in made[20:70]]
    oldest = alice_client.get(back.paging.first_url).context["page"]
    assert oldest.rows[0].snapshot == untimed and oldest.summary == "1–50 of 121"
    # The row before a page's first one is not on it: the first row's changes are from its parent.
    assert second.rows[0].diff_url == page_url(agent, after=first.rows[-1].snapshot.pk, start=51,
                                               a=made[48].pk, b=made[49].pk)


def test_its_htmx_fragment_is_the_timeline_alone(alice_client, agent):
    bulk_snapshots(agent, 60)
    response = alice_client.get(alice_client.get(page_url(agent)).context["page"].paging.next_url,
                                headers={"HX-Request": "true", "HX-Target": "timeline"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="timeline"') and "<html" not in html
    assert html.count('class="timeline-item') == 10


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_its_queries_stay_flat_in_the_number_of_snapshots(alice_client, agent, other_agent):
    small = bulk_snapshots(other_agent, 5)
    other_agent.project.memberships.create(user=agent.project.memberships.first().user, role="viewer")
    big = bulk_snapshots(agent, 3000)
    for snaps, who in ((small, other_agent), (big, agent)):
        assert snaps[0].agent == who
    pages = {
        "first": lambda a, s: page_url(a),
        "deep": lambda a, s: page_url(a, after=s[2].pk, start=4),
        "last": lambda a, s: page_url(a, before="last"),
        "opened and compared": lambda a, s: page_url(a, snapshot=s[3].pk, a=s[1].pk, b=s[4].pk),
    }
    for name, url in pages.items():
        # At most as many: a page of a few snapshots may read its second run (those without a time) too.
        few, many = _queries(alice_client, url(other_agent, small)), _queries(alice_client, url(agent, big))
        assert many <= few <= 10, name


def test_the_agent_page_and_its_memory_page_link_the_snapshots(alice_client, langgraph):
    url = page_url(langgraph)
    agent_page = alice_client.get(langgraph.get_absolute_url()).content.decode()
    assert f'<dd id="agent-snapshots"><a href="{url}">' in agent_page
    memory = alice_client.get(reverse("agents:agent_memory", args=[langgraph.pk])).content.decode()
    assert f'<a href="{url}" id="memory-snapshots-link">5</a>' in memory


def test_a_and_b_picked_on_different_pages_of_the_timeline_are_compared(alice_client, agent):
    made = bulk_snapshots(agent, 120)
    # A picked on the first page (compared alone: asked for B), then the timeline paged on.
    first = alice_client.get(page_url(agent, a=made[2].pk)).context["page"]
    assert first.compare is None and first.a == made[2].pk
    second = alice_client.get(first.paging.next_url)
    html = second.content.decode()
    # The second page sends A again with its form; B is picked there.
    assert f'<input type="hidden" name="a" value="{made[2].pk}">' in html
    assert html.index(f'name="a" value="{made[2].pk}"') < html.index('type="radio" name="a"')
    page = second.context["page"]
    query = "&".join(f"{k}={v}" for k, v in page.kept) + f"&b={made[60].pk}"
    compare = alice_client.get(f"{page.path}?{query}").context["page"].compare
    assert (compare.left, compare.right) == (made[2], made[60])
    # On its own page, A is the radio checked, not a hidden field.
    assert '<input type="hidden" name="a"' not in alice_client.get(page_url(agent, a=made[2].pk)).content.decode()


def test_a_compared_pair_is_read_once_and_opened_again_without_either_value(alice_client, friday):
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    url = page_url(friday, a=first.pk, b=second.pk)

    def read(url: str) -> tuple[list[str], object]:
        with CaptureQueriesContext(connection) as queries:
            response = alice_client.get(url)
        assert response.status_code == 200
        return [q["sql"] for q in queries.captured_queries], response.context["page"].compare

    cold, compared = read(url)
    warm, again = read(url)
    # Cold: the two digests in one query, the parts of the values that changed in another (test_snapshot_digest_reads);
    # warm: neither.
    digests_read = [q for q in cold if '"digest"' in q.split("FROM")[0] and "agents_snapshot" in q]
    parts_read = [q for q in cold if "json_extract(value" in q or "s.value #>" in q]
    assert len(digests_read) == len(parts_read) == 1
    assert not any(('"value"' in q.split("FROM")[0] or '"digest"' in q.split("FROM")[0]) and "agents_snapshot" in q
                   or q in parts_read for q in warm)
    assert len(warm) < len(cold)
    assert [(r.path, r.op, r.old, r.new, r.message_url) for r in again.rows] == [
        (r.path, r.op, r.old, r.new, r.message_url) for r in compared.rows]
    assert (again.total, again.counts, again.left, again.right) == (compared.total, compared.counts, first, second)


def test_a_kept_comparison_follows_new_messages_of_its_session(alice_client, friday):
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    url = page_url(friday, a=first.pk, b=second.pk)
    before = alice_client.get(url).context["page"].compare
    linked = next(r for r in before.rows if r.message_seq is not None)
    # The session is imported again without the message the link reached: the link must not stay.
    models.Message.objects.filter(session=second.session, seq=linked.message_seq).update(external_id="gone")
    models.Session.objects.filter(pk=second.session_id).update(content_version=second.session.content_version + 1)
    after = alice_client.get(url).context["page"].compare
    row = next(r for r in after.rows if r.path == linked.path)
    assert row.message_seq is None and row.message_url == ""


def test_a_kept_comparison_is_not_shown_to_who_may_not_see_it(client, alice_client, friday, django_user_model):
    first, second = models.Snapshot.objects.filter(agent=friday).order_by("seq")
    url = page_url(friday, a=first.pk, b=second.pk)
    assert alice_client.get(url).status_code == 200
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    assert client.get(url).status_code == 404
