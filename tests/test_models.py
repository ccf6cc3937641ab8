from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from agents.models import Agent, Membership, Message, Session, ToolCall


@pytest.fixture
def session(agent) -> Session:
    return Session.objects.create(agent=agent, external_id="s-1", title="First")


def test_it_explains_a_tool_message_without_tool_call_id(session):
    message = Message(session=session, seq=0, role="tool", content="42")
    with pytest.raises(ValidationError) as err:
        message.full_clean()
    assert "A tool message must name the tool_call_id it answers." in str(err.value)


def test_it_explains_an_unknown_role(session):
    message = Message(session=session, seq=0, role="robot", content="hi")
    with pytest.raises(ValidationError) as err:
        message.full_clean()
    assert "role" in err.value.message_dict
    assert "robot" in " ".join(err.value.message_dict["role"])


def test_it_explains_a_duplicate_seq(session):
    Message.objects.create(session=session, seq=0, role="user", content="hi")
    with pytest.raises(ValidationError) as err:
        Message(session=session, seq=0, role="assistant", content="hello").full_clean()
    assert "This session already has a message at this seq." in str(err.value)


def test_it_accepts_a_valid_message(session):
    Message(session=session, seq=0, role="tool", tool_call_id="call_1", content="42").full_clean()


def test_it_refuses_a_duplicate_seq_in_the_database(session):
    Message.objects.create(session=session, seq=3, role="user", content="a")
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, seq=3, role="user", content="b")


def test_it_allows_the_same_seq_in_two_sessions(agent, session):
    other = Session.objects.create(agent=agent, external_id="s-2")
    Message.objects.create(session=session, seq=0, role="user", content="a")
    Message.objects.create(session=other, seq=0, role="user", content="a")
    assert Message.objects.filter(seq=0).count() == 2


def test_it_refuses_an_unknown_role_in_the_database(session):
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, seq=0, role="robot", content="x")


def test_it_refuses_a_tool_message_without_call_id_in_the_database(session):
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, seq=0, role="tool", content="x")


def test_it_refuses_two_sessions_with_one_external_id_for_an_agent(agent, session):
    with pytest.raises(IntegrityError), transaction.atomic():
        Session.objects.create(agent=agent, external_id="s-1")


def test_it_allows_one_external_id_for_two_agents(project, agent, session):
    other_agent = Agent.objects.create(project=project, name="Other", slug="other")
    Session.objects.create(agent=other_agent, external_id="s-1")
    assert Session.objects.filter(external_id="s-1").count() == 2


def test_it_refuses_a_duplicate_message_external_id_in_a_session(session):
    Message.objects.create(session=session, seq=0, role="user", content="a", external_id="m-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, seq=1, role="user", content="b", external_id="m-1")


def test_it_allows_many_messages_without_external_id(session):
    Message.objects.create(session=session, seq=0, role="user", content="a")
    Message.objects.create(session=session, seq=1, role="user", content="b")
    assert session.messages.filter(external_id="").count() == 2


def test_it_explains_a_duplicate_message_external_id(session):
    Message.objects.create(session=session, seq=0, role="user", content="a", external_id="m-1")
    with pytest.raises(ValidationError) as err:
        Message(session=session, seq=1, role="user", content="b", external_id="m-1").full_clean()
    assert "already has a message with this external id" in str(err.value)


def test_it_refuses_an_unknown_membership_role(project, alice):
    Membership.objects.filter(project=project, user=alice).delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(project=project, user=alice, role="owner")


def test_it_deletes_messages_and_tool_calls_with_their_session(session):
    message = Message.objects.create(session=session, seq=0, role="assistant", tool_calls=[])
    ToolCall.objects.create(session=session, message=message, call_id="c1", name="search")
    session.delete()
    assert not Message.objects.exists()
    assert not ToolCall.objects.exists()


def test_it_keeps_no_content_apart_from_empty_content(session):
    Message.objects.create(session=session, seq=0, role="assistant", content=None)
    Message.objects.create(session=session, seq=1, role="assistant", content="")
    assert list(session.messages.order_by("seq").values_list("content", flat=True)) == [None, ""]


def test_it_links_a_session_to_its_page(session):
    assert session.get_absolute_url() == f"/sessions/{session.pk}/"


def test_it_registers_every_model_in_the_admin(client, db, session):
    from django.contrib.auth.models import User

    Message.objects.create(session=session, seq=0, role="user", content="hello")
    admin = User.objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    for model in ("project", "membership", "agent", "session", "message", "toolcall"):
        response = client.get(f"/admin/agents/{model}/", {"q": "s"})
        assert response.status_code == 200, model
    assert client.get(f"/admin/agents/session/{session.pk}/change/").status_code == 200
