"""The lab's second edition on the page: the run replayed (slider, first violation, chart), another counter,
presets saved and opened from the lab, and the same result elsewhere (API URL, command line)."""
from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils.html import escape

from agents.lab import presets
from agents.memory.replay import replay, replay_call
from agents.memory.tokens import count_messages, get_counter
from agents.memory.trimming import strategy_spec, trim
from agents.models import Membership, Preset
from agents.store import reading
from tests.conversations import chat


def lab_url(session) -> str:
    return f"/sessions/{session.pk}/lab/"


def kept_in_page(html: str) -> list[int]:
    return sorted(int(i) for i in re.findall(r'id="lm-(\d+)" class="msg role-\w+ lab-msg lab-kept', html))


# --- the run replayed ----------------------------------------------------------------------------------------


def test_it_shows_where_the_replayed_run_first_breaks_the_protocol(alice_client, make_session):
    session = make_session(chat(6), title="Weather")
    messages, counts = reading.session_messages_with_counts(session)
    run = replay(messages, strategy_spec("openmanus_window", {"max_messages": 3}), counter="cl100k",
                 token_counts=counts)
    # A window of 3 cuts the previous turn's tool result off its call when the next question's call is made, and
    # loses the question later: neither shows at the end of the run.
    assert run.first_violation == 2 and run.steps[2].call == 6
    assert run.first_question_lost == 12 and run.steps[-1].errors == 0

    response = alice_client.get(lab_url(session), {"strategy": "openmanus_window", "max_messages": "3"})
    assert response.status_code == 200
    html = response.content.decode()
    assert f"{run.total_calls} calls" in html
    query = r"\?strategy=openmanus_window&amp;max_messages=3&amp;params_for=openmanus_window"
    assert re.search(
        rf'id="first-violation" href="{query}&amp;step=2"[^>]*>first violation at call 3, before message #6</a>', html)
    assert re.search(rf'id="first-lost-question" href="{query}&amp;step=12"[^>]*>'
                     r"question first lost at call 13, before message #25</a>", html)
    # The chart: one point per call for both lines, a red mark on every call that broke the protocol.
    sent = re.search(r'<polyline class="chart-sent" points="([^"]*)"', html).group(1)
    assert len(sent.split()) == len(run.steps)
    assert html.count('class="chart-mark chart-violation"') == sum(1 for s in run.steps if s.errors) > 1
    assert html.count('class="chart-mark chart-question"') == sum(
        1 for s in run.steps if not s.errors and s.question_kept is False) > 0
    # The slider spans the calls and stands at the end: the whole list, trimmed once.
    last = len(run.steps) - 1
    assert f'id="lab-step" name="step" form="lab-form" min="0" max="{last}" value="{last}"' in html
    assert "the whole list, trimmed once" in html


def test_a_long_sessions_preview_comes_first_and_its_replay_follows(alice_client, make_session, settings):
    # Past MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES the lab answers with the preview and a placeholder that asks for
    # the replay (?part=replay); the part is the replay alone, the same as the inline one of a short session.
    session = make_session(chat(6), title="Weather")
    query = {"strategy": "openmanus_window", "max_messages": "3"}
    inline = alice_client.get(lab_url(session), query).content.decode()
    assert 'id="lab-step"' in inline and 'id="replay-pending"' not in inline

    settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES = session.message_count - 1
    html = alice_client.get(lab_url(session), query).content.decode()
    assert 'id="lab-step"' not in html and "first-violation" not in html and 'class="chart-sent"' not in html
    assert kept_in_page(html) == kept_in_page(inline)  # the same preview
    part = re.search(r'<section class="lab-replay lab-replay-pending" id="lab-replay"[^>]*'
                     r'hx-get="([^"]+)" hx-trigger="load" hx-swap="outerHTML"', html).group(1)
    assert part == (f"{lab_url(session)}?strategy=openmanus_window&amp;max_messages=3&amp;part=replay")
    assert re.search(r'<noscript><a href="\?strategy=openmanus_window&amp;max_messages=3&amp;replay=inline">', html)

    answer = alice_client.get(part.replace("&amp;", "&"), HTTP_HX_REQUEST="true")
    fragment = answer.content.decode()
    assert answer.status_code == 200 and fragment.lstrip().startswith('<section class="lab-replay" id="lab-replay"')
    assert "lab-stats" not in fragment and "<html" not in fragment  # the replay only, not the page again
    replay_of = re.search(r'<section class="lab-replay" id="lab-replay".*?</section>', inline, re.S).group(0)
    assert re.search(r'<section class="lab-replay" id="lab-replay".*?</section>', fragment, re.S).group(0) == replay_of

    # Without JavaScript, ?replay=inline waits for it; a step asked for replays at once.
    assert 'id="lab-step"' in alice_client.get(lab_url(session), {**query, "replay": "inline"}).content.decode()
    stepped = alice_client.get(lab_url(session), {**query, "step": "2"}).content.decode()
    assert "call 3 of " in stepped and 'id="replay-pending"' not in stepped
    # Parameters that are not valid: no replay to add, the page says why.
    assert alice_client.get(lab_url(session), {**query, "max_messages": "x", "part": "replay"}).content == b""


def test_a_long_sessions_replay_part_is_scoped_to_the_users_projects(client, bob, other_project, make_session,
                                                                     settings):
    session = make_session(chat(3))
    settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES = 1
    client.force_login(bob)
    response = client.get(lab_url(session), {"strategy": "buffered", "part": "replay"})
    assert response.status_code == 404


def test_it_shows_what_one_call_of_the_run_sent_at_a_step(alice_client, make_session):
    session = make_session(chat(6), title="Weather")
    messages, counts = reading.session_messages_with_counts(session)
    spec = strategy_spec("openmanus_window", {"max_messages": 3})
    sent = replay_call(messages, spec, call=6, counter="cl100k", token_counts=counts)

    response = alice_client.get(lab_url(session), {"strategy": "openmanus_window", "max_messages": "3", "step": "2"})
    html = response.content.decode()
    assert kept_in_page(html) == sorted(sent.kept)
    assert 3 in sent.kept and 2 not in sent.kept  # the tool result without its call: the violation
    assert not re.search(r'id="lm-(6|7|8)"', html)  # after the call: not its input
    assert 'value="2"' in html and "call 3 of " in html and ": before message #6 · " in html
    assert re.search(r'<strong class="text-violation">\d+ errors?</strong>', html)
    assert 'class="chart-cursor"' in html


@pytest.mark.parametrize("step", ["99", "-1", "x"])
def test_it_shows_the_whole_list_for_a_step_that_is_not_a_call(alice_client, make_session, step):
    session = make_session(chat(3), title="Weather")
    response = alice_client.get(lab_url(session), {"strategy": "buffered", "buffer_size": "3", "step": step})
    assert response.status_code == 200
    html = response.content.decode()
    assert "the whole list, trimmed once" in html and 'class="chart-cursor"' not in html
    assert kept_in_page(html) == [0, 10, 11, 12]


def test_it_trims_and_replays_with_another_counter_than_the_stored_one(alice_client, make_session):
    session = make_session(chat(4) + [{"role": "user", "content": "東京の天気は？ 🌧️ " * 20}], title="Weather")
    messages, _ = reading.session_messages_with_counts(session)
    o200k = count_messages(messages, get_counter("o200k"))
    expected = trim(messages, strategy_spec("safe_token_budget", {"max_tokens": 200}), counter="o200k",
                    token_counts=o200k)

    response = alice_client.get(lab_url(session), {"strategy": "safe_token_budget", "max_tokens": "200",
                                                   "counter": "o200k"})
    html = response.content.decode()
    assert '<option value="o200k" selected>o200k</option>' in html
    assert '<option value="cl100k">cl100k (stored)</option>' in html
    assert re.search(rf'id="tokens-after"[^>]*>{expected.tokens_after:,}<', html)
    assert kept_in_page(html) == sorted(expected.kept)

    bad = alice_client.get(lab_url(session), {"strategy": "buffered", "counter": "p50k"})
    assert bad.status_code == 200
    said = 'id="error-counter">Unknown counter ‘p50k’; counting with cl100k, the stored one.</p>'
    assert said in bad.content.decode()
    assert kept_in_page(bad.content.decode())  # the preview, with the stored counter


# --- presets from the lab ------------------------------------------------------------------------------------


def test_it_saves_the_labs_setting_as_a_preset_and_opens_it_by_its_link(alice_client, make_session, project, alice):
    session = make_session(chat(6), title="Weather")
    response = alice_client.post(lab_url(session), {
        "preset_name": "short window", "strategy": "buffered", "buffer_size": "3", "counter": "o200k",
    })
    assert response.status_code == 302 and response["Location"] == f"{lab_url(session)}?preset=short+window"
    preset = Preset.objects.get(project=project, name="short window")
    assert (preset.strategy, preset.params["buffer_size"], preset.counter, preset.created_by) == (
        "buffered", 3, "o200k", alice)

    html = alice_client.get(response["Location"]).content.decode()
    assert 'id="preset-badge">Preset <strong>short window</strong>' in html
    assert 'name="buffer_size" value="3"' in html
    assert '<option value="o200k" selected>' in html
    assert f'<a href="/sessions/{session.pk}/lab/?preset=short%20window" aria-current="true">short window</a>' in html
    # The API's URL names the preset.
    api = f"http://testserver/api/sessions/{session.pk}/trim/?preset=short+window"
    assert f'id="api-url" class="mono" readonly value="{api}"' in html
    # The link keeps a step of the run.
    stepped = alice_client.get(lab_url(session), {"preset": "short window", "step": "2"}).content.decode()
    assert "call 3 of " in stepped


def test_it_says_why_a_preset_link_does_not_apply(alice_client, make_session):
    session = make_session(chat(2), title="Weather")
    response = alice_client.get(lab_url(session), {"preset": "nope"})
    assert response.status_code == 200
    said = escape("There is no preset named “nope” in project Alpha.")
    assert f'id="preset-error">{said}' in response.content.decode()


def test_it_refuses_a_preset_in_sentences_and_only_editors_save_one(client, make_session, project, bob):
    session = make_session(chat(2), title="Weather")
    Membership.objects.create(project=project, user=bob, role=Membership.Level.VIEWER)
    client.force_login(bob)
    assert 'id="preset-save"' not in client.get(lab_url(session)).content.decode()
    response = client.post(lab_url(session), {"preset_name": "x", "strategy": "buffered"})
    assert response.status_code == 200
    assert re.search(r'id="preset-save-error"><strong>The preset was not saved.</strong> [^<]*needs the editor or '
                     r'admin role', response.content.decode())
    assert not Preset.objects.exists()


def test_it_refuses_a_preset_beside_its_form_keeping_what_was_typed_without_js(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    url = lab_url(session)
    nameless = alice_client.post(url, {"preset_name": " ", "strategy": "buffered", "buffer_size": "3"})
    html = nameless.content.decode()
    # The lab itself (200), its preview under the parameters sent, the error beside the form.
    assert nameless.status_code == 200
    assert 'id="lab-form"' in html and 'name="buffer_size" value="3"' in html and kept_in_page(html)
    assert 'id="preset-save-error"><strong>The preset was not saved.</strong> A preset needs a name.' in html
    assert re.search(r'id="preset-name" name="preset_name"[^>]*value=" " aria-invalid="true"', html)

    invalid = alice_client.post(url, {"preset_name": "my window", "strategy": "buffered", "buffer_size": "0"})
    html = invalid.content.decode()
    assert invalid.status_code == 200 and 'id="lab-form"' in html
    assert re.search(r'id="preset-save-error"><strong>The preset was not saved.</strong> [^<]*buffer_size', html)
    assert not Preset.objects.exists()


def test_it_refuses_a_preset_beside_its_form_over_htmx(alice_client, make_session):
    session = make_session(chat(4), title="Weather")
    url = lab_url(session)
    sent = {"preset_name": "short", "strategy": "buffered", "buffer_size": "3", "counter": "o200k"}
    alice_client.post(url, sent)
    again = alice_client.post(url, {**sent, "buffer_size": "2"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="preset-save")
    html = again.content.decode()
    # Only the form, swapped in place: the error, the name as typed, the lab's fields as sent.
    assert again.status_code == 200 and html.lstrip().startswith('<form method="post"')
    assert 'id="preset-save-error"' in html and escape("“short”") in html
    assert 'value="short" aria-invalid="true"' in html
    assert '<input type="hidden" name="buffer_size" value="2">' in html
    assert '<input type="hidden" name="counter" value="o200k">' in html
    assert Preset.objects.get().params["buffer_size"] == 3

    saved = alice_client.post(url, {**sent, "preset_name": "other"}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and saved["HX-Redirect"] == f"{url}?preset=other"
    assert alice_client.put(url).status_code == 405


# --- the same result elsewhere -------------------------------------------------------------------------------


def test_its_api_url_and_command_give_the_labs_result(alice_client, make_session, tmp_path, monkeypatch):
    session = make_session(chat(6), title="Weather")
    query = {"strategy": "langchain_last", "max_tokens": "120", "start_on": "human", "end_on": ["human", "tool"]}
    html = alice_client.get(lab_url(session), query).content.decode()
    kept = kept_in_page(html)
    assert kept

    api_url = re.search(r'id="api-url" class="mono" readonly value="([^"]*)"', html).group(1).replace("&amp;", "&")
    assert api_url.startswith("http://testserver/api/sessions/")
    answer = alice_client.get(api_url.removeprefix("http://testserver")).json()
    assert answer["kept"] == kept

    command = re.search(r'id="trim-command" class="mono" readonly value="([^"]*)"', html).group(1)
    command = command.replace("&amp;", "&").replace("&quot;", '"')
    export, trim_cmd = (shlex.split(part) for part in command.split(" && "))
    assert export[:2] == trim_cmd[:2] == ["python", "manage.py"]
    monkeypatch.chdir(tmp_path)
    call_command(*export[2:])
    out = io.StringIO()
    call_command(*trim_cmd[2:], stdout=out)
    assert json.loads(out.getvalue())["kept"] == kept
    assert Path(tmp_path / f"session-{session.pk}.json").exists()


# --- a preset in the API -------------------------------------------------------------------------------------


def test_the_trim_api_trims_with_a_preset_of_the_sessions_project(alice_client, make_session, project, alice):
    session = make_session(chat(6), title="Weather")
    presets.preset_create(user=alice, project=project, name="short", strategy="openmanus_window",
                          params={"max_messages": 3}, counter="o200k")
    messages, _ = reading.session_messages_with_counts(session)
    expected = trim(messages, strategy_spec("openmanus_window", {"max_messages": 3}), counter="o200k")

    answer = alice_client.get(f"/api/sessions/{session.pk}/trim/", {"preset": "short"})
    assert answer.status_code == 200
    data = answer.json()
    assert (data["strategy"], data["counter"], data["kept"], data["recounted"]) == (
        "openmanus_window", "o200k", list(expected.kept), True)
    # Its counter gives way to one asked for.
    assert alice_client.get(f"/api/sessions/{session.pk}/trim/", {"preset": "short", "counter": "cl100k"}).json()[
        "recounted"] is False


def test_the_trim_api_refuses_an_unknown_preset_or_a_preset_with_a_strategy(alice_client, make_session, project, alice):
    session = make_session(chat(2), title="Weather")
    presets.preset_create(user=alice, project=project, name="short", strategy="buffered", params={}, counter="cl100k")
    url = f"/api/sessions/{session.pk}/trim/"
    unknown = alice_client.get(url, {"preset": "nope"})
    assert unknown.status_code == 400
    assert unknown.json() == {"error": "There is no preset named “nope” in project Alpha."}
    both = alice_client.get(url, {"preset": "short", "strategy": "buffered"})
    assert both.status_code == 400 and "not both" in both.json()["error"]
    mixed = alice_client.get(url, {"preset": "short", "buffer_size": "3"})
    assert mixed.status_code == 400 and "not both" in mixed.json()["error"]


# --- the report's per-call mode ------------------------------------------------------------------------------


def test_the_report_says_which_sessions_break_at_some_call_beside_at_the_end(alice_client, make_session):
    breaks = make_session(chat(6), title="Breaks at some call")
    make_session(chat(1), title="Short")
    messages, counts = reading.session_messages_with_counts(breaks)
    run = replay(messages, strategy_spec("openmanus_window", {"max_messages": 3}), counter="cl100k",
                 token_counts=counts)
    assert run.first_violation == 2 and run.steps[-1].errors == 0

    spec = "openmanus_window:max_messages=3"
    html = alice_client.get("/lab/report/", {"s": spec, "per_call": "1"}).content.decode()
    heads = '<th scope="col" class="num">Broken at the end</th><th scope="col" class="num">Broken at some call</th>'
    assert heads in html
    assert 'data-broken="0"' in html and 'data-broken-some-call="1"' in html
    link = (f'href="/sessions/{breaks.pk}/lab/?strategy=openmanus_window&amp;max_messages=3'
            f'&amp;params_for=openmanus_window&amp;step=2" title="Open that call in the lab">breaks at call 3</a>')
    assert link in html and html.count('class="small report-breaks-at"') == 1
    assert 'id="id_per_call" checked' in html

    plain = alice_client.get("/lab/report/", {"s": spec}).content.decode()
    assert "Broken at some call" not in plain and "report-breaks-at" not in plain
