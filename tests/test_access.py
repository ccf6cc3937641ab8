"""Every page requires a login, and a user only ever sees the projects they belong to."""
from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from agents.models import Membership

SESSION = [
    {"role": "user", "content": "Where is my parcel?"},
    {"role": "assistant", "content": "On its way."},
]
# Pages that must answer an anonymous visitor: the login page itself, logging out, and /favicon.ico (a redirect to
# the static icon, which browsers ask for before anyone logs in).
PUBLIC = {"login", "logout", "agents:favicon"}


def _routes(patterns=None, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str]]:
    """(name, path) of every URL of the site outside the admin, with sample values for its parameters."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue
            yield from _routes(entry.url_patterns, prefix + route, entry.namespace or namespace)
        elif isinstance(entry, URLPattern):
            path = "/" + prefix + re.sub(r"<(?:(\w+):)?\w+>", lambda m: "1" if m.group(1) == "int" else "x", route)
            name = f"{namespace}:{entry.name}" if namespace else (entry.name or path)
            yield name, path.replace("^", "").replace("$", "")


def test_it_lists_the_pages_it_checks():
    names = {name for name, _ in _routes()}
    assert {"agents:session_list", "agents:session_detail"} <= names


@pytest.mark.parametrize("method", ["get", "post"])
def test_it_requires_a_login_on_every_url(client, db, method):
    checked = 0
    for name, path in _routes():
        if name in PUBLIC:
            continue
        response = getattr(client, method)(path)
        assert response.status_code != 200, f"{name} ({path}) answered an anonymous {method.upper()}"
        if response.status_code == 302:
            assert response["Location"].startswith(reverse("login")), f"{name} redirects elsewhere"
        else:
            assert response.status_code in (401, 403, 404, 405), f"{name}: {response.status_code}"
        checked += 1
    assert checked >= 2


def test_it_answers_an_anonymous_favicon_request_with_the_static_icon_only(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("/img/favicon.svg")


def test_it_sends_an_anonymous_visitor_to_the_login_page_and_back(client, db):
    response = client.get(reverse("agents:session_list"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_it_requires_a_login_for_the_htmx_fragment_too(client, db):
    response = client.get(reverse("agents:session_list"), headers={"HX-Request": "true"})
    assert response.status_code == 302


def test_it_logs_in_and_out(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302
    assert client.get(reverse("agents:session_list")).status_code == 200
    assert client.get(reverse("logout")).status_code == 405  # logging out is a POST form
    client.post(reverse("logout"))
    assert client.get(reverse("agents:session_list")).status_code == 302


def test_it_shows_the_app_name_on_the_login_page(client, db):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"memoryviz" in response.content
    assert b'name="username"' in response.content


def test_it_gives_404_for_a_session_of_another_project(alice_client, make_session, other_agent):
    theirs = make_session(SESSION, agent=other_agent)
    assert alice_client.get(theirs.get_absolute_url()).status_code == 404
    assert alice_client.get(theirs.get_absolute_url(), headers={"HX-Request": "true"}).status_code == 404
    assert alice_client.get(theirs.get_absolute_url() + "?after=0").status_code == 404


def test_it_gives_404_for_a_session_that_does_not_exist(alice_client, db):
    assert alice_client.get(reverse("agents:session_detail", args=[999_999])).status_code == 404


def test_it_shows_a_session_of_the_users_project(alice_client, make_session):
    mine = make_session(SESSION)
    assert alice_client.get(mine.get_absolute_url()).status_code == 200


def test_it_lists_only_the_users_sessions(alice_client, make_session, other_agent):
    make_session(SESSION, title="Alpha parcel")
    make_session(SESSION, agent=other_agent, title="Beta secret parcel")
    content = alice_client.get(reverse("agents:session_list")).content.decode()
    assert "Alpha parcel" in content
    assert "Beta secret parcel" not in content


def test_it_ignores_a_filter_on_another_project(alice_client, make_session, other_agent):
    make_session(SESSION, agent=other_agent, title="Beta secret parcel")
    response = alice_client.get(reverse("agents:session_list"), {"project": "beta"})
    assert response.status_code == 200
    assert "Beta secret parcel" not in response.content.decode()
    assert "Beta" not in [str(p) for p in response.context["form"].fields["project"].queryset]


def test_it_sees_another_project_once_a_member(alice_client, alice, make_session, other_project, other_agent):
    theirs = make_session(SESSION, agent=other_agent)
    Membership.objects.create(project=other_project, user=alice)
    assert alice_client.get(theirs.get_absolute_url()).status_code == 200
