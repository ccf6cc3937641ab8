"""The app's URLs: its pages (namespace ``agents``), and the JSON API (namespace ``api``), which memoryviz/urls.py
mounts under /api/."""
from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from agents.api import agents as api_agents
from agents.api import context as api_context
from agents.api import lab as api_lab
from agents.api import memory as api_memory
from agents.api import memory_findings as api_memory_findings
from agents.api import memory_writes as api_memory_writes
from agents.api import recalls as api_recalls
from agents.api import review as api_review
from agents.api import sessions as api_sessions
from agents.api import transfer as api_transfer
from agents.capture import views as capture_views
from agents.diff import views as diff_views
from agents.jobs import views as jobs_views
from agents.lab import views as lab_views
from agents.ledger import recall_views, window_views
from agents.ledger import views as ledger_views
from agents.projects import views as projects_views
from agents.review import views as review_views
from agents.sessions import views as sessions_views
from agents.transfer import views as transfer_views

app_name = "agents"

urlpatterns = [
    path("", sessions_views.session_list, name="session_list"),
    path("sessions/<int:session_id>/", sessions_views.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/recount/", sessions_views.session_recount, name="session_recount"),
    path("sessions/<int:session_id>/delete/", sessions_views.session_delete, name="session_delete"),
    path("sessions/<int:session_id>/jump/", sessions_views.session_jump, name="session_jump"),
    path("sessions/<int:session_id>/calls/<int:call_id>/", sessions_views.llm_call, name="llm_call"),
    # What filled the window (agents.ledger.window_views): one reply's or call's input by part; the session's growth.
    path("sessions/<int:session_id>/context/", window_views.session_window, name="session_window"),
    path("sessions/<int:session_id>/context/growth/", window_views.session_window_growth,
         name="session_window_growth"),
    path("agents/<int:agent_id>/", sessions_views.agent_detail, name="agent_detail"),
    path("favicon.ico", sessions_views.favicon, name="favicon"),
    # The memory pages (agents.ledger.views): an agent's stores and records, one record's versions and reads, an
    # agent's snapshots.
    path("agents/<int:agent_id>/memory/", ledger_views.agent_memory, name="agent_memory"),
    path("memory/records/<int:record_id>/", ledger_views.memory_record, name="memory_record"),
    path("agents/<int:agent_id>/snapshots/", ledger_views.agent_snapshots, name="agent_snapshots"),
    # A recall: its items, QA's relevance marks and the figures they give, the retrieval what-if
    # (agents.ledger.recall_views).
    path("memory/recalls/<int:recall_id>/", recall_views.memory_recall, name="memory_recall"),
    path("memory/recalls/<int:recall_id>/marks/", recall_views.memory_recall_mark, name="memory_recall_mark"),
    path("memory/recalls/<int:recall_id>/judgement/", recall_views.memory_recall_judgement,
         name="memory_recall_judgement"),
    # Import and export (agents.transfer.views).
    path("import/", transfer_views.import_upload, name="import_upload"),
    path("import/confirm/", transfer_views.import_confirm, name="import_confirm"),
    path("export/", transfer_views.export_sessions, name="export_sessions"),
    path("sessions/<int:session_id>/export/", transfer_views.export_session, name="export_session"),
    path("exports/", transfer_views.export_log, name="export_log"),
    # The trimming lab (agents.lab.views).
    path("sessions/<int:session_id>/lab/", lab_views.session_lab, name="session_lab"),
    path("sessions/<int:session_id>/lab/compare/", lab_views.session_lab_compare, name="session_lab_compare"),
    path("lab/report/", lab_views.trimming_report, name="trimming_report"),
    # Live capture (agents.capture.views): the OTLP/HTTP receiver.
    path("otlp/v1/traces", capture_views.otlp_traces, name="otlp_traces"),
    path("otlp/v1/logs", capture_views.otlp_logs, name="otlp_logs"),
    # Projects (agents.projects.views): the user's projects; a project's settings: API keys, members, labels.
    path("projects/", projects_views.project_list, name="project_list"),
    path("projects/<slug:slug>/settings/", projects_views.project_settings, name="project_settings"),
    path("projects/<slug:slug>/api-keys/", projects_views.api_key_create, name="api_key_create"),
    path("projects/<slug:slug>/api-keys/<str:prefix>/revoke/", projects_views.api_key_revoke, name="api_key_revoke"),
    path("projects/<slug:slug>/members/", projects_views.member_add, name="member_add"),
    path("projects/<slug:slug>/members/<int:membership_id>/role/", projects_views.member_role, name="member_role"),
    path("projects/<slug:slug>/members/<int:membership_id>/remove/", projects_views.member_remove,
         name="member_remove"),
    path("projects/<slug:slug>/labels/", projects_views.label_create, name="label_create"),
    path("projects/<slug:slug>/labels/<int:label_id>/", projects_views.label_update, name="label_update"),
    path("projects/<slug:slug>/labels/<int:label_id>/delete/", projects_views.label_delete, name="label_delete"),
    # Diffs: two sessions, or a session against a trimmed view (agents.diff.views).
    path("sessions/<int:session_id>/diff/", diff_views.session_diff, name="session_diff"),
    path("compare/", diff_views.session_compare, name="session_compare"),
    # Background jobs (agents.jobs.views): big reports, exports and imports.
    path("jobs/<int:job_id>/", jobs_views.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/download/", jobs_views.job_download, name="job_download"),
    # QA review (agents.review.views): annotations, review status, the queue.
    path("sessions/<int:session_id>/annotations/", review_views.annotation_create, name="annotation_create"),
    path("sessions/<int:session_id>/annotations/<int:annotation_id>/", review_views.annotation_update,
         name="annotation_update"),
    path("sessions/<int:session_id>/annotations/<int:annotation_id>/delete/", review_views.annotation_delete,
         name="annotation_delete"),
    path("sessions/<int:session_id>/review/", review_views.session_review, name="session_review"),
    path("review/next/", review_views.review_next, name="review_next"),
]


# The JSON API (agents.api): included under /api/ with the namespace "api" (reverse("api:session_list")).
api_urlpatterns = [
    path("", api_sessions.api_root, name="root"),
    path("sessions/", api_sessions.session_list, name="session_list"),
    path("agents/", api_agents.agent_list, name="agent_list"),
    path("agents/<int:agent_id>/", api_agents.agent_detail, name="agent_detail"),
    path("sessions/<int:session_id>/", api_sessions.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/messages/", api_sessions.session_messages, name="session_messages"),
    path("sessions/<int:session_id>/annotations/", api_review.session_annotations, name="session_annotations"),
    path("sessions/<int:session_id>/annotations/<int:annotation_id>/", api_review.session_annotation,
         name="session_annotation"),
    path("sessions/<int:session_id>/trim/", api_lab.session_trim, name="session_trim"),
    path("sessions/<int:session_id>/export/", api_transfer.session_export, name="session_export"),
    path("exports/", api_transfer.export_create, name="export_create"),
    path("sessions/<int:session_id>/diff/", api_lab.session_diff, name="session_diff"),
    path("sessions/<int:session_id>/diff/<int:other_id>/", api_lab.session_diff, name="session_diff_with"),
    path("strategies/", api_lab.strategy_list, name="strategy_list"),
    path("formats/", api_transfer.format_list, name="format_list"),
    path("presets/", api_lab.preset_list, name="preset_list"),
    path("import/", api_transfer.import_upload, name="import_upload"),
    # The memory layers (agents.api.memory).
    path("memory/stores/", api_memory.memory_store_list, name="memory_store_list"),
    path("memory/stores/<int:store_id>/records/", api_memory.memory_store_records, name="memory_store_records"),
    path("memory/stores/<int:store_id>/export/", api_memory.memory_store_export, name="memory_store_export"),
    path("memory/stores/<int:store_id>/findings/", api_memory_findings.memory_store_findings,
         name="memory_store_findings"),
    path("memory/stores/<int:store_id>/health/", api_memory_findings.memory_store_health, name="memory_store_health"),
    path("memory/stores/<int:store_id>/quality/", api_recalls.memory_store_quality, name="memory_store_quality"),
    path("memory/recalls/<int:recall_id>/", api_recalls.memory_recall, name="memory_recall"),
    path("memory/recalls/<int:recall_id>/marks/", api_recalls.memory_recall_marks, name="memory_recall_marks"),
    path("memory/recalls/<int:recall_id>/what-if/", api_recalls.memory_recall_what_if, name="memory_recall_what_if"),
    path("memory/records/<int:record_id>/", api_memory.memory_record, name="memory_record"),
    path("memory/records/<int:record_id>/diff/", api_memory.memory_record_diff, name="memory_record_diff"),
    path("agents/<int:agent_id>/memory/", api_memory.agent_memory, name="agent_memory"),
    path("agents/<int:agent_id>/snapshots/", api_memory.agent_snapshots, name="agent_snapshots"),
    path("sessions/<int:session_id>/recalls/", api_memory.session_recalls, name="session_recalls"),
    path("sessions/<int:session_id>/context/", api_memory.session_context, name="session_context"),
    path("sessions/<int:session_id>/context/growth/", api_context.session_context_growth,
         name="session_context_growth"),
    path("sessions/<int:session_id>/memory-findings/", api_memory_findings.session_memory_findings,
         name="session_memory_findings"),
    path("snapshots/<int:snapshot_id>/", api_memory.snapshot_detail, name="snapshot_detail"),
    path("snapshots/<int:snapshot_id>/diff/<int:other_id>/", api_memory.snapshot_diff, name="snapshot_diff"),
    # The memory write API, for teams that do not trace (agents.api.memory_writes).
    path("memory/writes/stores/", api_memory_writes.store_write, name="memory_store_write"),
    path("memory/writes/versions/", api_memory_writes.versions_write, name="memory_versions_write"),
    path("memory/writes/recalls/", api_memory_writes.recall_write, name="memory_recall_write"),
    path("memory/writes/snapshots/", api_memory_writes.snapshot_write, name="memory_snapshot_write"),
    # Open to the login middleware: SPECTACULAR_SETTINGS lets in a logged-in user or an API client only.
    path("schema/", login_not_required(SpectacularAPIView.as_view()), name="schema"),
    # The split view serves its start-up script as a file (?script), not inline: the Content-Security-Policy allows
    # no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]
