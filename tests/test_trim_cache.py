"""What a trim computed is kept per session version, counter, strategy and parameters (lab_trimming.session_trim), and
a change of the session's messages (the row writer, a recount, live capture's rewrite) makes it be computed again."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.lab import trimming as lab_trimming
from agents.memory.schema import parse_messages
from agents.memory.trimming import spec_from_text
from agents.store import recount, writing
from tests.conversations import chat


@pytest.fixture
def runs(monkeypatch) -> list[str]:
    """The strategies ``lab.trimming`` runs, by name."""
    ran: list[str] = []
    real = lab_trimming.trim

    def counted(messages: Any, spec: Any, **kwargs: Any) -> Any:
        ran.append(spec.strategy.name)
        return real(messages, spec, **kwargs)

    monkeypatch.setattr(lab_trimming, "trim", counted)
    return ran


def preview(client: Any, session: models.Session, **params: str) -> str:
    response = client.get(f"/sessions/{session.pk}/lab/", {"strategy": "buffered", **params})
    assert response.status_code == 200
    return response.content.decode()


def trim_api(client: Any, session: models.Session, query: str) -> dict[str, Any]:
    response = client.get(f"/api/sessions/{session.pk}/trim/?{query}")
    assert response.status_code == 200
    return response.json()


def test_it_trims_again_from_what_it_computed(alice_client, make_session, runs):
    session = make_session(chat(20))
    first = trim_api(alice_client, session, "strategy=buffered&buffer_size=5&messages=1")
    with CaptureQueriesContext(connection) as ctx:
        again = trim_api(alice_client, session, "strategy=buffered&buffer_size=5&messages=1")
    assert runs == ["buffered"]
    assert again == first and first["kept"] == [0, *range(76, 81)]
    outline_reads = [q["sql"] for q in ctx.captured_queries
                     if 'FROM "agents_message"' in q["sql"] and '"has_content"' in q["sql"]]
    assert outline_reads == []  # nor the outlines: only the texts it answers with


def test_it_keeps_a_result_per_strategy_parameters_and_counter(alice_client, make_session, runs):
    session = make_session(chat(6))
    specs = {"s": ["buffered:buffer_size=5"]}
    alice_client.get(f"/sessions/{session.pk}/lab/compare/", specs)
    trim_api(alice_client, session, "strategy=buffered&buffer_size=4")
    trim_api(alice_client, session, "strategy=buffered&buffer_size=5")
    assert runs == ["buffered", "buffered"]  # compare's and the API's are one
    trim_api(alice_client, session, "strategy=buffered&buffer_size=5&counter=o200k")
    trim_api(alice_client, session, "strategy=buffered&buffer_size=5&counter=o200k")
    assert runs == ["buffered", "buffered", "buffered"]  # o200k once


def test_it_computes_again_when_messages_are_added(alice_client, make_session, runs):
    session = make_session(chat(3))
    url = f"/api/sessions/{session.pk}/trim/?strategy=buffered&buffer_size=2&messages=1"
    before = alice_client.get(url).json()
    version = models.Session.objects.get(pk=session.pk).content_version
    writing.messages_append(session=session, messages=parse_messages([{"role": "user", "content": "And Oslo?"}]),
                            start_seq=session.message_count)
    assert models.Session.objects.get(pk=session.pk).content_version == version + 1
    after = alice_client.get(url).json()
    assert runs == ["buffered", "buffered"]
    assert after["messages"][-1]["content"] == "And Oslo?" != before["messages"][-1]["content"]


def test_it_computes_again_after_a_recount(alice_client, alice, make_session, runs):
    session = make_session(chat(3))
    url = f"/api/sessions/{session.pk}/trim/?strategy=token_limited&token_limit=60"
    before = alice_client.get(url).json()
    recount.session_recount(session=session, counter="messages", user=alice)
    after = alice_client.get(url).json()
    assert runs == ["token_limited", "token_limited"]
    assert after["counter"] == "messages" != before["counter"]


def test_it_gives_the_same_answers_from_the_cache(alice_client, make_session):
    session = make_session(chat(30))
    for query in ("strategy=langchain_last&max_tokens=200&detail=full", "strategy=buffered&buffer_size=7&messages=1",
                  "strategy=llamaindex_buffer&token_limit=150&messages=1"):
        url = f"/api/sessions/{session.pk}/trim/?{query}"
        assert alice_client.get(url).json() == alice_client.get(url).json()


def test_it_keys_a_session_by_its_import_too(make_session):
    """A session id that comes back after a rolled-back import does not find the old session's results."""
    spec = spec_from_text("buffered:buffer_size=2")
    one = make_session(chat(2))
    key = lab_trimming._trim_key(one, spec, one.token_counter)
    other = models.Session(pk=one.pk, agent=one.agent, content_version=one.content_version,
                           token_counter=one.token_counter, imported_at=one.imported_at.replace(year=2020))
    assert lab_trimming._trim_key(other, spec, one.token_counter) != key
