from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from agents.lab.html import lab_message_html, lab_strip_html
from agents.lab.previews import PreviewRow, StripRun
from agents.memory.formats import FORMATS
from agents.memory.trimming import STRATEGIES
from agents.projects import labels
from agents.sessions import find
from agents.store.filters import session_filter_pairs

register = template.Library()


@register.filter
def lab_message(row: PreviewRow, session_url: str) -> SafeString:
    """A message of the lab's preview (``message_html.lab_message_html``): 300 of them through a template partial
    were most of a preview's CPU."""
    return lab_message_html(row, session_url=session_url)


@register.filter
def lab_strip(strip: list[StripRun], compact: bool = False) -> SafeString:
    """The lab's map of a preview (``message_html.lab_strip_html``); ``compact``: without its legend (compare)."""
    return lab_strip_html(strip, compact=compact)


@register.inclusion_tag("agents/_export_menu.html", takes_context=True)
def export_menu(
    context: template.Context, session: Any = None, strategy: str = "", params: str = "", counter: str = ""
) -> dict[str, Any]:
    """Export buttons: on a session page (``session``), or on the list, carrying the list's current filters; with
    ``strategy`` and ``params`` (the trimming lab), the trimmed view, counted with ``counter`` when the lab counts
    with another than the stored one. The form is a POST with CSRF (an export writes a record). The formats and
    strategies come from their registries, so a new one shows up here by itself."""
    request = context["request"]
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "session": session,
        "values": {"strategy": strategy, "params": params, "counter": counter},
        "fixed_strategy": bool(strategy),
        "carried": [] if session is not None else session_filter_pairs(request.GET),
        "formats": list(FORMATS.values()),
        "strategies": list(STRATEGIES),
    }


@register.filter
def highlight(text: str | None, q: str) -> SafeString:
    """Agent text escaped, with each occurrence of the page's search ``q`` marked (``find.highlight``)."""
    return find.highlight(text, q or "")


@register.filter
def mentions(text: str | None, q: str) -> bool:
    """Whether ``text`` holds the search ``q`` (any case): to open a folded part that holds a hit."""
    needle = find.clean_query(q).casefold()
    return bool(needle) and needle in (text or "").casefold()


@register.filter
def label_ink(color: str | None) -> str:
    """The class of a label chip's text colour: ``ink-dark`` or ``ink-light``, by the chip colour's luminance."""
    return "ink-dark" if labels.label_ink(color or "") == labels.INK_DARK else "ink-light"
