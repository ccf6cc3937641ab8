"""memoryviz's admin site: Django's, with a "View on site" redirect that keeps projects apart.

Installed through ``MemoryvizAdminConfig`` below (in place of ``django.contrib.admin`` in INSTALLED_APPS), so that
``admin.site`` is this site and the route stays in the admin's namespace.
"""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path, reverse_lazy
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache


class MemoryvizAdminSite(admin.AdminSite):
    @property
    def login_form(self) -> type:  # type: ignore[override]
        # Imported when used: this module is loaded with the settings, before the models are.
        from agents.auth import AdminLoginForm

        return AdminLoginForm

    @method_decorator(never_cache)
    @login_not_required
    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """Django's admin login, slowed down for guessing like the site's (agents.auth)."""
        from agents.auth import with_throttle_status

        return with_throttle_status(super().login(request, extra_context))

    def get_urls(self) -> list[Any]:
        urls = super().get_urls()
        for i, pattern in enumerate(urls):
            if getattr(pattern, "name", None) == "view_on_site":
                # A view function carries login_url as an attribute, which its Callable type does not declare.
                view: Any = self.admin_view(self.view_on_site)
                view.login_url = reverse_lazy("admin:login", current_app=self.name)  # for LoginRequiredMiddleware
                urls[i] = path(str(pattern.pattern), view, name="view_on_site")
        return urls

    def view_on_site(self, request: HttpRequest, content_type_id: str, object_id: str) -> HttpResponse:
        """``/admin/r/<content type>/<id>/`` answers "doesn't exist" alike for a row that does not exist and for a
        row the user may not see in this admin (Django's own redirect tells them apart: 302 against 404)."""
        from django.contrib.contenttypes.models import ContentType
        from django.contrib.contenttypes.views import shortcut

        missing = Http404(f"Content type {content_type_id} object {object_id} doesn’t exist")
        if not request.user.is_superuser:
            try:
                model = ContentType.objects.get(pk=content_type_id).model_class()
                model_admin = self._registry.get(model) if model is not None else None
                if model_admin is None or not model_admin.has_view_or_change_permission(request):
                    raise missing
                if not model_admin.get_queryset(request).filter(pk=object_id).exists():
                    raise missing
            except (ObjectDoesNotExist, ValueError, ValidationError):
                raise missing from None
        return shortcut(request, content_type_id, object_id)


class MemoryvizAdminConfig(AdminConfig):
    default_site = "agents.admin_site.MemoryvizAdminSite"
