"""The admin keeps the pages' rule: a staff user who is not a superuser sees only their projects' rows, writes only
where their role allows, manages memberships only as a project's admin and never their own, and cannot grant
themselves rights. Forged ids in posted forms are refused like unknown ones."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType

from agents.models import Agent, Membership, Message, Project, Session

CHAT = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]


def _grant(user: User, *codenames: str, app_label: str = "agents") -> None:
    """Make ``user`` staff with the given model permissions (``view_``, ``add_session``...: prefixes match)."""
    user.is_staff = True
    user.save()
    perms = Permission.objects.none()
    for codename in codenames:
        perms |= Permission.objects.filter(content_type__app_label=app_label, codename__startswith=codename)
    user.user_permissions.add(*perms)


@pytest.fixture
def staff_client(client, alice):
    _grant(alice, "view_")
    client.force_login(alice)
    return client


@pytest.fixture
def gamma(alice) -> Project:
    """A project where alice only views."""
    proj = Project.objects.create(name="Gamma", slug="gamma")
    Membership.objects.create(project=proj, user=alice, role=Membership.Level.VIEWER)
    return proj


@pytest.fixture
def gamma_agent(gamma) -> Agent:
    return Agent.objects.create(project=gamma, name="Gamma bot", slug="gamma-bot")


@pytest.fixture
def writer(client, alice):
    """alice (admin of Alpha, viewer of Gamma where the test adds it) as staff with every agents permission."""
    _grant(alice, "view_", "add_", "change_", "delete_")
    client.force_login(alice)
    return client


def _agent_form(project: Project, **fields) -> dict:
    return {"project": project.pk, "name": "New bot", "slug": "new-bot", "description": "", "model": "",
            "context_window": "128000", **fields}


def _session_form(session: Session, agent: Agent, assignee: str = "") -> dict:
    return {"agent": agent.pk, "external_id": session.external_id, "title": session.title, "source_format": "",
            "started_at_0": "", "started_at_1": "", "metadata": "{}", "tools": "null",
            "review_status": session.review_status, "assignee": assignee}


def _project_form(project: Project, memberships: list[dict]) -> dict:
    data = {"name": project.name, "slug": project.slug, "memberships-TOTAL_FORMS": str(len(memberships)),
            "memberships-INITIAL_FORMS": str(sum(1 for m in memberships if m.get("id"))),
            "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000"}
    for i, row in enumerate(memberships):
        for key, value in row.items():
            data[f"memberships-{i}-{key}"] = value
        data[f"memberships-{i}-project"] = project.pk
    return data


# --- reading ---------------------------------------------------------------------------------------------------


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


# --- memberships ---------------------------------------------------------------------------------------------


def test_it_refuses_a_staff_user_a_membership_in_another_project(writer, alice, other_project, project):
    response = writer.post("/admin/agents/membership/add/",
                           {"project": other_project.pk, "user": alice.pk, "role": "admin"})
    assert response.status_code == 200  # the form again, with its error
    assert "Select a valid choice" in response.content.decode()
    assert not Membership.objects.filter(project=other_project, user=alice).exists()


def test_it_lets_a_project_admin_add_someone_else_to_their_project(writer, bob, project):
    response = writer.post("/admin/agents/membership/add/", {"project": project.pk, "user": bob.pk, "role": "editor"})
    assert response.status_code == 302
    assert Membership.objects.get(project=project, user=bob).role == "editor"


def test_it_refuses_raising_ones_own_role(writer, alice, gamma, project):
    own = Membership.objects.get(project=gamma, user=alice)
    response = writer.post(f"/admin/agents/membership/{own.pk}/change/",
                           {"project": gamma.pk, "user": alice.pk, "role": "admin"})
    assert response.status_code == 403  # a viewer of Gamma changes nothing of Gamma's
    own.refresh_from_db()
    assert own.role == "viewer"


def test_it_refuses_a_project_admin_changing_their_own_membership(writer, alice, project):
    own = Membership.objects.get(project=project, user=alice)
    response = writer.post(f"/admin/agents/membership/{own.pk}/change/",
                           {"project": project.pk, "user": alice.pk, "role": "viewer"})
    assert response.status_code == 403
    assert Membership.objects.get(pk=own.pk).role == "admin"


def test_it_refuses_a_project_admin_adding_themselves_to_another_of_their_projects(writer, alice, bob, project):
    # Alice administers two projects; in the second one bob is a viewer. She moves bob's row to herself.
    second = Project.objects.create(name="Second", slug="second")
    Membership.objects.create(project=second, user=alice, role="admin")
    bobs = Membership.objects.create(project=project, user=bob, role="viewer")
    Membership.objects.filter(project=project, user=alice).delete()
    Membership.objects.create(project=project, user=alice, role="admin")
    response = writer.post(f"/admin/agents/membership/{bobs.pk}/change/",
                           {"project": second.pk, "user": alice.pk, "role": "admin"})
    assert response.status_code == 200
    assert "your own membership" in response.content.decode()
    bobs.refresh_from_db()
    assert (bobs.project_id, bobs.user_id) == (project.pk, bob.pk)


def test_it_refuses_raising_ones_own_role_through_the_project_page(writer, alice, project):
    own = Membership.objects.get(project=project, user=alice)
    own.role = "editor"
    own.save()
    response = writer.post(f"/admin/agents/project/{project.pk}/change/",
                           _project_form(project, [{"id": own.pk, "user": alice.pk, "role": "admin"}]))
    assert response.status_code == 403  # an editor does not manage the project
    own.refresh_from_db()
    assert own.role == "editor"


def test_it_refuses_a_project_admin_their_own_row_on_the_project_page(writer, alice, bob, project):
    own = Membership.objects.get(project=project, user=alice)
    demote = _project_form(project, [{"id": own.pk, "user": alice.pk, "role": "viewer"}])
    response = writer.post(f"/admin/agents/project/{project.pk}/change/", demote)
    assert response.status_code == 200 and "your own membership" in response.content.decode()
    remove = _project_form(project, [{"id": own.pk, "user": alice.pk, "role": "admin", "DELETE": "on"}])
    response = writer.post(f"/admin/agents/project/{project.pk}/change/", remove)
    assert response.status_code == 200 and "your own membership" in response.content.decode()
    assert Membership.objects.get(pk=own.pk).role == "admin"
    # The same page adds someone else.
    add_bob = _project_form(project, [{"id": own.pk, "user": alice.pk, "role": "admin"},
                                      {"user": bob.pk, "role": "annotator"}])
    assert writer.post(f"/admin/agents/project/{project.pk}/change/", add_bob).status_code == 302
    assert Membership.objects.get(project=project, user=bob).role == "annotator"


def test_it_leaves_creating_projects_to_superusers(writer, alice):
    response = writer.post("/admin/agents/project/add/", _project_form(Project(name="Mine", slug="mine"), []))
    assert response.status_code == 403
    assert not Project.objects.filter(slug="mine").exists()


# --- agents, sessions, messages --------------------------------------------------------------------------------


def test_it_refuses_an_agent_in_a_project_the_user_does_not_edit(writer, other_project, gamma, project):
    for target in (other_project, gamma):
        response = writer.post("/admin/agents/agent/add/", _agent_form(target, slug=f"bot-{target.slug}"))
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
        assert not Agent.objects.filter(project=target).exists()
    assert writer.post("/admin/agents/agent/add/", _agent_form(project)).status_code == 302
    assert Agent.objects.filter(project=project, slug="new-bot").exists()


def test_it_refuses_moving_a_session_to_another_projects_agent(writer, make_session, agent, other_agent):
    session = make_session(CHAT, title="Mine")
    response = writer.post(f"/admin/agents/session/{session.pk}/change/", _session_form(session, other_agent))
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    session.refresh_from_db()
    assert session.agent_id == agent.pk
    renamed = {**_session_form(session, agent), "title": "Renamed"}
    assert writer.post(f"/admin/agents/session/{session.pk}/change/", renamed).status_code == 302
    session.refresh_from_db()
    assert session.title == "Renamed"


def test_it_offers_only_members_of_the_users_projects_as_assignee(writer, make_session, agent, other_project, bob):
    session = make_session(CHAT, title="Mine")
    page = writer.get(f"/admin/agents/session/{session.pk}/change/").content.decode()
    assert f'<option value="{bob.pk}">' not in page  # bob is of another project only
    response = writer.post(f"/admin/agents/session/{session.pk}/change/", _session_form(session, agent, str(bob.pk)))
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    session.refresh_from_db()
    assert session.assignee_id is None


def test_it_refuses_a_message_in_another_projects_session(writer, make_session, other_agent):
    theirs = make_session(CHAT, agent=other_agent)
    mine = make_session(CHAT)
    form = {"session": theirs.pk, "seq": "7", "role": "user", "content": "planted", "name": "", "tool_call_id": "",
            "tool_calls": "[]", "reasoning": "", "external_id": "", "token_count": "0", "token_running": "0",
            "marks": "[]", "extra": "{}", "usage": "null", "content_parts": "null"}
    response = writer.post("/admin/agents/message/add/", form)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Message.objects.filter(content="planted").exists()
    assert writer.post("/admin/agents/message/add/", {**form, "session": mine.pk}).status_code == 302
    assert Message.objects.get(content="planted").session_id == mine.pk
    assert Message.objects.get(content="planted").has_content  # kept in step with the content, as the writer does
    assert Session.objects.get(pk=mine.pk).content_version == mine.content_version + 1  # its trims are computed again


def test_it_refuses_deleting_rows_of_a_project_the_user_only_views(writer, make_session, gamma_agent):
    session = make_session(CHAT, agent=gamma_agent)
    response = writer.post("/admin/agents/session/",
                           {"action": "delete_selected", "_selected_action": [session.pk], "post": "yes"})
    assert response.status_code == 403
    assert Session.objects.filter(pk=session.pk).exists()
    assert writer.post(f"/admin/agents/session/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Session.objects.filter(pk=session.pk).exists()


def test_it_lets_an_editor_delete_their_projects_rows(writer, make_session):
    session = make_session(CHAT)
    response = writer.post("/admin/agents/session/",
                           {"action": "delete_selected", "_selected_action": [session.pk], "post": "yes"})
    assert response.status_code == 302
    assert not Session.objects.filter(pk=session.pk).exists()


def test_it_suggests_only_agents_the_form_accepts(writer, agent, gamma_agent):
    response = writer.get("/admin/autocomplete/",
                          {"app_label": "agents", "model_name": "session", "field_name": "agent", "term": ""})
    assert [r["text"] for r in response.json()["results"]] == ["Travel bot"]


# --- users and groups --------------------------------------------------------------------------------------------


def test_it_refuses_a_staff_user_granting_themselves_superuser(client, alice, bob, project):
    _grant(alice, "view_user", "change_user", app_label="auth")
    client.force_login(alice)
    form = {"username": "alice", "first_name": "", "last_name": "", "email": "", "is_active": "on", "is_staff": "on",
            "is_superuser": "on", "date_joined_0": "2025-01-01", "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2025-01-01", "initial-date_joined_1": "00:00:00"}
    assert client.post(f"/admin/auth/user/{alice.pk}/change/", form).status_code == 302
    alice.refresh_from_db()
    assert not alice.is_superuser
    assert alice.user_permissions.count() == 2
    # Another staff account (which could be a superuser) is not theirs to change, nor its password, even in their
    # own project.
    bob.is_staff = True
    bob.save()
    Membership.objects.create(project=project, user=bob, role="viewer")
    assert client.post(f"/admin/auth/user/{bob.pk}/password/",
                       {"password1": "taken-over-9", "password2": "taken-over-9"}).status_code == 403
    bob.refresh_from_db()
    assert bob.check_password("pw-bob-123")


def _account_manager(client, alice) -> None:
    _grant(alice, "view_user", "change_user", "delete_user", app_label="auth")
    client.force_login(alice)


def test_it_refuses_a_staff_user_the_password_and_account_of_another_projects_member(client, alice, bob, project,
                                                                                  other_project):
    # Resetting the password of Beta's member is logging in as them: into a project alice may not see.
    _account_manager(client, alice)
    assert "bob" not in client.get("/admin/auth/user/").content.decode()
    taken = {"password1": "taken-over-9", "password2": "taken-over-9", "usable_password": "true"}
    assert client.post(f"/admin/auth/user/{bob.pk}/password/", taken).status_code in (403, 404)
    assert client.get(f"/admin/auth/user/{bob.pk}/change/").status_code in (302, 403, 404)
    assert client.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [bob.pk],
                                             "post": "yes"}).status_code in (302, 403)
    bob.refresh_from_db()
    assert bob.check_password("pw-bob-123") and bob.is_active
    # A member of Beta and of alice's own project: Beta is still not hers to open.
    Membership.objects.create(project=project, user=bob, role="viewer")
    assert client.post(f"/admin/auth/user/{bob.pk}/password/", taken).status_code == 403
    bob.refresh_from_db()
    assert bob.check_password("pw-bob-123")


def test_it_lets_a_project_admin_reset_the_password_of_a_member_of_theirs_only(client, alice, project):
    carol = User.objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=carol, role="viewer")
    _account_manager(client, alice)
    response = client.post(f"/admin/auth/user/{carol.pk}/password/",
                           {"password1": "a-fresh-one-77", "password2": "a-fresh-one-77", "usable_password": "true"})
    assert response.status_code == 302
    carol.refresh_from_db()
    assert carol.check_password("a-fresh-one-77")
    # Deleting oneself through the list's action is refused like the delete page refuses it.
    assert client.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [alice.pk],
                                             "post": "yes"}).status_code == 403
    assert User.objects.filter(pk=alice.pk).exists()


def test_it_refuses_moving_an_agent_to_another_project(writer, agent, other_project, gamma):
    for target in (other_project, gamma):
        form = _agent_form(target, name=agent.name, slug=agent.slug)
        response = writer.post(f"/admin/agents/agent/{agent.pk}/change/", form)
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
        agent.refresh_from_db()
        assert agent.project_id != target.pk


def test_it_refuses_a_tool_call_row_in_another_projects_session(writer, make_session, other_agent):
    from agents.models import ToolCall

    theirs = make_session(CHAT, agent=other_agent)
    mine = make_session(CHAT)
    their_message, my_message = (Message.objects.filter(session=s).first() for s in (theirs, mine))
    form = {"call_id": "planted", "name": "x", "arguments": "{}", "position": "0"}
    for session, message in ((theirs, their_message), (mine, their_message), (theirs, my_message)):
        response = writer.post("/admin/agents/toolcall/add/", {**form, "session": session.pk, "message": message.pk})
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not ToolCall.objects.filter(call_id="planted").exists()


# --- "View on site" ------------------------------------------------------------------------------------------------


def test_it_answers_view_on_site_alike_for_another_projects_session_and_a_missing_one(
    staff_client, make_session, other_agent
):
    ct = ContentType.objects.get_for_model(Session).pk
    mine = make_session(CHAT)
    theirs = make_session(CHAT, agent=other_agent)
    missing = Session.objects.order_by("-pk").first().pk + 1000
    assert staff_client.get(f"/admin/r/{ct}/{mine.pk}/")["Location"].endswith(f"/sessions/{mine.pk}/")
    answers = [staff_client.get(f"/admin/r/{ct}/{pk}/") for pk in (theirs.pk, missing)]
    assert [a.status_code for a in answers] == [404, 404]
    # The same page, but for the CSRF token, which is masked afresh on every response.
    bodies = [re.sub(r'(X-CSRFToken": "|csrfmiddlewaretoken" value=")\w+', "", a.content.decode()) for a in answers]
    assert bodies[0] == bodies[1]


def test_it_renders_every_admin_list_and_form(admin_client, writer, make_session):
    session = make_session(CHAT)
    message = Message.objects.filter(session=session).first()
    pages = ["/admin/", "/admin/agents/session/", f"/admin/agents/session/{session.pk}/change/",
             "/admin/agents/agent/add/", "/admin/agents/membership/add/", "/admin/agents/message/",
             f"/admin/agents/message/{message.pk}/change/", f"/admin/agents/project/{session.agent.project_id}/change/",
             "/admin/agents/exportrecord/", "/admin/agents/toolcall/"]
    for client in (admin_client, writer):
        for page in pages:
            assert client.get(page).status_code == 200, page
    for page in ("/admin/auth/user/", "/admin/auth/group/", "/admin/agents/project/add/"):
        assert admin_client.get(page).status_code == 200, page
