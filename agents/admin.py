from __future__ import annotations

from django.contrib import admin

from django.db.models import QuerySet
from django.http import HttpRequest

from agents import models, services


class ProjectScopedAdmin(admin.ModelAdmin):
    """Staff who are not superusers see only the rows of projects they are members of, as on the pages."""

    project_path = "project"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(**{f"{self.project_path}__in": services.user_projects(request.user)})


# Filters that list only the values present in the (scoped) rows, never every project's name.
ONLY = admin.RelatedOnlyFieldListFilter


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(ProjectScopedAdmin):
    project_path = "pk"
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(models.Membership)
class MembershipAdmin(ProjectScopedAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", ("project", ONLY)]
    search_fields = ["user__username", "project__name"]
    autocomplete_fields = ["user", "project"]


@admin.register(models.Agent)
class AgentAdmin(ProjectScopedAdmin):
    list_display = ["name", "project", "slug", "model", "context_window"]
    list_filter = [("project", ONLY), "model"]
    search_fields = ["name", "slug", "model", "description"]
    prepopulated_fields = {"slug": ["name"]}
    autocomplete_fields = ["project"]


@admin.register(models.Session)
class SessionAdmin(ProjectScopedAdmin):
    project_path = "agent__project"
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
    readonly_fields = ["message_count", "token_total", "violation_count", "has_errors", "token_counter", "violations", "imported_at"]
    show_full_result_count = False


@admin.register(models.Message)
class MessageAdmin(ProjectScopedAdmin):
    project_path = "session__agent__project"
    list_display = ["session", "seq", "role", "name", "tool_call_id", "is_error", "token_count", "short_content"]
    list_filter = ["role", "is_error"]
    # Content is the column people look for ("which message said 'quota'?"); the others are exact-ish ids.
    search_fields = ["=session__external_id", "tool_call_id", "external_id", "content"]
    list_select_related = ["session"]
    raw_id_fields = ["session"]
    ordering = ["session", "seq"]
    # Counting a table of millions of messages on every admin page view is the slow part; skip it.
    show_full_result_count = False

    @admin.display(description="content")
    def short_content(self, obj: models.Message) -> str:
        text = obj.content or ""
        return text[:80] + ("…" if len(text) > 80 else "")


@admin.register(models.ToolCall)
class ToolCallAdmin(ProjectScopedAdmin):
    project_path = "session__agent__project"
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
