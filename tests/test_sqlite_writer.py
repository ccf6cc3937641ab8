"""SQLite's one writer, taken in turn by the receiver's threads and processes (``ingest._SqliteWriter``), and an OTLP
request's calls and memory stored under one hold of it."""
from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import time

import pytest
from django.db import connection

from agents import models
from agents.capture import ingest, live_memory
from agents.projects import keys as projects_keys
from tests.otlp_memory_spans import PROTOBUF, request, span

HOLDS = 40


def _hold_in_turn(database: str, began: float, out: multiprocessing.Queue) -> None:
    held = []
    while time.monotonic() < began:
        pass  # both processes start together
    for _ in range(HOLDS):
        with ingest._SQLITE_WRITER.held(database):
            start = time.monotonic()
            time.sleep(0.002)
            held.append((start, time.monotonic()))
    out.put((os.getpid(), held))


def test_two_processes_never_write_at_once(tmp_path):
    # gunicorn's workers each have their own thread lock: before the file lock, SQLite's busy handler alone kept
    # them apart, and let one process hand the database from thread to thread while the other's slept.
    database = str(tmp_path / "db.sqlite3")
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    began = time.monotonic() + 0.3
    workers = [context.Process(target=_hold_in_turn, args=(database, began, out)) for _ in range(2)]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    (_, first), (_, second) = results
    assert len(first) == len(second) == HOLDS
    overlaps = [(a, b) for a in first for b in second if a[0] < b[1] and b[0] < a[1]]
    assert overlaps == []
    assert os.path.exists(database + "-writer")  # beside the database, as SQLite's own -wal and -shm


def _locked_elsewhere(path: str) -> bool:
    """Whether another holder has the file: a second open file description cannot take it."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_hold_taken_again_inside_keeps_the_file_until_the_outermost_ends(tmp_path):
    database = str(tmp_path / "db.sqlite3")
    with ingest._SQLITE_WRITER.held(database):
        with ingest._SQLITE_WRITER.held(database):
            assert _locked_elsewhere(database + "-writer")
        assert _locked_elsewhere(database + "-writer")  # the inner hold's end did not let it go
    assert not _locked_elsewhere(database + "-writer")


def test_a_database_in_memory_takes_the_thread_lock_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with ingest._SQLITE_WRITER.held(":memory:"), ingest._SQLITE_WRITER.held("file:memorydb_default?mode=memory"):
        pass
    assert os.listdir(tmp_path) == []


def test_a_requests_calls_are_kept_with_its_memory_or_not_at_all_on_sqlite(client, project, monkeypatch):
    """On SQLite the receiver stores a request's calls and its memory in one transaction under one hold of the
    writer; PostgreSQL stores each part in its own (each locks the rows it writes, and is retried whole)."""
    key = projects_keys.api_key_create(project=project, name="agent").key
    said = [{"role": "user", "parts": [{"type": "text", "content": "Dinner ideas?"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "Lentil curry."}]}]
    body = request(span("c1", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "session.id": "dinner",
        "gen_ai.input.messages": json.dumps(said), "gen_ai.output.messages": json.dumps(answer)}))

    def failing(**kwargs):
        raise RuntimeError("the memory part failed")

    monkeypatch.setattr(live_memory, "memory_ingest", failing)
    with pytest.raises(RuntimeError, match="the memory part failed"):
        client.post("/otlp/v1/traces", data=body, content_type=PROTOBUF, HTTP_AUTHORIZATION=f"Bearer {key}")
    kept = models.LlmCall.objects.filter(session__agent__project=project).count()
    assert kept == (0 if connection.vendor == "sqlite" else 1)
    monkeypatch.undo()
    response = client.post("/otlp/v1/traces", data=body, content_type=PROTOBUF, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200
    assert models.LlmCall.objects.filter(session__agent__project=project).count() == 1
