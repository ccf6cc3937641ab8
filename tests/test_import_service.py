from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import models
from agents.store import writing
from agents.transfer import imports
from tests.paths import SAMPLES

SAMPLE_FILES = sorted(p for p in SAMPLES.glob("*/*") if p.suffix in {".json", ".jsonl"})

WEATHER: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a weather assistant."},
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C, cloudy"},
    {"role": "tool", "tool_call_id": "call_2", "content": "24°C, sunny"},
    {"role": "assistant", "content": "Paris 18°C, Tokyo 24°C."},
]


def counts() -> tuple[int, int, int, int, int]:
    return (
        models.Project.objects.count(),
        models.Agent.objects.count(),
        models.Session.objects.count(),
        models.Message.objects.count(),
        models.ToolCall.objects.count(),
    )


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def native(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "memoryviz", "version": 1, "sessions": sessions}


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: p.parent.name)
def test_it_imports_every_sample_into_one_session(db, sample: Path) -> None:
    report = imports.import_file(sample)
    assert report.saved
    assert len(report.sessions) == 1
    outcome = report.sessions[0]
    assert outcome.status == "imported"
    session = models.Session.objects.get(pk=outcome.session_id)
    expected = 9 if sample.parent.name == "openmanus" else 10
    assert session.message_count == expected == models.Message.objects.filter(session=session).count()
    assert outcome.added == expected
    assert session.token_total > 0
    assert session.source_format == report.format
    # The calls of the sample were indexed for "sessions that used tool X".
    assert models.ToolCall.objects.filter(session=session, name="get_weather").count() == 3
    # With no --project/--agent: the default project, and an agent named after the source format.
    assert session.agent.project.slug == imports.DEFAULT_PROJECT_SLUG
    assert session.agent.slug == report.format


def test_it_stores_messages_in_order_with_their_fields(db, tmp_path: Path, project: models.Project) -> None:
    report = imports.import_file(write(tmp_path, "w.json", WEATHER), project=project, agent="Weather bot")
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    assert session.agent.name == "Weather bot" and session.agent.project == project
    rows = list(session.messages.order_by("seq"))
    assert [r.role for r in rows] == [m["role"] for m in WEATHER]
    assert [r.seq for r in rows] == list(range(len(WEATHER)))
    assert rows[3].tool_call_id == "call_1"
    assert rows[2].content is None and len(rows[2].tool_calls) == 2
    assert all(r.token_count > 0 for r in rows)
    assert session.token_total == sum(r.token_count for r in rows) + 3  # reply priming, once per list
    assert session.violation_count == 0 and session.violations == []


def test_it_does_not_duplicate_a_session_without_external_id(db, tmp_path: Path, agent: models.Agent) -> None:
    path = write(tmp_path, "w.json", WEATHER)
    first = imports.import_file(path, project=agent.project, agent=agent)
    before = counts()
    second = imports.import_file(path, project=agent.project, agent=agent)
    assert counts() == before
    assert first.sessions[0].external_id.startswith("sha256:")
    assert second.sessions[0].status == "already imported"
    assert second.sessions[0].session_id == first.sessions[0].session_id
    assert second.sessions_imported == 0 and second.messages_imported == 0
    assert "already imported" in second.dropped[0]


def test_it_does_not_duplicate_a_session_with_the_same_external_id(db, tmp_path: Path, agent: models.Agent) -> None:
    data = native([{"external_id": "conv-1", "title": "Weather", "messages": WEATHER}])
    path = write(tmp_path, "n.json", data)
    imports.import_file(path, project=agent.project, agent=agent)
    before = counts()
    again = imports.import_file(path, project=agent.project, agent=agent)
    assert counts() == before
    assert again.sessions[0].status == "already imported"


def test_it_adds_only_messages_whose_id_is_not_stored(db, tmp_path: Path, agent: models.Agent) -> None:
    msgs = [dict(m, external_id=f"m{i}") for i, m in enumerate(WEATHER)]
    first = native([{"external_id": "conv-1", "messages": msgs[:4]}])
    imports.import_file(write(tmp_path, "a.json", first), project=agent.project, agent=agent)
    grown = native([{"external_id": "conv-1", "messages": msgs}])
    report = imports.import_file(write(tmp_path, "b.json", grown), project=agent.project, agent=agent)
    outcome = report.sessions[0]
    assert outcome.status == "updated"
    assert (outcome.added, outcome.skipped) == (2, 4)
    session = models.Session.objects.get(external_id="conv-1")
    assert list(session.messages.order_by("seq").values_list("external_id", flat=True)) == [f"m{i}" for i in range(6)]
    assert session.message_count == 6
    # The half-answered exchange of the first import is whole now: the summary was checked again.
    assert session.violation_count == 0


def test_it_skips_a_message_whose_id_repeats_in_the_file(db, tmp_path: Path, agent: models.Agent) -> None:
    msgs = [dict(m, external_id=f"m{i}") for i, m in enumerate(WEATHER)]
    msgs.append(dict(msgs[-1]))  # the same message id twice
    report = imports.import_file(write(tmp_path, "d.json", native([{"messages": msgs}])), project=agent.project,
                                 agent=agent)
    assert report.sessions[0].added == len(WEATHER)
    assert report.sessions[0].skipped == 1
    assert "their id is already stored in the session or came earlier in the file" in report.dropped[0]


def test_it_imports_a_tool_result_without_its_call_and_flags_it(db, tmp_path: Path, agent: models.Agent) -> None:
    broken = [WEATHER[1], {"role": "tool", "tool_call_id": "call_missing", "content": "orphan"}, WEATHER[5]]
    report = imports.import_file(write(tmp_path, "o.json", broken), project=agent.project, agent=agent)
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    assert session.message_count == 3
    assert session.violation_count >= 1
    kinds = {v["kind"] for v in session.violations}
    assert "orphan_tool_result" in kinds
    assert session.violations[0]["seq"] == 1
    assert report.violation_count == session.violation_count


def test_it_creates_one_session_per_jsonl_line(db, tmp_path: Path, agent: models.Agent) -> None:
    lines = [json.dumps({"messages": [{"role": "user", "content": f"question {i}"},
                                      {"role": "assistant", "content": f"answer {i}"}]}) for i in range(5)]
    report = imports.import_file(write(tmp_path, "many.jsonl", "\n".join(lines) + "\n"), project=agent.project,
                                 agent=agent)
    assert report.format == "openai_jsonl"
    assert report.sessions_imported == 5
    assert models.Session.objects.filter(agent=agent).count() == 5
    assert models.Message.objects.filter(session__agent=agent).count() == 10


def test_it_creates_one_session_per_native_session_with_its_project_and_agent(db, tmp_path: Path) -> None:
    data = native([
        {"external_id": "a", "project": "team-x", "agent": "planner", "messages": WEATHER},
        {"external_id": "b", "project": "team-x", "agent": "coder", "messages": WEATHER[:2]},
    ])
    report = imports.import_file(write(tmp_path, "n.json", data))
    assert report.sessions_imported == 2
    project = models.Project.objects.get(slug="team-x")
    assert set(project.agents.values_list("slug", flat=True)) == {"planner", "coder"}


@pytest.mark.parametrize(
    ("name", "data", "place"),
    [
        ("malformed.json", '[{"role": "user", "content": "hi"}', "invalid JSON"),
        ("wrong-shape.json", {"messages": 42}, "messages"),
        ("tool-without-id.json", [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}], "[1]"),
        ("garbage.bin", bytes(range(256)) * 40, ""),
        ("deep.json", "[" * 100_000 + "]" * 100_000, "nested"),
        ("empty.json", "", ""),
        ("late-error.jsonl", "\n".join(
            [json.dumps({"messages": [{"role": "user", "content": "ok"}]})] * 3 + ["{not json"]), "line 4"),
    ],
)
def test_it_refuses_bad_input_naming_the_place_and_saves_nothing(
    db, tmp_path: Path, agent: models.Agent, name: str, data: Any, place: str
) -> None:
    before = counts()
    with pytest.raises(imports.ImportFailed) as info:
        imports.import_file(write(tmp_path, name, data), project=agent.project, agent=agent)
    assert counts() == before
    text = str(info.value)
    assert text and "Traceback" not in text
    assert place.lower() in text.lower()


def test_it_rolls_back_sessions_already_written_when_a_later_one_fails(db, tmp_path: Path, agent: models.Agent) -> None:
    good = {"external_id": "ok", "messages": WEATHER}
    bad = {"external_id": "bad", "messages": [{"role": "user", "content": "x", "name": "n" * 300}]}
    before = counts()
    with pytest.raises(imports.ImportFailed) as info:
        imports.import_file(write(tmp_path, "n.json", native([good, bad])), project=agent.project, agent=agent)
    assert counts() == before
    assert "conversation 2: messages[0].name" in str(info.value)


def test_it_streams_a_big_conversation_in_batches(db, tmp_path: Path, agent: models.Agent) -> None:
    n = writing.BATCH_SIZE * 2 + 17
    msgs = []
    for i in range(n // 2):
        msgs.append({"role": "user", "content": f"question {i}"})
        msgs.append({"role": "assistant", "content": f"answer {i}"})
    seen: list[int] = []
    report = imports.import_file(write(tmp_path, "big.json", msgs), project=agent.project, agent=agent,
                                 on_messages=seen.append)
    assert report.messages_imported == len(msgs)
    assert len(seen) >= 3 and seen[-1] == len(msgs)
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    assert session.messages.order_by("-seq").first().seq == len(msgs) - 1


def test_it_previews_without_saving(db, tmp_path: Path, agent: models.Agent) -> None:
    path = write(tmp_path, "w.json", WEATHER)
    before = counts()
    preview = imports.preview_file(path, project=agent.project, agent=agent)
    assert counts() == before
    assert not preview.saved
    assert preview.format == "openai"
    assert preview.messages_read == len(WEATHER)
    assert preview.sessions[0].status == "imported"
    imports.import_file(path, project=agent.project, agent=agent)
    again = imports.preview_file(path, project=agent.project, agent=agent)
    assert again.sessions[0].status == "already imported"
    assert again.sessions_imported == 0


def test_it_refuses_an_unknown_counter_before_reading(db, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        imports.import_file(write(tmp_path, "w.json", WEATHER), counter="nope")
    assert models.Session.objects.count() == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_it_never_fails_with_anything_but_a_clear_error(db, tmp_path: Path, blob: bytes) -> None:
    before = counts()
    path = tmp_path / "fuzz.json"
    path.write_bytes(blob)
    try:
        report = imports.import_file(path, project="fuzz", agent="fuzz")
    except imports.ImportFailed as exc:
        assert str(exc)
        assert counts() == before
    else:
        assert report.saved
        for s in report.sessions:
            assert models.Session.objects.filter(pk=s.session_id).exists()


def test_it_reports_a_native_file_as_native(db, tmp_path: Path, agent: models.Agent) -> None:
    data = native([{"external_id": "x", "source_format": "autogen", "messages": WEATHER}])
    report = imports.import_file(write(tmp_path, "n.json", data), project=agent.project, agent=agent)
    assert report.format == "native"
    # The session keeps the format it first came from.
    assert models.Session.objects.get(external_id="x").source_format == "autogen"


def test_it_says_when_the_file_does_not_exist(db, tmp_path: Path) -> None:
    with pytest.raises(imports.ImportFailed, match="nope.json"):
        imports.import_file(tmp_path / "nope.json")


def test_it_warns_about_violations_and_timestamps_without_zone(db, agent: models.Agent) -> None:
    sample = SAMPLES / "agentscope" / "travel.json"
    report = imports.import_file(sample, project=agent.project, agent=agent)
    assert any("without a time zone were read as UTC" in w for w in report.warnings)
    row = models.Message.objects.filter(session_id=report.sessions[0].session_id).exclude(created_at=None).first()
    assert row is not None and row.created_at.utcoffset().total_seconds() == 0
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "gone", "content": "x"}]
    flagged = imports.import_file(io.BytesIO(json.dumps(orphan).encode()), project=agent.project, agent=agent)
    assert any("imported and flagged" in w for w in flagged.warnings)


def test_it_titles_an_untitled_session_after_its_first_question(db, tmp_path: Path, agent: models.Agent) -> None:
    long_question = {
        "role": "user",
        "content": "Which of these hotels near the   station\nhas a pool " + "and more " * 20,
    }
    report = imports.import_file(write(tmp_path, "t.json", [WEATHER[0], long_question]), project=agent.project,
                                 agent=agent)
    session = models.Session.objects.get(pk=report.sessions[0].session_id)
    assert session.title.startswith("Which of these hotels near the station has a pool")
    assert session.title.endswith("…") and len(session.title) <= 81
    assert report.sessions[0].title == session.title
    titled = native([{"external_id": "t", "title": "Kept", "messages": WEATHER}])
    imports.import_file(write(tmp_path, "n.json", titled), project=agent.project, agent=agent)
    assert models.Session.objects.get(external_id="t").title == "Kept"


def test_it_refuses_an_external_id_too_long_to_store(db, tmp_path: Path, agent: models.Agent) -> None:
    data = native([{"external_id": "x" * 300, "messages": WEATHER}])
    before = counts()
    with pytest.raises(imports.ImportFailed, match="conversation 1: external_id: 300 characters"):
        imports.import_file(write(tmp_path, "n.json", data), project=agent.project, agent=agent)
    assert counts() == before


def test_it_refuses_a_nul_character_naming_the_place(db, tmp_path: Path, agent: models.Agent) -> None:
    data = [WEATHER[1], {"role": "assistant", "content": "bad \u0000 byte"}]
    before = counts()
    with pytest.raises(imports.ImportFailed, match=r"conversation 1: messages\[1\]\.content: contains a NUL"):
        imports.import_file(write(tmp_path, "nul.json", data), project=agent.project, agent=agent)
    assert counts() == before


# A file that the preview accepts must import: every check that can fail the import runs in the preview too.
UNSTORABLE = [
    pytest.param(
        {
            "format": "memoryviz",
            "version": 1,
            "sessions": [{"messages": [{"role": "user", "content": "hi", "usage": {"prompt_tokens": float("nan")}}]}],
        },
        r"conversation 1: messages\[0\]\.usage: contains NaN",
        id="nan",
    ),
    pytest.param(
        [{"role": "user", "content": "hi", "extra": {"x": [float("inf")]}}],
        r"conversation 1: messages\[0\]\.extra: contains Infinity",
        id="infinity",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "x", "w": float("nan")}]}],
        r"conversation 1: messages\[0\]\.content: contains NaN",
        id="nan-in-parts",
    ),
    pytest.param(
        [WEATHER[1], {"role": "assistant", "content": "bad \u0000 byte"}],
        r"conversation 1: messages\[1\]\.content: contains a NUL",
        id="nul",
    ),
    pytest.param(
        [WEATHER[1], {"role": "assistant", "content": "x", "name": "n" * 256}],
        r"conversation 1: messages\[1\]\.name: 256 characters",
        id="long-name",
    ),
    pytest.param(
        {"format": "memoryviz", "version": 1, "sessions": [{"external_id": "x" * 300, "messages": WEATHER}]},
        "conversation 1: external_id: 300 characters",
        id="long-session-id",
    ),
    pytest.param(
        {
            "format": "memoryviz",
            "version": 1,
            "sessions": [{"external_id": "s", "metadata": {"a": float("nan")}, "messages": WEATHER}],
        },
        "conversation 1: metadata: contains NaN",
        id="nan-in-metadata",
    ),
    pytest.param(
        {
            "format": "memoryviz",
            "version": 1,
            "sessions": [{"external_id": "s", "title": "a\u0000b", "messages": WEATHER}],
        },
        "conversation 1: title: contains a NUL",
        id="nul-in-title",
    ),
    pytest.param(
        {
            "format": "memoryviz",
            "version": 1,
            "sessions": [{"external_id": "s", "agent": "a\u0000b", "messages": WEATHER}],
        },
        "conversation 1: agent: contains a NUL",
        id="nul-in-agent",
    ),
]


@pytest.mark.parametrize(("data", "error"), UNSTORABLE)
def test_the_preview_refuses_what_the_import_would_refuse_naming_the_place(
    db, tmp_path: Path, project: models.Project, data: Any, error: str
) -> None:
    path = write(tmp_path, "bad.json", json.dumps(data))
    with pytest.raises(imports.ImportFailed, match=error):
        imports.preview_file(path, project=project)
    before = counts()
    with pytest.raises(imports.ImportFailed, match=error):
        imports.import_file(path, project=project)
    assert counts() == before


@pytest.mark.parametrize("data", [[], {"messages": []}, native([]), native([{"external_id": "e", "messages": []}])],
                         ids=["empty-list", "empty-messages", "no-session", "empty-session"])
def test_it_imports_nothing_from_a_file_without_a_message_and_says_so(
    db, tmp_path: Path, project: models.Project, data: Any
) -> None:
    path = write(tmp_path, "empty.json", data)
    with pytest.raises(imports.ImportFailed, match="nothing to import"):
        imports.preview_file(path, project=project)
    before = counts()
    with pytest.raises(imports.ImportFailed, match="nothing to import"):
        imports.import_file(path, project=project)
    assert counts() == before


def test_the_preview_of_an_append_checks_the_session_as_it_will_be_stored(
    db, tmp_path: Path, agent: models.Agent
) -> None:
    first = [{"external_id": "m1", "role": "user", "content": "Weather?"},
             {"external_id": "m2", "role": "assistant", "content": None,
              "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]}]
    imports.import_file(write(tmp_path, "a.json", native([{"external_id": "s", "messages": first}])), agent=agent,
                        project=agent.project)
    # The result comes alone in a later file: it answers the stored call, so it is no orphan.
    later = native([{"external_id": "s", "messages": [{"external_id": "m3", "role": "tool", "tool_call_id": "c1",
                                                       "content": "sunny"}]}])
    path = write(tmp_path, "b.json", later)
    preview = imports.preview_file(path, project=agent.project, agent=agent)
    report = imports.import_file(path, project=agent.project, agent=agent)
    assert [s.to_dict() for s in preview.sessions] == [s.to_dict() for s in report.sessions]
    assert report.sessions[0].status == "updated" and report.sessions[0].added == 1
    assert report.sessions[0].violations == []


def test_it_reimports_its_own_agentscope_export_without_a_time_zone_warning(db, agent: models.Agent) -> None:
    # AgentScope writes local time without a zone (warned at import); memoryviz's own export writes the zone.
    from agents.transfer import exports

    first = imports.import_file(SAMPLES / "agentscope" / "travel.json", project=agent.project, agent=agent)
    assert any("without a time zone" in w for w in first.warnings)
    stored = models.Session.objects.filter(pk=first.sessions[0].session_id)
    out = io.StringIO()
    exports.export_to(exports.export_plan(sessions=stored, format="agentscope", scope="test"), out)
    again = imports.import_file(io.BytesIO(out.getvalue().encode()), project=agent.project, agent=agent)
    assert [w for w in again.warnings if "time zone" in w] == []
    times = [list(models.Message.objects.filter(session_id=r.session_id).order_by("seq")
                  .values_list("created_at", flat=True)) for r in (first.sessions[0], *again.sessions)]
    assert times[0] and all(t == times[0] for t in times[1:])  # the same instants, read back


def test_a_big_import_leaves_the_planner_knowing_the_tables_on_postgresql(tmp_path, project, monkeypatch):
    """As after the demo's bulk load (test_seed_demo.py): past ANALYZE_AFTER_MESSAGES messages imported at once,
    PostgreSQL's statistics are brought up to date, so that the next pages are planned for the tables as they are."""
    from django.db import connection

    analyzed = []
    real = writing.tables_analyze
    monkeypatch.setattr(writing, "tables_analyze", lambda: (analyzed.append(1), real()))
    monkeypatch.setattr(writing, "ANALYZE_AFTER_MESSAGES", len(WEATHER) * 3)
    def asked(k: int) -> list[dict[str, Any]]:
        return [WEATHER[0], {"role": "user", "content": f"Question {k}?"}, *WEATHER[2:]]

    imports.import_file(write(tmp_path, "two.json", [asked(1), asked(2)]), project=project, agent="Weather bot")
    assert analyzed == []  # 12 messages: under the threshold
    imports.import_file(write(tmp_path, "three.json", [asked(3), asked(4), asked(5)]), project=project, agent="Bot")
    assert analyzed == [1]
    if connection.vendor != "postgresql":  # SQLite plans without table statistics: nothing to refresh
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [models.Message._meta.db_table])
        (estimated,) = cursor.fetchone()
    assert estimated == models.Message.objects.count() == len(WEATHER) * 5
