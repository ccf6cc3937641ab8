from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_not_required
from django.contrib.humanize.templatetags.humanize import intcomma
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, push_url

from agents import find, models, review, services
from agents.forms import AgentForm, SessionFilterForm
from agents.http import HtmxHttpRequest
from agents.memory.tokens import COUNTERS
from agents.safe_markdown import markdown_to_safe_html

SESSIONS_PER_PAGE = 50


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    form = SessionFilterForm(request.GET or None, user=request.user)
    form.is_valid()  # invalid fields are dropped from the filters and shown with their error
    if form.cleared and not request.htmx:
        return redirect(_list_url_without(request, form.cleared))
    sessions = services.sessions_filtered(request.user, form.filters()).select_related("assignee")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    review.attach_labels(page.object_list)
    query = request.GET.copy()
    for name in ["page", "queue", *form.cleared]:
        query.pop(name, None)
    sort_query = query.copy()
    sort_query.pop("sort", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "sort_prefix": f"?{sort_query.urlencode()}&" if sort_query else "?",
        "sort": form.filters().sort,
        # Asked by the template only when the list is empty.
        "has_projects": services.user_projects(request.user).exists,
        # Opened from a search, a session lands on its first hit.
        "hit_query": urlencode({"q": form.filters().q}) if form.filters().q else "",
        "queue_empty": request.GET.get("queue") == "empty",
    }
    template_name = "agents/session_list.html"
    if request.htmx:
        # The table alone: the filter form and its tool suggestions are not part of it.
        template_name += "#session-table"
    else:
        context["tool_names"] = services.tool_names_for_user(request.user)
        context |= review.list_choices(request.user)
    response = render(request, template_name, context)
    if form.cleared and request.htmx:
        # The URL htmx pushes is the request's; push the one the table shows instead.
        push_url(response, _list_url_without(request, form.cleared))
    return response


def _list_url_without(request: HtmxHttpRequest, names: Iterable[str]) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return f"{request.path}?{query.urlencode()}" if query else request.path


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
    call_name: str  # the called tool's name, for a result in an exchange or a result whose call is elsewhere
    call_href: str  # a link back to the call, for a result whose call is not right above it (else "")
    calls: list[dict[str, Any]]  # tool calls with pretty-printed arguments
    text: str
    is_json: bool
    fold: bool
    preview: str
    llm_call: dict[str, Any] | None = None  # live capture: what the call that produced this message was sent
    hit: bool = False  # it matches the page's search (?q=)
    gap: str = ""  # the time since the message before it, when both have a time ("+12 s")
    annotations: list[models.Annotation] = field(default_factory=list)  # reviewers' labels and comments on it
    usage: list[tuple[str, str]] = field(default_factory=list)  # the token usage the provider reported, as stored
    markdown: str = ""  # an assistant's text as sanitised Markdown (safe_markdown), "" for others


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    after = _int_or_none(request.GET.get("after"))
    at = _int_or_none(request.GET.get("at"))
    q = find.clean_query(request.GET.get("q"))
    within = find.ChainFilter.from_query(request.GET.get("role"), request.GET.get("tool"))
    session = services.session_for_user(request.user, session_id)
    if q and at is None and after is None and not request.htmx:
        # A search (the page's own form, or a session opened from a list search) lands on its first hit.
        first = find.first_hit(session, q, within)
        if first is not None:
            return redirect(_search_link(session, q, first, within))
    chain = services.session_chain_page(session, after=after, at=at, within=within)
    page = chain.page
    messages = _message_views(session, chain)
    _add_llm_calls(session, messages)
    for m in messages:
        m.hit = find.message_mentions(m.row, q)
    _add_gaps(session, messages)
    violations = session.violations or []
    live = session.is_live
    keep = _keep_query(q, within)
    context = {
        "session": session,
        "page": page,
        "messages": messages,
        "range": _page_range(request, session, page, keep=keep, within=within),
        "within": within,
        "keep_query": keep,
        **_search_context(request, session, q, at=at, page=page, within=within),
        **_metadata_context(session),
        **(_jump_context(request, session, q, at=at, page=page, within=within) if not request.htmx else {}),
        "missing_at": at if at is not None and at >= session.message_count else None,
        "violations": violations,
        "violation_links": [
            {**v, "href": _permalink(session, v.get("seq", v.get("index", 0)))} for v in violations[:VIOLATIONS_LISTED]
        ],
        "violations_hidden": max(0, len(violations) - VIOLATIONS_LISTED),
        "page_size": services.MESSAGE_PAGE_SIZE,
        "per_list": chain.per_list,
        "recount": _recount_choices(request, session),
        "recounted": request.GET.get("recounted") == "1",
        "live": live,
        "last_seq": page.rows[-1].seq if page.rows else (page.after if page.after is not None else -1),
        **_review_context(request, session, messages),
    }
    template_name = "agents/session_detail.html"
    if not request.htmx:
        return render(request, template_name, context)
    if request.GET.get("live"):
        return render(request, template_name + "#live-tail", context)
    if request.GET.get("earlier"):
        # "Load earlier": this page goes in front of the one on screen; the place (the address) stays.
        return render(request, template_name + "#earlier-page", context)
    response = render(request, template_name + "#message-page", context)
    if page.rows:
        # "Load more": the address follows to the page loaded, so a reload or a shared link comes back here.
        push_url(response, f"{session.get_absolute_url()}?{_keep_query(q, within, at=page.rows[0].seq)}")
    return response


def _keep_query(q: str, within: find.ChainFilter, **more: int) -> str:
    """What the page's links carry so that the page they open stays in the same search and filter."""
    return urlencode({**({"q": q} if q else {}), **within.query(), **more})


@require_GET
def session_jump(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """The next (``dir=next``) or previous tool error, violation or user message from message ``from``: one query
    resolves it to a seq, then the page holding it opens there (the search, if any, kept). With none that way, the
    page stays where it was and says so."""
    session = services.session_for_user(request.user, session_id)
    kind = request.GET.get("kind", "")
    if kind not in find.JUMPS:
        raise BadRequest(f"kind: {kind!r} is not something to jump to; valid: {', '.join(find.JUMPS)}")
    forward = request.GET.get("dir", "next") != "prev"
    start = _int_or_none(request.GET.get("from"))
    if start is None:
        start = -1 if forward else session.message_count
    within = find.ChainFilter.from_query(request.GET.get("role"), request.GET.get("tool"))
    target = find.jump_target(session, kind, from_seq=start, forward=forward, within=within)
    keep = {**({"q": q} if (q := find.clean_query(request.GET.get("q"))) else {}), **within.query()}
    if target is None:
        here = min(max(start, 0), max(session.message_count - 1, 0))
        query = urlencode({**keep, "at": here, "none": f"{kind}-{'next' if forward else 'prev'}"})
        return redirect(f"{session.get_absolute_url()}?{query}#m-{here}")
    return redirect(f"{session.get_absolute_url()}?{urlencode({**keep, 'at': target})}#m-{target}")


def _jump_context(request: HtmxHttpRequest, session: models.Session, q: str, *, at: int | None,
                  page: services.MessagePage, within: find.ChainFilter) -> dict[str, Any]:
    """The jump bar's links from the place (the message asked for, else the page's first), and the tool errors
    listed in the header. No query for the links (each resolves when followed); the list costs one or two, none
    when the session has no errors."""
    place = at if at is not None else (page.rows[0].seq if page.rows else 0)
    base = reverse("agents:session_jump", args=[session.pk])
    keep = f"&{kept}" if (kept := _keep_query(q, within)) else ""
    links = [
        {"kind": kind, "label": label, "previous": f"{base}?kind={kind}&dir=prev&from={place}{keep}",
         "next": f"{base}?kind={kind}&dir=next&from={place}{keep}"}
        for kind, label in find.JUMPS.items()
        # Only what the session has: its header already says whether it has tool errors and violations.
        if kind == "user" or (kind == "error" and session.has_errors) or (kind == "violation" and session.violations)
    ]
    errors, error_total = find.tool_errors(session)
    none = request.GET.get("none", "")
    kind, _, direction = none.partition("-")
    return {
        "jumps": links,
        "jump_place": place,
        "jump_none": {"what": find.describe(kind), "after": direction == "next", "seq": place}
        if kind in find.JUMPS and direction in ("next", "prev") else None,
        "tool_errors": [{**find.as_dict(e), "href": _permalink(session, e.seq)} for e in errors],
        "tool_error_total": error_total,
        "tool_errors_hidden": max(0, error_total - len(errors)),
        "final_seq": session.message_count - 1,
        # The filter's choices: the session's tools (one query) and the roles.
        "filter_tools": find.session_tool_names(session),
        "filter_roles": find.ROLES,
    }


def _search_link(session: models.Session, q: str, seq: int, within: find.ChainFilter = find.NO_FILTER) -> str:
    """The session page at hit ``seq`` of the search ``q``: the page holding it, scrolled to it."""
    return f"{session.get_absolute_url()}?{_keep_query(q, within, at=seq)}#m-{seq}"


def _search_context(
    request: HtmxHttpRequest, session: models.Session, q: str, *, at: int | None, page: services.MessagePage,
    within: find.ChainFilter,
) -> dict[str, Any]:
    """The search bar: the query, and on a whole page where the place stands among its hits (one query).
    The place is the message asked for (``?at=``), else the page's first."""
    context: dict[str, Any] = {"q": q, "find": None}
    if not q or request.htmx:
        return context
    place = at if at is not None else (page.rows[0].seq if page.rows else 0)
    found = find.search_place(session, q, at=place, within=within)
    context.update(
        find=found,
        find_at=place,
        find_previous=_search_link(session, q, found.previous, within) if found.previous is not None else "",
        find_next=_search_link(session, q, found.next, within) if found.next is not None else "",
    )
    return context


def _metadata_context(session: models.Session) -> dict[str, Any]:
    """The session's stored metadata (pretty-printed), its tags and the tool definitions sent with it (where the
    format carried them), which the header shows (agent content: the template escapes all three)."""
    metadata = session.metadata if isinstance(session.metadata, dict) else {}
    tags = metadata.get("tags")
    return {
        "metadata_json": json.dumps(metadata, indent=2, ensure_ascii=False, default=str) if metadata else "",
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
        "tool_definitions": [_tool_definition(t) for t in session.tools] if isinstance(session.tools, list) else [],
    }


def _tool_definition(tool: Any) -> dict[str, str]:
    """One stored tool schema (Chat Completions shape, or a provider's own kept as it came) for the header."""
    function = tool.get("function") if isinstance(tool, dict) else None
    if isinstance(function, dict):
        name, description = function.get("name"), function.get("description")
        schema: Any = function.get("parameters")
    else:  # a built-in or custom tool of a provider: shown whole
        name = tool.get("name") or tool.get("type") if isinstance(tool, dict) else None
        description, schema = None, tool
    return {
        "name": str(name or "(unnamed)"),
        "description": str(description or ""),
        "schema": json.dumps(schema, indent=2, ensure_ascii=False, default=str) if schema is not None else "",
    }


def _add_gaps(session: models.Session, messages: list[MessageView]) -> None:
    """The time since the message before, on each message with a time: from the row above on the page, and for the
    page's first row from the message before the page (one query, only when that row has a time)."""
    if not messages:
        return
    # The messages whose predecessor is not the row above: the page's first, and in a filtered chain any row after
    # a hidden one. Their predecessors' times come in one query (none when no such row has a time).
    above: dict[int, dt.datetime | None] = {}
    wanted: list[int] = []
    for i, m in enumerate(messages):
        if i and messages[i - 1].row.seq == m.row.seq - 1:
            above[m.row.seq] = messages[i - 1].row.created_at
        elif m.row.created_at is not None and m.row.seq > 0:
            wanted.append(m.row.seq - 1)
    if wanted:
        rows = models.Message.objects.filter(session=session, seq__in=wanted).values_list("seq", "created_at")
        above |= {seq + 1: created for seq, created in rows}
    for m in messages:
        previous = above.get(m.row.seq)
        if m.row.created_at is not None and previous is not None:
            m.gap = _duration(m.row.created_at - previous)


def _duration(delta: dt.timedelta) -> str:
    """A gap as a reader takes it in: "+0.4 s", "+12 s", "+3 min 5 s", "+2 h 10 min", "+3 d 4 h"."""
    seconds = delta.total_seconds()
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    if seconds < 10:
        return f"{sign}{seconds:.1f} s"
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days} d {hours} h"
    if hours:
        return f"{sign}{hours} h {minutes} min"
    if minutes:
        return f"{sign}{minutes} min {secs} s"
    return f"{sign}{secs} s"


def _recount_choices(request: HtmxHttpRequest, session: models.Session) -> dict[str, Any] | None:
    """The session page's "count again with" form, for the project's editors: the counters and which to offer
    first (the agent's, when the session counts with another)."""
    if not services.editable_projects(request.user).filter(pk=session.agent.project_id).exists():
        return None
    return {
        "counters": sorted(COUNTERS),
        "suggested": session.agent.counter if session.agent.counter != session.token_counter else "",
    }


@require_POST
def session_recount(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Count the session's stored messages again with another counter and store the counts (POST-redirect-GET)."""
    session = services.session_for_user(request.user, session_id)
    if not services.editable_projects(request.user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("Counting a session again needs the editor or admin role in its project.")
    try:
        services.session_recount(session=session, counter=request.POST.get("counter", ""), user=request.user)
    except services.RecountError as exc:
        raise BadRequest(str(exc)) from None
    return redirect(f"{session.get_absolute_url()}?recounted=1")


@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Delete a session (editors and admins of its project): GET asks to confirm, saying what goes with it; POST
    deletes and opens the list. Someone outside the project gets 404, a viewer or annotator 403 (the role check is
    ``services.session_delete``'s, asked first on GET too)."""
    session = services.session_for_user(request.user, session_id)
    if request.method == "POST":
        name = session.title or session.external_id or f"#{session.pk}"
        services.session_delete(user=request.user, session=session)
        flash.success(request, f"Deleted the session {name!r} and its {session.message_count:,} messages.")
        to = f"{reverse('agents:session_list')}?agent={session.agent_id}"
        return HttpResponseClientRedirect(to) if request.htmx else redirect(to)
    services.require_role(request.user, session.agent.project, "edit")
    context = {"session": session, "annotation_count": session.annotations.count()}
    return render(request, "agents/session_delete.html", context)


def _review_context(request: HtmxHttpRequest, session: models.Session, messages: list[MessageView]) -> dict[str, Any]:
    """The review panel, each message's annotations, and the queue when the page was opened from it."""
    context = review.session_review_context(
        request.user, session,
        first_seq=messages[0].row.seq if messages else None, last_seq=messages[-1].row.seq if messages else None,
    )
    for m in messages:
        m.annotations = context["annotations_by_seq"].get(m.row.seq, [])
    context["annotate_seq"] = _int_or_none(request.GET.get("annotate"))
    context["queue"] = review.queue_state(request.user, request.GET.get("queue"))
    return context


def _add_llm_calls(session: models.Session, messages: list[MessageView]) -> None:
    """On each message a captured call produced: how much of the chain before it the call was sent."""
    calls = services.llm_calls_by_reply(session, (m.row.seq for m in messages if m.row.role == "assistant"))
    for m in messages:
        call = calls.get(m.row.seq)
        if call is None:
            continue
        received = len(set(call.sent))
        before = m.row.seq  # the call's reply_seq: the calls come keyed by it
        m.llm_call = {
            "sent": received,
            "before": before,
            "left_out": max(before - received, 0),
            "violations": [v for v in call.sent_violations if v.get("severity") == "error"],
            "href": reverse("agents:llm_call", args=[session.pk, call.pk]),
            "model": call.model,
        }


@require_GET
def llm_call(request: HtmxHttpRequest, session_id: int, call_id: int) -> HttpResponse:
    """Exactly what one captured call was sent, in its order, with the violations of that list."""
    session, call = services.llm_call_for_user(request.user, session_id, call_id)
    sent = services.llm_call_sent_messages(call)
    by_position: dict[int, list[dict[str, Any]]] = {}
    for violation in call.sent_violations:
        by_position.setdefault(violation.get("index", -1), []).append(violation)
    rows = []
    previous = -1
    for position, row in enumerate(sent):
        gap = row.seq - previous - 1 if row.seq > previous else 0
        rows.append({"row": row, "position": position, "gap": gap, "violations": by_position.get(position, []),
                     "permalink": _permalink(session, row.seq), "text": _display_text(row)[0],
                     "calls": [_call_view(tc) for tc in row.tool_calls]})
        previous = max(previous, row.seq)
    before = call.reply_seq if call.reply_seq is not None else session.message_count
    context = {"session": session, "call": call, "rows": rows, "received": len(set(call.sent)), "before": before,
               "left_out": max(before - len(set(call.sent)), 0),
               "reply_href": _permalink(session, call.reply_seq) if call.reply_seq is not None else ""}
    return render(request, "agents/llm_call.html", context)


def _page_range(
    request: HtmxHttpRequest, session: models.Session, page: services.MessagePage, *, keep: str = "",
    within: find.ChainFilter = find.NO_FILTER,
) -> dict[str, Any]:
    """What the paging line says and links to.

    ``first`` is the first message on screen: this page's first row, or for a page appended by "load more"
    the ``start`` the button carried (the screen then shows everything from there).
    """
    rows = page.rows
    if not rows:
        return {"empty_after": page.after if page.after is not None and page.after >= 0 else None}
    start = _int_or_none(request.GET.get("start")) if request.htmx else None
    first = start if start is not None and 0 <= start <= rows[0].seq else rows[0].seq
    last = rows[-1].seq
    earlier = ""
    earlier_fragment = ""
    if within.active:
        # Filtered: the page of shown messages just before this one (one query), if the filter shows any.
        before = (services.session_filtered_page_before(session, within=within, before=rows[0].seq)
                  if rows[0].seq else None)
        previous_after, nearest = before if before is not None else (None, None)
    else:
        previous_after = rows[0].seq - services.MESSAGE_PAGE_SIZE - 1 if rows[0].seq > 0 else None
        nearest = rows[0].seq - 1
    if previous_after is not None:
        # The page just before this one, landing on the message just before this page's first.
        base = f"?after={previous_after}" if previous_after >= 0 else session.get_absolute_url()
        if keep:  # the search and filter, so the earlier page keeps its highlights and shows the same messages
            base += ("&" if "?" in base else "?") + keep
        earlier = f"{base}#m-{nearest}"
        # The same page as a fragment that "load earlier" puts in front of this one.
        earlier_fragment = f"{session.get_absolute_url()}?{urlencode({'after': previous_after, 'earlier': 1})}"
        earlier_fragment += f"&{keep}" if keep else ""
    return {"first": first, "last": last, "from_start": first == 0, "earlier": earlier,
            "earlier_fragment": earlier_fragment, "empty_after": None}


def _int_or_none(value: str | None) -> int | None:
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return None
    return number if number is None or number >= -1 else None


def _permalink(session: models.Session, seq: int) -> str:
    """A link that opens the page holding message ``seq`` (``?at=``) and scrolls to it."""
    return f"{session.get_absolute_url()}?at={seq}#m-{seq}"


def _message_views(session: models.Session, chain: services.ChainPage) -> list[MessageView]:
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for violation in session.violations or []:
        by_seq.setdefault(violation.get("seq", violation.get("index", -1)), []).append(violation)
    window = max(session.agent.context_window, 1)
    out: list[MessageView] = []
    for row in chain.page.rows:
        running = row.token_running  # stored at import: this message and all before it
        place = chain.results.get(row.seq)
        text, is_json = _display_text(row)
        out.append(
            MessageView(
                row=row,
                permalink=_permalink(session, row.seq),
                running_total=running,
                window_percent=round(min(running / window, 1.0) * 100, 1),
                over_window=running > window,
                violations=by_seq.get(row.seq, []),
                in_exchange=place is not None and place.in_exchange,
                call_name=place.call_name if place is not None else "",
                # A late result, or one whose call is on another page: a link to the call.
                call_href=_permalink(session, place.call_index) if place and place.call_index is not None else "",
                calls=[_call_view(tc) for tc in row.tool_calls],
                text=text,
                is_json=is_json,
                fold=len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES,
                preview=_preview(row.content or ""),
                usage=_usage_items(row.usage),
                markdown=markdown_to_safe_html(text) if row.role == "assistant" and text.strip() else "",
            )
        )
    return out


USAGE_ITEMS = 12


def _usage_items(usage: Any) -> list[tuple[str, str]]:
    """A message's stored usage as (key, shown value) pairs, nested keys joined with a dot
    (``input_token_details.cache_read``): each format names its figures its own way (``prompt_tokens``,
    ``input_tokens``, ...), so they are shown as stored. At most USAGE_ITEMS; agent content, escaped by the
    template."""
    items: list[tuple[str, str]] = []

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{prefix}.{key}" if prefix else str(key))
        elif value is not None and len(items) < USAGE_ITEMS:
            shown = intcomma(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
            items.append((prefix, shown[:80]))

    if isinstance(usage, dict):
        walk(usage, "")
    return items


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


@require_http_methods(["GET", "POST"])
def agent_detail(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """An agent: what it is and how many sessions it has; its project's editors change its name, description,
    model and context window here (viewers see them read-only)."""
    agent = services.agent_for_user(request.user, agent_id)
    can_edit = services.agent_editable(request.user, agent)
    form = AgentForm(initial=AgentForm.initial_for(agent)) if can_edit else None
    saved = False
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Changing an agent needs the editor or admin role in its project.")
        form = AgentForm(request.POST)
        if form.is_valid():
            services.agent_update(agent=agent, user=request.user, changes=form.cleaned_data)
            if not request.htmx:
                flash.success(request, "Saved.")
                return redirect(agent)
            saved = True
    context = {
        "agent": agent,
        "form": form,
        "can_edit": can_edit,
        "saved": saved,
        "session_count": agent.sessions.filter(state=models.Session.State.READY).count(),
        "agent_sessions_url": f"{reverse('agents:session_list')}?project={agent.project.slug}&agent={agent.pk}",
    }
    template_name = "agents/agent_detail.html"
    if request.htmx:
        template_name += "#agent-card"
    return render(request, template_name, context)



@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico before (or without) reading the page's <link rel="icon">, logged in or not. The
    static URL is read per request: with the manifest storage it exists only after collectstatic."""
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))
