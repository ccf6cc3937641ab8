from __future__ import annotations

from django.contrib import admin

from agents import models


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]
    autocomplete_fields = ["user", "project"]


@admin.register(models.Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "slug", "model", "context_window"]
    list_filter = ["project", "model"]
    search_fields = ["name", "slug", "model", "description"]
    prepopulated_fields = {"slug": ["name"]}
    autocomplete_fields = ["project"]


@admin.register(models.Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "__str__", "agent", "source_format", "message_count", "token_total", "violation_count", "has_errors",
        "started_at",
    ]
    list_filter = ["agent__project", "agent", "source_format", "has_errors", "started_at"]
    search_fields = ["title", "external_id"]
    date_hierarchy = "started_at"
    list_select_related = ["agent"]
    autocomplete_fields = ["agent"]
    # Summaries are computed at import; editing them by hand would make the lists lie.
    readonly_fields = ["message_count", "token_total", "violation_count", "has_errors", "token_counter", "violations", "imported_at"]
    show_full_result_count = False


@admin.register(models.Message)
class MessageAdmin(admin.ModelAdmin):
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
class ToolCallAdmin(admin.ModelAdmin):
    list_display = ["name", "call_id", "session", "message", "position"]
    list_filter = ["name"]
    search_fields = ["name", "call_id"]
    raw_id_fields = ["session", "message"]
    show_full_result_count = False


@admin.register(models.ExportRecord)
class ExportRecordAdmin(admin.ModelAdmin):
    list_display = ["created_at", "user", "project", "format", "scope", "session_count", "message_count", "strategy",
                    "interface"]
    list_filter = ["format", "interface", "project"]
    search_fields = ["scope", "user__username", "strategy"]
    list_select_related = ["user", "project"]
    # A log: written by the exports, never edited by hand.
    readonly_fields = [f.name for f in models.ExportRecord._meta.fields]
