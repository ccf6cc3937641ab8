"""A project's API keys: ``mvz_<prefix>_<secret>``, stored hashed and shown once; the OTLP receiver and the API
authenticate with them."""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User as AccountUser
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from agents import models
from agents.access import ADMIN_ROLES, User, projects_with_role

# --- API keys -----------------------------------------------------------------------------------------------

API_KEY_PREFIX = "mvz"
# Writing last_used_at on every request would turn each span batch into a write on the key: once a minute is
# enough to tell a key in use from a forgotten one.
API_KEY_TOUCH_EVERY = dt.timedelta(minutes=1)


@dataclass
class CreatedKey:
    api_key: models.ApiKey
    key: str  # shown once, never stored


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_key_create(*, project: models.Project, name: str, created_by: AccountUser | None = None) -> CreatedKey:
    """A new key for ``project``: ``mvz_<prefix>_<secret>``. The whole key is in the result and nowhere else."""
    name = name.strip()
    if not name:
        raise ValueError("name: a key needs a name (what uses it, e.g. 'travel-agent in production')")
    prefix = secrets.token_hex(6)
    key = f"{API_KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = models.ApiKey.objects.create(
        project=project, name=name[:200], prefix=prefix, hashed_secret=_key_hash(key), created_by=created_by
    )
    return CreatedKey(api_key=api_key, key=key)


def api_key_revoke(*, api_key: models.ApiKey) -> models.ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


class ApiKeyError(Exception):
    """A key that cannot be used; the message says why (to the caller, who holds the key)."""


def api_key_authenticate(*, key: str) -> models.ApiKey:
    """The active key that ``key`` is, or ApiKeyError. Touches ``last_used_at`` (at most once a minute)."""
    parts = key.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != API_KEY_PREFIX or not parts[1]:
        raise ApiKeyError("not a memoryviz API key (they look like mvz_<prefix>_<secret>)")
    api_key = models.ApiKey.objects.select_related("project", "created_by").filter(prefix=parts[1]).first()
    if api_key is None or not hmac.compare_digest(api_key.hashed_secret, _key_hash(key.strip())):
        raise ApiKeyError("unknown API key")
    if api_key.revoked_at is not None:
        raise ApiKeyError(f"API key {api_key.prefix} was revoked on {api_key.revoked_at:%Y-%m-%d %H:%M} UTC")
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at >= API_KEY_TOUCH_EVERY:
        models.ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


def api_keys_for_admin(user: User, project: models.Project) -> QuerySet[models.ApiKey]:
    """The project's keys, for one of its admins (Http404 for anyone else: the project is not theirs to see)."""
    if not projects_with_role(user, ADMIN_ROLES).filter(pk=project.pk).exists():
        raise Http404("No such project.")
    return models.ApiKey.objects.filter(project=project).select_related("created_by")
