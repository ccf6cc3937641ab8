"""Who may see and do what: scoping by project and role, the one place that decides it.

Every query a page, the API or a command makes starts from ``user_projects`` / ``sessions_for_user`` /
``agents_for_user``, so that a user only ever sees the projects they belong to; ``require_role`` / ``role_allows``
say what a role may do. An API key acts as an editor of its one project (``KeyUser``). It imports only the models:
every capability uses it."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AccountUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from agents import models


class KeyUser:
    """Who a request authenticated by an API key is: an editor of the key's one project, and no one else.

    Not a database user: the access functions below recognise it, and anything that records who did something
    takes ``acting_user`` (the key's creator, or None)."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, api_key: models.ApiKey) -> None:
        self.api_key = api_key
        self.project_id = api_key.project_id
        self.username = f"api key {api_key.prefix}"
        self.acting_user = api_key.created_by

    def __str__(self) -> str:
        return self.username

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return False

    def has_module_perms(self, app_label: str) -> bool:
        return False


User = AccountUser | AnonymousUser | KeyUser


def recorded_user(user: User) -> AccountUser | None:
    """Who to record as having done something (an export, a preset, an annotation, a background job's owner): the
    logged-in user; for an API key, the user who created it (None for a key made on the command line)."""
    if isinstance(user, KeyUser):
        return user.acting_user
    return user if isinstance(user, AccountUser) and user.is_authenticated else None


# --- access -------------------------------------------------------------------------------------------------


def user_projects(user: User) -> QuerySet[models.Project]:
    """The projects the user is a member of (none for an anonymous user; its one project for an API key)."""
    if isinstance(user, KeyUser):
        return models.Project.objects.filter(pk=user.project_id)
    if not user.is_authenticated:
        return models.Project.objects.none()
    return models.Project.objects.filter(memberships__user=user)


# The role policy: the least role each kind of action needs. Every role may do what the roles before it in
# ``Membership.ORDER`` may: a viewer reads; an annotator also labels, comments and sets a session's review status
# and assignee; an editor also imports, appends, deletes sessions and edits agents; an admin also manages members,
# labels and API keys. Views and endpoints ask ``require_role`` / ``role_allows``; nothing else decides.
LEAST_ROLE = {
    "read": models.Membership.Level.VIEWER,
    "annotate": models.Membership.Level.ANNOTATOR,
    "edit": models.Membership.Level.EDITOR,
    "admin": models.Membership.Level.ADMIN,
}


def roles_for(action: str) -> tuple[str, ...]:
    """The roles that may do ``action`` (one of LEAST_ROLE's keys)."""
    least = models.Membership.ORDER.index(LEAST_ROLE[action])
    return tuple(str(role) for role in models.Membership.ORDER[least:])


def role_allows(role: str | None, action: str) -> bool:
    return role is not None and role in roles_for(action)


ANNOTATE_ROLES = roles_for("annotate")
EDIT_ROLES = models.Membership.EDIT_ROLES
ADMIN_ROLES = models.Membership.ADMIN_ROLES
assert roles_for("edit") == EDIT_ROLES and roles_for("admin") == ADMIN_ROLES, (
    "Membership's role lists and LEAST_ROLE disagree"
)


def projects_with_role(user: User, roles: Iterable[str]) -> QuerySet[models.Project]:
    """The projects where the user's membership has one of ``roles`` (none for an anonymous user). An API key
    acts as an editor of its one project."""
    if isinstance(user, KeyUser):
        if models.Membership.Level.EDITOR not in roles:
            return models.Project.objects.none()
        return models.Project.objects.filter(pk=user.project_id)
    if not user.is_authenticated:
        return models.Project.objects.none()
    return models.Project.objects.filter(memberships__user=user, memberships__role__in=list(roles))


def project_role(user: User, project: models.Project) -> str | None:
    """The user's role in ``project`` (None when not a member). An API key is an editor of its one project."""
    if isinstance(user, KeyUser):
        return models.Membership.Level.EDITOR if user.project_id == project.pk else None
    if not user.is_authenticated:
        return None
    return models.Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()


def role_permissions(role: str | None) -> dict[str, bool]:
    """What a role may do, by action: what templates show (the views check again)."""
    return {action: role_allows(role, action) for action in LEAST_ROLE}


def require_role(user: User, project: models.Project, action: str) -> str:
    """The user's role in ``project`` when it allows ``action``; PermissionDenied (403) otherwise.

    Call it after loading the object through the user's scope: someone outside the project gets 404 there and
    never learns the project exists."""
    role = project_role(user, project)
    if not role_allows(role, action):
        needed = " or ".join(roles_for(action))
        raise PermissionDenied(f"this needs the {needed} role in project {project.slug}; yours is {role or 'none'}")
    return role or ""


def editable_projects(user: User) -> QuerySet[models.Project]:
    """The projects where the user may change data: import, edit agents (editor or admin)."""
    return projects_with_role(user, EDIT_ROLES)


def agents_for_user(user: User) -> QuerySet[models.Agent]:
    return models.Agent.objects.filter(project__in=user_projects(user)).select_related("project")


def agent_for_user(user: User, agent_id: int) -> models.Agent:
    """The agent, or Http404 when it does not exist or belongs to a project the user is not in."""
    try:
        return agents_for_user(user).get(pk=agent_id)
    except models.Agent.DoesNotExist:
        raise Http404("No such agent.") from None


def agent_editable(user: User, agent: models.Agent) -> bool:
    """Whether the user may change the agent: editor or admin of its project (an API key of the project too)."""
    return editable_projects(user).filter(pk=agent.project_id).exists()


def sessions_for_user(user: User) -> QuerySet[models.Session]:
    """Every ready session of the user's projects; the base of every session query. A session an import is still
    writing (``state=importing``) is seen by no one until the import completes."""
    return models.Session.objects.filter(
        agent__project__in=user_projects(user), state=models.Session.State.READY
    ).select_related("agent", "agent__project")


def session_for_user(user: User, session_id: int, **annotations: Any) -> models.Session:
    """The session, or Http404 when it does not exist or belongs to a project the user is not in. ``annotations``
    (e.g. an ``Exists`` saying whether it has recalls) are read in the same query."""
    try:
        return sessions_for_user(user).annotate(**annotations).get(pk=session_id)
    except models.Session.DoesNotExist:
        raise Http404("No such session.") from None


def project_to_write(user: User, slug: str | None) -> models.Project:
    """The project a write goes to (a new session, an import through the API): the one named by ``slug`` among those
    where the user may write (PermissionDenied when there is none of that name), or without a slug their only one
    (ValueError when they may write to several, or to none)."""
    projects = editable_projects(user)
    if slug:
        project = projects.filter(slug=slug).first()
        if project is None:
            raise PermissionDenied(f"project {slug}: no such project where you may write (editor or admin)")
        return project
    choices = list(projects.distinct()[:2])
    if len(choices) != 1:
        raise ValueError("project: name the project's slug (you may write to several, or to none)")
    return choices[0]
