"""Compactions read from the files the libraries write (issue 25: "AgentScope's compressed marks and summary, a
LangChain summarization ... one event in the chain saying what went out and what came in"): AgentScope 1.0.21's
memory compression saved by JSONSession (tests/memory_libs/agentscope_compression.py) and LangChain 1.x's
SummarizationMiddleware (tests/memory_libs/langchain_summarization.py), each run by the library itself in this test
run; shown on the session page as the event before the first message kept."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agents import models
from agents.memory import formats
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def compressed(library_files) -> Path:
    return library_files("agentscope", "agentscope_compression.py")


@pytest.fixture(scope="module")
def summarized(library_files) -> Path:
    return library_files("ref", "langchain_summarization.py")


def saved(folder: Path, turn: int, tmp_path: Path) -> Path:
    """The session file as the user's folder held it after ``turn`` (the name JSONSession gave it)."""
    path = tmp_path / f"turn{turn}" / "user_1_long.json"
    path.parent.mkdir(exist_ok=True)
    shutil.copyfile(folder / f"turn{turn}" / "user_1_long.json", path)
    return path


def runs_of(seqs: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for seq in seqs:
        if out and out[-1][1] == seq - 1:
            out[-1][1] = seq
        else:
            out.append([seq, seq])
    return out


def page_text(client, session: models.Session) -> str:
    response = client.get(f"/sessions/{session.pk}/")
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", response.content.decode()))


def test_agentscopes_memory_compression_is_one_event_per_save_saying_what_went_out(
        compressed: Path, tmp_path: Path, alice_client, alice) -> None:
    api = json.loads((compressed / "api.json").read_text())
    for turn in (1, 2, 3, 4):
        imports.import_file(saved(compressed, turn, tmp_path), project="atlas")
    project = models.Project.objects.get(slug="atlas")
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    session = models.Session.objects.get(agent__project=project)
    # The library's own memory after turns 3 and 4: which messages it marked compressed (the system prompt leads
    # the session at seq 0, so a memory index i is seq i + 1).
    expected = []
    for turn in ("turn3", "turn4"):
        out = [i + 1 for i, (_, marks) in enumerate(json.loads((compressed / turn / "user_1_long.json").read_text())
                                                      ["atlas"]["memory"]["content"]) if "compressed" in marks]
        expected.append((out[-1] + 1, runs_of(out), api["summaries"][turn], "marks"))
    compactions = list(models.Compaction.objects.filter(session=session).order_by("seq"))
    assert [(c.seq, c.went_out, c.summary, c.source) for c in compactions] == expected
    assert expected[0][1] != expected[1][1]  # two compressions, each its own event
    assert "Here is a summary of your previous work" in compactions[0].summary
    # Importing the same saves again adds nothing.
    imports.import_file(saved(compressed, 4, tmp_path), project="atlas")
    assert models.Compaction.objects.filter(session=session).count() == 2

    text = page_text(alice_client, session)
    for c in compactions:
        [(first, last)] = c.went_out
        assert f"Compacted: {last - first + 1} messages went out (#{first}–#{last}), a summary came in" in text


def test_a_save_without_compressed_messages_makes_no_compaction(db) -> None:
    imports.import_file(MEMORY_SAMPLES / "agentscope" / "session_user_1_turn3.json", project="friday")
    assert not models.Compaction.objects.exists()


def test_langchains_summary_message_is_a_compaction_with_its_summary(summarized: Path, alice_client, alice) -> None:
    api = json.loads((summarized / "api.json").read_text())
    imports.import_file(summarized / "summarized.json", project="lc")
    project = models.Project.objects.get(slug="lc")
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    session = models.Session.objects.get(agent__project=project)
    [compaction] = models.Compaction.objects.filter(session=session)
    assert (compaction.seq, compaction.summary, compaction.source, compaction.went_out) == (
        0, api["summary"], "summary", None)
    assert session.message_count == api["after"]
    text = page_text(alice_client, session)
    assert "Compacted: what went out is not recorded, a summary came in" in text

    # Read as LangChain's file, the same message is still the user message LangChain sent (nothing rewritten).
    with formats.open_layers(summarized / "summarized.json") as layers:
        [conversation] = [stream.conversation.model_copy(update={"messages": list(stream.messages)})
                          for stream in layers.streams]
        document = layers.memory()
    assert conversation.messages[0].role == "user"
    assert conversation.messages[0].text.endswith(api["summary"])
    assert [(c.seq, c.summary) for c in document.compactions] == [(0, api["summary"])]


def test_a_langchain_file_without_a_summary_message_makes_no_compaction(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([
        {"type": "human", "data": {"content": "Here is a summary of the conversation to date:\n\nnot one",
                                   "additional_kwargs": {}}},
        {"type": "ai", "data": {"content": "ok"}}]))
    imports.import_file(path, project="plain")
    assert not models.Compaction.objects.exists()
