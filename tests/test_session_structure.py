"""A session's structure kept in one value (memory.structure, models.SessionStructure): what a trim reads instead of
a row per message. It must give exactly the outlines the rows give, and never outlive the messages it describes."""
from __future__ import annotations

import gc
import json
import random

import pytest
from django.db import OperationalError

from agents import models
from agents.capture import ingest
from agents.lab import trimming as lab_trimming
from agents.memory import structure
from agents.memory.schema import parse_messages
from agents.memory.stored import outline
from agents.memory.trimming.tool_runs import Grouped, codes
from agents.store import outlines as store_outlines
from agents.store import recount, writing
from tests.conversations import chat

ROLES = ("system", "developer", "user", "assistant", "tool", "robot")


def random_row(rng: random.Random, k: int) -> tuple:
    """A row as a store reads it (``structure.ROW_FIELDS`` after a seq): JSON as text or decoded, 0/1 booleans."""
    arguments = ["{}", '{"a": [1, "\\u00e9"]}', "oops", ""]
    calls = [{"id": f"c{k}-{j}", "type": "function",
              "function": {"name": rng.choice(["f", "wetter", "é"]), "arguments": rng.choice(arguments)}}
             for j in range(rng.choice([0, 0, 1, 3]))]
    tool_calls = rng.choice([json.dumps(calls), calls]) if calls else rng.choice(["[]", [], None])
    return (k, rng.choice(ROLES), rng.choice(["", "", "ann", None]), rng.choice(["", "", f"c{k}", None]), tool_calls,
            rng.choice([None, 0, 1, True, False]), rng.choice([None, 0, 1]), rng.randrange(0, 5000))


def old_outline(row: tuple) -> object:
    """The outline a row made before the structure (the services module's _outline, as it was)."""
    _, role, name, tool_call_id, tool_calls, is_error, has_text, _ = row
    calls = json.loads(tool_calls) if isinstance(tool_calls, str) else tool_calls
    return outline(role=role, has_text=bool(has_text), name=name, tool_call_id=tool_call_id, tool_calls=calls or (),
                   is_error=None if is_error is None else bool(is_error))


@pytest.mark.parametrize("seed", range(30))
def test_a_value_gives_back_the_outlines_and_counts_of_the_rows_it_was_made_from(seed):
    rng = random.Random(seed)
    rows = [random_row(rng, k) for k in range(rng.choice([0, 1, 7, 300]))]
    value = structure.encode(rows, skip=1)
    outlines, counts = structure.decode(value)
    expected = [old_outline(r) for r in rows]
    assert isinstance(outlines, Grouped) and list(outlines) == expected and outlines.codes == codes(expected)
    assert [repr(o.is_error) for o in outlines] == [repr(e.is_error) for e in expected]  # None, True, False: not 0/1
    assert [o.to_openai() for o in outlines] == [e.to_openai() for e in expected]
    assert counts == tuple(r[-1] for r in rows) and structure.size(value) == len(rows)
    encoder = structure.Encoder()
    for k in range(0, len(rows), 50):  # added batch by batch, as a session's rows are read
        encoder.add(rows[k:k + 50], skip=1)
    assert encoder.value() == value


def test_a_value_of_another_format_or_damaged_is_refused_by_name():
    value = structure.encode([(0, "user", "", "", "[]", None, 1, 3)], skip=1)
    assert structure.readable(value) and structure.readable(memoryview(value))
    for bad in (b"", b"junk", b"MVS\x00" + value[4:], value[:-3]):
        if structure.readable(bad):
            with pytest.raises(structure.StructureError, match="damaged"):
                structure.decode(bad)
        else:
            with pytest.raises(structure.StructureError, match="not a message structure"):
                structure.decode(bad)


def stored(session: models.Session) -> models.SessionStructure | None:
    return models.SessionStructure.objects.filter(session=session).first()


def test_the_first_trim_keeps_the_structure_and_the_next_reads_it_instead_of_the_rows(make_session,
                                                                                      django_assert_num_queries):
    session = make_session(chat(6))
    first, first_counts = store_outlines.session_stored_messages(session)
    kept = stored(session)
    assert kept is not None and (kept.content_version, kept.token_counter, kept.message_count) == (
        session.content_version, session.token_counter, session.message_count)
    with django_assert_num_queries(1):  # the structure, no message row
        again, counts = store_outlines.session_stored_messages(session)
    assert list(again.outlines) == list(first.outlines) and counts == first_counts


def test_a_structure_is_read_again_from_the_rows_once_the_session_changed(make_session, alice):
    session = make_session(chat(3))
    store_outlines.session_stored_messages(session)
    # Appended (live capture, the write API): the row writer bumps the version.
    ingest.session_append(session=session, messages=parse_messages([{"role": "user", "content": "And now?"}]))
    writing.session_finish(session=session, message_count=session.message_count, token_counts_sum=0,
                           has_errors=False, violations=[])
    outlines, counts = store_outlines.session_stored_messages(session)
    assert len(outlines) == session.message_count and outlines[-1].role == "user"
    assert stored(session).message_count == session.message_count
    # Counted again with another counter: the counts are the new ones.
    recount.session_recount(session=session, counter="o200k", user=alice)
    session.refresh_from_db()
    _, counts = store_outlines.session_stored_messages(session)
    assert list(counts) == list(session.messages.order_by("seq").values_list("token_count", flat=True))
    assert stored(session).token_counter == "o200k"


def test_a_structure_of_another_format_is_replaced_and_one_that_cannot_be_kept_is_not_an_error(make_session,
                                                                                               monkeypatch):
    session = make_session(chat(3))
    models.SessionStructure.objects.create(session=session, content_version=session.content_version,
                                           token_counter=session.token_counter,
                                           message_count=session.message_count, value=b"MVS\x63old")
    outlines, _ = store_outlines.session_stored_messages(session)
    assert len(outlines) == session.message_count and structure.readable(stored(session).value)
    models.SessionStructure.objects.all().delete()

    def busy(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(models.SessionStructure.objects, "bulk_create", busy)
    outlines, _ = store_outlines.session_stored_messages(session)
    assert len(outlines) == session.message_count and stored(session) is None
    session.delete()
    assert not models.SessionStructure.objects.exists()


def test_the_report_reads_kept_structures_and_keeps_the_others(make_session):
    sessions = [make_session(chat(2)), make_session(chat(4)), make_session(chat(3))]
    store_outlines.session_stored_messages(sessions[1])
    models.Message.objects.filter(session=sessions[2], seq=0).update(role="developer")  # not through the writer...
    writing.session_changed(sessions[2])  # ...and said so, as every writer does
    read = {s.pk: (list(m.outlines), list(c)) for s, m, c in store_outlines.sessions_stored_messages(sessions)}
    assert models.SessionStructure.objects.count() == 3
    for session in sessions:
        rows = [(0, *r) for r in session.messages.order_by("seq").values_list(*store_outlines.OUTLINE_FIELDS)]
        assert read[session.pk] == (list(structure.outlines(rows, skip=1)[0]), [r[-1] for r in rows])
    assert read[sessions[2].pk][0][0].role == "developer"


def test_the_lab_and_the_trim_api_trim_with_the_cyclic_collector_paused(alice_client, make_session, monkeypatch):
    session = make_session(chat(3))
    seen = []
    real = lab_trimming.session_trim

    def recording(**kwargs):
        seen.append(gc.isenabled())
        return real(**kwargs)

    monkeypatch.setattr(lab_trimming, "session_trim", recording)
    assert alice_client.get(f"/sessions/{session.pk}/lab/", {"strategy": "buffered"}).status_code == 200
    assert alice_client.get(f"/api/sessions/{session.pk}/trim/?strategy=buffered").status_code == 200
    assert seen and not any(seen) and gc.isenabled()


def test_an_import_keeps_the_structures_of_the_sessions_it_wrote(tmp_path, project, django_assert_num_queries):
    from agents.transfer import imports

    def native(sessions: list[dict]) -> dict:
        return {"format": "memoryviz", "version": 1, "sessions": sessions}

    def conversation(k: int, upto: int = 2) -> dict:
        said = [{"role": "user", "content": f"Question {k}?"}, {"role": "assistant", "content": "Yes."},
                {"role": "user", "content": "And?"}]
        messages = [dict(m, external_id=f"m{i}") for i, m in enumerate(said)]
        return {"external_id": f"conv-{k}", "messages": messages[:upto]}

    path = tmp_path / "three.json"
    path.write_text(json.dumps(native([conversation(k) for k in range(3)])))
    report = imports.import_file(path, project=project, agent="Bot")
    sessions = list(models.Session.objects.filter(pk__in=[o.session_id for o in report.sessions]).order_by("pk"))
    assert len(sessions) == 3
    for session in sessions:
        kept = stored(session)
        assert (kept.content_version, kept.token_counter, kept.message_count) == (
            session.content_version, session.token_counter, session.message_count)
        with django_assert_num_queries(1):  # the structure, no message row
            outlines, counts = store_outlines.session_structure(session)
        assert [o.role for o in outlines] == ["user", "assistant"]
        assert list(counts) == list(session.messages.order_by("seq").values_list("token_count", flat=True))
    # Appended by a second import: the session's structure is written again, at its new version.
    more = tmp_path / "more.json"
    more.write_text(json.dumps(native([conversation(0, upto=3)])))
    assert imports.import_file(more, project=project, agent="Bot").sessions[0].status == "updated"
    sessions[0].refresh_from_db()
    assert sessions[0].message_count == 3 and stored(sessions[0]).message_count == 3
    assert stored(sessions[0]).content_version == sessions[0].content_version
    assert [o.role for o in store_outlines.session_structure(sessions[0])[0]] == ["user", "assistant", "user"]


def outline_reads(ctx) -> list[str]:
    """The message rows' SELECTs of the outline fields that ran in ``ctx`` (no text column)."""
    return [q["sql"] for q in ctx.captured_queries
            if q["sql"].startswith("SELECT") and 'FROM "agents_message"' in q["sql"] and '"has_content"' in q["sql"]]


def whole(session: models.Session) -> tuple[list, list]:
    rows = [(0, *r) for r in session.messages.order_by("seq").values_list(*store_outlines.OUTLINE_FIELDS)]
    outlines, counts = structure.outlines(rows, skip=1)
    return list(outlines), list(counts)


def test_a_structure_is_extended_with_the_messages_appended_since_and_read_whole_after_a_rewrite(make_session):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = make_session(chat(3))
    store_outlines.session_stored_messages(session)
    before = session.message_count

    def append(text: str) -> None:
        ingest.session_append(session=session, messages=parse_messages([{"role": "user", "content": text}]))
        writing.session_finish(session=session, message_count=session.message_count, token_counts_sum=0,
                               has_errors=False, violations=[])

    append("And now?")  # live capture appends: the row writer says so
    with CaptureQueriesContext(connection) as ctx:
        outlines, counts = store_outlines.session_structure(session)
    (read,) = outline_reads(ctx)
    assert f'"seq" > {before - 1}' in read  # only the appended rows
    assert (list(outlines), list(counts)) == whole(session)
    assert stored(session).message_count == session.message_count == before + 1

    # A rewrite (live capture rolling a session back, an edit in the admin): read whole, then appended again.
    models.Message.objects.filter(session=session, seq=1).update(role="developer")
    writing.session_changed(session)
    session.refresh_from_db()
    assert session.rewritten_version == session.content_version
    append("Again?")
    with CaptureQueriesContext(connection) as ctx:
        outlines, counts = store_outlines.session_structure(session)
    (read,) = outline_reads(ctx)
    assert '"seq" >' not in read  # every row
    assert (list(outlines), list(counts)) == whole(session) and outlines[1].role == "developer"


def test_sessions_stored_before_count_as_rewritten_at_their_current_version(make_session):
    from importlib import import_module

    from django.apps import apps

    session = make_session(chat(2))
    models.Session.objects.filter(pk=session.pk).update(content_version=7, rewritten_version=0)
    import_module("agents.migrations.0018_session_rewritten_version").since_now(apps, None)
    session.refresh_from_db()
    assert session.rewritten_version == session.content_version == 7


def test_a_damaged_structure_is_read_again_from_the_rows_by_the_lab_and_the_report(alice_client, make_session, agent):
    sessions = [make_session(chat(3)), make_session(chat(2))]
    for session in sessions:
        good = structure.encode([(0, *r) for r in session.messages.order_by("seq")
                                 .values_list(*store_outlines.OUTLINE_FIELDS)], skip=1)
        models.SessionStructure.objects.update_or_create(session=session, defaults={
            "content_version": session.content_version, "token_counter": session.token_counter,
            "message_count": session.message_count, "value": good[:-5]})  # its header intact, its body cut
        assert structure.readable(good[:-5])
    response = alice_client.get(f"/sessions/{sessions[0].pk}/lab/", {"strategy": "buffered"})
    assert response.status_code == 200 and response.context["preview"].total == sessions[0].message_count
    report = alice_client.get("/lab/report/", {"s": ["buffered"], "agent": agent.pk})
    assert report.status_code == 200 and report.content.decode().count('class="report-row"') == 2
    for session in sessions:
        assert list(structure.decode(stored(session).value)[1]) == whole(session)[1]  # replaced by a whole one
