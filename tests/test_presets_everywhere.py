"""A preset wherever a strategy is accepted: compare's and the report's columns (``preset:NAME``), the export page
(``preset=NAME`` or ``strategy=preset:NAME``), ``manage.py export_history --preset`` and ``manage.py trim --preset
NAME --project SLUG`` (DESIGN.md's ``--strategy`` contract unchanged beside it), each giving what the preset's
strategy and parameters give."""
from __future__ import annotations

import io
import json
import re
import shlex

import pytest
from django.core.management import call_command

from agents.lab import presets
from agents.models import Preset
from tests.commands import run
from tests.conversations import chat
from tests.paths import SAMPLES

TRAVEL = SAMPLES / "openai" / "travel.json"



@pytest.fixture
def tight(project, alice):
    return presets.preset_create(user=alice, project=project, name="tight window", strategy="buffered",
                                 params={"buffer_size": 3}, counter="o200k")


def test_the_trim_command_trims_by_a_preset_as_by_its_strategy_and_counter(tight):
    code, by_preset, err = run("trim", str(TRAVEL), "--preset", "tight window", "--project", "alpha")
    assert code == 0 and err == ""
    code, by_strategy, _ = run("trim", str(TRAVEL), "--strategy", "buffered", "--set", "buffer_size=3",
                               "--counter", "o200k")
    assert json.loads(by_preset) == json.loads(by_strategy)
    assert json.loads(by_preset)["counter"] == "o200k" and json.loads(by_preset)["kept"] == [0, 7, 8, 9]
    # --counter still wins; --project may be left out while the name is unique.
    code, out, _ = run("trim", str(TRAVEL), "--preset", "tight window", "--counter", "approx")
    assert code == 0 and json.loads(out)["counter"] == "approx"


def test_the_trim_command_says_what_is_wrong_with_a_preset(tight, other_project):
    cases = [
        (("--preset", "loose", "--project", "alpha"),
         "trim: --preset: There is no preset named “loose” in project Alpha."),
        (("--preset", "tight window", "--project", "nope"), "trim: --project: no project 'nope'"),
        (("--preset", "tight window", "--strategy", "buffered"), "not both"),
        (("--strategy", "buffered", "--project", "alpha"), "--project: names the project of --preset"),
        ((), "--strategy: name one of"),
    ]
    for args, said in cases:
        code, out, err = run("trim", str(TRAVEL), *args)
        assert (code, out) == (2, "") and said in err, (args, err)
    # Two projects with a preset of that name: the project must be named.
    Preset.objects.create(project=other_project, name="tight window", strategy="unbounded", params={},
                          counter="cl100k")
    code, out, err = run("trim", str(TRAVEL), "--preset", "tight window")
    assert code == 2 and "Several projects have a preset named “tight window” (alpha, beta): name the project." in err


def test_export_history_trims_by_a_preset(tight, make_session, tmp_path):
    session = make_session(chat(4), title="Weather")
    by_preset, by_strategy = tmp_path / "preset.json", tmp_path / "strategy.json"
    assert run("export_history", "--session", str(session.pk), "--format", "openai", "--preset", "tight window",
               "-o", str(by_preset))[0] == 0
    assert run("export_history", "--session", str(session.pk), "--format", "openai", "--strategy", "buffered",
               "--set", "buffer_size=3", "-o", str(by_strategy))[0] == 0
    assert json.loads(by_preset.read_text()) == json.loads(by_strategy.read_text())
    assert len(json.loads(by_preset.read_text())) == 4  # the system message and the last three
    code, _, err = run("export_history", "--format", "openai", "--preset", "tight window", "--strategy", "buffered")
    assert code == 2 and "not both" in err


def test_export_history_of_sessions_takes_a_shared_preset_name_from_their_project(
        tight, make_session, other_project, other_agent, tmp_path):
    # Alpha's "tight window" keeps the last three, Beta's the last one: --session names the project to take it from.
    Preset.objects.create(project=other_project, name="tight window", strategy="buffered", params={"buffer_size": 1},
                          counter="o200k")
    alpha, beta = make_session(chat(4), title="Alpha's"), make_session(chat(4), title="Beta's", agent=other_agent)
    for session, kept in [(alpha, 4), (beta, 2)]:  # the system message and the last three, or the last one
        out = tmp_path / f"{session.pk}.json"
        code, _, err = run("export_history", "--session", str(session.pk), "--format", "openai",
                           "--preset", "tight window", "-o", str(out))
        assert code == 0, err
        assert len(json.loads(out.read_text())) == kept
    # Sessions of both projects (or none named): the name is still ambiguous, and the refusal says so.
    code, _, err = run("export_history", "--session", str(alpha.pk), "--session", str(beta.pk), "--format", "openai",
                       "--preset", "tight window")
    assert code == 2 and "Several projects have a preset named “tight window” (alpha, beta)" in err
    # --project still wins.
    code, _, err = run("export_history", "--session", str(alpha.pk), "--format", "openai", "--preset",
                       "tight window", "--project", "beta")
    assert code == 2 and "--session: no session" in err


def test_the_export_page_trims_by_a_preset(alice_client, tight, make_session):
    session = make_session(chat(4), title="Weather")
    url = f"/sessions/{session.pk}/export/"
    expected = alice_client.post(url, {"format": "openai", "strategy": "buffered", "params": "buffer_size=3"})
    wanted = b"".join(expected.streaming_content)
    for fields in ({"preset": "tight window"}, {"strategy": "preset:tight window"}):
        response = alice_client.post(url, {"format": "openai", **fields})
        assert b"".join(response.streaming_content) == wanted, fields
    # Offered beside the strategies; a wrong one said beside the form.
    page = alice_client.get(url).content.decode()
    assert '<option value="preset:tight window">Preset of Alpha</option>' in page
    wrong = alice_client.post(url, {"format": "openai", "preset": "loose"}).content.decode()
    assert "preset: There is no preset named “loose” in project Alpha." in wrong
    both = alice_client.post(url, {"format": "openai", "preset": "tight window", "params": "buffer_size=2"})
    assert "give a preset, or a strategy with its parameters, not both" in both.content.decode()


def test_the_report_runs_a_preset_as_a_column(alice_client, tight, make_session):
    make_session(chat(4), title="Weather")
    html = alice_client.get("/lab/report/", {"s": ["preset:tight window", "buffered:buffer_size=3"]}).content.decode()
    rows = re.findall(r'<tr class="summary-row" data-spec="([^"]*)">', html)
    assert rows == ["buffered:buffer_size=3", "buffered:buffer_size=3"]
    assert ">preset:tight window</textarea>" in html
    missing = alice_client.get("/lab/report/", {"s": ["preset:loose", "unbounded"]}).content.decode()
    assert "There is no preset named “loose” in your projects." in missing


def test_the_labs_command_for_a_preset_names_the_preset(alice_client, tight, make_session, tmp_path, monkeypatch):
    session = make_session(chat(6), title="Weather")
    html = alice_client.get(f"/sessions/{session.pk}/lab/", {"preset": "tight window"}).content.decode()
    command = re.search(r'id="trim-command" class="mono" readonly value="([^"]*)"', html).group(1)
    command = command.replace("&amp;", "&").replace("&quot;", '"').replace("&#x27;", "'")
    export, trim_cmd = (shlex.split(part) for part in command.split(" && "))
    assert trim_cmd[-4:] == ["--preset", "tight window", "--project", "alpha"]
    api_url = re.search(r'id="api-url" class="mono" readonly value="([^"]*)"', html).group(1).replace("&amp;", "&")
    answer = alice_client.get(api_url.removeprefix("http://testserver")).json()
    monkeypatch.chdir(tmp_path)
    call_command(*export[2:])
    out = io.StringIO()
    call_command(*trim_cmd[2:], stdout=out)
    trimmed = json.loads(out.getvalue())
    assert (trimmed["kept"], trimmed["counter"]) == (answer["kept"], answer["counter"]) == (trimmed["kept"], "o200k")


def test_the_diff_page_and_api_diff_against_a_presets_trimmed_view(alice_client, tight, make_session):
    session = make_session(chat(4), title="Weather")
    api = f"/api/sessions/{session.pk}/diff/"
    by_preset = alice_client.get(api, {"trim": "preset:tight window"}).json()
    by_strategy = alice_client.get(api, {"trim": "buffered:buffer_size=3"}).json()
    assert by_preset["counts"] == by_strategy["counts"] and by_preset["counts"]["left_only"] > 0
    missing = alice_client.get(api, {"trim": "preset:loose"})
    assert missing.status_code == 400
    assert missing.json() == {"error": "trim: There is no preset named “loose” in project Alpha."}
    def counts(query: dict) -> list[str]:
        html = alice_client.get(f"/sessions/{session.pk}/diff/", query).content.decode()
        return re.findall(r'<span class="count-(\w+)">([^<]*)</span>', html)

    assert counts({"trim": "preset:tight window"}) == counts({"trim": "buffered:buffer_size=3"}) != []
    page = alice_client.get(f"/sessions/{session.pk}/diff/", {"trim": "preset:loose"}).content.decode()
    assert "trim=preset:loose: There is no preset named “loose” in project Alpha." in page


# --- a preset counts with its own counter ---------------------------------------------------------------------


@pytest.fixture
def by_count(project, alice):
    """A budget of four under the ``messages`` counter (one per message): four messages, where the session's
    cl100k counts keep none of them."""
    return presets.preset_create(user=alice, project=project, name="last four", strategy="safe_token_budget",
                                 params={"max_tokens": 4, "pin_system": False}, counter="messages")


def _core_trim(messages: list[dict], counter: str):
    from agents.memory.schema import parse_messages
    from agents.memory.trimming import strategy_spec, trim

    return trim(parse_messages(messages), strategy_spec("safe_token_budget", {"max_tokens": 4, "pin_system": False}),
                counter=counter)


def test_an_export_by_a_preset_counts_with_the_presets_counter(alice_client, by_count, make_session, tmp_path):
    messages = chat(6)
    session = make_session(messages, title="Weather")
    assert session.token_counter == "cl100k"
    wanted, stored = _core_trim(messages, "messages"), _core_trim(messages, "cl100k")
    assert len(wanted.kept) == 4 and wanted.kept != stored.kept  # the counter decides what is kept

    def trimmed(exported: str) -> tuple[dict, int]:
        conversation = json.loads(exported)["sessions"][0]
        return conversation["metadata"]["trimmed"], len(conversation["messages"])

    response = alice_client.post(f"/sessions/{session.pk}/export/", {"format": "native", "preset": "last four"})
    meta, count = trimmed(b"".join(response.streaming_content).decode())
    assert (meta["counter"], meta["tokens_after"], count) == ("messages", wanted.tokens_after, len(wanted.messages))
    out = tmp_path / "preset.json"
    code, _, err = run("export_history", "--session", str(session.pk), "--format", "native", "--preset", "last four",
                       "-o", str(out))
    assert code == 0, err
    meta, count = trimmed(out.read_text())
    assert (meta["counter"], meta["tokens_after"], count) == ("messages", wanted.tokens_after, len(wanted.messages))
    # A strategy without a preset keeps trimming with the session's stored counts.
    response = alice_client.post(f"/sessions/{session.pk}/export/",
                                 {"format": "native", "strategy": "safe_token_budget",
                                  "params": "max_tokens=4, pin_system=false"})
    meta, count = trimmed(b"".join(response.streaming_content).decode())
    assert (meta["counter"], meta["tokens_after"], count) == ("cl100k", stored.tokens_after, len(stored.messages))


def test_a_compare_column_of_a_preset_counts_with_the_presets_counter(alice_client, by_count, make_session):
    messages = chat(6)
    session = make_session(messages, title="Weather")
    wanted, stored = _core_trim(messages, "messages"), _core_trim(messages, "cl100k")
    html = alice_client.get(f"/sessions/{session.pk}/lab/compare/",
                            {"s": ["preset:last four", "safe_token_budget:max_tokens=4,pin_system=false"]}
                            ).content.decode()
    facts = re.findall(r'data-tokens-after="(\d+)" data-kept="(\d+)"', html)
    assert facts == [(str(wanted.tokens_after), str(len(wanted.kept))),
                     (str(stored.tokens_after), str(len(stored.kept)))]
    # Each column says what it counts with, and the page that the columns' counters differ.
    assert re.findall(r'data-counter="(\w+)"', html) == ["messages", "cl100k"]
    assert "The columns count with different counters" in html
    assert "tokens are counted again with it, not the session" in html


def test_a_report_column_of_a_preset_counts_with_the_presets_counter(alice_client, by_count, make_session, settings):
    messages = chat(6)
    make_session(messages, title="Weather")
    wanted, stored = _core_trim(messages, "messages"), _core_trim(messages, "cl100k")
    query = {"s": ["preset:last four", "safe_token_budget:max_tokens=4,pin_system=false"]}
    html = alice_client.get("/lab/report/", query).content.decode()
    assert "A preset's column counts with its preset's counter" in html
    data = json.loads(alice_client.get("/lab/report/", {**query, "download": "json"}).content)
    assert data["strategies"][0] == "preset:last four (safe_token_budget:pin_system=false,max_tokens=4; messages)"
    cells = data["rows"][0]["cells"]
    assert [(c["tokens_after"], c["kept"]) for c in cells] == [(wanted.tokens_after, len(wanted.kept)),
                                                               (stored.tokens_after, len(stored.kept))]
    assert data["rows"][0]["tokens_before"] == stored.tokens_before  # the session's own counter
    # Run in the background, the column counts the same way.
    settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = 1
    response = alice_client.get("/lab/report/", query)
    from agents.jobs import queue
    from agents.models import BackgroundJob

    job = BackgroundJob.objects.get()
    assert response.status_code == 302 and job.params["counters"] == ["messages", None]
    queue.run_job.func(job.pk)  # what a worker runs, here in the test's transaction
    assert json.loads(alice_client.get(f"/jobs/{job.pk}/", {"download": "json"}).content) == data


def test_a_preset_name_two_of_the_users_projects_share_is_taken_from_the_filtered_project(
        alice_client, alice, tight, make_session, other_project, other_agent):
    # Two projects each with a preset "tight window" (a team keeps its own): the report and the list's export
    # filtered to one project use that project's; unfiltered, the refusal says how to choose.
    from agents.models import Membership
    Membership.objects.create(project=other_project, user=alice, role=Membership.Level.EDITOR)
    presets.preset_create(user=alice, project=other_project, name="tight window", strategy="buffered",
                          params={"buffer_size": 1}, counter="o200k")
    make_session(chat(4), title="Weather")
    report = alice_client.get("/lab/report/", {"s": ["preset:tight window", "unbounded"], "project": "alpha"})
    html = report.content.decode()
    assert "Several projects" not in html
    assert re.findall(r'<tr class="summary-row" data-spec="([^"]*)">', html)[0] == "buffered:buffer_size=3"
    beta = alice_client.get("/lab/report/", {"s": ["preset:tight window", "unbounded"], "project": "beta"})
    assert re.findall(r'<tr class="summary-row" data-spec="([^"]*)">', beta.content.decode())[0] == \
        "buffered:buffer_size=1"
    # A preset only the other project has still applies to this project's sessions, as before.
    presets.preset_create(user=alice, project=other_project, name="beta only", strategy="unbounded", params={},
                          counter="o200k")
    only = alice_client.get("/lab/report/", {"s": ["preset:beta only"], "project": "alpha"}).content.decode()
    assert re.findall(r'<tr class="summary-row" data-spec="([^"]*)">', only) == ["unbounded"]
    unfiltered = alice_client.get("/lab/report/", {"s": ["preset:tight window"]}).content.decode()
    assert "Several projects have a preset named “tight window” (alpha, beta): filter the sessions by project." \
        in unfiltered
    # The export API (the export page's one path) likewise.
    answer = alice_client.post("/api/exports/?format=openai&preset=tight+window&project=alpha")
    assert answer.status_code == 200, answer.content
    assert len(json.loads(b"".join(answer.streaming_content))) == 4  # the system message and the last three
    refused = alice_client.post("/api/exports/?format=openai&preset=tight+window")
    assert refused.status_code == 400
    assert refused.json()["error"] == ("preset: Several projects have a preset named “tight window” (alpha, beta): "
                                       "filter the sessions by project.")


def test_the_labs_export_and_diff_of_a_preset_trim_as_the_lab_shows_it(alice_client, by_count, make_session):
    # The lab opened on a preset counts with the preset's counter; its "Export this trimmed view" and its diff link
    # gave the strategy and parameters alone, which trimmed with the session's counts: another trimmed view.
    messages = chat(6)
    session = make_session(messages, title="Weather")
    wanted, stored = _core_trim(messages, "messages"), _core_trim(messages, "cl100k")
    assert wanted.kept != stored.kept
    html = alice_client.get(f"/sessions/{session.pk}/lab/", {"preset": "last four"}).content.decode()
    assert f'<strong id="kept-count">{len(wanted.kept)}</strong>' in html  # what the lab shows kept
    panel = html.split('class="filters export-menu-panel"')[1].split("</form>")[0]
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', panel))
    fields = {key: value.replace("&quot;", '"') for key, value in fields.items() if key != "csrfmiddlewaretoken"}
    exported = alice_client.post(f"/sessions/{session.pk}/export/", {**fields, "format": "native"})
    conversation = json.loads(b"".join(exported.streaming_content))["sessions"][0]
    assert conversation["metadata"]["trimmed"]["counter"] == "messages"
    assert len(conversation["messages"]) == len(wanted.messages)
    diff_href = re.search(r'id="diff-link" href="([^"]*)"', html).group(1).replace("&amp;", "&")
    diff = alice_client.get(diff_href.replace("/sessions/", "/api/sessions/", 1)).json()
    assert diff["counts"]["same"] + diff["counts"]["changed"] == len(wanted.kept), diff["counts"]


def test_the_labs_export_and_diff_count_with_the_counter_the_lab_counts_with(alice_client, make_session):
    # The lab counted again with another counter (its API URL and command said so): its Export menu and diff link
    # trimmed with the session's stored counts instead, another trimmed view than the one shown.
    messages = chat(6)
    session = make_session(messages, title="Weather")
    wanted, stored = _core_trim(messages, "messages"), _core_trim(messages, "cl100k")
    html = alice_client.get(f"/sessions/{session.pk}/lab/", {
        "strategy": "safe_token_budget", "max_tokens": "4", "pin_system": "false", "params_for": "safe_token_budget",
        "counter": "messages"}).content.decode()
    assert f'<strong id="kept-count">{len(wanted.kept)}</strong>' in html
    panel = html.split('class="filters export-menu-panel"')[1].split("</form>")[0]
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', panel))
    fields.pop("csrfmiddlewaretoken")
    exported = alice_client.post(f"/sessions/{session.pk}/export/", {**fields, "format": "native"})
    conversation = json.loads(b"".join(exported.streaming_content))["sessions"][0]
    assert conversation["metadata"]["trimmed"]["counter"] == "messages"
    assert len(conversation["messages"]) == len(wanted.messages) != len(stored.messages)
    diff_href = re.search(r'id="diff-link" href="([^"]*)"', html).group(1).replace("&amp;", "&")
    page = alice_client.get(diff_href).content.decode()
    assert f"{len(wanted.kept)} kept" in re.sub(r"<[^>]+>", " ", page).replace("  ", " "), diff_href
    # A wrong counter is refused by name, on the export as on the diff page.
    refused = alice_client.post(f"/api/sessions/{session.pk}/export/",
                                {"strategy": "buffered", "counter": "nope"})
    assert refused.status_code == 400 and refused.json()["error"].startswith("counter: ")
    assert "counter: " in alice_client.get(f"/sessions/{session.pk}/diff/?trim=buffered&counter=nope").content.decode()
