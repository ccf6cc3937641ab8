from __future__ import annotations

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.session_list, name="session_list"),
    path("sessions/<int:session_id>/", views.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/recount/", views.session_recount, name="session_recount"),
    path("sessions/<int:session_id>/calls/<int:call_id>/", views.llm_call, name="llm_call"),
    path("agents/<int:agent_id>/", views.agent_detail, name="agent_detail"),
    path("favicon.ico", views.favicon, name="favicon"),
]

# Import and export (agents.transfer_views).
from agents import transfer_views  # noqa: E402

urlpatterns += [
    path("import/", transfer_views.import_upload, name="import_upload"),
    path("import/confirm/", transfer_views.import_confirm, name="import_confirm"),
    path("export/", transfer_views.export_sessions, name="export_sessions"),
    path("sessions/<int:session_id>/export/", transfer_views.export_session, name="export_session"),
    path("exports/", transfer_views.export_log, name="export_log"),
]

# The trimming lab (agents.lab_views).
from agents import lab_views  # noqa: E402

urlpatterns += [
    path("sessions/<int:session_id>/lab/", lab_views.session_lab, name="session_lab"),
    path("sessions/<int:session_id>/lab/compare/", lab_views.session_lab_compare, name="session_lab_compare"),
    path("lab/report/", lab_views.trimming_report, name="trimming_report"),
]

# Live capture (agents.capture_views): the OTLP/HTTP receiver and the project's API keys.
from agents import capture_views  # noqa: E402

urlpatterns += [
    path("otlp/v1/traces", capture_views.otlp_traces, name="otlp_traces"),
    path("otlp/v1/logs", capture_views.otlp_logs, name="otlp_logs"),
    path("projects/", capture_views.project_list, name="project_list"),
    path("projects/<slug:slug>/settings/", capture_views.project_settings, name="project_settings"),
    path("projects/<slug:slug>/api-keys/", capture_views.api_key_create, name="api_key_create"),
    path("projects/<slug:slug>/api-keys/<str:prefix>/revoke/", capture_views.api_key_revoke, name="api_key_revoke"),
]

# Diffs: two sessions, or a session against a trimmed view (agents.diff_views).
from agents import diff_views  # noqa: E402

urlpatterns += [
    path("sessions/<int:session_id>/diff/", diff_views.session_diff, name="session_diff"),
    path("compare/", diff_views.session_compare, name="session_compare"),
]
