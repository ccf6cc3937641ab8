from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from agents import models
from agents.memory.schema import Conversation, Message
from agents.store import writing

CHAT = [Message(role="system", content="Be brief."), Message(role="user", content="hi", external_id="m1"),
        Message(role="assistant", content="hello", reasoning="greet back")]


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        call_command("export_history", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def store(agent: models.Agent, external_id: str, messages: list[Message]) -> models.Session:
    return writing.session_store(agent=agent, conversation=Conversation(messages=messages, external_id=external_id))


def test_it_writes_native_to_stdout_and_the_report_to_stderr(agent: models.Agent) -> None:
    store(agent, "a", CHAT)
    code, out, err = run("--format", "native")
    assert code == 0, err
    doc = json.loads(out)
    assert [s["external_id"] for s in doc["sessions"]] == ["a"]
    report = json.loads(err)
    assert report["messages"] == 3 and report["dropped"] == []
    record = models.ExportRecord.objects.get()
    assert record.interface == "command" and record.user is None and record.scope == "all sessions"


def test_it_says_what_the_target_format_drops(agent: models.Agent) -> None:
    store(agent, "a", CHAT)
    code, out, err = run("--format", "openai")
    assert code == 0
    assert len(json.loads(out)) == 3
    assert any("reasoning" in d for d in json.loads(err)["dropped"])


def test_it_filters_by_project_agent_and_session(agent: models.Agent) -> None:
    a = store(agent, "a", CHAT)
    store(agent, "b", CHAT)
    other = models.Agent.objects.create(project=agent.project, name="Other", slug="other")
    store(other, "c", CHAT)
    _, out, _ = run("--format", "native", "--project", agent.project.slug, "--agent", "other")
    assert [s["external_id"] for s in json.loads(out)["sessions"]] == ["c"]
    _, out, _ = run("--format", "native", "--session", str(a.pk))
    assert [s["external_id"] for s in json.loads(out)["sessions"]] == ["a"]


def test_it_writes_a_file_with_o(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "a", CHAT)
    target = tmp_path / "out.jsonl"
    code, out, err = run("--format", "openai_jsonl", "-o", str(target))
    assert code == 0 and out == ""
    assert json.loads(target.read_text().splitlines()[0])["messages"][1]["content"] == "hi"
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind


def test_it_exports_trimmed_with_set(agent: models.Agent) -> None:
    store(agent, "a", CHAT)
    code, out, err = run("--format", "native", "--strategy", "buffered", "--set", "buffer_size=1")
    assert code == 0, err
    conv = json.loads(out)["sessions"][0]
    assert conv["metadata"]["trimmed"]["params"]["buffer_size"] == 1
    assert [m["role"] for m in conv["messages"]] == ["system", "assistant"]
    assert json.loads(err)["strategy"] == "buffered"


def test_it_stops_on_invalid_conversations_when_asked(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "good", CHAT)
    bad = store(agent, "bad", [Message(role="user", content="x"), Message(role="tool", tool_call_id="t", content="y")])
    target = tmp_path / "out.jsonl"
    code, out, err = run("--format", "openai_jsonl", "--on-invalid", "stop", "-o", str(target))
    assert code == 2
    assert f"session {bad.pk}" in err and "--on-invalid skip" in err
    assert not target.exists()
    code, out, err = run("--format", "openai_jsonl", "--on-invalid", "skip")
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert "bad" in json.loads(err)["skipped"][0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--format", "yaml"], "unknown format"),
        (["--format", "native", "--project", "nope"], "no project 'nope'"),
        (["--format", "native", "--session", "99999"], "no session 99999"),
        (["--format", "native", "--strategy", "nope"], "unknown strategy"),
        (["--format", "native", "--strategy", "buffered", "--set", "buffer_size"], "key=value"),
        (["--format", "native", "--set", "x=1"], "without a strategy"),
    ],
)
def test_it_exits_2_on_bad_arguments(agent: models.Agent, args: list[str], needle: str) -> None:
    store(agent, "a", CHAT)
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert needle in err
    assert models.ExportRecord.objects.count() == 0


def test_it_shows_progress_when_asked(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "a", CHAT)
    code, _, err = run("--format", "native", "--progress", "-o", str(tmp_path / "x.json"))
    assert code == 0
    assert "exporting [" in err and "100.0% 3 messages" in err


def test_it_says_when_nothing_matches(db: Any) -> None:
    code, _, err = run("--format", "native")
    assert code == 2 and "no session matches" in err


def test_it_names_an_output_folder_that_does_not_exist_and_leaves_nothing(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "a", CHAT)
    target = tmp_path / "nonexistent" / "dir" / "x.json"
    code, out, err = run("--format", "native", "-o", str(target))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert err.startswith("export_history: ") and str(target) in err
    assert not (tmp_path / "nonexistent").exists() and list(tmp_path.iterdir()) == []
    assert models.ExportRecord.objects.count() == 0


def test_it_refuses_a_folder_as_the_output_file(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "a", CHAT)
    code, _, err = run("--format", "native", "-o", str(tmp_path))
    assert code == 2 and str(tmp_path) in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    assert models.ExportRecord.objects.count() == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_it_writes_plain_progress_lines_when_stderr_is_not_a_terminal(agent: models.Agent, tmp_path: Path) -> None:
    store(agent, "a", CHAT)
    code, _, err = run("--format", "native", "--progress", "-o", str(tmp_path / "x.json"))
    assert code == 0
    assert "\x1b" not in err and "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("exporting [")]
    assert lines and "100.0% 3 messages" in lines[-1]


def test_the_progress_bar_redraws_one_line_only_on_a_terminal() -> None:
    from agents.management.progress import ProgressBar

    for stream, terminal in ((_Terminal(), True), (io.StringIO(), False)):
        bar = ProgressBar("working", stream=stream, total=10, interval=0)
        for n in (3, 7):
            bar.update(n)
        bar.close()
        text = stream.getvalue()
        if terminal:
            assert text.count("\r") == 3 and text.count("\x1b[K") == 3 and text.endswith("\n")
        else:
            assert "\r" not in text and "\x1b" not in text
            lines = text.splitlines()
            assert len(lines) == 3 and lines[-1].startswith("working [") and "100.0% 7 messages" in lines[-1]
    # A log never gets the same line twice: closing after a line that already said 100% adds nothing.
    stream = io.StringIO()
    bar = ProgressBar("working", stream=stream, total=10, interval=0)
    bar.update(10)
    bar.close()
    assert len(stream.getvalue().splitlines()) == 1


def test_it_writes_into_a_pipe_instead_of_replacing_it(agent: models.Agent, tmp_path: Path) -> None:
    # -o /dev/stdout or a named pipe: renaming a finished temporary file over it would replace the device.
    import os
    import stat
    import threading

    store(agent, "a", CHAT)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run("--format", "openai", "-o", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(received[0])[1]["content"] == "hi"
