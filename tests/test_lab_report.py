"""The trimming report: its rows ordered by any column, each summary count opening the sessions it counts, the
session list's filters (token ranges included), CSV and JSON downloads, and the inline SVG savings chart."""
from __future__ import annotations

import csv
import io
import json
import re

from django.urls import reverse

from agents.lab import presets
from agents.memory.trimming import spec_from_text, trim
from agents.store import reading
from tests.conversations import chat

REPORT = "/lab/report/"
SPECS = ["openmanus_window:max_messages=3", "clear_non_system"]


def row_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr class="report-row" data-session="(\d+)">', html)]


def sessions(make_session):
    """Three sessions: one the OpenManus window leaves broken, one with an open question, one short."""
    broken = make_session(chat(6), title="Broken by the window")
    open_question = make_session(chat(2) + [{"role": "user", "content": "And tomorrow?"}], title="Open question")
    short = make_session(chat(1), title="Short")
    return broken, open_question, short


def trimmed(session, text: str):
    messages, counts = reading.session_messages_with_counts(session)
    return trim(messages, spec_from_text(text), counter=session.token_counter, token_counts=counts)


def expected_after(session, text: str) -> int:
    return trimmed(session, text).tokens_after


def test_it_orders_the_rows_by_any_column_both_ways(alice_client, make_session):
    made = sessions(make_session)
    html = alice_client.get(REPORT, {"s": SPECS, "order": "after-1"}).content.decode()
    after = {s.pk: expected_after(s, SPECS[0]) for s in made}
    assert len(set(after.values())) > 1
    assert sorted(row_ids(html)) == sorted(after)
    assert [after[pk] for pk in row_ids(html)] == sorted(after.values())
    html = alice_client.get(REPORT, {"s": SPECS, "order": "-after-1"}).content.decode()
    assert [after[pk] for pk in row_ids(html)] == sorted(after.values(), reverse=True)
    by_title = alice_client.get(REPORT, {"s": SPECS, "order": "session"}).content.decode()
    assert row_ids(by_title) == [made[0].pk, made[1].pk, made[2].pk]  # Broken, Open, Short
    by_tokens = alice_client.get(REPORT, {"s": SPECS, "order": "-tokens"}).content.decode()
    assert row_ids(by_tokens)[0] == made[0].pk
    # The header says the order and links to the other direction, keeping the report's address.
    back = "?s=openmanus_window%3Amax_messages%3D3&amp;s=clear_non_system&amp;order=tokens"
    assert f'aria-sort="descending"><a href="{back}"' in by_tokens
    # An order that names nothing leaves the service's order.
    assert row_ids(alice_client.get(REPORT, {"s": SPECS, "order": "after-9"}).content.decode()) == row_ids(
        alice_client.get(REPORT, {"s": SPECS}).content.decode())


def test_each_count_opens_the_sessions_it_counts(alice_client, make_session):
    broken, open_question, short = sessions(make_session)
    left_broken = [s.pk for s in (broken, open_question, short)
                   if any(v.severity == "error" for v in trimmed(s, SPECS[0]).violations)]
    assert len(left_broken) == 1
    html = alice_client.get(REPORT, {"s": SPECS, "q": "o"}).content.decode()  # "o" is in every title
    summary = re.search(r'<tr class="summary-row" data-spec="openmanus_window:max_messages=3">(.*?)</tr>', html,
                        re.S).group(1)
    link = re.search(r'data-broken="1"><a href="\?([^"]*)"', summary).group(1).replace("&amp;", "&")
    assert link == "s=openmanus_window%3Amax_messages%3D3&s=clear_non_system&q=o&show=broken-1"
    shown = alice_client.get(f"{REPORT}?{link}").content.decode()
    assert row_ids(shown) == left_broken
    assert "Showing the 1 session where" in shown and "left broken" in shown
    lost = alice_client.get(REPORT, {"s": SPECS, "show": "lost-2"}).content.decode()
    assert sorted(row_ids(lost)) == sorted([broken.pk, open_question.pk, short.pk])  # /clear drops every question
    # "of N": the session list with the report's filters, which gives the same sessions.
    listing = reverse("agents:session_list")
    assert f'href="{listing}?q=o" title="These sessions in the list">of 3</a>' in summary
    listed = alice_client.get(listing, {"q": "o"}).content.decode()
    for s in (broken, open_question, short):
        assert f'href="/sessions/{s.pk}/' in listed


def test_it_filters_by_the_lists_token_range(alice_client, make_session):
    _, open_question, short = sessions(make_session)
    low, high = short.token_total, open_question.token_total
    html = alice_client.get(REPORT, {"s": SPECS, "min_tokens": low + 1, "max_tokens": high}).content.decode()
    assert row_ids(html) == [open_question.pk]
    assert 'name="min_tokens"' in html and 'name="max_tokens"' in html and 'name="label"' in html


def test_it_downloads_the_report_as_csv_and_json(alice_client, make_session, project, alice):
    broken, open_question, short = sessions(make_session)
    presets.preset_create(user=alice, project=project, name="window", strategy="openmanus_window",
                          params={"max_messages": 3}, counter="cl100k")
    query = {"s": ["preset:window", "clear_non_system"], "order": "-after-1"}
    response = alice_client.get(REPORT, {**query, "download": "json"})
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="trimming-report.json"'
    data = json.loads(response.content)
    assert data["strategies"] == ["preset:window (openmanus_window:max_messages=3; cl100k)", "clear_non_system"]
    after = {s.pk: expected_after(s, SPECS[0]) for s in (broken, open_question, short)}
    assert {r["session"]: r["cells"][0]["tokens_after"] for r in data["rows"]} == after
    assert [r["cells"][0]["tokens_after"] for r in data["rows"]] == sorted(after.values(), reverse=True)
    window = data["summaries"][0]
    assert (window["sessions"], window["broken"]) == (3, 1)
    before = sum(r["tokens_before"] for r in data["rows"])
    assert window["tokens_saved"] == round((before - sum(after.values())) / before, 4)

    response = alice_client.get(REPORT, {**query, "download": "csv"})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(lines) == 6  # three sessions, two strategies
    first = lines[0]
    assert (int(first["session"]), first["strategy"], int(first["tokens_after"])) == (
        data["rows"][0]["session"], data["strategies"][0], data["rows"][0]["cells"][0]["tokens_after"])
    # The page links both with the report's address.
    html = alice_client.get(REPORT, query).content.decode()
    assert 'order=-after-1&amp;download=csv" id="report-csv"' in html


def test_a_title_cannot_run_as_a_spreadsheet_formula(alice_client, make_session):
    make_session(chat(1), title="=HYPERLINK(\"http://x\")")
    text = alice_client.get(REPORT, {"s": "buffered", "download": "csv"}).content.decode()
    assert "'=HYPERLINK" in text


def test_it_draws_the_tokens_saved_per_strategy(alice_client, make_session):
    sessions(make_session)
    html = alice_client.get(REPORT, {"s": ["buffered:buffer_size=2", "unbounded"]}).content.decode()
    svg = re.search(r'<svg class="savings-chart".*?</svg>', html, re.S).group(0)
    saved = [float(x) for x in re.findall(r'<rect class="savings-bar[^"]*"[^>]*data-saved="([-\d.]+)"', svg)]
    assert len(saved) == 2 and saved[0] > 0.3 and saved[1] == 0.0
    widths = [float(x) for x in re.findall(r'<rect class="savings-bar[^"]*"[^>]*width="([\d.]+)"', svg)]
    assert widths[0] > 0 and widths[1] == 0
    assert "<script" not in svg
