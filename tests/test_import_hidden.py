"""An import writes in committed batches into sessions that stay hidden until the whole file is read: to every
reader it is all or nothing, and what a failed, interrupted or killed import wrote is removed."""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from agents import access, models
from agents.memory.schema import Conversation
from agents.store import writing
from agents.transfer import imports, staging

ROOT = Path(__file__).resolve().parents[1]


def _loop(n: int, tag: str = "") -> list[dict[str, Any]]:
    """A tool loop of exactly n messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": f"You plan trips{tag}."}]
    turn = 0
    while len(out) < n:
        turn += 1
        out += [
            {"role": "user", "content": f"Day {turn}{tag}?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{turn}", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"day": turn})}}]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": "sunny"},
            {"role": "assistant", "content": f"Day {turn}: sunny{tag}."},
        ]
    return out[:n]


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (models.Project, models.Agent, models.Session, models.Message,
                                             models.ToolCall))


def test_it_hides_a_session_from_every_reader_while_its_rows_are_written(
    db, tmp_path: Path, agent: models.Agent, alice, alice_client
) -> None:
    seen: list[tuple[int, int, int, int]] = []

    def look(n: int) -> None:
        hidden = models.Session.objects.filter(state=models.Session.State.IMPORTING)
        page = alice_client.get("/")
        api = alice_client.get("/api/sessions/")
        seen.append((hidden.count(), models.Message.objects.filter(session__in=hidden).count(),
                     access.sessions_for_user(alice).count(), api.json()["count"]))
        assert page.status_code == 200 and "Trip" not in page.content.decode()

    path = _write(tmp_path, "trip.json", {"title": "Trip", "messages": _loop(writing.BATCH_SIZE * 2 + 5)})
    report = imports.import_file(path, project=agent.project, agent=agent, on_messages=look)
    # Mid-import: batches stored in a hidden session, which no list, page or API answer shows.
    assert seen[0][0] == 1 and seen[0][1] >= writing.BATCH_SIZE
    assert all(visible == 0 and listed == 0 for _, _, visible, listed in seen)
    session = access.sessions_for_user(alice).get()
    assert session.pk == report.sessions[0].session_id
    assert session.state == "ready" and session.message_count == writing.BATCH_SIZE * 2 + 5
    assert session.external_id.startswith("sha256:") and not session.import_owner
    assert alice_client.get(f"/sessions/{session.pk}/").status_code == 200


def test_it_answers_404_for_a_session_still_importing(db, agent: models.Agent, alice_client) -> None:
    run = staging.ImportRun()
    hidden = run.session_start(agent=agent, conversation=Conversation(messages=[], title="Secret"), counter="cl100k")
    assert alice_client.get(f"/sessions/{hidden.pk}/").status_code == 404
    assert alice_client.get(f"/api/sessions/{hidden.pk}/").status_code == 404
    assert alice_client.get(f"/sessions/{hidden.pk}/export/").status_code == 404
    assert alice_client.get(f"/sessions/{hidden.pk}/lab/").status_code == 404
    run.discard()
    assert not models.Session.objects.filter(pk=hidden.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_it_removes_committed_batches_when_a_later_conversation_fails(tmp_path: Path, agent: models.Agent) -> None:
    good = {"external_id": "long", "messages": _loop(writing.BATCH_SIZE * 2 + 3)}
    bad = {"external_id": "bad", "messages": [{"role": "user", "content": "x", "name": "n" * 300}]}
    data = {"format": "memoryviz", "version": 1, "sessions": [good, bad]}
    before = _counts()
    with pytest.raises(imports.ImportFailed, match="conversation 2: messages\\[0\\].name"):
        imports.import_file(_write(tmp_path, "n.json", data), project=agent.project, agent=agent)
    assert _counts() == before


@pytest.mark.django_db(transaction=True)
def test_it_removes_what_an_interrupted_import_wrote_and_the_project_it_created(tmp_path: Path) -> None:
    def interrupt(n: int) -> None:
        if n >= writing.BATCH_SIZE:
            raise KeyboardInterrupt

    before = _counts()
    with pytest.raises(imports.ImportFailed, match="interrupted"):
        imports.import_file(_write(tmp_path, "t.json", _loop(writing.BATCH_SIZE * 3)), project="fresh",
                            agent="fresh-bot", on_messages=interrupt)
    assert _counts() == before
    assert not models.Project.objects.filter(slug="fresh").exists()


@pytest.mark.django_db(transaction=True)
def test_it_appends_new_messages_only_when_the_import_completes(tmp_path: Path, agent: models.Agent, alice) -> None:
    msgs = [dict(m, external_id=f"m{i}") for i, m in enumerate(_loop(writing.BATCH_SIZE + 40))]
    imports.import_file(_write(tmp_path, "a.json", {"format": "memoryviz", "version": 1, "sessions": [
        {"external_id": "conv", "messages": msgs[:20]}]}), project=agent.project, agent=agent)
    session = access.sessions_for_user(alice).get()
    visible: list[int] = []

    def look(n: int) -> None:
        visible.append(models.Message.objects.filter(session=session).count())

    report = imports.import_file(_write(tmp_path, "b.json", {"format": "memoryviz", "version": 1, "sessions": [
        {"external_id": "conv", "messages": msgs}]}), project=agent.project, agent=agent, on_messages=look)
    assert report.sessions[0].status == "updated" and report.sessions[0].added == len(msgs) - 20
    # While the new messages were written, the stored session kept its 20.
    assert visible and set(visible) == {20}
    session.refresh_from_db()
    assert session.message_count == len(msgs) == models.Message.objects.filter(session=session).count()
    assert list(models.Message.objects.filter(session=session).values_list("seq", flat=True)) == list(range(len(msgs)))
    assert models.Session.objects.count() == 1  # the staging session is gone
    last = models.Message.objects.filter(session=session).order_by("-seq").first()
    counts = models.Message.objects.filter(session=session).values_list("token_count", flat=True)
    assert last.token_running == sum(counts)


def test_it_refuses_to_append_to_a_session_that_changed_meanwhile(
    db, tmp_path: Path, agent: models.Agent, make_session
) -> None:
    stored = make_session([{"role": "user", "content": "hi", "external_id": "m0"}], external_id="conv")
    run = staging.ImportRun()
    data = {"format": "memoryviz", "version": 1, "sessions": [{"external_id": "conv", "messages": [
        {"role": "user", "content": "hi", "external_id": "m0"},
        {"role": "assistant", "content": "yo", "external_id": "m1"}]}]}
    imports.import_file(_write(tmp_path, "c.json", data), project=agent.project, agent=agent, run=run)
    # Another writer (the API, live capture) appends to the session before this run completes.
    models.Session.objects.filter(pk=stored.pk).update(message_count=2)
    with pytest.raises(imports.ImportFailed, match=f"session {stored.pk} received messages from elsewhere"):
        run.complete()
    run.discard()
    assert models.Session.objects.count() == 1


def test_it_cleans_up_sessions_whose_import_is_gone_and_leaves_running_ones(db, agent: models.Agent) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)
    here = socket.gethostname()
    now = timezone.now()

    def hidden(owner: str, beat: dt.datetime) -> models.Session:
        session = writing.session_create(agent=agent, conversation=Conversation(messages=[]),
                                         external_id=f"pending:{owner}", state="importing", import_owner=owner)
        writing.messages_append(session=session, messages=Conversation.model_validate(
            {"messages": _loop(9)}).messages, start_seq=0)
        models.Session.objects.filter(pk=session.pk).update(import_heartbeat=beat)
        return session

    killed = hidden(f"{here}:{dead_pid}", now)
    running = hidden(f"{here}:{os.getpid()}", now - dt.timedelta(days=1))
    remote_quiet = hidden("elsewhere:123", now - dt.timedelta(hours=1))
    remote_busy = hidden("elsewhere:456", now - dt.timedelta(seconds=30))
    removed = staging.imports_cleanup(stale_after=dt.timedelta(minutes=15), now=now)
    assert sorted(removed) == sorted([killed.pk, remote_quiet.pk])
    left = set(models.Session.objects.values_list("pk", flat=True))
    assert left == {running.pk, remote_busy.pk}
    assert not models.Message.objects.filter(session_id__in=removed).exists()
    assert not models.ToolCall.objects.filter(session_id__in=removed).exists()


# --- processes against a real database file (or a PostgreSQL database of their own) ---------------------------


@pytest.fixture
def database_url(tmp_path: Path, django_db_blocker) -> Any:
    """A migrated database that subprocesses share: a SQLite file, or a fresh database on the test PostgreSQL
    server when the suite runs on PostgreSQL."""
    from django.db import connection

    settings_dict = connection.settings_dict
    drop = None
    if connection.vendor == "postgresql":
        import psycopg

        name = f"mvz_wth_{os.getpid()}_{tmp_path.name[-8:]}".replace("-", "_").lower()
        params = {k: v for k, v in {"host": settings_dict["HOST"], "port": settings_dict["PORT"] or None,
                                    "user": settings_dict["USER"], "password": settings_dict["PASSWORD"]}.items() if v}
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        auth = settings_dict["USER"] + (f":{settings_dict['PASSWORD']}" if settings_dict["PASSWORD"] else "")
        url = f"postgres://{auth}@{settings_dict['HOST'] or 'localhost'}:{settings_dict['PORT'] or 5432}/{name}"

        def drop() -> None:
            with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    yield url
    if drop is not None:
        drop()


def _manage(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env={**os.environ, "DATABASE_URL": url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish_together(procs: list[subprocess.Popen[str]], url: str, *, seconds: float) -> list[tuple[int, str, str]]:
    """Each process's exit code, output and errors, all within one deadline, their pipes read while they run (a
    child never blocks on a full pipe). Past the deadline: every process killed, and the failure shows what each
    said and what the database's connections were waiting for."""
    deadline = time.monotonic() + seconds
    results: list[tuple[int, str, str]] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append((proc.returncode, out, err))
    except subprocess.TimeoutExpired:
        waits = _query(url, "SELECT pid, state, wait_event_type, wait_event, left(query, 200) FROM pg_stat_activity "
                            "WHERE datname = current_database()") if url.startswith("postgres") else []
        said = []
        for proc in procs:
            proc.kill()
            out, err = proc.communicate()
            said.append(f"pid {proc.pid} exit {proc.returncode}: {err[-2000:]}")
        pytest.fail(f"the imports did not finish in {seconds:.0f} s; database connections: {waits}; "
                    + "; ".join(said))
    return results


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    code = ("import django, json, sys; django.setup(); from django.db import connection\n"
            "with connection.cursor() as c: c.execute(sys.argv[1]); print(json.dumps(c.fetchall()))")
    out = subprocess.run([sys.executable, "-c", code, sql], cwd=ROOT, check=True, capture_output=True, text=True,
                         timeout=120,
                         env={**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "memoryviz.settings"})
    return [tuple(row) for row in json.loads(out.stdout)]


def test_concurrent_imports_all_finish_or_exit_2_with_one_line_and_dedup_stays_right(
    tmp_path: Path, database_url: str
) -> None:
    n = writing.BATCH_SIZE * 2 + 11
    same = _write(tmp_path, "same.json", _loop(n, " same"))  # no id: named by its content hash
    named = _write(tmp_path, "named.json", {"format": "memoryviz", "version": 1, "sessions": [
        {"external_id": "run-1", "messages": _loop(n, " named")}]})
    files = [same, same, named, named, _write(tmp_path, "own.json", _loop(n, " own"))]
    procs = [_manage(database_url, "import_history", str(f), "--project", "p", "--agent", "bot") for f in files]
    results = _finish_together(procs, database_url, seconds=400)
    for code, out, err in results:
        assert "Traceback" not in err, err
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err
        else:
            assert code == 0, err
            json.loads(out)
    rows = _query(database_url, "SELECT external_id, state, message_count FROM agents_session ORDER BY external_id")
    # Each conversation stored once, whole and ready; nothing hidden is left.
    assert [state for _, state, _ in rows] == ["ready"] * len(rows)
    assert all(count == n for _, _, count in rows)
    ids = [external_id for external_id, _, _ in rows]
    assert len(ids) == len(set(ids)) == 3 and "run-1" in ids
    assert _query(database_url, "SELECT COUNT(*) FROM agents_message") == [(3 * n,)]
    # The two imports of the same content: one stored it, the other found it already imported (or lost a race
    # and said so in one line).
    same_outcomes = [json.loads(out)["files"][0]["sessions"][0]["status"] for code, out, _ in results[:2] if code == 0]
    assert same_outcomes.count("imported") == 1


def test_a_killed_import_leaves_no_visible_row_and_cleanup_removes_it(tmp_path: Path, database_url: str) -> None:
    big = _write(tmp_path, "big.json", _loop(writing.BATCH_SIZE * 40, " big"))
    proc = _manage(database_url, "import_history", str(big), "--project", "p", "--agent", "bot")
    hidden: list[tuple[Any, ...]] = []
    while proc.poll() is None:
        hidden = _query(database_url, "SELECT s.id, COUNT(m.id) FROM agents_session s JOIN agents_message m "
                                      "ON m.session_id = s.id WHERE s.state = 'importing' GROUP BY s.id")
        if hidden and hidden[0][1] >= writing.BATCH_SIZE:
            proc.kill()  # SIGKILL: no handler runs, nothing is cleaned up by the import itself
            break
    proc.wait(timeout=60)
    assert hidden and hidden[0][1] >= writing.BATCH_SIZE, "the import finished before it could be killed"
    assert _query(database_url, "SELECT COUNT(*) FROM agents_session WHERE state = 'ready'") == [(0,)]
    cleanup = _manage(database_url, "cleanup_imports")
    out, err = cleanup.communicate(timeout=300)
    assert cleanup.returncode == 0, err
    assert json.loads(out) == {"removed": [hidden[0][0]]}
    assert _query(database_url, "SELECT COUNT(*) FROM agents_session") == [(0,)]
    assert _query(database_url, "SELECT COUNT(*) FROM agents_message") == [(0,)]
