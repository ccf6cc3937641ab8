"""What filled the window as pages (agents/ledger/window_shown.py, window_views.py): a reply's or a captured call's
bar, loaded on demand from the session page, adds up to what was sent; the growth chart's series is reply_context's
at each sampled reply; both cost the same queries in a short and a long session; scoped, escaped, and clear about a
bad request."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.ledger import context
from agents.ledger.context import CARRIERS_LISTED, GROWTH_SAMPLES, PARTS, reply_context, session_growth
from agents.memory.tokens import get_counter
from tests.window_sessions import friday_session, long_session

HX = {"HTTP_HX_REQUEST": "true"}


def figures(html: str) -> tuple[dict[str, int], int]:
    """The bar's table as the reader sees it: each part's tokens, and the total sent."""
    rows = re.findall(r'data-part="(\w+)">.*?<td class="num">([\d,]+)</td>', html, re.S)
    total = re.search(r'Total sent</th><td class="num">([\d,]+)</td>', html)
    assert total, html[:2000]
    return {part: int(n.replace(",", "")) for part, n in rows}, int(total.group(1).replace(",", ""))


def running_before(session: models.Session, seq: int) -> int:
    """The session page's running total Σ of the message before the reply: the list the reply's call was sent."""
    if seq == 0:
        return 0
    return session.messages.get(seq=seq - 1).token_running


@pytest.fixture
def friday(db, alice, tmp_path: Path) -> models.Session:
    session = friday_session("mem", tmp_path)
    models.Membership.objects.create(project=session.agent.project, user=alice, role="viewer")
    return session


def assert_bar_adds_up(client, session: models.Session, seq: int) -> dict[str, int]:
    response = client.get(f"/sessions/{session.pk}/context/", {"seq": seq}, **HX)
    assert response.status_code == 200, response.content[:500]
    html = response.content.decode()
    assert "<html" not in html and f'id="window-bar-{seq}"' in html  # the fragment alone
    parts, total = figures(html)
    api = client.get(f"/api/sessions/{session.pk}/context/", {"seq": seq}).json()
    tools = parts["tool_definitions"]
    assert list(parts) == list(PARTS)
    assert sum(parts.values()) == total == api["total"]
    assert total == running_before(session, seq) + get_counter(session.token_counter).per_list + tools
    assert parts == {p["part"]: p["tokens"] for p in api["parts"]}
    for p in api["parts"]:  # each part's runs of messages a click away, at their first message
        for first, _last in p["ranges"][:8]:
            assert f'href="/sessions/{session.pk}/?at={first}#m-{first}"' in html
    return parts


def test_each_reply_s_bar_adds_up_to_what_it_was_sent_in_agentscope_s_file(friday, alice, client) -> None:
    client.force_login(alice)
    replies = list(friday.messages.filter(role="assistant").values_list("seq", flat=True))
    assert replies == [3, 5, 9, 11]
    for seq in replies:
        parts = assert_bar_adds_up(client, friday, seq)
    # The last reply was sent both turns' knowledge and turn 2's recalled memory: the parts say so.
    assert parts["retrieved_documents"] > 0 and parts["recalled_memory"] > 0 and parts["history"] > 0


def test_each_bar_adds_up_on_the_demo_data(db, client) -> None:
    call_command("seed_demo", stdout=io.StringIO())
    demo = get_user_model().objects.get(username="demo")
    client.force_login(demo)
    checked = 0
    for session in models.Session.objects.all():
        replies = list(session.messages.filter(role="assistant").order_by("seq").values_list("seq", flat=True))
        for seq in {*replies[:2], *replies[len(replies) // 2:len(replies) // 2 + 1], *replies[-1:]}:
            assert_bar_adds_up(client, session, seq)
            checked += 1
    assert checked > 20


def test_the_session_page_offers_each_reply_its_bar_on_demand(friday, alice, client) -> None:
    client.force_login(alice)
    html = client.get(friday.get_absolute_url()).content.decode()
    for seq, role in friday.messages.values_list("seq", "role"):
        article = html.split(f'<article id="m-{seq}"')[1].split("</article>")[0]
        url = f"/sessions/{friday.pk}/context/?seq={seq}"
        if role == "assistant":
            assert f'hx-get="{url}" hx-trigger="toggle once"' in article
            assert f'<a class="small" href="{url}">Open the window bar</a>' in article  # without JavaScript
        else:
            assert "window-disclosure" not in article
    assert f'hx-get="/sessions/{friday.pk}/context/growth/"' in html
    # Opened without JavaScript: the bar's own page.
    page = client.get(f"/sessions/{friday.pk}/context/", {"seq": 9}).content.decode()
    assert "<html" in page and "What filled the window for reply #9" in page and 'id="window-bar-9"' in page


def test_a_reply_of_a_captured_call_shows_what_the_call_was_sent(friday, alice, client) -> None:
    client.force_login(alice)
    call = models.LlmCall.objects.create(session=friday, trace_id="t" * 32, span_id="s" * 16, placed=True,
                                         sent=[0, 1, 2, 6, 7, 8], reply_seq=9)
    html = client.get(friday.get_absolute_url()).content.decode()
    article = html.split('<article id="m-9"')[1].split("</article>")[0]
    assert f'hx-get="/sessions/{friday.pk}/context/?call={call.pk}"' in article
    composition = reply_context(user=alice, session_id=friday.pk, call_id=call.pk)
    counts = dict(friday.messages.values_list("seq", "token_count"))
    assert composition.total == sum(counts[s] for s in call.sent) + get_counter(friday.token_counter).per_list
    fragment = client.get(f"/sessions/{friday.pk}/context/", {"call": call.pk}, **HX).content.decode()
    parts, total = figures(fragment)
    assert total == composition.total == sum(parts.values())
    # The call's own page draws the same bar.
    page = client.get(f"/sessions/{friday.pk}/calls/{call.pk}/").content.decode()
    assert f'id="window-bar-call-{call.pk}"' in page and figures(page) == (parts, total)
    call_url = f'href="/sessions/{friday.pk}/calls/{call.pk}/">the call</a>'
    assert call_url in fragment and call_url not in page  # no link to itself on the call's page


def test_it_says_what_is_wrong_with_a_bad_seq_or_call(friday, alice, client) -> None:
    client.force_login(alice)
    url = f"/sessions/{friday.pk}/context/"
    for query, said in (({"seq": "4"}, "seq: message #4 is a tool message; a reply is an assistant message"),
                        ({"seq": "99"}, "seq: no message #99; the session has 12"),
                        ({"seq": "x"}, "seq: &#x27;x&#x27; is not a whole number"),
                        ({"seq": "-3"}, "seq: -3 is negative"),
                        ({}, "seq: give the reply&#x27;s message number (or call: a captured call&#x27;s id)")):
        for extra in ({}, HX):
            response = client.get(url, query, **extra)
            assert response.status_code == 400, query
            assert f'<p class="form-error" role="alert">{said}</p>' in response.content.decode()
    assert client.get(url, {"call": 999_999}).status_code == 404


def test_it_escapes_agent_text_and_what_the_request_said(friday, alice, client) -> None:
    client.force_login(alice)
    hostile = '<script>alert("x")</script>'
    friday.title = hostile
    friday.save(update_fields=["title"])
    friday.agent.name = hostile
    friday.agent.save(update_fields=["name"])
    for url, query, extra in ((f"/sessions/{friday.pk}/context/", {"seq": 9}, {}),
                              (f"/sessions/{friday.pk}/context/", {"seq": hostile}, HX),
                              (f"/sessions/{friday.pk}/context/", {"seq": hostile}, {}),
                              (f"/sessions/{friday.pk}/context/growth/", {}, {}),
                              (f"/sessions/{friday.pk}/calls/0/", {}, {})):
        response = client.get(url, query, **extra)
        html = response.content.decode()
        assert hostile not in html
        if response.status_code != 404:
            assert "&lt;script&gt;alert(" in html


def test_another_project_s_session_is_not_found(friday, bob, client) -> None:
    client.force_login(bob)
    for url, query in ((f"/sessions/{friday.pk}/context/", {"seq": 9}),
                       (f"/sessions/{friday.pk}/context/", {"seq": "x"}),
                       (f"/sessions/{friday.pk}/context/growth/", {}),
                       (f"/api/sessions/{friday.pk}/context/growth/", {})):
        assert client.get(url, query).status_code == 404, url
        assert client.get(url, query, **HX).status_code == 404, url


@pytest.mark.parametrize("seqs_max", [context.GROWTH_SEQS_MAX, 10])  # what replies add named by seq, or as ranges
def test_the_growth_series_is_reply_context_at_each_sampled_reply(friday, alice, agent, client, monkeypatch,
                                                                   seqs_max) -> None:
    monkeypatch.setattr(context, "GROWTH_SEQS_MAX", seqs_max)
    models.Membership.objects.get_or_create(project=agent.project, user=alice)
    long = long_session(agent, 6_000, run=2_100)  # a reply whose input is longer than a part lists (2,000)
    client.force_login(alice)
    for session, sampled in ((friday, False), (long, True)):
        growth = session_growth(user=alice, session_id=session.pk)
        assert growth.sampled is sampled and 0 < len(growth.points) <= GROWTH_SAMPLES
        for point in growth.points:
            composition = reply_context(user=alice, session_id=session.pk, seq=point.seq)
            assert point.total == composition.total
            assert point.tokens == {p.part: p.tokens for p in composition.parts}, point.seq
        api = client.get(f"/api/sessions/{session.pk}/context/growth/").json()
        assert api["points"] == [p.to_dict() for p in growth.points] and api["sampled"] is sampled
    assert [p.seq for p in session_growth(user=alice, session_id=friday.pk).points] == [3, 5, 9, 11]
    points = session_growth(user=alice, session_id=long.pk).points
    # Every part shows somewhere: the system prompt's recalled fact, knowledge, the summary, tools.
    assert all(any(p.tokens[part] for p in points) for part in PARTS if part != "memory_blocks")
    after_run = long.messages.filter(role="assistant", seq__gte=3_000 + 2_100).order_by("seq").first()
    assert after_run is not None and after_run.seq in [p.seq for p in points]
    input_of = {p.seq: p.tokens["input"] for p in points}
    before = long.messages.filter(role="assistant", seq__lt=3_000).order_by("-seq").first().seq  # the reply before
    listed = long.messages.get(seq=before + 2_000).token_running - long.messages.get(seq=before).token_running
    assert input_of[after_run.seq] == listed + get_counter(long.token_counter).per_list


def test_the_growth_chart_draws_the_parts_and_the_window(alice, agent, client) -> None:
    long = long_session(agent, 3_000)
    client.force_login(alice)
    html = client.get(f"/sessions/{long.pk}/context/growth/", **HX).content.decode()
    assert "<html" not in html and 'id="window-growth"' in html
    assert "<strong>Sampled:</strong>" in html
    assert "each of 200 messages spread evenly over the session's 3,000" in html
    drawn = re.findall(r'<polygon class="part-fill part-(\w+)" points="([^"]+)"', html)
    assert [part for part, _ in drawn] == ["system", "recalled_memory", "retrieved_documents", "summary", "history",
                                           "tool_definitions", "input"]
    assert all(len(points.split()) == 2 * len(session_growth(user=alice, session_id=long.pk).points)
               for _, points in drawn)
    # 128,000 against a few thousand: the window is off the chart, and said so; near it, drawn as a line.
    assert '<line class="window-line"' not in html and "The window (128,000 tokens) is above the chart" in html
    agent.context_window = 12_000
    agent.save(update_fields=["context_window"])
    near = client.get(f"/sessions/{long.pk}/context/growth/", **HX).content.decode()
    line = re.search(r'<line class="window-line" x1="0" x2="600" y1="([\d.]+)" y2="\1">', near)
    largest = max(p.total for p in session_growth(user=alice, session_id=long.pk).points)
    assert line and float(line.group(1)) == round(200 * (1 - 12_000 / max(largest, 12_000)), 2)
    assert "above the chart" not in near
    assert html.count("<tr><th scope=\"row\"><a href=") == len(session_growth(user=alice, session_id=long.pk).points)
    page = client.get(f"/sessions/{long.pk}/context/growth/").content.decode()
    assert "<html" in page and "Window over the session" in page


def queries(client, url: str, query: dict) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, query, **HX)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_bar_and_the_growth_cost_the_same_queries_in_a_200_and_a_20_000_message_session(
        alice, agent, client) -> None:
    short, long = long_session(agent, 200), long_session(agent, 20_000)
    client.force_login(alice)
    counts = []
    for session in (short, long):
        last = session.messages.filter(role="assistant").order_by("-seq").values_list("seq", flat=True).first()
        middle = session.messages.filter(role="assistant", seq__gte=session.message_count // 2).order_by(
            "seq").values_list("seq", flat=True).first()
        counts.append((queries(client, f"/sessions/{session.pk}/context/", {"seq": last}),
                       queries(client, f"/sessions/{session.pk}/context/", {"seq": middle}),
                       queries(client, f"/sessions/{session.pk}/context/growth/", {}),
                       queries(client, f"/api/sessions/{session.pk}/context/growth/", {})))
    assert counts[0] == counts[1], counts


def test_the_bar_sums_in_the_database_what_reply_context_lists_one_by_one(alice, agent, client) -> None:
    """Past CARRIERS_LISTED recalls the bar (``runs``) reads the first carriers only and sums the rest in the
    database: the same tokens and messages per part as every carrier read, its runs the first of the full ones."""
    long = long_session(agent, 6_000, run=2_100)  # 1,100 carriers, of which the first 500 are read
    assert models.Recall.objects.filter(session=long).count() > CARRIERS_LISTED + 100
    replies = list(long.messages.filter(role="assistant").order_by("seq").values_list("seq", flat=True))
    for seq in {*replies[:3], *replies[::40], replies[-1]}:
        full = reply_context(user=alice, session_id=long.pk, seq=seq)
        summed = reply_context(user=alice, session_id=long.pk, seq=seq, runs=8)
        assert summed.total == full.total
        for a, b in zip(summed.parts, full.parts, strict=True):
            assert (a.part, a.tokens, a.count) == (b.part, b.tokens, b.count), (seq, a.part)
            assert len(a.ranges) <= 8 and a.ranges == b.ranges[:len(a.ranges)], (seq, a.part)
    client.force_login(alice)
    html = client.get(f"/sessions/{long.pk}/context/", {"seq": replies[-1]}, **HX).content.decode()
    last = reply_context(user=alice, session_id=long.pk, seq=replies[-1])
    recalled = next(p for p in last.parts if p.part == "recalled_memory")
    shown = sum(last - first + 1 for first, last in recalled.ranges[:8])
    assert f'<span class="muted">and {recalled.count - shown:,} more</span>' in html


def test_the_growth_api_is_in_the_openapi_schema_with_its_example(alice, client) -> None:
    client.force_login(alice)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/sessions/{session_id}/context/growth/"]["get"]
    assert operation["operationId"] == "session_context_growth"
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    example = schema["components"]["schemas"][ref]["examples"][0]
    assert example["parts"] == list(PARTS) and all(sum(p["parts"].values()) == p["total"] for p in example["points"])
