"""A project's members and their roles, kept by its admins (never without an admin)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet

from agents import access, models
from agents.access import User

# --- members --------------------------------------------------------------------------------------------------


def members_for_project(project: models.Project) -> QuerySet[models.Membership]:
    return models.Membership.objects.filter(project=project).select_related("user").order_by("user__username")


def _role(value: str) -> str:
    if value not in models.Membership.Level.values:
        raise ValueError(f"role: {value[:20]!r} is not a role; valid: {', '.join(models.Membership.Level.values)}")
    return value


def member_add(*, user: User, project: models.Project, username: str, role: str) -> models.Membership:
    access.require_role(user, project, "admin")
    role = _role(role)
    username = username.strip()
    account = get_user_model().objects.filter(username=username).first() if username else None
    if account is None:
        raise ValueError(f"username: no user {username!r} (an account must exist before it joins a project)")
    membership, created = models.Membership.objects.get_or_create(
        project=project, user=account, defaults={"role": role}
    )
    if not created:
        raise ValueError(f"username: {username} is already a member ({membership.role})")
    return membership


def _keeps_an_admin(membership: models.Membership) -> bool:
    others = models.Membership.objects.filter(project=membership.project_id, role=models.Membership.Level.ADMIN)
    return others.exclude(pk=membership.pk).exists()


def member_set_role(*, user: User, membership: models.Membership, role: str) -> models.Membership:
    access.require_role(user, membership.project, "admin")
    role = _role(role)
    if membership.role == models.Membership.Level.ADMIN and role != membership.role and not _keeps_an_admin(membership):
        raise ValueError("role: the project's last admin cannot step down; make someone else admin first")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


def member_remove(*, user: User, membership: models.Membership) -> None:
    access.require_role(user, membership.project, "admin")
    if membership.role == models.Membership.Level.ADMIN and not _keeps_an_admin(membership):
        raise ValueError("username: the project's last admin cannot leave; make someone else admin first")
    with transaction.atomic():
        # Sessions assigned to someone who left are nobody's again.
        models.Session.objects.filter(agent__project=membership.project_id, assignee=membership.user_id).update(
            assignee=None
        )
        membership.delete()
