"""What filled the window (agents/ledger/context.py): each reply's input by part, adding up to what was sent, on
files the libraries wrote; and the same number of queries for a reply deep in a long session."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.ledger.context import PARTS, ContextRequestError, reply_context
from agents.memory.formats.letta_af import rendered_blocks
from agents.memory.schema import Message
from agents.memory.tokens import get_counter
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES


def parts(composition) -> dict[str, tuple[int, list[list[int]]]]:
    return {p.part: (p.tokens, p.ranges) for p in composition.parts if p.tokens or p.ranges}


@pytest.fixture
def friday(db, alice, tmp_path: Path) -> models.Session:
    for turn in (1, 2):
        folder = tmp_path / f"turn{turn}"
        folder.mkdir()
        path = shutil.copy(MEMORY_SAMPLES / "agentscope" / f"session_user_1_turn{turn}.json",
                           folder / "user_1_trip.json")
        imports.import_file(path, project="mem")
    session = models.Session.objects.get(external_id="user_1_trip")
    models.Membership.objects.create(project=session.agent.project, user=alice, role="viewer")
    return session


def test_each_reply_s_parts_add_up_to_what_it_was_sent(friday, alice) -> None:
    counts = dict(friday.messages.values_list("seq", "token_count"))
    per_list = get_counter(friday.token_counter).per_list
    for seq in friday.messages.filter(role="assistant").values_list("seq", flat=True):
        composition = reply_context(user=alice, session_id=friday.pk, seq=seq)
        assert [p.part for p in composition.parts] == list(PARTS)
        assert composition.total == sum(counts[s] for s in range(seq)) + per_list
        assert sum(p.tokens for p in composition.parts) == composition.total
        covered = sorted(s for p in composition.parts for s in p.seqs)
        assert covered == list(range(seq)), "every message sent is in exactly one part"


def test_it_shows_the_recalled_memory_and_the_knowledge_sent_again(friday, alice) -> None:
    counts = dict(friday.messages.values_list("seq", "token_count"))
    # The reply at #9 (turn 2) was sent the system prompt, turn 1's <retrieved_knowledge> (#2) and turn 2's (#8),
    # its <long_term_memory> (#7), and turn 2's question (#6) as what the call adds.
    found = parts(reply_context(user=alice, session_id=friday.pk, seq=9))
    assert found["system"] == (counts[0], [[0, 0]])
    assert found["retrieved_documents"] == (counts[2] + counts[8], [[2, 2], [8, 8]])
    assert found["recalled_memory"] == (counts[7], [[7, 7]])
    assert found["input"][1] == [[6, 6]]
    assert found["history"][1] == [[1, 1], [3, 5]]


def test_it_refuses_a_message_that_is_not_a_reply_and_another_project_s_session(friday, alice, bob) -> None:
    with pytest.raises(ContextRequestError, match="seq: message #4 is a tool message"):
        reply_context(user=alice, session_id=friday.pk, seq=4)
    with pytest.raises(ContextRequestError, match="seq: no message #99"):
        reply_context(user=alice, session_id=friday.pk, seq=99)
    with pytest.raises(Http404):
        reply_context(user=bob, session_id=friday.pk, seq=9)


def test_it_counts_letta_s_core_memory_blocks_apart_from_the_system_prompt(db, alice) -> None:
    imports.import_file(MEMORY_SAMPLES / "letta" / "memgpt_agent_with_convo.v1.af", project="mem")
    session = models.Session.objects.get(source_format="letta_af")
    models.Membership.objects.create(project=session.agent.project, user=alice, role="viewer")
    reply = session.messages.filter(role="assistant").order_by("seq").values_list("seq", flat=True).first()
    found = parts(reply_context(user=alice, session_id=session.pk, seq=reply))
    system_text = session.messages.get(seq=0).content
    counter = get_counter(session.token_counter)
    empty = counter.count(Message(role="system", content=""))
    # The persona and human blocks as rendered, counted as their text is.
    values = rendered_blocks(system_text).values()
    blocks = sum(counter.count(Message(role="system", content=v)) - empty for v in values)
    assert found["memory_blocks"] == (blocks, [[0, 0]]) and blocks > 300
    assert found["system"][0] == session.messages.get(seq=0).token_count - blocks


def test_a_reply_deep_in_a_long_session_costs_the_queries_of_a_short_one(db, alice, make_session) -> None:
    def chain(turns: int) -> list[dict]:
        out = [{"role": "system", "content": "Be brief."}]
        for i in range(turns):
            out += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
        return out

    short, long = make_session(chain(3)), make_session(chain(2000))
    for session in (short, long):
        models.Recall.objects.create(session=session, seq=1, query="q0")
    queries = []
    for session in (short, long):
        last = session.message_count - 1
        with CaptureQueriesContext(connection) as captured:
            composition = reply_context(user=alice, session_id=session.pk, seq=last)
        queries.append(len(captured))
        assert sum(p.tokens for p in composition.parts) == composition.total
    assert queries[0] == queries[1]


def test_the_api_answers_the_same_parts(friday, alice, client) -> None:
    client.force_login(alice)
    answer = client.get(f"/api/sessions/{friday.pk}/context/?seq=9")
    assert answer.status_code == 200
    body = answer.json()
    expected = reply_context(user=alice, session_id=friday.pk, seq=9).to_dict()
    assert body == expected | {"parts": [p | ({} if "seqs" in p else {"seqs": None}) for p in expected["parts"]]}
    assert (body["seq"], body["window"], sum(p["tokens"] for p in body["parts"])) == (9, 128_000, body["total"])
    assert client.get(f"/api/sessions/{friday.pk}/context/?seq=4").json() == {
        "error": "seq: message #4 is a tool message; a reply is an assistant message"}
    assert client.get(f"/api/sessions/{friday.pk}/context/?seq=x").status_code == 400
    assert "session_context" in client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()


def test_the_api_hides_another_project_s_session(friday, bob, client) -> None:
    client.force_login(bob)
    assert client.get(f"/api/sessions/{friday.pk}/context/?seq=9").status_code == 404
