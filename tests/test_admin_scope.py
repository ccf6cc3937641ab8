"""The admin keeps the pages' rule: a staff user who is not a superuser sees only their projects' rows."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from agents.models import Message, Session

CHAT = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]


@pytest.fixture
def staff_client(client, alice):
    alice.is_staff = True
    alice.save()
    alice.user_permissions.set(Permission.objects.filter(content_type__app_label="agents", codename__startswith="view_"))
    client.force_login(alice)
    return client


def test_it_shows_a_staff_user_only_their_projects_rows(staff_client, make_session, other_agent):
    mine = make_session(CHAT, title="Mine to see")
    theirs = make_session(CHAT, agent=other_agent, title="Secret of Beta")
    listing = staff_client.get("/admin/agents/session/").content.decode()
    assert "Mine to see" in listing and "Secret of Beta" not in listing
    assert "Beta" not in staff_client.get("/admin/agents/project/").content.decode()
    assert staff_client.get(f"/admin/agents/session/{theirs.pk}/change/").status_code == 302  # "doesn't exist"
    assert staff_client.get(f"/admin/agents/session/{mine.pk}/change/").status_code == 200
    secret_message = Message.objects.filter(session=theirs).first()
    assert staff_client.get(f"/admin/agents/message/{secret_message.pk}/change/").status_code == 302
    assert "Beta" not in staff_client.get("/admin/agents/agent/").content.decode()


def test_it_shows_a_superuser_everything(admin_client, make_session, other_agent):
    make_session(CHAT, agent=other_agent, title="Secret of Beta")
    assert "Secret of Beta" in admin_client.get("/admin/agents/session/").content.decode()
    assert Session.objects.count() == 1
