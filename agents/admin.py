"""The admin, scoped like the pages: a staff user who is not a superuser works only inside their projects.

Django's model permissions say what kind of row a staff user may touch at all; the project role says where:

- reading needs membership of the row's project (any role);
- adding, changing and deleting agents, sessions, messages and tool calls needs the editor or admin role there;
- memberships are managed only by the project's admins, and nobody adds, changes or deletes their own;
- projects are created and deleted by superusers; a project's admin may rename it;
- users and groups: only superusers grant staff, superuser, group or permission rights, or touch other staff.

Every foreign-key choice is narrowed to the projects the user may write to, so a forged id fails validation like
any unknown id, and every save and delete checks the row's project again, so no path (form, inline, action) skips it.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models as db_models
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from agents import access, models
from agents.memory.stored import has_content
from agents.store import writing

# How each project-scoped model reaches its project (a lookup path from the model).
PROJECT_PATHS: dict[type[db_models.Model], str] = {
    models.Project: "pk",
    models.Membership: "project",
    models.Agent: "project",
    models.Session: "agent__project",
    models.Message: "session__agent__project",
    models.ToolCall: "session__agent__project",
    models.ExportRecord: "project",
}


def _project_ids(request: HttpRequest, roles: Iterable[str]) -> frozenset[int]:
    """The ids of the projects where the user has one of ``roles``, read once per request and role set."""
    roles = tuple(sorted(roles))
    cache: dict[tuple[str, ...], frozenset[int]] = request.__dict__.setdefault("_memoryviz_project_ids", {})
    if roles not in cache:
        cache[roles] = frozenset(access.projects_with_role(request.user, roles).values_list("pk", flat=True))
    return cache[roles]


class ProjectScopedAdmin(admin.ModelAdmin):
    """Staff who are not superusers see only the rows of projects they are members of, as on the pages, and write
    only where their role allows (``write_roles``)."""

    write_roles: tuple[str, ...] = access.EDIT_ROLES

    @property
    def project_path(self) -> str:
        return PROJECT_PATHS[self.model]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(**{f"{self.project_path}__in": access.user_projects(request.user)})

    # --- where the user may write -----------------------------------------------------------------------------

    def writable_project_ids(self, request: HttpRequest) -> frozenset[int]:
        return _project_ids(request, self.write_roles)

    def project_id_of(self, request: HttpRequest, obj: db_models.Model) -> int | None:
        """The project of a row, saved or not, as its foreign keys say now (after the form has set them)."""
        path = self.project_path
        if path == "pk":
            return obj.pk
        first, _, rest = path.partition("__")
        related_id = getattr(obj, f"{first}_id")
        if not rest or related_id is None:
            return related_id
        # Deleting an agent checks every message it cascades to: one query per distinct session, not per row.
        memo: dict[tuple[str, int], int | None] = request.__dict__.setdefault("_memoryviz_project_of", {})
        key = (f"{self.model._meta.label}.{first}", related_id)
        if key not in memo:
            related = self.model._meta.get_field(first).related_model
            memo[key] = related._default_manager.filter(pk=related_id).values_list(rest, flat=True).first()
        return memo[key]

    def may_write(self, request: HttpRequest, obj: db_models.Model | None) -> bool:
        """Without a row: may the user write anything of this kind (the Add button, the actions)."""
        if request.user.is_superuser:
            return True
        writable = self.writable_project_ids(request)
        if obj is None:
            return bool(writable)
        return self.project_id_of(request, obj) in writable

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and self.may_write(request, None)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self.may_write(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self.may_write(request, obj)

    # --- choices and saves --------------------------------------------------------------------------------------

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        """Foreign keys to project-scoped rows offer (and accept) only rows of projects the user may write to."""
        related = db_field.related_model
        if not request.user.is_superuser and related in PROJECT_PATHS and "queryset" not in kwargs:
            kwargs["queryset"] = related._default_manager.filter(
                **{f"{PROJECT_PATHS[related]}__in": self.writable_project_ids(request)}
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        """An autocomplete feeds a foreign key of a form that writes: suggest only rows that form accepts."""
        queryset, distinct = super().get_search_results(request, queryset, search_term)
        match = request.resolver_match
        if not request.user.is_superuser and match is not None and match.url_name == "autocomplete":
            source = _autocomplete_source_admin(request)
            writable = source.writable_project_ids(request) if source is not None else frozenset()
            queryset = queryset.filter(**{f"{self.project_path}__in": writable})
        return queryset, distinct

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # The form's choices already refuse other projects; this refuses any other way in.
        if not self.may_write(request, obj):
            raise PermissionDenied
        super().save_model(request, obj, form, change)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        if not self.may_write(request, obj):
            raise PermissionDenied
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        if not request.user.is_superuser and queryset.exclude(
            **{f"{self.project_path}__in": self.writable_project_ids(request)}
        ).exists():
            raise PermissionDenied
        super().delete_queryset(request, queryset)


def _autocomplete_source_admin(request: HttpRequest) -> ProjectScopedAdmin | None:
    """The admin of the form whose field asks the autocomplete (``?app_label=&model_name=`` of the request)."""
    try:
        model = ContentType.objects.get_by_natural_key(
            request.GET["app_label"], request.GET["model_name"]
        ).model_class()
    except (KeyError, ContentType.DoesNotExist):
        return None
    model_admin = admin.site._registry.get(model) if model is not None else None
    return model_admin if isinstance(model_admin, ProjectScopedAdmin) else None


# Filters that list only the values present in the (scoped) rows, never every project's name.
ONLY = admin.RelatedOnlyFieldListFilter


# --- memberships: the project's admins manage them, nobody their own ------------------------------------------

OWN_MEMBERSHIP = "You cannot add, change or remove your own membership; another admin of the project can."


class MembershipForm(forms.ModelForm):
    """A membership form that knows who is editing (set per request by the admin) and refuses their own row."""

    acting_user: User | None = None

    class Meta:
        model = models.Membership
        fields = ["project", "user", "role"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        user = self.acting_user
        if user is None or user.is_superuser:
            return cleaned
        was_own = self.instance.pk is not None and self.instance.user_id == user.pk
        becomes_own = cleaned.get("user") is not None and cleaned["user"].pk == user.pk
        if (was_own and self.has_changed()) or (becomes_own and not was_own):
            raise ValidationError(OWN_MEMBERSHIP, code="own_membership")
        return cleaned


class MembershipFormSet(BaseInlineFormSet):
    acting_user: User | None = None

    def clean(self) -> None:
        super().clean()
        user = self.acting_user
        if user is None or user.is_superuser:
            return
        # A form marked for deletion skips its own clean(), so removing one's own row is refused here.
        if any(form.instance.pk is not None and form.instance.user_id == user.pk for form in self.deleted_forms):
            raise ValidationError(OWN_MEMBERSHIP, code="own_membership")


def _for_user(form_class: type, request: HttpRequest) -> type:
    return type(form_class.__name__, (form_class,), {"acting_user": request.user})


def _is_own_membership(request: HttpRequest, obj: Any) -> bool:
    return (
        not request.user.is_superuser and isinstance(obj, models.Membership) and obj.pk is not None
        and obj.user_id == request.user.pk
    )


class MembershipInline(admin.TabularInline):
    model = models.Membership
    form = MembershipForm
    formset = MembershipFormSet
    extra = 1
    autocomplete_fields = ["user"]

    # ``obj`` is the project being edited: only its admins manage its members.
    def _administers(self, request: HttpRequest, obj: Any) -> bool:
        if request.user.is_superuser:
            return True
        return obj is not None and obj.pk in _project_ids(request, access.ADMIN_ROLES)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_add_permission(request, obj) and self._administers(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._administers(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._administers(request, obj)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        formset.form = _for_user(formset.form, request)
        return _for_user(formset, request)


@admin.register(models.Project)
class ProjectAdmin(ProjectScopedAdmin):
    write_roles = access.ADMIN_ROLES
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    # A project is the unit of access: creating or deleting one is a superuser's act.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


@admin.register(models.Membership)
class MembershipAdmin(ProjectScopedAdmin):
    write_roles = access.ADMIN_ROLES
    form = MembershipForm
    list_display = ["user", "project", "role"]
    list_filter = ["role", ("project", ONLY)]
    search_fields = ["user__username", "project__name"]
    autocomplete_fields = ["user", "project"]

    def may_write(self, request: HttpRequest, obj: Any) -> bool:
        return super().may_write(request, obj) and not _is_own_membership(request, obj)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        return _for_user(super().get_form(request, obj, change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not request.user.is_superuser and obj.user_id == request.user.pk:
            raise PermissionDenied(OWN_MEMBERSHIP)
        super().save_model(request, obj, form, change)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        if not request.user.is_superuser and queryset.filter(user=request.user).exists():
            raise PermissionDenied(OWN_MEMBERSHIP)
        super().delete_queryset(request, queryset)


@admin.register(models.Agent)
class AgentAdmin(ProjectScopedAdmin):
    list_display = ["name", "project", "slug", "model", "context_window"]
    list_filter = [("project", ONLY), "model"]
    search_fields = ["name", "slug", "model", "description"]
    prepopulated_fields = {"slug": ["name"]}
    autocomplete_fields = ["project"]


@admin.register(models.Session)
class SessionAdmin(ProjectScopedAdmin):
    list_display = [
        "__str__", "agent", "source_format", "message_count", "token_total", "violation_count", "has_errors",
        "started_at",
    ]
    list_filter = [("agent__project", ONLY), ("agent", ONLY), "source_format", "has_errors", "started_at"]
    search_fields = ["title", "external_id"]
    date_hierarchy = "started_at"
    list_select_related = ["agent"]
    autocomplete_fields = ["agent"]
    # Summaries are computed at import; editing them by hand would make the lists lie.
    # Whether an import has completed it is the import's to say (imports.ImportRun, cleanup_imports).
    readonly_fields = [
        "message_count",
        "token_total",
        "violation_count",
        "has_errors",
        "token_counter",
        "violations",
        "imported_at",
        "state",
        "import_owner",
        "import_heartbeat",
        "append_to",
        "content_version",
        "rewritten_version",
        "memory_finding_count",
        "memory_findings_key",
    ]
    show_full_result_count = False

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        """The assignee is a member of a project the user may write to: no other project's user names."""
        if db_field.name == "assignee" and not request.user.is_superuser:
            kwargs["queryset"] = User.objects.filter(
                memberships__project__in=self.writable_project_ids(request)
            ).distinct()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(models.Message)
class MessageAdmin(ProjectScopedAdmin):
    list_display = ["session", "seq", "role", "name", "tool_call_id", "is_error", "token_count", "short_content"]
    list_filter = ["role", "is_error"]
    # Content is the column people look for ("which message said 'quota'?"); the others are exact-ish ids.
    search_fields = ["=session__external_id", "tool_call_id", "external_id", "content"]
    list_select_related = ["session"]
    raw_id_fields = ["session"]
    ordering = ["session", "seq"]
    # Counting a table of millions of messages on every admin page view is the slow part; skip it.
    show_full_result_count = False

    # Derived from the content when saved (a trim decides from it without reading the text).
    readonly_fields = ["has_content"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj.has_content = has_content(obj.content_parts if obj.content_parts is not None else obj.content)
        super().save_model(request, obj, form, change)
        writing.session_changed(obj.session)  # what was computed from the old message is not used again

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        writing.session_changed(obj.session)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        sessions = list(models.Session.objects.filter(pk__in=queryset.values("session_id")))
        super().delete_queryset(request, queryset)
        for session in sessions:
            writing.session_changed(session)

    @admin.display(description="content")
    def short_content(self, obj: models.Message) -> str:
        text = obj.content or ""
        return text[:80] + ("…" if len(text) > 80 else "")


@admin.register(models.ToolCall)
class ToolCallAdmin(ProjectScopedAdmin):
    list_display = ["name", "call_id", "session", "message", "position"]
    list_filter = ["name"]
    search_fields = ["name", "call_id"]
    raw_id_fields = ["session", "message"]
    show_full_result_count = False


@admin.register(models.ExportRecord)
class ExportRecordAdmin(ProjectScopedAdmin):
    list_display = ["created_at", "user", "project", "format", "scope", "session_count", "message_count", "strategy",
                    "interface"]
    list_filter = ["format", "interface", ("project", ONLY)]
    search_fields = ["scope", "user__username", "strategy"]
    list_select_related = ["user", "project"]
    # A log: written by the exports, never edited by hand.
    readonly_fields = [f.name for f in models.ExportRecord._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


# --- users and groups: rights are granted by superusers only -------------------------------------------------

RIGHTS_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    """A staff user with the user permissions may manage ordinary accounts (add one, reset its password), but
    neither grant rights (staff, superuser, groups, permissions) nor change another staff account.

    Scoped like the rest of the admin: they see themselves, the members of their projects and the accounts in no
    project yet, and change only accounts whose every project they administer (resetting the password of another
    project's member would be logging in as them, into a project they may not see)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        members = models.Membership.objects.filter(project__in=access.user_projects(request.user))
        return qs.filter(
            db_models.Q(pk=request.user.pk) | db_models.Q(pk__in=members.values("user_id"))
            | ~db_models.Q(pk__in=models.Membership.objects.values("user_id"))
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else fields + RIGHTS_FIELDS

    def _may_touch(self, request: HttpRequest, obj: Any) -> bool:
        if request.user.is_superuser or obj is None:
            return True
        if obj.pk == request.user.pk:
            return True
        if obj.is_staff or obj.is_superuser:
            return False
        administered = _project_ids(request, access.ADMIN_ROLES)
        projects = set(models.Membership.objects.filter(user=obj).values_list("project_id", flat=True))
        return projects <= administered

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._may_touch(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.pk == request.user.pk and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj) and self._may_touch(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        if not request.user.is_superuser and not all(
            user.pk != request.user.pk and self._may_touch(request, user) for user in queryset
        ):
            raise PermissionDenied
        super().delete_queryset(request, queryset)


@admin.register(Group)
class GroupAdmin(DjangoGroupAdmin):
    """A group carries permissions: changing one is granting rights, a superuser's act."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser
