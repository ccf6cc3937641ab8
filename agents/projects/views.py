"""The project pages: the user's projects, and a project's settings page (its API keys, members and labels) with
the forms that change them. Each view loads the project through the user's scope (404 outside it) and leaves the
role check to the services (403 for a member whose role does not allow the action); a form with an error answers
200 with the error beside it, as every form here does."""
from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents import access, models
from agents.http import HtmxHttpRequest
from agents.projects import keys as projects_keys
from agents.projects import labels, members, pages

# --- the project's API keys -------------------------------------------------------------------------------------


def _project_for_admin(request: HttpRequest, slug: str) -> models.Project:
    project = get_object_or_404(access.user_projects(request.user), slug=slug)
    projects_keys.api_keys_for_admin(request.user, project)  # Http404 unless an admin of it
    return project


@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    """The user's projects, with a link to the settings of those they administer."""
    admin_of = set(access.projects_with_role(request.user, access.ADMIN_ROLES).values_list("pk", flat=True))
    projects = [{"project": p, "admin": p.pk in admin_of} for p in access.user_projects(request.user).distinct()]
    return render(request, "agents/project_list.html", {"projects": projects})


@require_GET
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    return _render_settings(request, _project_for_admin(request, slug))


def _render_settings(request: HttpRequest, project: models.Project, *, new_key: str = "",
                     error: str = "") -> HttpResponse:
    keys = projects_keys.api_keys_for_admin(request.user, project)
    endpoint = request.build_absolute_uri("/otlp")
    template = "agents/project_settings.html"
    if getattr(request, "htmx", False):
        template += "#api-keys"
    return render(request, template, {"project": project, "keys": keys, "new_key": new_key, "error": error,
                                      "endpoint": endpoint, **pages.settings_context(project)})


@require_POST
def api_key_create(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project_for_admin(request, slug)
    try:
        created = projects_keys.api_key_create(
            project=project, name=request.POST.get("name", ""),
            created_by=request.user if request.user.is_authenticated else None,
        )
    except ValueError as exc:
        # 200 with the error beside the form: htmx swaps no 4xx answer (and under DEBUG django-htmx's script would
        # replace the whole page with it).
        return _render_settings(request, project, error=str(exc).removeprefix("name: "))
    # The key is in this response and nowhere else: no redirect, no flash message that a log could keep.
    return _render_settings(request, project, new_key=created.key)


@require_POST
def api_key_revoke(request: HttpRequest, slug: str, prefix: str) -> HttpResponse:
    project = _project_for_admin(request, slug)
    api_key = get_object_or_404(models.ApiKey, project=project, prefix=prefix)
    projects_keys.api_key_revoke(api_key=api_key)
    if getattr(request, "htmx", False):
        return _render_settings(request, project)
    flash.success(request, f"Key {api_key.name!r} revoked.")
    return redirect("agents:project_settings", slug=project.slug)


# --- project settings: members and labels ---------------------------------------------------------------------


def _project(request: HtmxHttpRequest, slug: str) -> models.Project:
    return get_object_or_404(access.user_projects(request.user).distinct(), slug=slug)


def _membership(project: models.Project, membership_id: int) -> models.Membership:
    return get_object_or_404(models.Membership.objects.select_related("project"), project=project, pk=membership_id)


def _settings_region(request: HtmxHttpRequest, project: models.Project, region: str, error: str = "") -> HttpResponse:
    """The changed region for htmx. Without htmx: back to the settings page, or the whole page with the error
    next to the form (200)."""
    if not request.htmx and not error:
        return redirect(reverse("agents:project_settings", args=[project.slug]) + f"#{region}")
    context: dict[str, Any] = {"project": project, f"{region}_error": error, **pages.settings_context(project)}
    template = "agents/project_settings.html"
    if request.htmx:
        template += f"#{region}"
    else:
        # The rest of the page (the API keys) as its own view shows it; only an admin gets this far.
        context |= {"keys": projects_keys.api_keys_for_admin(request.user, project),
                    "endpoint": request.build_absolute_uri("/otlp")}
    # 200 with the error beside the form, like every form: htmx swaps no 4xx answer (and under DEBUG django-htmx's
    # script replaces the whole document with one).
    return render(request, template, context)


@require_POST
def member_add(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    try:
        members.member_add(user=request.user, project=project, username=request.POST.get("username", ""),
                              role=request.POST.get("role", ""))
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def member_role(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = _project(request, slug)
    membership = _membership(project, membership_id)
    try:
        members.member_set_role(user=request.user, membership=membership, role=request.POST.get("role", ""))
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def member_remove(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = _project(request, slug)
    membership = _membership(project, membership_id)
    try:
        members.member_remove(user=request.user, membership=membership)
    except ValueError as exc:
        return _settings_region(request, project, "members", str(exc))
    return _settings_region(request, project, "members")


@require_POST
def label_create(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    try:
        labels.label_create(user=request.user, project=project, name=request.POST.get("name", ""),
                                color=request.POST.get("color", labels.LABEL_COLORS[-1]))
    except ValueError as exc:
        return _settings_region(request, project, "labels", str(exc))
    return _settings_region(request, project, "labels")


@require_POST
def label_update(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    project = _project(request, slug)
    label = get_object_or_404(models.Label.objects.select_related("project"), project=project, pk=label_id)
    try:
        labels.label_update(user=request.user, label=label, name=request.POST.get("name", ""),
                                color=request.POST.get("color", label.color))
    except ValueError as exc:
        return _settings_region(request, project, "labels", str(exc))
    return _settings_region(request, project, "labels")


@require_POST
def label_delete(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    project = _project(request, slug)
    label = get_object_or_404(models.Label.objects.select_related("project"), project=project, pk=label_id)
    labels.label_delete(user=request.user, label=label)
    return _settings_region(request, project, "labels")
