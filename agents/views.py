from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.middleware import HtmxDetails

from agents import models, services
from agents.forms import SessionFilterForm

SESSIONS_PER_PAGE = 50


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    form = SessionFilterForm(request.GET or None, user=request.user)
    form.is_valid()  # invalid fields are dropped from the filters and shown with their error
    sessions = services.sessions_filtered(request.user, form.filters())
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sort_query = query.copy()
    sort_query.pop("sort", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "sort_prefix": f"?{sort_query.urlencode()}&" if sort_query else "?",
        "sort": form.filters().sort,
        "tool_names": services.tool_names_for_user(request.user),
        "has_projects": services.user_projects(request.user).exists(),
    }
    template_name = "agents/session_list.html"
    if request.htmx:
        template_name += "#session-table"
    return render(request, template_name, context)


# Contents longer than this are folded under a <details> with a one-line preview.
FOLD_CHARS = 1200
FOLD_LINES = 24
VIOLATIONS_LISTED = 200


@dataclass
class MessageView:
    """A stored message with what the page shows around it."""

    row: models.Message
    permalink: str
    running_total: int
    window_percent: float
    over_window: bool
    violations: list[dict[str, Any]]
    in_exchange: bool  # a tool result right under the call it answers
    call_name: str  # the called tool's name, for a result in an exchange
    calls: list[dict[str, Any]]  # tool calls with pretty-printed arguments
    text: str
    is_json: bool
    fold: bool
    preview: str


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = services.session_for_user(request.user, session_id)
    after = _int_or_none(request.GET.get("after"))
    page = services.session_message_page(session, after=after)
    violations = session.violations or []
    context = {
        "session": session,
        "page": page,
        "messages": _message_views(session, page),
        "violations": violations,
        "violation_links": [
            {**v, "href": _permalink(session, v.get("seq", v.get("index", 0)), None)} for v in violations[:VIOLATIONS_LISTED]
        ],
        "violations_hidden": max(0, len(violations) - VIOLATIONS_LISTED),
        "page_size": services.MESSAGE_PAGE_SIZE,
    }
    template_name = "agents/session_detail.html"
    if request.htmx:
        template_name += "#message-page"
    return render(request, template_name, context)


def _int_or_none(value: str | None) -> int | None:
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return None
    return number if number is None or number >= -1 else None


def _permalink(session: models.Session, seq: int, page_after: int | None) -> str:
    """A link that opens the page holding message ``seq`` and scrolls to it."""
    size = services.MESSAGE_PAGE_SIZE
    if page_after is not None:
        return f"?after={page_after}#m-{seq}"
    if seq < size:
        return f"{session.get_absolute_url()}#m-{seq}"
    return f"{session.get_absolute_url()}?after={seq - 1}#m-{seq}"


def _message_views(session: models.Session, page: services.MessagePage) -> list[MessageView]:
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for violation in session.violations or []:
        by_seq.setdefault(violation.get("seq", violation.get("index", -1)), []).append(violation)
    window = max(session.agent.context_window, 1)
    open_calls: dict[str, str] = {}  # call id -> tool name, of the latest assistant message with calls
    out: list[MessageView] = []
    for row in page.rows:
        running = row.token_running  # stored at import: this message and all before it
        in_exchange = False
        call_name = ""
        if row.role == "assistant" and row.tool_calls:
            open_calls = {tc.get("id", ""): (tc.get("function") or {}).get("name", "") for tc in row.tool_calls}
        elif row.role == "tool" and row.tool_call_id in open_calls:
            in_exchange = True
            call_name = open_calls[row.tool_call_id]
        else:
            open_calls = {}
        text, is_json = _display_text(row)
        out.append(
            MessageView(
                row=row,
                permalink=_permalink(session, row.seq, page.after),
                running_total=running,
                window_percent=round(min(running / window, 1.0) * 100, 1),
                over_window=running > window,
                violations=by_seq.get(row.seq, []),
                in_exchange=in_exchange,
                call_name=call_name,
                calls=[_call_view(tc) for tc in row.tool_calls],
                text=text,
                is_json=is_json,
                fold=len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES,
                preview=_preview(row.content or ""),
            )
        )
    return out


def _display_text(row: models.Message) -> tuple[str, bool]:
    """The content as shown: tool results that are JSON are pretty-printed, everything else as written."""
    text = row.content or ""
    if row.role == "tool" and text[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False), True
        except ValueError:
            pass
    return text, False


def _preview(text: str) -> str:
    flat = " ".join(text[:400].split())
    return flat[:160] + ("…" if len(flat) > 160 or len(text) > 400 else "")


def _call_view(tool_call: dict[str, Any]) -> dict[str, Any]:
    function = tool_call.get("function") or {}
    arguments = function.get("arguments", "")
    try:
        parsed = json.loads(arguments)
        # Short arguments read best on one line; longer ones indented.
        pretty = json.dumps(parsed, ensure_ascii=False)
        if len(pretty) > 90:
            pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
        valid = True
    except (TypeError, ValueError):
        # Invalid JSON is shown as the model wrote it; the violation list says what is wrong.
        pretty, valid = arguments, False
    return {"id": tool_call.get("id", ""), "name": function.get("name", ""), "arguments": pretty, "valid": valid}
