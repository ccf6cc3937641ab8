"""Project API keys: the command, the settings page, and Bearer authentication on every /api/ endpoint."""
from __future__ import annotations

import hashlib
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from agents import access, models
from agents.models import Membership
from agents.projects import keys


def test_the_command_prints_the_key_alone_on_the_last_line_and_stores_only_its_hash(project):
    out = io.StringIO()
    call_command("api_key", "create", "--project", "alpha", "--name", "travel-agent in production", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert key.startswith("mvz_") and " " not in key
    stored = models.ApiKey.objects.get()
    assert stored.name == "travel-agent in production" and stored.project == project
    assert stored.hashed_secret == hashlib.sha256(key.encode()).hexdigest()
    assert key not in str(models.ApiKey.objects.values_list())
    assert keys.api_key_authenticate(key=key) == stored


def test_the_command_lists_and_revokes_keys_and_says_what_is_wrong(project, capsys):
    created = keys.api_key_create(project=project, name="ci")
    out = io.StringIO()
    call_command("api_key", "list", "--project", "alpha", stdout=out)
    assert f'"prefix": "{created.api_key.prefix}"' in out.getvalue() and created.key not in out.getvalue()
    call_command("api_key", "revoke", created.api_key.prefix, stdout=io.StringIO())
    with pytest.raises(keys.ApiKeyError, match="was revoked"):
        keys.api_key_authenticate(key=created.key)
    with pytest.raises(SystemExit) as exit_:
        call_command("api_key", "create", "--project", "nope", "--name", "x")
    assert exit_.value.code == 2
    assert "api_key: --project: no project with slug 'nope'" in capsys.readouterr().err


def test_it_refuses_keys_that_are_not_its_own(project):
    created = keys.api_key_create(project=project, name="ci")
    for wrong in ("", "Bearer", "mvz_", f"mvz_{created.api_key.prefix}_wrong", "sk-something-else", created.key + "x"):
        with pytest.raises(keys.ApiKeyError):
            keys.api_key_authenticate(key=wrong)


def test_it_touches_last_used_at_at_most_once_a_minute(project, django_assert_num_queries):
    created = keys.api_key_create(project=project, name="ci")
    keys.api_key_authenticate(key=created.key)
    first = models.ApiKey.objects.get().last_used_at
    assert first is not None
    with django_assert_num_queries(1):  # the lookup only, no write
        keys.api_key_authenticate(key=created.key)
    assert models.ApiKey.objects.get().last_used_at == first


# --- the API with a key ---------------------------------------------------------------------------------------


@pytest.fixture
def key(project) -> str:
    return keys.api_key_create(project=project, name="script").key


def test_a_key_reads_its_project_through_the_api_and_nothing_else(client, make_session, other_agent, key):
    mine = make_session([{"role": "user", "content": "Hi"}])
    theirs = make_session([{"role": "user", "content": "Secret"}], agent=other_agent)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    listing = client.get("/api/sessions/", **auth)
    assert listing.status_code == 200
    assert [s["id"] for s in listing.json()["results"]] == [mine.pk]
    assert client.get(f"/api/sessions/{mine.pk}/messages/", **auth).status_code == 200
    assert client.get(f"/api/sessions/{theirs.pk}/", **auth).status_code == 404


def test_a_revoked_or_unknown_key_gets_401_with_the_reason(client, project, key):
    keys.api_key_revoke(api_key=models.ApiKey.objects.get())
    response = client.get("/api/sessions/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 401
    assert "was revoked" in response.json()["error"]
    response = client.get("/api/sessions/", HTTP_AUTHORIZATION="Bearer mvz_000000000000_nothing")
    assert response.status_code == 401 and response.json() == {"error": "unknown API key"}


def test_a_key_acts_as_an_editor_of_its_one_project(project, other_project, key):
    user = access.KeyUser(keys.api_key_authenticate(key=key))
    assert list(access.editable_projects(user)) == [project]
    assert list(access.projects_with_role(user, access.ADMIN_ROLES)) == []
    assert list(access.user_projects(user)) == [project]


# --- the settings page --------------------------------------------------------------------------------------------


def test_an_admin_creates_a_key_and_sees_it_once(alice_client, project):
    response = alice_client.post("/projects/alpha/api-keys/", {"name": "travel-agent"})
    assert response.status_code == 200
    key = models.ApiKey.objects.get()
    shown = response.content.decode()
    assert f"mvz_{key.prefix}_" in shown and "It is shown this once" in shown
    page = alice_client.get("/projects/alpha/settings/").content.decode()
    assert "travel-agent" in page and f"mvz_{key.prefix}_…" in page
    assert "It is shown this once" not in page


def test_creating_a_key_without_a_name_says_so(alice_client, project):
    response = alice_client.post("/projects/alpha/api-keys/", {"name": "  "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200  # htmx swaps no 4xx answer: the error would never show
    assert "a key needs a name" in response.content.decode()
    assert '<section id="api-keys"' in response.content.decode() and "<html" not in response.content.decode()
    assert models.ApiKey.objects.count() == 0


def test_an_admin_revokes_a_key_with_or_without_htmx(alice_client, project):
    first = keys.api_key_create(project=project, name="one").api_key
    second = keys.api_key_create(project=project, name="two").api_key
    response = alice_client.post(f"/projects/alpha/api-keys/{first.prefix}/revoke/")
    assert response.status_code == 302 and response["Location"] == "/projects/alpha/settings/"
    fragment = alice_client.post(f"/projects/alpha/api-keys/{second.prefix}/revoke/", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "<html" not in fragment.content.decode()
    assert all(k.revoked_at for k in models.ApiKey.objects.all())


@pytest.mark.parametrize("role", [Membership.Level.VIEWER, Membership.Level.EDITOR])
def test_only_a_project_admin_sees_or_manages_its_keys(client, project, role):
    carol = User.objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=carol, role=role)
    client.force_login(carol)
    api_key = keys.api_key_create(project=project, name="ci").api_key
    assert client.get("/projects/alpha/settings/").status_code == 404
    assert client.post("/projects/alpha/api-keys/", {"name": "mine"}).status_code == 404
    assert client.post(f"/projects/alpha/api-keys/{api_key.prefix}/revoke/").status_code == 404
    assert models.ApiKey.objects.count() == 1 and models.ApiKey.objects.get().revoked_at is None


def test_a_key_of_another_project_cannot_be_revoked_from_this_one(alice_client, project, other_project):
    theirs = keys.api_key_create(project=other_project, name="beta").api_key
    assert alice_client.post(f"/projects/alpha/api-keys/{theirs.prefix}/revoke/").status_code == 404
    assert models.ApiKey.objects.get().revoked_at is None
