"""The compare page's aligned table: each message's mark in every column with the reason, disagreeing rows
highlighted and switchable, identical runs folded, a summary row per column, columns moved in place."""
from __future__ import annotations

import re

from django.utils.html import escape

from agents.memory.compare import compare_aligned
from agents.memory.trimming import spec_from_text, trim
from agents.store import reading
from tests.conversations import chat

SPECS = ["buffered:buffer_size=3", "openmanus_window:max_messages=3", "safe_token_budget:max_tokens=200"]


def compare_url(session) -> str:
    return f"/sessions/{session.pk}/lab/compare/"


def row_marks(html: str) -> dict[int, list[str]]:
    """Each message row's marks, by input index."""
    out = {}
    for index, cells in re.findall(r'<tr class="aligned-row[^"]*" id="ar-(\d+)">(.*?)</tr>', html, re.S):
        out[int(index)] = re.findall(r'class="mark mark-(\w+)"', cells)
    return out


def expected(session, specs, **kwargs):
    messages, counts = reading.session_messages_with_counts(session)
    results = [trim(messages, spec_from_text(s), counter=session.token_counter, token_counts=counts) for s in specs]
    return compare_aligned(messages, results, **kwargs)


def test_it_marks_every_message_in_every_column_with_the_reason(alice_client, make_session):
    session = make_session(chat(12), title="Weather")
    aligned = expected(session, SPECS)
    html = alice_client.get(compare_url(session), {"s": SPECS}).content.decode()

    rows = row_marks(html)
    shown = [x for x in aligned.items if not x.is_fold]
    assert sorted(rows) == sorted(x.index for x in shown if x.index is not None)
    for item in shown:
        assert rows[item.index] == [m.kind for m in item.marks]
    # The reason on hover (title) and on focus (a focusable mark that carries it).
    reason = escape("dropped: outside the last 3 messages (OpenManus keeps messages[-3:])")
    assert f'tabindex="0" title="{reason}" data-reason="{reason}">dropped</span>' in html
    # Disagreeing rows are highlighted and counted; the first is linked.
    assert html.count('class="aligned-row disagree"') == sum(1 for x in shown if x.disagree) > 0
    assert (f"The columns disagree on {aligned.disagreeing} of {aligned.rows} rows, first at "
            f'<a href="#ar-{aligned.first_disagreement}">') in html
    # An identical run is folded.
    fold = next(x for x in aligned.items if x.is_fold)
    assert f"{fold.count} messages #{fold.first}–#{fold.last} folded" in html
    # The summary row: messages, tokens, violations and the newest question per column.
    for k, s in enumerate(aligned.summaries, 1):
        cell = f'data-column="{k}" data-messages="{s.messages}" data-tokens="{s.tokens}" data-errors="{s.errors}"'
        assert cell in html
    assert html.count("question lost</span>") == sum(1 for s in aligned.summaries if s.question_kept is False) > 0


def test_it_shows_only_the_rows_where_the_columns_disagree(alice_client, make_session):
    session = make_session(chat(12), title="Weather")
    aligned = expected(session, SPECS, only_disagreements=True)
    html = alice_client.get(compare_url(session), {"s": SPECS, "only": "1"}).content.decode()
    assert 'id="compare-only" name="only" value="1" checked' in html
    rows = row_marks(html)
    assert rows and all(len(set(marks)) > 1 for marks in rows.values())
    assert sorted(rows) == sorted(x.index for x in aligned.items if not x.is_fold and x.index is not None)
    assert 'class="aligned-row"' not in html  # no agreeing row left unfolded


def test_it_pages_a_long_session_and_stays_bounded(alice_client, make_session):
    session = make_session(chat(300), title="Long")  # 1,201 messages
    specs = ["buffered:buffer_size=3", "last_turns:max_turns=2"]
    html = alice_client.get(compare_url(session), {"s": specs}).content.decode()
    aligned = expected(session, specs)
    assert len(aligned.items) < 60  # the identical runs fold
    assert len(row_marks(html)) == sum(1 for x in aligned.items if not x.is_fold and x.index is not None)
    assert len(html) < 400_000


def test_it_moves_a_column_to_the_left(alice_client, make_session):
    session = make_session(chat(3), title="Weather")
    html = alice_client.get(compare_url(session), {"s": SPECS}).content.decode()
    moved = ("s=buffered%3Abuffer_size%3D3&amp;s=safe_token_budget%3Amax_tokens%3D200"
             "&amp;s=openmanus_window%3Amax_messages%3D3")
    assert f'<a class="compare-move" href="?{moved}"' in html
    assert html.count('class="compare-move"') == 2  # not on the first column


def test_it_changes_only_the_column_whose_parameters_changed(alice_client, make_session):
    session = make_session(chat(12), title="Weather")
    before = row_marks(alice_client.get(compare_url(session), {"s": SPECS}).content.decode())
    changed = [SPECS[0], "openmanus_window:max_messages=9", SPECS[2]]
    after = row_marks(alice_client.get(compare_url(session), {"s": changed}).content.decode())
    both = sorted(set(before) & set(after))
    assert both
    assert [before[i][0] for i in both] == [after[i][0] for i in both]
    assert [before[i][2] for i in both] == [after[i][2] for i in both]
    assert [before[i][1] for i in both] != [after[i][1] for i in both]


# --- each column its own parameter form, columns changed in place ---------------------------------------------


def column_form(*columns: tuple[str, dict[str, str]]) -> dict[str, str]:
    """The compare form as the page sends it: ``c2`` a column's strategy, ``c2-KEY`` its parameters."""
    data = {}
    for k, (name, params) in enumerate(columns, 1):
        data[f"c{k}"] = name
        data[f"c{k}-for"] = name
        data.update({f"c{k}-{key}": value for key, value in params.items()})
    return data


def test_it_gives_each_column_its_own_parameter_form(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    html = alice_client.get(compare_url(session), {"s": SPECS}).content.decode()
    # Column 2's strategy picked in a grouped select, its parameter a field of its own, holding the column's value.
    assert '<select id="c2" name="c2" aria-label="Strategy 2">' in html
    assert '<option value="openmanus_window" selected>OpenManus: memory window</option>' in html
    assert 'id="c2-p-max_messages" name="c2-max_messages" value="3"' in html
    assert 'id="c1-p-buffer_size" name="c1-buffer_size" value="3"' in html
    assert 'id="c3-p-max_tokens" name="c3-max_tokens" value="200"' in html


def test_it_answers_a_columns_form_with_the_address_that_names_the_columns(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    data = column_form(("buffered", {"buffer_size": "3", "pin_system": "true"}),
                       ("openmanus_window", {"max_messages": "9"}))
    response = alice_client.get(compare_url(session), {**data, "only": "1"})
    assert response.status_code == 302
    assert response["Location"].endswith("?s=buffered%3Abuffer_size%3D3&s=openmanus_window%3Amax_messages%3D9&only=1")

    # Over htmx: the result, and that address pushed.
    response = alice_client.get(compare_url(session), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Push-Url"].endswith("?s=buffered%3Abuffer_size%3D3&s=openmanus_window%3Amax_messages%3D9")
    assert response.content.decode().lstrip().startswith('<div id="compare-result"')


def test_it_puts_a_columns_parameter_error_beside_its_field_and_keeps_the_address(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    data = column_form(("buffered", {"buffer_size": "0"}), ("openmanus_window", {"max_messages": "5"}))
    response = alice_client.get(compare_url(session), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "HX-Push-Url" not in response
    html = response.content.decode()
    error = re.search(r'<p class="field-error" id="c1-error-buffer_size" role="alert">([^<]+)</p>', html)
    assert error and "greater than 0" in error.group(1)
    assert 'name="c1-buffer_size" value="0"' in html  # what was typed stays in the field
    # The other column still shows its marks.
    assert 'data-spec="openmanus_window:max_messages=5"' in html and "data-tokens-after=" in html


def test_it_starts_a_switched_columns_parameters_from_the_defaults(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    data = column_form(("buffered", {"buffer_size": "3"}), ("unbounded", {}))
    data["c1"] = "last_turns"  # switched in the select; buffer_size was the old strategy's
    response = alice_client.get(compare_url(session), data)
    assert response.status_code == 302 and response["Location"].endswith("?s=last_turns&s=unbounded")


def test_it_adds_removes_and_moves_columns_in_place(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    html = alice_client.get(compare_url(session), {"s": SPECS, "only": "1"}).content.decode()
    path = compare_url(session)
    # Move and remove are links (no script needed) that htmx follows in place, keeping the switch.
    moved = ("s=buffered%3Abuffer_size%3D3&amp;s=safe_token_budget%3Amax_tokens%3D200"
             "&amp;s=openmanus_window%3Amax_messages%3D3&amp;only=1")
    assert f'href="?{moved}" hx-get="{path}?{moved}" hx-target="#compare-result"' in html
    removed = "s=buffered%3Abuffer_size%3D3&amp;s=safe_token_budget%3Amax_tokens%3D200&amp;only=1"
    assert f'href="?{removed}" hx-get="{path}?{removed}" hx-target="#compare-result"' in html
    # Add over htmx: the new column is in the result and in the pushed address.
    response = alice_client.get(path, {**column_form(("buffered", {}), ("unbounded", {})), "add": "last_turns"},
                                HTTP_HX_REQUEST="true")
    assert response["HX-Push-Url"].endswith("?s=buffered&s=unbounded&s=last_turns")
    assert 'id="column-3"' in response.content.decode()


def test_it_compares_a_preset_as_a_column(alice_client, make_session, project):
    from agents.models import Preset

    Preset.objects.create(project=project, name="tight", strategy="buffered", params={"buffer_size": 2},
                          counter="cl100k")
    session = make_session(chat(4), title="Weather")
    html = alice_client.get(compare_url(session), {"s": ["preset:tight", "buffered:buffer_size=2"]}).content.decode()
    facts = re.findall(r'data-tokens-after="(\d+)" data-kept="(\d+)"', html)
    assert len(facts) == 2 and facts[0] == facts[1]  # the preset is buffered:buffer_size=2
    assert '<option value="preset:tight" selected>Preset: tight</option>' in html
    assert f'href="/sessions/{session.pk}/lab/?preset=tight"' in html
    missing = alice_client.get(compare_url(session), {"s": ["preset:loose", "unbounded"]}).content.decode()
    assert "There is no preset named \u201cloose\u201d in project Alpha." in missing
