from __future__ import annotations

from typing import Any

from django import template

from agents.memory.formats import FORMATS
from agents.memory.trimming import STRATEGIES

register = template.Library()


@register.inclusion_tag("agents/_export_menu.html", takes_context=True)
def export_menu(context: template.Context, session: Any = None, strategy: str = "", params: str = "") -> dict[str, Any]:
    """Export buttons: on a session page (``session``), or on the list, carrying the list's current filters.

    The formats and strategies come from their registries, so a new one shows up here by itself."""
    request = context["request"]
    carried = []
    if session is None:
        carried = [
            (key, value)
            for key, values in request.GET.lists()
            if key not in {"page", "format", "on_invalid"}
            for value in values
        ]
    return {
        "request": request,
        "session": session,
        "strategy": strategy,
        "params": params,
        "carried": carried,
        "formats": list(FORMATS.values()),
        "strategies": list(STRATEGIES),
    }
