"""The trimming lab: one session under a strategy, strategies side by side, strategies across sessions."""
from __future__ import annotations

import re
from unittest.mock import patch

import pytest
from django.utils.html import escape
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import models
from agents.lab import previews, reports
from agents.lab import trimming as lab_trimming
from agents.memory.tokens import count_messages, get_counter
from agents.memory.trimming import StrategyError, spec_from_text, strategy_spec, trim
from agents.store import reading
from tests.conversations import chat
from tests.strategies_messages import valid_conversations


def lab_url(session) -> str:
    return f"/sessions/{session.pk}/lab/"


def kept_in_page(html: str) -> list[int]:
    return sorted(int(i) for i in re.findall(r'id="lm-(\d+)" class="msg role-\w+ lab-msg lab-kept', html))


# --- the lab page --------------------------------------------------------------------------------------------


def test_it_renders_the_lab_with_a_form_from_the_strategy_parameters(alice_client, make_session):
    session = make_session(chat(5), title="Weather")
    response = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "4"})
    assert response.status_code == 200
    html = response.content.decode()
    # The picker groups strategies by framework under their human names; what is picked is explained.
    assert '<optgroup label="AutoGen">' in html
    assert '<option value="buffered" selected>AutoGen: buffered context' in html
    assert "AutoGen BufferedChatCompletionContext" in html  # what it emulates
    assert "<strong>Follows</strong> autogen-core 0.7.5" in html
    # Before one is picked, every strategy's description and parameters with their defaults, by framework.
    assert '<span class="mono">pin_system</span>=true, <span class="mono">buffer_size</span>=10<' in html
    assert '<span class="mono">max_turns</span>=8' in html
    assert 'type="number" id="p-buffer_size" name="buffer_size" value="4" min="1"' in html  # bound > 0
    assert 'type="checkbox" id="p-pin_system" name="pin_system" value="true" checked' in html  # default true
    assert "Messages AutoGen keeps" in html  # the field's help text
    assert 'hx-trigger="change, input changed delay:400ms"' in html
    assert 'id="lab-result"' in html and "<html" in html
    assert "Compare with" in html


def test_it_offers_literal_parameters_as_choices(alice_client, make_session):
    session = make_session(chat(3))
    html = alice_client.get(
        lab_url(session), {"strategy": "langchain_last", "start_on": ["human", "ai"]}
    ).content.decode()
    assert 'name="start_on" value="human" checked' in html
    assert 'name="start_on" value="ai" checked' in html
    assert 'name="start_on" value="tool">' in html


def test_it_marks_the_same_messages_kept_as_trim_does(alice_client, make_session):
    session = make_session(chat(12))
    params = {"buffer_size": 7}
    messages, counts = reading.session_messages_with_counts(session)
    expected = trim(messages, strategy_spec("buffered", params), counter=session.token_counter, token_counts=counts)
    html = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "7"}).content.decode()
    assert kept_in_page(html) == expected.kept
    assert f'<span id="tokens-before">{expected.tokens_before:,}</span>' in html
    assert f'<strong id="tokens-after">{expected.tokens_after:,}</strong>' in html
    for d in expected.dropped[:2]:
        assert escape(d.reason) in html


def test_it_uses_the_stored_token_counts(make_session):
    session = make_session(chat(4))
    messages, counts = reading.session_messages_with_counts(session)
    assert counts == list(session.messages.order_by("seq").values_list("token_count", flat=True))
    assert len(messages) == session.message_count and all(c > 0 for c in counts)


def test_it_shows_placeholders_notes_and_the_trimmed_lists_violations(alice_client, make_session):
    session = make_session(chat(10))
    html = alice_client.get(
        lab_url(session), {"strategy": "head_and_tail", "head_size": "2", "tail_size": "3"}
    ).content.decode()
    assert "lab-inserted" in html and "Skipped" in html  # AutoGen's placeholder, in place
    assert "Framework behaviour to know" in html
    # buffer_size=2 keeps a tool result without its call: flagged on the message and summarised.
    html = alice_client.get(lab_url(session), {"strategy": "openmanus_window", "max_messages": "2"}).content.decode()
    assert "The trimmed list breaks the protocol" in html
    assert "orphan_tool_result" in html or "leading_tool_result" in html


def test_it_marks_an_edited_message_and_shows_it_as_stored(alice_client, make_session):
    messages = chat(2)
    messages[2] = {**messages[2], "content": "Let me check <b>the weather</b>."}  # text sent with the call
    session = make_session(messages)
    html = alice_client.get(lab_url(session), {"strategy": "strip_thoughts"}).content.decode()
    assert re.search(r'id="lm-2" class="msg role-assistant lab-msg lab-edited', html)
    assert '<span class="lab-mark lab-mark-edited">edited</span>' in html
    assert "1 sent edited" in html and 'class="strip-cell strip-edited' in html
    # The stored text is shown beside the edit, escaped.
    assert "As stored (before the edit)" in html and "Let me check &lt;b&gt;the weather&lt;/b&gt;." in html
    # The edited row counts what is sent; the stored count is shown beside it.
    read = lab_trimming.session_trim(session=session, specs=[strategy_spec("strip_thoughts", {})])
    sent, stored = read.results[0].message_tokens[2], read.counts[2]
    assert sent < stored
    row = re.search(r'id="lm-2".*?<span class="tokens">(.*?)</span>\s*</header>', html, re.S).group(1)
    assert f"{sent} tok" in row and f"(stored {stored})" in row


def test_it_says_when_the_newest_question_is_lost(alice_client, make_session):
    session = make_session(chat(3) + [{"role": "user", "content": "And tomorrow?"}])
    html = alice_client.get(lab_url(session), {"strategy": "clear_non_system"}).content.decode()
    assert "lost (#13)" in html
    html = alice_client.get(lab_url(session), {"strategy": "unbounded"}).content.decode()
    assert "kept (#13)" in html


def test_it_serves_only_the_result_to_htmx(alice_client, make_session):
    session = make_session(chat(5))
    response = alice_client.get(
        lab_url(session),
        {"strategy": "buffered", "buffer_size": "3"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="lab-result",
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="lab-result"')
    assert "<html" not in html and 'id="lab-form"' not in html
    assert 'id="error-buffer_size" role="alert" hx-swap-oob="true"></p>' in html  # clears a previous error


def test_it_serves_the_form_and_result_when_the_strategy_changes_over_htmx(alice_client, make_session):
    session = make_session(chat(5))
    response = alice_client.get(
        lab_url(session), {"strategy": "last_turns"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-main"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="lab-main"')
    assert 'name="max_turns"' in html and 'id="lab-result"' in html and "hx-swap-oob" not in html


def test_it_shows_an_invalid_parameter_next_to_its_field(alice_client, make_session):
    session = make_session(chat(3))
    response = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "0"})
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'id="error-buffer_size" role="alert">buffer_size must be greater than 0</p>', html)
    assert "No preview" in html


def test_it_answers_an_invalid_parameter_over_htmx_with_200_and_the_error(alice_client, make_session):
    # 200, not 400: under DEBUG (make run) django-htmx's script replaces the whole document with a 400 answer.
    session = make_session(chat(3))
    for params in ({"buffer_size": "many"}, {"pin_system": "maybe"}):
        response = alice_client.get(
            lab_url(session), {"strategy": "buffered", **params}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result"
        )
        assert response.status_code == 200
        name = next(iter(params))
        assert re.search(
            rf'id="error-{name}" role="alert" hx-swap-oob="true">{name} must be', response.content.decode()
        )


def test_it_falls_back_from_an_unknown_strategy_with_a_message(alice_client, make_session):
    session = make_session(chat(2))
    response = alice_client.get(lab_url(session), {"strategy": "nope"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Unknown strategy &#x27;nope&#x27;; showing AutoGen: buffered context." in html
    # It shows what it says it shows: buffered's preview, not "No preview".
    assert "No preview" not in html and 'id="kept-count"' in html and kept_in_page(html)


def test_it_exports_the_trimmed_view_from_the_lab(alice_client, make_session):
    import json

    session = make_session(chat(6), title="Weather")
    html = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "3"}).content.decode()
    menu = html.split('class="export-menu')[1].split("</details>")[0]
    assert f'<form method="post" action="/sessions/{session.pk}/export/"' in menu
    assert 'name="csrfmiddlewaretoken"' in menu and "Export this trimmed view" in menu
    assert '<input type="hidden" name="strategy" value="buffered">' in menu
    assert '<input type="hidden" name="params" value="buffer_size=3">' in menu
    # What that form sends downloads the trimmed view.
    response = alice_client.post(f"/sessions/{session.pk}/export/",
                                 {"format": "native", "strategy": "buffered", "params": "buffer_size=3"})
    exported = json.loads(b"".join(response.streaming_content))["sessions"][0]
    assert exported["metadata"]["trimmed"]["params"]["buffer_size"] == 3
    assert len(exported["messages"]) == len(kept_in_page(html)) < session.message_count
    # A parameter change over htmx swaps the result, and the menu with it.
    fragment = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "5"},
                                HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lab-result").content.decode()
    assert '<input type="hidden" name="params" value="buffer_size=5">' in fragment


def test_it_resets_parameters_when_the_strategy_changed_without_js(alice_client, make_session):
    session = make_session(chat(2))
    html = alice_client.get(
        lab_url(session), {"strategy": "safe_token_budget", "params_for": "langchain_last", "max_tokens": "7"}
    ).content.decode()
    assert 'name="max_tokens" value="4000"' in html


def test_it_hides_another_projects_session(alice_client, make_session, other_agent):
    session = make_session(chat(2), agent=other_agent)
    assert alice_client.get(lab_url(session)).status_code == 404
    assert alice_client.get(f"{lab_url(session)}compare/").status_code == 404


def test_it_requires_login(client, make_session):
    session = make_session(chat(2))
    assert client.get(lab_url(session)).status_code == 302


def test_it_renders_a_long_session_compactly(alice_client, make_session):
    session = make_session(chat(1250))  # 5,001 messages
    messages, counts = reading.session_messages_with_counts(session)
    result = trim(messages, strategy_spec("buffered", {"buffer_size": 10}),
                  counter=session.token_counter, token_counts=counts)
    html = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "10"}).content.decode()
    assert f"… {len(result.dropped):,} dropped …</a>" in html  # one folded run in the strip
    assert len(re.findall(r'class="strip-cell', html)) == len(result.kept) + 5  # + the legend's cells
    assert len(re.findall(r'<article id="l[mp]-', html)) <= previews.MAX_RENDERED
    html = alice_client.get(lab_url(session), {"strategy": "unbounded"}).content.decode()
    assert len(re.findall(r'<article id="l[mp]-', html)) == previews.MAX_RENDERED
    assert "messages not shown here" in html and "5,001 kept" in html
    assert len(html) < 600_000


def test_it_links_the_lab_from_the_session_page(alice_client, make_session):
    session = make_session(chat(2))
    html = alice_client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/sessions/{session.pk}/lab/"' in html


def test_it_keeps_what_the_json_twin_keeps(alice_client, make_session):
    session = make_session(chat(6))
    query = {"strategy": "langchain_last", "max_tokens": "150", "start_on": "human"}
    api = alice_client.get(f"/api/sessions/{session.pk}/trim/", query)
    assert api.status_code == 200
    html = alice_client.get(lab_url(session), query).content.decode()
    assert kept_in_page(html) == api.json()["kept"]
    assert f'<strong id="tokens-after">{api.json()["tokens_after"]:,}</strong>' in html


# --- specs -----------------------------------------------------------------------------------------------------


def test_it_reads_and_writes_strategy_specs():
    spec = spec_from_text('langchain_last:max_tokens=2000,start_on=["human","ai"]')
    assert spec.name == "langchain_last" and spec.changed() == {"max_tokens": 2000, "start_on": ["human", "ai"]}
    assert spec_from_text(spec.text) == spec
    assert spec_from_text("buffered").text == "buffered"
    with pytest.raises(StrategyError, match="buffer_size"):
        spec_from_text("buffered:buffer_size=0")
    with pytest.raises(StrategyError, match="unknown strategy"):
        spec_from_text("nope:x=1")


# --- side by side ----------------------------------------------------------------------------------------------


def test_it_compares_strategies_side_by_side(alice_client, make_session):
    session = make_session(chat(8))
    messages, counts = reading.session_messages_with_counts(session)
    response = alice_client.get(
        f"{lab_url(session)}compare/", {"s": ["buffered:buffer_size=5", "langchain_last:max_tokens=200", "unbounded"]}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="compare-column') == 3
    for name, params in (("buffered", {"buffer_size": 5}), ("langchain_last", {"max_tokens": 200})):
        result = trim(messages, strategy_spec(name, params), counter=session.token_counter, token_counts=counts)
        assert f'data-tokens-after="{result.tokens_after}"' in html
        assert f'data-kept="{len(result.kept)}"' in html


def test_it_says_that_one_column_is_no_comparison(alice_client, make_session):
    # The page says "two to four columns": with one it says what to do, and two say nothing of it.
    session = make_session(chat(3))
    one = alice_client.get(f"{lab_url(session)}compare/", {"s": "buffered"}).content.decode()
    assert one.count('class="compare-column') == 1
    assert "One column: add a second strategy below to compare them side by side" in one
    two = alice_client.get(f"{lab_url(session)}compare/", {"s": ["buffered", "unbounded"]}).content.decode()
    assert "One column" not in two


def test_it_shows_a_bad_column_spec_in_its_column(alice_client, make_session):
    session = make_session(chat(3))
    response = alice_client.get(f"{lab_url(session)}compare/", {"s": ["buffered:buffer_size=-1", "unbounded"]})
    assert response.status_code == 200
    assert "greater than 0" in response.content.decode()


def test_it_adds_a_column_by_redirecting_to_the_named_columns(alice_client, make_session):
    session = make_session(chat(3))
    response = alice_client.get(f"{lab_url(session)}compare/", {"s": ["buffered", "unbounded"], "add": "last_turns"})
    assert response.status_code == 302
    assert response["Location"].endswith("?s=buffered&s=unbounded&s=last_turns")


def test_it_serves_the_comparison_fragment_to_htmx(alice_client, make_session):
    session = make_session(chat(3))
    response = alice_client.get(f"{lab_url(session)}compare/", {"s": ["buffered", "unbounded"]}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="compare-result"') and "<html" not in html


# --- across sessions -------------------------------------------------------------------------------------------


def test_it_reports_strategies_across_the_users_sessions(alice_client, make_session, other_agent):
    make_session(chat(6), title="Six turns")
    make_session(chat(2) + [{"role": "user", "content": "Last question?"}], title="Open question")
    make_session(chat(2), agent=other_agent, title="Not alices")
    response = alice_client.get("/lab/report/", {"s": ["clear_non_system", "openmanus_window:max_messages=3"]})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Six turns" in html and "Open question" in html and "Not alices" not in html
    summary = re.search(r'<tr class="summary-row" data-spec="clear_non_system">(.*?)</tr>', html, re.S).group(1)
    assert 'data-questions-lost="2"' in summary  # /clear drops every question
    summary = re.search(
        r'<tr class="summary-row" data-spec="openmanus_window:max_messages=3">(.*?)</tr>', html, re.S
    ).group(1)
    assert 'data-broken="1"' in summary  # the 3-message slice of "Six turns" starts on a tool result


def test_it_filters_the_report_like_the_session_list(alice_client, make_session):
    make_session(chat(2), title="Paris trip")
    make_session(chat(2), title="Tokyo trip")
    html = alice_client.get("/lab/report/", {"q": "Paris", "s": "buffered"}).content.decode()
    assert "Paris trip" in html and "Tokyo trip" not in html


def test_it_never_cuts_a_report_to_the_sessions_one_request_holds(alice_client, make_session, monkeypatch):
    """More sessions than a request holds go to a worker, which covers them all (test_background_jobs.py)."""
    monkeypatch.setattr(reports, "REPORT_SESSION_LIMIT", 2)
    for _ in range(3):
        make_session(chat(1))
    response = alice_client.get("/lab/report/", {"s": "buffered"})
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert len(job.params["session_ids"]) == 3


def test_it_never_cuts_a_report_to_the_messages_one_request_holds(alice_client, make_session, monkeypatch):
    monkeypatch.setattr(reports, "REPORT_MESSAGE_LIMIT", 12)
    for _ in range(3):
        make_session(chat(2))  # 9 messages each
    response = alice_client.get("/lab/report/", {"s": "buffered", "per_call": "1"})
    job = models.BackgroundJob.objects.get()
    assert response.status_code == 302 and job.total == 27 and job.params["per_call"] is True


def test_it_reports_with_a_bounded_number_of_queries(alice_client, make_session, django_assert_max_num_queries):
    for _ in range(12):
        make_session(chat(3))
    # Login session, user, the total of messages (run here or in the background?), the sessions, their stored
    # structures, the filter form's project and agent choices; the first time, their messages in one batch too, and
    # their structures kept in one upsert (in a savepoint).
    query = {"s": ["buffered", "safe_token_budget", "langchain_last"]}
    with django_assert_max_num_queries(11):
        alice_client.get("/lab/report/", query)
    with django_assert_max_num_queries(7):
        response = alice_client.get("/lab/report/", query)
    assert response.status_code == 200
    assert response.content.decode().count('class="report-row"') == 12


def test_it_says_which_strategy_boxes_the_report_left_out_in_the_swapped_result(alice_client, make_session):
    make_session(chat(3), title="Weather")
    response = alice_client.get("/lab/report/", {"s": ["nope", "buffered:buffer_size=2"], "date_from": "2024-13-45"},
                                HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="report-result"')
    assert (
        "Left out of the report:" in html and 'strategy box 1, <span class="mono">nope</span>: unknown strategy' in html
    )
    assert "Filters not applied:</strong> date_from:" in html
    assert 'data-spec="buffered:buffer_size=2"' in html
    # Nothing valid: 200 with the message, which replaces the old report (a 400 is not swapped by htmx).
    empty = alice_client.get("/lab/report/", {"s": "nope"}, HTTP_HX_REQUEST="true")
    assert empty.status_code == 200
    assert "Name at least one valid strategy." in empty.content.decode() and "report-row" not in empty.content.decode()


def test_it_serves_the_report_fragment_to_htmx(alice_client, make_session):
    make_session(chat(2))
    response = alice_client.get("/lab/report/", {"s": "buffered"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="report-result"') and "<html" not in html


# --- the preview accounts for every message --------------------------------------------------------------------

SMALL_PARAMS = {
    "buffered": {"buffer_size": 3}, "head_and_tail": {"head_size": 1, "tail_size": 2},
    "langchain_last": {"max_tokens": 60}, "openmanus_window": {"max_messages": 3}, "last_turns": {"max_turns": 1},
    "safe_token_budget": {"max_tokens": 80}, "token_limited": {"token_limit": 60}, "clear_non_system": {},
}


@settings(max_examples=150, deadline=None)
@given(
    messages=valid_conversations(),
    name=st.sampled_from(sorted(SMALL_PARAMS)),
    cut=st.sampled_from([(300, 60, 2), (6, 2, 1), (3, 1, 0)]),
)
def test_it_shows_every_message_once_in_order_whatever_the_caps(messages, name, cut):
    from agents.lab import previews

    counts = count_messages(messages, get_counter("cl100k"))
    result = trim(messages, strategy_spec(name, SMALL_PARAMS[name]), counter="cl100k", token_counts=counts)
    saved = (previews.MAX_RENDERED, previews.RENDERED_HEAD, previews.DROPPED_SHOWN)
    previews.MAX_RENDERED, previews.RENDERED_HEAD, previews.DROPPED_SHOWN = cut
    try:
        preview = previews.trim_preview(messages, counts, result)
    finally:
        previews.MAX_RENDERED, previews.RENDERED_HEAD, previews.DROPPED_SHOWN = saved
    rows = [x for x in preview.items if isinstance(x, previews.PreviewRow)]
    shown = sum(1 if isinstance(x, previews.PreviewRow) else x.count for x in preview.items)
    assert shown == len(messages) + len(result.inserted)  # rendered rows plus gaps cover the whole list
    assert len(rows) <= cut[0]  # bounded, whatever the strategy keeps
    indices = [r.index for r in rows if r.index is not None]
    assert indices == sorted(indices)  # input order
    assert [r.index for r in rows if r.status == "kept"] == [i for i in result.kept if i in set(indices)]
    assert sum(run.count for run in preview.strip) == len(messages) + len(result.inserted)
    # Each kept row shows the message the trimmed list sends at its position.
    for r in rows:
        if r.position is not None:
            assert result.messages[r.position] is r.message


@settings(max_examples=150, deadline=None)
@given(
    messages=valid_conversations(),
    name=st.sampled_from(sorted(SMALL_PARAMS)),
    cells=st.sampled_from([240, 4]),
)
def test_it_draws_each_message_in_the_strip_with_the_reason_the_trim_gives(messages, name, cells):
    """The strip is built from the result's runs of dropped messages: a cell per message where it is not folded,
    each with the reason the trim gives, and a folded run counts what it stands for."""
    counts = count_messages(messages, get_counter("cl100k"))
    result = trim(messages, strategy_spec(name, SMALL_PARAMS[name]), counter="cl100k", token_counts=counts)
    with patch.object(previews, "STRIP_CELLS", cells), patch.object(previews, "STRIP_RUN", 2):
        strip = previews.trim_preview(messages, counts, result).strip

    why = {d.index: d.reason for d in result.dropped}
    cells_drawn = [(r.index, r.reason) for run in strip for r in run.rows if r.status == "dropped"]
    assert all(why[i] == reason for i, reason in cells_drawn)
    for run in strip:
        assert run.folded == (len(messages) + len(result.inserted) > cells and run.count > 2)
        assert len(run.rows) == (0 if run.folded else run.count)
        if run.status == "dropped":
            assert all(i in why for i in range(run.first, run.last + 1)) and run.count == run.last - run.first + 1
    statuses = [run.status for run in strip]
    assert all(a != b for a, b in zip(statuses, statuses[1:], strict=False))  # a run per change of status
    assert sum(run.count for run in strip if run.status == "dropped") == len(result.dropped)


def test_it_renders_the_lab_for_every_registered_strategy_with_its_defaults(alice_client, make_session):
    from agents.memory.trimming import STRATEGIES

    session = make_session(chat(3))
    for name in STRATEGIES:
        response = alice_client.get(lab_url(session), {"strategy": name})
        assert response.status_code == 200, name
        assert f'<option value="{name}" selected' in response.content.decode(), name
