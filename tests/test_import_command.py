from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from agents import models

ROOT = Path(__file__).resolve().parents[1]
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        call_command("import_history", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def rows() -> tuple[int, int, int, int]:
    return (models.Project.objects.count(), models.Agent.objects.count(), models.Session.objects.count(),
            models.Message.objects.count())


def test_it_prints_the_report_as_json(db, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    code, out, err = run(str(path))
    assert code == 0, err
    report = json.loads(out)
    assert report["sessions_imported"] == 1 and report["messages_imported"] == 2
    file = report["files"][0]
    assert file["format"] == "openai" and file["project"] == "imported"
    assert file["sessions"][0]["agent"] == "openai"
    assert "importing" not in err  # no progress bar when stderr is not a terminal
    assert "project 'imported' has no members" in err


def test_it_makes_the_named_users_members_of_the_project(db, tmp_path: Path, alice) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    code, _, err = run(str(path), "--project", "team-a", "--member", "alice")
    assert code == 0, err
    membership = models.Membership.objects.get(project__slug="team-a")
    assert (membership.user, membership.role) == (alice, "editor")
    assert "no members" not in err


def test_it_refuses_an_unknown_member_before_importing(db, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    before = rows()
    code, _, err = run(str(path), "--member", "nobody")
    assert code == 2
    assert "--member: no such user: nobody" in err
    assert rows() == before


def test_it_uses_the_given_project_and_agent_creating_them(db, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    code, out, _ = run(str(path), "--project", "team-a", "--agent", "helper", "--format", "openai")
    assert code == 0
    session = models.Session.objects.get()
    assert (session.agent.project.slug, session.agent.slug) == ("team-a", "helper")


def test_it_imports_several_files_and_each_session_once(db, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.jsonl"
    a.write_text(json.dumps(CHAT))
    b.write_text("\n".join(json.dumps({"messages": CHAT + [{"role": "user", "content": str(i)}]}) for i in range(3)))
    code, out, _ = run(str(a), str(b))
    assert code == 0
    assert json.loads(out)["sessions_imported"] == 4
    code, out, _ = run(str(a), str(b))
    assert json.loads(out)["sessions_imported"] == 0
    assert models.Session.objects.count() == 4


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'[{"role": "user"', "invalid JSON"),
        (b"\x00\xff\xfe garbage", ""),
        (json.dumps([{"role": "tool", "content": "x"}]).encode(), "messages[0]"),
        (b"[" * 10_000 + b"]" * 10_000, "nested"),
    ],
)
def test_it_exits_2_with_the_error_on_stderr_and_saves_nothing(db, tmp_path: Path, content: bytes, needle: str) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(CHAT))
    bad.write_bytes(content)
    before = rows()
    code, out, err = run(str(good), str(bad))
    assert code == 2
    assert out == ""
    assert err.startswith("import_history: ") and str(bad) in err and needle in err
    assert "Traceback" not in err
    assert rows() == before  # the good file before it was rolled back too


def test_it_says_which_file_is_missing(db, tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in err


def test_it_refuses_an_unknown_format_name(db, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    code, _, err = run(str(path), "--format", "yaml")
    assert code == 2 and "unknown format 'yaml'" in err


def test_it_shows_progress_on_stderr_when_asked(db, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT * 50))
    code, out, err = run(str(path), "--progress")
    assert code == 0
    assert "importing chat.json [" in err and "100.0% 100 messages" in err
    json.loads(out)  # stdout stays clean JSON


def test_it_reads_standard_input(tmp_path: Path) -> None:
    # A real process: stdin is a pipe. Its own database file, so nothing is shared with the test database.
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'cmd.sqlite3'}", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    done = subprocess.run([sys.executable, "manage.py", "import_history", "-", "--project", "p"], cwd=ROOT, env=env,
                          input=json.dumps(CHAT).encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages_imported"] == 2
    assert b"importing" not in done.stderr  # no progress bar on a pipe


def test_it_reimports_its_own_agentscope_export_without_a_time_zone_warning(db, tmp_path: Path) -> None:
    source = tmp_path / "scope.json"
    source.write_text(json.dumps([
        {"id": "m1", "name": "user", "role": "user", "content": "hi", "metadata": {},
         "timestamp": "2026-11-29 11:55:17.456"},
        {"id": "m2", "name": "Friday", "role": "assistant", "content": "hello", "metadata": {},
         "timestamp": "2026-11-29 11:55:18.002"},
    ]))
    code, out, err = run(str(source), "--project", "first")
    assert code == 0, err
    # AgentScope's own file has no zone: that one is worth a warning.
    assert any("without a time zone" in w for w in json.loads(out)["files"][0]["warnings"])
    exported = tmp_path / "again.json"
    call_command("export_history", "--project", "first", "--format", "agentscope", "-o", str(exported),
                 stdout=io.StringIO(), stderr=io.StringIO())
    code, out, err = run(str(exported), "--project", "second")
    assert code == 0, err
    report = json.loads(out)
    assert report["sessions_imported"] == 1
    assert report["files"][0]["warnings"] == []
    times = list(models.Message.objects.filter(session__agent__project__slug="second").order_by("seq")
                 .values_list("created_at", flat=True))
    assert [t.isoformat() for t in times] == ["2026-11-29T11:55:17.456000+00:00", "2026-11-29T11:55:18.002000+00:00"]


def test_it_exits_2_and_imports_nothing_from_a_file_without_a_message(db, tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]")
    before = rows()
    code, out, err = run(str(path))
    assert code == 2 and out == ""
    assert err.strip() == f"import_history: {path}: has no message, so there is nothing to import."
    assert rows() == before


def test_it_says_to_name_the_format_with_its_option_when_it_cannot_tell(db, tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps([{"shape": "unknown"}]))
    code, _, err = run(str(path))
    assert code == 2 and "unknown format" in err and err.rstrip().endswith("; name the format with --format")
