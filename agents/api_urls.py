from __future__ import annotations

from django.urls import path

from agents import api

app_name = "api"

urlpatterns = [
    path("", api.api_root, name="root"),
    path("sessions/", api.session_list, name="session_list"),
    path("sessions/<int:session_id>/", api.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/messages/", api.session_messages, name="session_messages"),
    path("sessions/<int:session_id>/trim/", api.session_trim, name="session_trim"),
    path("strategies/", api.strategy_list, name="strategy_list"),
    path("formats/", api.format_list, name="format_list"),
]
