from __future__ import annotations

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.session_list, name="session_list"),
    path("sessions/<int:session_id>/", views.session_detail, name="session_detail"),
]
