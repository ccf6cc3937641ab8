"""Slowing down password guessing, on the login pages and on HTTP Basic, and making Basic cheap when it is right.

Failed password checks are stored (``LoginFailure``, in the database so that several application servers count the
same attempts). Once a username, or a client address, has failed too often within the window, its next attempts are
refused without checking the password, until enough of those failures have aged out: the login page says so and
answers 429, the API answers 429 with ``Retry-After``.

HTTP Basic sends the password with every request, and checking it costs CPU (Argon2id, memoryviz.hashers: about 20
ms; Django's default PBKDF2 took about 0.2 s). A successful check is remembered for a few minutes in this process's
memory, under a keyed hash of the user id, the stored password hash and the password given: a later request with the
same credentials skips the hasher, and changing the password changes the stored hash, so the remembered check no
longer matches anything.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.db.models import Count, Min, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import salted_hmac
from rest_framework.authentication import BasicAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled

from agents import models

# The cache (settings.CACHES) that remembers successful Basic checks; process memory, never shared storage.
VERIFIED_CACHE = "verified-credentials"


# --- the throttle ----------------------------------------------------------------------------------------------------


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or behind ``MEMORYVIZ_NUM_PROXIES`` proxies the address the outermost of
    them saw (the entry that many places from the end of X-Forwarded-For; the ones before it are the client's word)."""
    proxies = settings.MEMORYVIZ_NUM_PROXIES
    if proxies:
        hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))][:64]
    return request.META.get("REMOTE_ADDR", "")[:64]


def login_wait(*, username: str, address: str) -> int:
    """Seconds before this username or this address may try a password again (0: now).

    One query over the failures of the window: a username or an address that reached its limit waits until its
    oldest failure in the window ages out."""
    window = settings.MEMORYVIZ_LOGIN_WINDOW_SECONDS
    now = timezone.now()
    username = username[:150]
    seen = (
        models.LoginFailure.objects.filter(at__gt=now - dt.timedelta(seconds=window))
        .filter(Q(username=username) | Q(address=address))
        .aggregate(
            by_username=Count("pk", filter=Q(username=username)),
            username_first=Min("at", filter=Q(username=username)),
            by_address=Count("pk", filter=Q(address=address)),
            address_first=Min("at", filter=Q(address=address)),
        )
    )
    waits = [0.0]
    if seen["by_username"] >= settings.MEMORYVIZ_LOGIN_FAILURES_PER_USERNAME:
        waits.append((seen["username_first"] - now).total_seconds() + window)
    if seen["by_address"] >= settings.MEMORYVIZ_LOGIN_FAILURES_PER_ADDRESS:
        waits.append((seen["address_first"] - now).total_seconds() + window)
    return max(0, int(max(waits) + 0.999))


def login_failed(*, username: str, address: str) -> None:
    now = timezone.now()
    models.LoginFailure.objects.create(username=username[:150], address=address, at=now)
    # Failures older than the window count for nothing: clear them as new ones come (the `at` index serves it).
    window = dt.timedelta(seconds=settings.MEMORYVIZ_LOGIN_WINDOW_SECONDS)
    models.LoginFailure.objects.filter(at__lte=now - window).delete()


def login_succeeded(*, username: str, address: str) -> None:
    """The right password from this address: its earlier typos for this username no longer count. (Others'
    failures on the username stay: someone guessing elsewhere is not cleared by the owner logging in.)"""
    models.LoginFailure.objects.filter(username=username[:150], address=address).delete()


def wait_in_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = (seconds + 59) // 60
    return f"{minutes} minutes"


def throttled_message(seconds: int) -> str:
    return (
        "Too many failed logins for this account or from this address. "
        f"Try again in {wait_in_words(seconds)}."
    )


# --- the login pages -------------------------------------------------------------------------------------------------


class ThrottledLoginMixin:
    """For an AuthenticationForm: refuse while the username or the address must wait, and count failures."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    #: Seconds the user must wait when the form refused for that reason (the view answers 429 with it).
    throttled_for = 0

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is None or not password or self.request is None:
            return super().clean()  # type: ignore[misc]
        address = client_address(self.request)
        wait = login_wait(username=username, address=address)
        if wait:
            self.throttled_for = wait
            raise ValidationError(throttled_message(wait), code="throttled")
        try:
            cleaned = super().clean()  # type: ignore[misc]
        except ValidationError as exc:
            if getattr(exc, "code", None) == "invalid_login":
                login_failed(username=username, address=address)
            raise
        login_succeeded(username=username, address=address)
        return cleaned


class LoginForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class AdminLoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


def with_throttle_status(response: HttpResponse) -> HttpResponse:
    """A login page whose form was refused for guessing answers 429 with Retry-After."""
    form = (getattr(response, "context_data", None) or {}).get("form")
    wait = getattr(form, "throttled_for", 0)
    if wait:
        response.status_code = 429
        response["Retry-After"] = str(wait)
    return response


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm

    def form_invalid(self, form: Any) -> HttpResponse:
        return with_throttle_status(super().form_invalid(form))


# --- HTTP Basic for the API ------------------------------------------------------------------------------------------


def _verified_key(user: Any, password: str) -> str:
    # Keyed (SECRET_KEY): the cache holds no hash anyone could test passwords against without the key.
    digest = salted_hmac("memoryviz.basic-auth", f"{user.pk}\0{user.password}\0{password}", algorithm="sha256")
    return f"basic:{digest.hexdigest()}"


class ThrottledBasicAuthentication(BasicAuthentication):
    """DRF's BasicAuthentication, throttled like the login page, and remembering a successful check."""

    def authenticate_credentials(self, userid: str, password: str, request: Any = None) -> tuple[Any, None]:
        address = client_address(request) if request is not None else ""
        # Before anything else, even a remembered check: otherwise a guesser would learn a right guess from its 200.
        wait = login_wait(username=userid, address=address)
        if wait:
            refused = Throttled(detail=throttled_message(wait))  # without DRF's "Expected available in..." tail
            # DRF's Retry-After. DRF's __init__ sets and its handler reads .wait; djangorestframework-stubs omit it.
            refused.wait = wait  # type: ignore[attr-defined]
            raise refused
        User = get_user_model()
        try:
            user = User._default_manager.get_by_natural_key(userid)
        except User.DoesNotExist:
            user = None
        verified = caches[VERIFIED_CACHE]
        if user is not None and user.is_active and user.has_usable_password():
            key = _verified_key(user, password)
            if verified.get(key):
                return user, None
        try:
            user, _ = super().authenticate_credentials(userid, password, request)
        except AuthenticationFailed:
            login_failed(username=userid, address=address)
            raise
        verified.set(_verified_key(user, password), True)
        login_succeeded(username=userid, address=address)
        return user, None
