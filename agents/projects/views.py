"""The project pages: the user's projects, and a project's settings page (its API keys, members and labels) with
the forms that change them. Each view reads its input, calls one function of ``projects.pages`` (which loads the
project through the user's scope and leaves the role check to the services) and renders what it returns."""
from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.http import HtmxHttpRequest
from agents.projects import pages


def _endpoint(request: HttpRequest) -> str:
    """The OTLP receiver's address, as the settings page tells a client to send to."""
    return request.build_absolute_uri("/otlp")


@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    """The user's projects, with a link to the settings of those they administer."""
    return render(request, "agents/project_list.html", pages.project_list_page(user=request.user))


def _render_keys(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    template = "agents/project_settings.html"
    if getattr(request, "htmx", False):
        template += "#api-keys"
    return render(request, template, context)


@require_GET
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    return _render_keys(request, pages.project_settings_page(user=request.user, slug=slug,
                                                             endpoint=_endpoint(request)))


@require_POST
def api_key_create(request: HttpRequest, slug: str) -> HttpResponse:
    # The key is in this response and nowhere else; a refused name answers 200 with the error beside the form.
    return _render_keys(request, pages.api_key_added(user=request.user, slug=slug, name=request.POST.get("name", ""),
                                                     endpoint=_endpoint(request)))


@require_POST
def api_key_revoke(request: HttpRequest, slug: str, prefix: str) -> HttpResponse:
    revoked = pages.api_key_revoked(user=request.user, slug=slug, prefix=prefix, endpoint=_endpoint(request),
                                    fragment=bool(getattr(request, "htmx", False)))
    if getattr(request, "htmx", False):
        return _render_keys(request, revoked.context)
    flash.success(request, revoked.said)
    return redirect("agents:project_settings", slug=revoked.project.slug)


def _render_section(request: HtmxHttpRequest, answer: pages.SectionAnswer) -> HttpResponse:
    """The changed section for htmx; without htmx, back to the settings page, or the whole page with the error
    next to the form (200: htmx swaps no 4xx answer, and under DEBUG django-htmx's script replaces the whole
    document with one)."""
    if answer.address:
        return redirect(answer.address)
    template = "agents/project_settings.html"
    if request.htmx:
        template += f"#{answer.region}"
    return render(request, template, answer.context)


@require_POST
def member_add(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    return _render_section(request, pages.member_added(user=request.user, slug=slug, data=request.POST,
                                                       fragment=bool(request.htmx), endpoint=_endpoint(request)))


@require_POST
def member_role(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    return _render_section(request, pages.member_role_set(user=request.user, slug=slug, membership_id=membership_id,
                                                          data=request.POST, fragment=bool(request.htmx),
                                                          endpoint=_endpoint(request)))


@require_POST
def member_remove(request: HtmxHttpRequest, slug: str, membership_id: int) -> HttpResponse:
    return _render_section(request, pages.member_removed(user=request.user, slug=slug, membership_id=membership_id,
                                                         fragment=bool(request.htmx), endpoint=_endpoint(request)))


@require_POST
def label_create(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    return _render_section(request, pages.label_added(user=request.user, slug=slug, data=request.POST,
                                                      fragment=bool(request.htmx), endpoint=_endpoint(request)))


@require_POST
def label_update(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    return _render_section(request, pages.label_changed(user=request.user, slug=slug, label_id=label_id,
                                                        data=request.POST, fragment=bool(request.htmx),
                                                        endpoint=_endpoint(request)))


@require_POST
def label_delete(request: HtmxHttpRequest, slug: str, label_id: int) -> HttpResponse:
    return _render_section(request, pages.label_removed(user=request.user, slug=slug, label_id=label_id,
                                                        fragment=bool(request.htmx), endpoint=_endpoint(request)))
