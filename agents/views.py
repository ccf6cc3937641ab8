from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    return render(request, "agents/session_list.html", {})


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    return render(request, "agents/session_detail.html", {})
