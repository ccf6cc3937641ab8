"""Annotations travel in the native format (since version 2) and come back on import; version 1 files still import;
every other format reports them as dropped."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agents import models
from agents.memory import formats
from agents.memory.schema import Annotation, Conversation, Message
from agents.memory.trimming import strategy_spec
from agents.review import annotating
from agents.store import writing
from agents.transfer import exports, imports

CHAIN = [
    Message(role="user", content="Book the 9:40 to Porto."),
    Message.model_validate({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "book_train", "arguments": "{\"time\": \"9:40\"}"}}]}),
    Message(role="tool", tool_call_id="c1", content="sold out", is_error=True),
    Message(role="assistant", content="Booked the 9:40."),
]


@pytest.fixture
def reviewed(agent, alice) -> models.Session:
    session = writing.session_store(agent=agent, conversation=Conversation(messages=CHAIN, external_id="porto-1"))
    label = models.Label.objects.create(project=agent.project, name="hallucination", color="#dc2626")
    annotating.annotation_create(user=alice, session=session, seq=3, label="hallucination",
                                 comment="Says booked; the tool said <b>sold out</b>.")
    annotating.annotation_create(user=alice, session=session, seq=None, label=None, comment="Whole run: no retry.")
    assert label.annotations.count() == 1
    return session


def export(fmt: str) -> tuple[str, list[str]]:
    out = io.StringIO()
    plan = exports.export_plan(sessions=models.Session.objects.all(), format=fmt, scope="test")
    result = exports.export_to(plan, out)
    return out.getvalue(), result.dropped


def test_native_writes_the_annotations_after_the_messages_and_reads_them_back(reviewed):
    text, dropped = export("native")
    assert dropped == []
    doc = json.loads(text)
    assert doc["version"] == 3  # the current version: annotations came with 2
    written = doc["sessions"][0]["annotations"]
    assert [(a["seq"], a["label"], a["color"], a["author"]) for a in written] == [
        (3, "hallucination", "#dc2626", "alice"), (None, None, None, "alice")] or \
        [(a["seq"], a["label"]) for a in written] == [(None, None), (3, "hallucination")]
    assert text.index('"annotations"') > text.index('"messages"')
    # Reading what was written and writing it again gives the same bytes.
    again, _report = formats.dumps(formats.read_data(json.loads(text), "native"), "native")
    assert again == text


def test_annotations_come_back_on_import_into_a_fresh_project(reviewed, tmp_path: Path):
    text, _ = export("native")
    models.Project.objects.all().delete()
    assert not models.Label.objects.exists()
    path = tmp_path / "reviewed.json"
    path.write_text(text, encoding="utf-8")
    report = imports.import_file(path)
    assert report.sessions[0].annotations == 2 and report.to_dict()["sessions"][0]["annotations"] == 2
    session = models.Session.objects.get()
    label = models.Label.objects.get()
    assert (label.name, label.color, label.project) == ("hallucination", "#dc2626", session.agent.project)
    rows = {(a.message.seq if a.message else None): a for a in session.annotations.select_related("message", "label")}
    assert rows[3].label == label and rows[3].comment == "Says booked; the tool said <b>sold out</b>."
    assert rows[None].label is None and rows[None].comment == "Whole run: no retry."
    # The file names its author; it cannot make anyone here that author.
    assert all(a.author is None and a.author_name == "alice" for a in rows.values())
    again, _ = export("native")
    assert again == text


def test_an_import_reuses_a_label_the_project_has(reviewed, tmp_path: Path, agent):
    text, _ = export("native")
    models.Session.objects.all().delete()
    path = tmp_path / "reviewed.json"
    path.write_text(text, encoding="utf-8")
    imports.import_file(path, project=agent.project)
    assert models.Label.objects.count() == 1
    assert models.Annotation.objects.filter(label__name="hallucination").count() == 1


def test_a_version_1_file_still_imports(db, tmp_path: Path):
    doc = {"format": "memoryviz", "version": 1, "sessions": [
        {"external_id": "old",
         "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    report = imports.import_file(path)
    assert report.sessions_imported == 1 and report.sessions[0].annotations == 0
    assert models.Session.objects.get().message_count == 2


def test_a_file_whose_annotation_points_past_the_messages_imports_nothing(db, tmp_path: Path):
    doc = {"format": "memoryviz", "version": 2, "sessions": [
        {"external_id": "bad", "messages": [{"role": "user", "content": "hi"}],
         "annotations": [{"seq": 4, "comment": "where?"}]}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(imports.ImportFailed, match=r"sessions\[0\]\.annotations\[0\]\.seq: no message #4"):
        imports.import_file(path)
    assert not models.Session.objects.exists() and not models.Annotation.objects.exists()


@pytest.mark.parametrize("fmt", sorted(set(formats.FORMATS) - {"native"}))
def test_every_other_format_reports_the_annotations_as_dropped(reviewed, fmt):
    _, dropped = export(fmt)
    assert any(line.startswith("annotations on 1 conversation") for line in dropped), dropped


def test_a_trimmed_export_carries_no_annotations(reviewed):
    out = io.StringIO()
    plan = exports.export_plan(sessions=models.Session.objects.all(), format="native", scope="test",
                               spec=strategy_spec("buffered", {"buffer_size": 2}))
    exports.export_to(plan, out)
    assert "annotations" not in json.loads(out.getvalue())["sessions"][0]


def test_the_schema_refuses_an_empty_annotation():
    with pytest.raises(ValueError, match="needs a label or a comment"):
        Annotation(seq=1)
