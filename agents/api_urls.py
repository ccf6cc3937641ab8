from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from agents import api

app_name = "api"

urlpatterns = [
    path("", api.api_root, name="root"),
    path("sessions/", api.session_list, name="session_list"),
    path("agents/", api.agent_list, name="agent_list"),
    path("agents/<int:agent_id>/", api.agent_detail, name="agent_detail"),
    path("sessions/<int:session_id>/", api.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/messages/", api.session_messages, name="session_messages"),
    path("sessions/<int:session_id>/trim/", api.session_trim, name="session_trim"),
    path("sessions/<int:session_id>/diff/", api.session_diff, name="session_diff"),
    path("sessions/<int:session_id>/diff/<int:other_id>/", api.session_diff, name="session_diff_with"),
    path("strategies/", api.strategy_list, name="strategy_list"),
    path("formats/", api.format_list, name="format_list"),
    path("presets/", api.preset_list, name="preset_list"),
    path("import/", api.import_upload, name="import_upload"),
    # Open to the login middleware: SPECTACULAR_SETTINGS lets in a logged-in user or an API client only.
    path("schema/", login_not_required(SpectacularAPIView.as_view()), name="schema"),
    # The split view serves its start-up script as a file (?script), not inline: the Content-Security-Policy allows
    # no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]
