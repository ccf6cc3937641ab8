"""Password guessing is slowed on the login pages and on HTTP Basic; Basic skips the password hasher for credentials it
has just checked, and forgets them when the password changes. Passwords are hashed with Argon2id; a PBKDF2 hash still
verifies and is made again with Argon2id at the next login."""
from __future__ import annotations

import base64
import datetime as dt
from unittest import mock

import pytest
from django.contrib.auth.hashers import make_password
from django.core.cache import caches
from django.test import RequestFactory, override_settings
from django.utils import timezone

from agents.auth import VERIFIED_CACHE, client_address
from agents.models import LoginFailure
from memoryviz.hashers import Argon2PasswordHasher

LIMITS = {"MEMORYVIZ_LOGIN_FAILURES_PER_USERNAME": 3, "MEMORYVIZ_LOGIN_FAILURES_PER_ADDRESS": 5,
          "MEMORYVIZ_LOGIN_WINDOW_SECONDS": 600}
pytestmark = pytest.mark.usefixtures("_limits")


@pytest.fixture
def _limits(settings):
    for name, value in LIMITS.items():
        setattr(settings, name, value)
    caches[VERIFIED_CACHE].clear()


def _login(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def _logged_in(client) -> bool:
    return "_auth_user_id" in client.session


# --- the login page --------------------------------------------------------------------------------------------------


def test_it_refuses_a_username_that_failed_too_often_even_with_the_right_password(client, alice):
    for _ in range(3):
        response = _login(client, "alice", "wrong")
        assert response.status_code == 200 and "do not match" in response.content.decode()
    response = _login(client, "alice", "pw-alice-123")
    assert response.status_code == 429
    assert 590 <= int(response["Retry-After"]) <= 600
    assert "Too many failed logins for this account or from this address. Try again in 10 minutes." in (
        response.content.decode())
    assert not _logged_in(client)
    # The same username from another address waits too: the guesser may come from many.
    assert _login(client, "alice", "pw-alice-123", address="10.9.9.9").status_code == 429


def test_it_refuses_an_address_that_failed_too_often_whatever_the_username(client, alice, bob):
    for name in ("carol", "dave", "erin", "frank", "bob"):
        assert _login(client, name, "guess").status_code == 200
    assert _login(client, "alice", "pw-alice-123").status_code == 429
    # Another address is not held back by this one.
    assert _login(client, "alice", "pw-alice-123", address="10.0.0.2").status_code == 302
    assert _logged_in(client)


def test_it_counts_failures_another_server_stored(client, alice):
    # Several application servers share the database: attempts one of them saw count on every other.
    LoginFailure.objects.bulk_create(
        [LoginFailure(username="alice", address=f"192.0.2.{i}", at=timezone.now()) for i in range(3)]
    )
    assert _login(client, "alice", "pw-alice-123").status_code == 429


def test_it_lets_a_username_in_again_once_its_failures_age_out(client, alice):
    for _ in range(3):
        _login(client, "alice", "wrong")
    LoginFailure.objects.update(at=timezone.now() - dt.timedelta(seconds=601))
    response = _login(client, "alice", "pw-alice-123")
    assert response.status_code == 302 and _logged_in(client)
    assert LoginFailure.objects.count() == 0  # aged-out rows are cleared, the owner's typos forgotten


def test_it_forgets_the_owners_typos_but_not_anyone_elses_on_success(client, alice):
    _login(client, "alice", "wrong", address="10.0.0.1")
    _login(client, "alice", "wrong", address="203.0.113.7")
    assert _login(client, "alice", "pw-alice-123", address="10.0.0.1").status_code == 302
    assert list(LoginFailure.objects.values_list("address", flat=True)) == ["203.0.113.7"]


def test_it_slows_the_admin_login_too(client, alice):
    alice.is_staff = True
    alice.save()
    assert client.get("/admin/login/").status_code == 200  # open to the anonymous, as Django's is
    for _ in range(3):
        assert client.post("/admin/login/", {"username": "alice", "password": "wrong"},
                           REMOTE_ADDR="10.0.0.1").status_code == 200
    response = client.post("/admin/login/", {"username": "alice", "password": "pw-alice-123"}, REMOTE_ADDR="10.0.0.1")
    assert response.status_code == 429 and "Too many failed logins" in response.content.decode()
    assert not _logged_in(client)


def test_a_password_is_hashed_with_argon2id_and_a_pbkdf2_hash_is_upgraded_at_login(client, alice):
    assert alice.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    alice.password = make_password("pw-alice-123", hasher="pbkdf2_sha256")
    alice.save()
    assert _login(client, "alice", "pw-alice-123").status_code == 302 and _logged_in(client)
    alice.refresh_from_db()
    assert alice.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    assert alice.check_password("pw-alice-123") and not alice.check_password("pw-alice-124")


# --- HTTP Basic ------------------------------------------------------------------------------------------------------


def test_it_answers_429_with_retry_after_to_a_basic_guesser(client, alice):
    for _ in range(3):
        response = client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "wrong"))
        assert response.status_code == 401
    response = client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123"))
    assert response.status_code == 429
    assert 590 <= int(response["Retry-After"]) <= 600
    assert response.json() == {
        "error": "Too many failed logins for this account or from this address. Try again in 10 minutes."
    }


def test_it_checks_a_basic_password_once_and_remembers_it_until_it_changes(client, alice):
    verify = Argon2PasswordHasher.verify
    with mock.patch.object(Argon2PasswordHasher, "verify", autospec=True, side_effect=verify) as checked:
        for _ in range(3):
            assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123")).status_code == 200
        assert checked.call_count == 1
        # A wrong password is never taken for the remembered one.
        assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-124")).status_code == 401
        assert checked.call_count == 2
        alice.set_password("a-new-secret-456")
        alice.save()
        assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123")).status_code == 401
        assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "a-new-secret-456")).status_code == 200
        assert checked.call_count == 4


def test_it_refuses_a_remembered_password_of_a_deactivated_or_throttled_user(client, alice):
    assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123")).status_code == 200
    LoginFailure.objects.bulk_create(
        [LoginFailure(username="alice", address=f"192.0.2.{i}", at=timezone.now()) for i in range(3)]
    )
    # Throttled first: a guesser must not learn a right guess from a remembered check's 200.
    assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123")).status_code == 429
    LoginFailure.objects.all().delete()
    alice.is_active = False
    alice.save()
    assert client.get("/api/", HTTP_AUTHORIZATION=_basic("alice", "pw-alice-123")).status_code == 401


# --- the client's address ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [(0, "6.6.6.6", "10.0.0.1"), (1, "6.6.6.6, 198.51.100.4", "198.51.100.4"), (2, "6.6.6.6, 198.51.100.4, 10.1.1.1",
                                                                                "198.51.100.4"),
     (1, "", "10.0.0.1")],
)
def test_it_counts_the_address_the_outermost_trusted_proxy_saw(settings, proxies, forwarded, expected):
    settings.MEMORYVIZ_NUM_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


@override_settings(MEMORYVIZ_NUM_PROXIES=1)
def test_it_throttles_the_client_behind_a_proxy_not_the_proxy(client, alice):
    def through_proxy(client_ip: str, username: str, password: str):
        return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR="10.0.0.1",
                           HTTP_X_FORWARDED_FOR=client_ip)

    for name in ("carol", "dave", "erin", "frank", "gina"):
        assert through_proxy("198.51.100.4", name, "guess").status_code == 200
    assert through_proxy("198.51.100.4", "alice", "pw-alice-123").status_code == 429
    assert through_proxy("198.51.100.5", "alice", "pw-alice-123").status_code == 302
