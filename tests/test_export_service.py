from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from agents import models
from agents.memory import formats
from agents.memory.schema import Conversation, Message
from agents.memory.trimming import strategy_spec, trim
from agents.store import mapping, reading, writing
from agents.transfer import exports, imports


def weather(suffix: str = "") -> list[Message]:
    return [
        Message(role="system", content="You are a weather assistant."),
        Message(role="user", content=f"Weather in Paris and Tokyo?{suffix}", external_id=f"u{suffix}"),
        Message.model_validate(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                    },
                ],
                "reasoning": "Two cities, two calls.",
            }
        ),
        Message(role="tool", tool_call_id="call_1", content="18°C, cloudy", name="get_weather"),
        Message(role="tool", tool_call_id="call_2", content="error: timeout", is_error=True),
        Message(
            role="assistant",
            content=[{"type": "text", "text": "Paris: 18°C."}],
            marks=["final"],
            usage={"input_tokens": 52, "output_tokens": 9},
        ),
    ]


def store(agent: models.Agent, external_id: str, messages: list[Message], **fields: Any) -> models.Session:
    conv = Conversation(messages=messages, external_id=external_id, source_format="openai", **fields)
    return writing.session_store(agent=agent, conversation=conv)


def plan_for(qs: Any, fmt: str, **kwargs: Any) -> exports.ExportPlan:
    return exports.export_plan(sessions=qs, format=fmt, scope="test", **kwargs)


def export_text(qs: Any, fmt: str, **kwargs: Any) -> tuple[str, exports.ExportResult]:
    out = io.StringIO()
    result = exports.export_to(plan_for(qs, fmt, **kwargs), out)
    return out.getvalue(), result


def test_it_round_trips_native_byte_stable_through_a_fresh_project(db, tmp_path: Path, agent: models.Agent) -> None:
    store(agent, "s-1", weather(), title="Weather", metadata={"team": "qa"},
          tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])
    store(agent, "s-2", weather(" again"))
    first, result = export_text(models.Session.objects.all(), "native")
    assert result.conversations == 2 and result.messages == 12 and result.dropped == []
    # A fresh project: everything of the first is gone, the file recreates project, agent and sessions.
    models.Project.objects.all().delete()
    path = tmp_path / "export.json"
    path.write_text(first, encoding="utf-8")
    report = imports.import_file(path)
    assert report.sessions_imported == 2
    assert models.Project.objects.get().slug == agent.project.slug
    second, _ = export_text(models.Session.objects.all(), "native")
    assert second == first
    doc = json.loads(first)
    assert doc["format"] == "memoryviz"
    assert doc["sessions"][0]["messages"][4]["is_error"] is True


def test_it_round_trips_native_into_another_project_except_the_project_name(
    db, tmp_path: Path, agent: models.Agent
) -> None:
    store(agent, "s-1", weather())
    first, _ = export_text(models.Session.objects.all(), "native")
    path = tmp_path / "export.json"
    path.write_text(first, encoding="utf-8")
    imports.import_file(path, project="elsewhere")
    again, _ = export_text(models.Session.objects.filter(agent__project__slug="elsewhere"), "native")
    a, b = json.loads(first), json.loads(again)
    assert b["sessions"][0].pop("project") == "elsewhere"
    a["sessions"][0].pop("project")
    assert a == b


def test_it_records_who_exported_what(db, agent: models.Agent, alice: Any) -> None:
    store(agent, "s-1", weather())
    out = io.StringIO()
    result = exports.export_to(plan_for(models.Session.objects.all(), "openai"), out, user=alice, interface="web")
    record = models.ExportRecord.objects.get()
    assert record.user == alice and record.project == agent.project
    assert (record.format, record.session_count, record.message_count) == ("openai", 1, 6)
    assert record.interface == "web"
    # openai chat cannot hold is_error, ids, reasoning: the report says so, and the record keeps it.
    assert record.dropped == result.dropped
    assert any("is_error" in d for d in result.dropped)


def test_it_exports_a_session_as_trimmed_by_a_strategy(db, agent: models.Agent) -> None:
    session = store(agent, "s-1", weather())
    text, result = export_text(models.Session.objects.filter(pk=session.pk), "native",
                               spec=strategy_spec("buffered", {"buffer_size": 2}))
    doc = json.loads(text)
    conv = doc["sessions"][0]
    assert conv["external_id"] == "s-1:trimmed:buffered"
    assert conv["metadata"]["trimmed"]["strategy"] == "buffered"
    assert conv["metadata"]["trimmed"]["params"]["buffer_size"] == 2
    # The exported list is exactly the strategy's result on the stored messages.
    expected = trim(reading.session_messages(session), strategy_spec("buffered", {"buffer_size": 2}))
    assert conv["messages"] == [m.model_dump(mode="json") for m in expected.messages]
    assert len(conv["messages"]) < 6
    record = models.ExportRecord.objects.get()
    assert record.strategy == "buffered" and record.params["buffer_size"] == 2


def test_it_refuses_an_unknown_format_before_writing(db, agent: models.Agent) -> None:
    store(agent, "s-1", weather())
    qs = models.Session.objects.all()
    with pytest.raises(exports.ExportFailed, match="unknown format"):
        plan_for(qs, "yaml")
    with pytest.raises(exports.ExportFailed, match="on_invalid"):
        plan_for(qs, "native", on_invalid="maybe")
    assert models.ExportRecord.objects.count() == 0


def test_it_skips_or_stops_on_invalid_conversations_in_openai_jsonl(db, agent: models.Agent) -> None:
    store(agent, "good", weather())
    broken = [Message(role="user", content="hi"), Message(role="tool", tool_call_id="gone", content="x")]
    bad = store(agent, "bad", broken, title="Broken")
    qs = models.Session.objects.all()
    text, result = export_text(qs, "openai_jsonl", on_invalid="skip")
    assert len(text.strip().splitlines()) == 1
    assert len(result.skipped) == 1 and "bad" in result.skipped[0]
    assert models.ExportRecord.objects.get().skipped == result.skipped
    invalid = exports.invalid_sessions(plan_for(qs, "openai_jsonl", on_invalid="stop"))
    assert len(invalid) == 1 and f"session {bad.pk} (Broken)" in invalid[0]
    with pytest.raises(exports.ExportFailed, match="protocol"):
        export_text(qs, "openai_jsonl", on_invalid="stop")


@pytest.mark.parametrize("fmt", sorted(formats.FORMATS))
def test_it_exports_every_format_and_reads_it_back(db, agent: models.Agent, fmt: str) -> None:
    store(agent, "s-1", weather())
    text, result = export_text(models.Session.objects.all(), fmt)
    assert result.conversations == 1
    back = formats.read_input(io.BytesIO(text.encode()), fmt)
    assert len(back) == 1
    roles = [m.role for m in back[0].messages]
    assert roles.count("tool") == 2 and "user" in roles


def test_it_reads_a_big_session_page_by_page(db, agent: models.Agent, django_assert_max_num_queries: Any) -> None:
    n = exports.PAGE_SIZE * 2 + 5
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}") for i in range(n)]
    session = store(agent, "big", msgs)
    lazy = exports.SessionMessages(session)
    assert len(lazy) == n
    with django_assert_max_num_queries(3):
        read = list(lazy)
    assert [m.content for m in read] == [f"m{i}" for i in range(n)]


def test_it_streams_a_big_export_in_chunks_and_records_it_at_the_end(db, agent: models.Agent) -> None:
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", content="x" * 200) for i in range(3000)]
    store(agent, "big", msgs)
    chunks = exports.export_chunks(plan_for(models.Session.objects.all(), "openai"))
    first = next(chunks)
    assert exports.CHUNK_CHARS <= len(first) < 2 * exports.CHUNK_CHARS
    assert models.ExportRecord.objects.get().dropped == []  # recorded at the start, finished at the end
    text = first + "".join(chunks)
    assert len(json.loads(text)) == 3000
    assert models.ExportRecord.objects.get().message_count == 3000


def test_it_reads_no_more_rows_once_the_download_is_abandoned(db, agent: models.Agent) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    msgs = [
        Message(role="user" if i % 2 == 0 else "assistant", content="z" * 500) for i in range(3 * exports.PAGE_SIZE)
    ]
    store(agent, "big", msgs)
    chunks = exports.export_chunks(plan_for(models.Session.objects.all(), "native"))
    with CaptureQueriesContext(connection) as queries:
        assert next(chunks)
        chunks.close()  # what the server does when the client goes away
    # Reads of message rows (the native export's annotations query joins the messages for their seq: not a read
    # of rows to write).
    reads = [q for q in queries.captured_queries if 'FROM "agents_message"' in q["sql"] and "SELECT" in q["sql"]]
    assert len(reads) == 1  # the first batch of rows, of three


from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.strategies_messages import valid_conversations  # noqa: E402


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(convs=st.lists(valid_conversations(content_parts=True), min_size=1, max_size=3),
       titles=st.lists(st.one_of(st.none(), st.text(max_size=30)), min_size=3, max_size=3))
def test_native_round_trip_is_byte_stable_for_any_conversations(
    db, tmp_path: Path, alice: Any, convs: list[list[Message]], titles: list[str | None]
) -> None:
    # NUL characters are refused at import (PostgreSQL cannot store them); the import tests cover that.
    assume(all("\\u0000" not in m.model_dump_json() for conv in convs for m in conv))
    assume(all("\x00" not in (t or "") for t in titles))
    # A file with no message at all imports nothing, by design (test_import_service covers it).
    assume(any(convs))
    models.Project.objects.all().delete()
    project = models.Project.objects.create(name="P", slug="p")
    agent = models.Agent.objects.create(project=project, name="A", slug="a")
    for i, messages in enumerate(convs):
        store(agent, f"conv-{i}", messages, title=titles[i])
    first, _ = export_text(models.Session.objects.all(), "native")
    models.Project.objects.all().delete()
    path = tmp_path / "round.json"
    path.write_text(first, encoding="utf-8")
    report = imports.import_file(path)
    assert report.sessions_imported == len(convs)
    second, _ = export_text(models.Session.objects.all(), "native")
    assert second == first


# --- rows read without validation (mapping.message_to_schema, message_json): the same objects, the same bytes ---

def _rich_messages() -> list[Message]:
    import datetime as dt

    return weather() + [
        Message(role="user", name="Zoë", content="ünïcødé ✓ 日本語 🚀 \u2028 \\ \" '", created_at=dt.datetime(
            2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC), extra={"k": [1, {"z": "ß"}], "n": None}),
        Message(role="developer", content="", created_at=dt.datetime(2026, 1, 2, 3, 4, 6, tzinfo=dt.UTC)),
        Message.model_validate({"role": "assistant", "content": "", "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "broken", "arguments": "{not json"}}],
            "usage": {"nested": {"a": 1.5, "b": None}, "list": [1, "x"]}, "is_error": False}),
        Message(role="tool", tool_call_id="c3", content='{"ok": false}', is_error=True, external_id="r-3"),
    ]


def _validated(row: Any) -> Message:
    """What message_to_schema gave before it skipped validation."""
    return Message(
        role=row.role, content=row.content_parts if row.content_parts is not None else row.content,
        name=row.name or None, tool_calls=row.tool_calls or [], tool_call_id=row.tool_call_id or None,
        external_id=row.external_id or None, created_at=row.created_at, is_error=row.is_error,
        reasoning=row.reasoning or None, usage=row.usage, marks=row.marks or [], extra=row.extra or {},
    )


def test_rows_read_without_validation_are_the_validated_messages(agent: models.Agent) -> None:
    session = store(agent, "rich", _rich_messages())
    tuples = [row for rows in reading._session_message_rows(session, size=4) for row in rows]
    instances = list(session.messages.order_by("seq"))
    assert len(tuples) == len(instances) == len(_rich_messages())
    for row in tuples + instances:
        built, validated = mapping.message_to_schema(row), _validated(row)
        assert built == validated
        assert built.model_fields_set == validated.model_fields_set
        assert [c.model_fields_set for c in built.tool_calls] == [c.model_fields_set for c in validated.tool_calls]
        assert built.model_dump_json() == validated.model_dump_json()


def test_rows_of_another_shape_are_still_validated(agent: models.Agent) -> None:
    import datetime as dt

    session = store(agent, "odd", weather())
    row = session.messages.get(seq=2)
    row.tool_calls = [{"id": "call_1", "function": {"name": "get_weather", "arguments": "{}"}}]  # no "type"
    assert mapping.message_to_schema(row).tool_calls[0].type == "function"  # the model's default, validated
    # The export's JSON of such a row (a driver's row) goes through the model too.
    raw = list(reading._plain_rows(models.Message.objects.filter(pk=row.pk).values_list(
        "seq", *reading.MESSAGE_FIELDS))[0])
    raw[6] = json.dumps(row.tool_calls)
    assert reading.message_json(tuple(raw)) == mapping.message_to_schema(row).model_dump(mode="json")
    raw[10] = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert reading.message_json(tuple(raw))["created_at"] == "2026-01-02T03:04:05+02:00"
    row.role = "robot"
    with pytest.raises(ValueError):
        mapping.message_to_schema(row)


def test_native_export_writes_the_bytes_of_the_validated_messages(agent: models.Agent) -> None:
    session = store(agent, "rich", _rich_messages(), title="Rich ✓")
    text, _ = export_text(models.Session.objects.filter(pk=session.pk), "native")
    # The same session written from validated Message objects, as the export did before reading rows without them.
    meta = exports._session_meta(session)
    meta.messages = [_validated(row) for row in session.messages.order_by("seq")]
    assert text == formats.dumps([meta], "native")[0]
    assert "ünïcødé ✓ 日本語 🚀" in text and '"created_at": "2026-01-02T03:04:05.678901Z"' in text


def test_driver_rows_give_the_json_of_their_validated_messages(agent: models.Agent) -> None:
    import datetime as dt

    session = store(agent, "rich", _rich_messages())
    qs = models.Message.objects.filter(session_id=session.pk).order_by("seq").values_list(
        "seq", *reading.MESSAGE_FIELDS)
    raw = reading._plain_rows(qs)
    expected = [_validated(reading._message_row(row)).model_dump(mode="json") for row in raw]
    assert [reading.message_json(row) for row in raw] == expected
    assert [d for batch in reading.session_message_json_batches(session, size=3) for d in batch] == expected
    # A driver that gives aware datetimes (PostgreSQL's, in UTC; another offset goes through the model).
    for row in raw:
        for zone in (dt.UTC, dt.timezone(dt.timedelta(hours=-5))):
            aware = list(row)
            aware[10] = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=zone)
            assert reading.message_json(tuple(aware)) == _validated(
                reading._message_row(tuple(aware))).model_dump(mode="json")
