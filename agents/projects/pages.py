"""What the project pages show, each decided in one call from its view: the user's projects; a project's settings
page (its API keys, members and labels); and what each of the page's forms answers once its change is made or
refused (the region it changed, or the whole page with the error beside the form, or the page's address again).

Every function loads the project through the user's scope (404 outside it) and leaves the role check to the
services it calls (403 for a member whose role does not allow the action). A form with an error answers 200 with
the error beside it, as every form here does: htmx swaps no 4xx answer."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User as AccountUser
from django.shortcuts import get_object_or_404
from django.urls import reverse

from agents import access, models
from agents.projects import keys
from agents.projects.labels import (
    LABEL_COLORS,
    label_create,
    label_delete,
    label_update,
    label_usage,
    labels_for_project,
)
from agents.projects.members import member_add, member_remove, member_set_role, members_for_project


def settings_context(project: models.Project) -> dict[str, Any]:
    """What the project settings page shows of members and labels (three queries)."""
    labels = list(labels_for_project(project))
    usage = label_usage(project)
    used_colors = {label.color for label in labels}
    return {
        "members": list(members_for_project(project)),
        "roles": models.Membership.Level.choices,
        "labels": [{"label": label, "used": usage.get(label.pk, 0)} for label in labels],
        "next_color": next((c for c in LABEL_COLORS if c not in used_colors), LABEL_COLORS[-1]),
    }


def project_list_page(*, user: access.User) -> dict[str, Any]:
    """The user's projects, with a link to the settings of those they administer."""
    admin_of = set(access.projects_with_role(user, access.ADMIN_ROLES).values_list("pk", flat=True))
    return {"projects": [{"project": p, "admin": p.pk in admin_of} for p in access.user_projects(user).distinct()]}


# --- the API keys section (the whole page too) ------------------------------------------------------------------


def _project_for_admin(user: access.User, slug: str) -> models.Project:
    project = get_object_or_404(access.user_projects(user), slug=slug)
    keys.api_keys_for_admin(user, project)  # Http404 unless an admin of it
    return project


def _keys_context(user: access.User, project: models.Project, *, endpoint: str, new_key: str = "",
                  error: str = "") -> dict[str, Any]:
    return {"project": project, "keys": keys.api_keys_for_admin(user, project), "new_key": new_key, "error": error,
            "endpoint": endpoint, **settings_context(project)}


def project_settings_page(*, user: access.User, slug: str, endpoint: str) -> dict[str, Any]:
    """A project's settings page, for its admins (404 for anyone else). ``endpoint``: the OTLP receiver's address
    the page tells a client to send to."""
    return _keys_context(user, _project_for_admin(user, slug), endpoint=endpoint)


def api_key_added(*, user: access.User, slug: str, name: str, endpoint: str) -> dict[str, Any]:
    """A new key named ``name``: the settings page with the whole key, shown once (no redirect, no flash message
    that a log could keep), or with why it was not made."""
    project = _project_for_admin(user, slug)
    try:
        created = keys.api_key_create(project=project, name=name,
                                      created_by=user if isinstance(user, AccountUser) else None)
    except ValueError as exc:
        return _keys_context(user, project, endpoint=endpoint, error=str(exc).removeprefix("name: "))
    return _keys_context(user, project, endpoint=endpoint, new_key=created.key)


@dataclass
class KeyRevoked:
    project: models.Project
    said: str  # what the page says (without htmx, as a message on the page it goes back to)
    context: dict[str, Any]  # with htmx: the keys section again


def api_key_revoked(*, user: access.User, slug: str, prefix: str, endpoint: str, fragment: bool) -> KeyRevoked:
    project = _project_for_admin(user, slug)
    api_key = get_object_or_404(models.ApiKey, project=project, prefix=prefix)
    keys.api_key_revoke(api_key=api_key)
    context = _keys_context(user, project, endpoint=endpoint) if fragment else {}
    return KeyRevoked(project, f"Key {api_key.name!r} revoked.", context)


# --- the members and labels sections ----------------------------------------------------------------------------


@dataclass
class SectionAnswer:
    """What a members or labels form answers: without htmx and without an error, the settings page again at the
    section (``address``); else the section (with htmx) or the whole page (without) and the error beside the form."""

    region: str
    address: str = ""
    context: dict[str, Any] = field(default_factory=dict)


def _project(user: access.User, slug: str) -> models.Project:
    return get_object_or_404(access.user_projects(user).distinct(), slug=slug)


def _section(user: access.User, project: models.Project, region: str, *, fragment: bool, endpoint: str,
             error: str = "") -> SectionAnswer:
    if not fragment and not error:
        return SectionAnswer(region, address=reverse("agents:project_settings", args=[project.slug]) + f"#{region}")
    context: dict[str, Any] = {"project": project, f"{region}_error": error, **settings_context(project)}
    if not fragment:
        # The rest of the page (the API keys) as its own view shows it; only an admin gets this far.
        context |= {"keys": keys.api_keys_for_admin(user, project), "endpoint": endpoint}
    return SectionAnswer(region, context=context)


def _membership(project: models.Project, membership_id: int) -> models.Membership:
    return get_object_or_404(models.Membership.objects.select_related("project"), project=project, pk=membership_id)


def _label(project: models.Project, label_id: int) -> models.Label:
    return get_object_or_404(models.Label.objects.select_related("project"), project=project, pk=label_id)


def _changed(user: access.User, project: models.Project, region: str, change: Callable[[], object], *,
             fragment: bool, endpoint: str) -> SectionAnswer:
    """Make ``change`` (a service call, which refuses with ValueError), then answer with its section."""
    error = ""
    try:
        change()
    except ValueError as exc:
        error = str(exc)
    return _section(user, project, region, fragment=fragment, endpoint=endpoint, error=error)


def member_added(*, user: access.User, slug: str, data: Any, fragment: bool, endpoint: str) -> SectionAnswer:
    """``data``: the form's ``username`` and ``role``."""
    project = _project(user, slug)
    return _changed(user, project, "members", lambda: member_add(
        user=user, project=project, username=data.get("username", ""), role=data.get("role", "")),
        fragment=fragment, endpoint=endpoint)


def member_role_set(*, user: access.User, slug: str, membership_id: int, data: Any, fragment: bool,
                    endpoint: str) -> SectionAnswer:
    project = _project(user, slug)
    membership = _membership(project, membership_id)
    return _changed(user, project, "members", lambda: member_set_role(
        user=user, membership=membership, role=data.get("role", "")), fragment=fragment, endpoint=endpoint)


def member_removed(*, user: access.User, slug: str, membership_id: int, fragment: bool,
                   endpoint: str) -> SectionAnswer:
    project = _project(user, slug)
    membership = _membership(project, membership_id)
    return _changed(user, project, "members", lambda: member_remove(user=user, membership=membership),
                    fragment=fragment, endpoint=endpoint)


def label_added(*, user: access.User, slug: str, data: Any, fragment: bool, endpoint: str) -> SectionAnswer:
    """``data``: the form's ``name`` and ``color`` (the last offered colour when none is sent)."""
    project = _project(user, slug)
    return _changed(user, project, "labels", lambda: label_create(
        user=user, project=project, name=data.get("name", ""), color=data.get("color", LABEL_COLORS[-1])),
        fragment=fragment, endpoint=endpoint)


def label_changed(*, user: access.User, slug: str, label_id: int, data: Any, fragment: bool,
                  endpoint: str) -> SectionAnswer:
    project = _project(user, slug)
    label = _label(project, label_id)
    return _changed(user, project, "labels", lambda: label_update(
        user=user, label=label, name=data.get("name", ""), color=data.get("color", label.color)),
        fragment=fragment, endpoint=endpoint)


def label_removed(*, user: access.User, slug: str, label_id: int, fragment: bool, endpoint: str) -> SectionAnswer:
    project = _project(user, slug)
    label_delete(user=user, label=_label(project, label_id))
    return _section(user, project, "labels", fragment=fragment, endpoint=endpoint)
