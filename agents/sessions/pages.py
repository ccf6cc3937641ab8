"""What a page shows, read and decided in one call from its view: the view parses the request, calls one function
here, and renders what it returns (the session page; the export page and download; the lab).

These functions sit above the services they compose (``services``, ``find``, ``review``, ``exports``, ``jobs``,
``lab``) and below every view module, so that a request goes view -> here -> services -> core and comes back up
once, to render.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.humanize.templatetags.humanize import intcomma
from django.db.models import Count, Sum
from django.http import QueryDict
from django.urls import reverse

from agents import access, models
from agents.capture import calls as capture_calls
from agents.jobs import queue as jobs_queue
from agents.lab import charts, presets, previews
from agents.lab import trimming as lab_trimming
from agents.lab.forms import strategy_params_form
from agents.memory import formats
from agents.memory.replay import Replay
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import (
    MEMORY_KINDS,
    STRATEGIES,
    StrategyError,
    StrategySpec,
    get_strategy,
    spec_from_pairs,
    split_pairs,
    strategy_spec,
)
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry
from agents.review import annotating
from agents.sessions import chain as sessions_chain
from agents.sessions import find
from agents.sessions.find import permalink
from agents.sessions.message_html import MessageView, message_html
from agents.sessions.safe_markdown import markdown_to_safe_html
from agents.store import listing
from agents.store.filters import SessionFilterForm, session_filter_pairs
from agents.transfer import exports

# --- the session page -------------------------------------------------------------------------------------------

# Contents longer than this are folded under a <details> with a one-line preview.
FOLD_CHARS = 1200
FOLD_LINES = 24
VIOLATIONS_LISTED = 200


@dataclass
class SessionPage:
    """Everything the session page renders: its context, or where a search lands instead (``redirect``), and for
    a page that "load more" appends, the address the browser's location follows to (``address``)."""

    context: dict[str, Any]
    redirect: str = ""
    address: str = ""


def session_page(
    *,
    user: access.User,
    session_id: int,
    after: int | None = None,
    at: int | None = None,
    q: str | None = None,
    fragment: bool = False,
    start: int | None = None,
    none: str = "",
    annotate: int | None = None,
    queue: str | None = None,
    recounted: bool = False,
    role: str | None = None,
    tool: str | None = None,
) -> SessionPage:
    """The session page after message ``after`` or holding message ``at`` (404 when the session is not in the user's
    projects). ``fragment``: an htmx request for a part of it (no search summary, no jump bar). ``start``: the
    first message on screen for a page "load more" appends; ``none``: the jump that found nothing
    (``kind-next``/``kind-prev``); ``annotate``: the message whose annotation form is open; ``queue``: the list's
    query when the page was opened from the review queue; ``role``, ``tool``: show only these messages."""
    q = find.clean_query(q)
    within = find.ChainFilter.from_query(role, tool)
    session = access.session_for_user(user, session_id)
    if q and at is None and after is None and not fragment:
        # A search (the page's own form, or a session opened from a list search) lands on its first hit.
        first = find.first_hit(session, q, within)
        if first is not None:
            return SessionPage({}, redirect=_search_link(session, q, first, within))
    chain = sessions_chain.session_chain_page(session, after=after, at=at, within=within)
    page = chain.page
    messages = _message_views(session, chain)
    _add_llm_calls(session, messages)
    for m in messages:
        m.hit = find.message_mentions(m.row, q)
    _add_gaps(session, messages)
    violations = session.violations or []
    keep = _keep_query(q, within)
    # Where the page stands, for the search and the jumps: the message asked for, else the page's first.
    place = at if at is not None else (page.rows[0].seq if page.rows else 0)
    context = {
        "session": session,
        "page": page,
        "messages": messages,
        "range": _page_range(session, page, start=start, keep=keep, within=within),
        "within": within,
        "within_count": within.count(session) if within.active and not fragment else None,
        "keep_query": keep,
        **_search_context(session, q, place=place, within=within, fragment=fragment),
        **_metadata_context(session),
        **(_jump_context(session, q, place=place, within=within, none=none) if not fragment else {}),
        "missing_at": at if at is not None and at >= session.message_count else None,
        "violations": violations,
        "violation_links": [
            {**v, "href": permalink(session, v.get("seq", v.get("index", 0)))} for v in violations[:VIOLATIONS_LISTED]
        ],
        "violations_hidden": max(0, len(violations) - VIOLATIONS_LISTED),
        "page_size": sessions_chain.MESSAGE_PAGE_SIZE,
        "per_list": chain.per_list,
        "recount": _recount_choices(user, session),
        "recounted": recounted,
        "live": session.is_live,
        "last_seq": page.rows[-1].seq if page.rows else (page.after if page.after is not None else -1),
        **_review_context(user, session, messages, annotate=annotate, queue=queue),
    }
    found = context["find"]
    current = place if found is not None and found.here else None
    window = session.agent.context_window
    annotate = bool(context["can"]["annotate"])
    for m in messages:
        m.html = message_html(m, q=q, current=current, annotate=annotate, window=window)
    address = ""
    if fragment and page.rows:
        # "Load more": the address follows to the page loaded, so a reload or a shared link comes back here.
        address = f"{session.get_absolute_url()}?{_keep_query(q, within, at=page.rows[0].seq)}"
    return SessionPage(context, address=address)


def _keep_query(q: str, within: find.ChainFilter, **more: int) -> str:
    """What the page's links carry so that the page they open stays in the same search and filter."""
    return urlencode({**({"q": q} if q else {}), **within.query(), **more})


def _jump_context(session: models.Session, q: str, *, place: int, within: find.ChainFilter,
                  none: str) -> dict[str, Any]:
    """The jump bar's links from the place, and the tool errors listed in the header. No query for the links
    (each resolves when followed); the list costs one or two, none when the session has no errors."""
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
    kind, _, direction = none.partition("-")
    return {
        "jumps": links,
        "jump_place": place,
        "jump_none": {"what": find.JUMPS[kind], "after": direction == "next", "seq": place}
        if kind in find.JUMPS and direction in ("next", "prev") else None,
        "tool_errors": [{**dataclasses.asdict(e), "href": permalink(session, e.seq)} for e in errors],
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
    session: models.Session, q: str, *, place: int, within: find.ChainFilter, fragment: bool
) -> dict[str, Any]:
    """The search bar: the query, and on a whole page where the place stands among its hits (one query)."""
    context: dict[str, Any] = {"q": q, "find": None}
    if not q or fragment:
        return context
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


def _recount_choices(user: access.User, session: models.Session) -> dict[str, Any] | None:
    """The session page's "count again with" form, for the project's editors: the counters and which to offer
    first (the agent's, when the session counts with another)."""
    if not access.editable_projects(user).filter(pk=session.agent.project_id).exists():
        return None
    return {
        "counters": sorted(COUNTERS),
        "suggested": session.agent.counter if session.agent.counter != session.token_counter else "",
    }


def _review_context(user: access.User, session: models.Session, messages: list[MessageView], *,
                    annotate: int | None, queue: str | None) -> dict[str, Any]:
    """The review panel, each message's annotations, and the queue when the page was opened from it."""
    context = annotating.session_review_context(
        user, session,
        first_seq=messages[0].row.seq if messages else None, last_seq=messages[-1].row.seq if messages else None,
    )
    for m in messages:
        m.annotations = context["annotations_by_seq"].get(m.row.seq, [])
    context["annotate_seq"] = annotate
    context["queue"] = annotating.queue_state(user, queue)
    return context


def _add_llm_calls(session: models.Session, messages: list[MessageView]) -> None:
    """On each message a captured call produced: how much of the chain before it the call was sent."""
    calls = capture_calls.llm_calls_by_reply(session, (m.row.seq for m in messages if m.row.role == "assistant"))
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


def _page_range(
    session: models.Session, page: sessions_chain.MessagePage, *, start: int | None, keep: str = "",
    within: find.ChainFilter = find.NO_FILTER,
) -> dict[str, Any]:
    """What the paging line says and links to.

    ``first`` is the first message on screen: this page's first row, or for a page appended by "load more"
    the ``start`` the button carried (the screen then shows everything from there).
    """
    rows = page.rows
    if not rows:
        return {"empty_after": page.after if page.after is not None and page.after >= 0 else None}
    first = start if start is not None and 0 <= start <= rows[0].seq else rows[0].seq
    last = rows[-1].seq
    earlier = ""
    earlier_fragment = ""
    if within.active:
        # Filtered: the page of shown messages just before this one (one query), if the filter shows any.
        before = (sessions_chain.session_filtered_page_before(session, within=within, before=rows[0].seq)
                  if rows[0].seq else None)
        previous_after, nearest = before if before is not None else (None, None)
    else:
        previous_after = rows[0].seq - sessions_chain.MESSAGE_PAGE_SIZE - 1 if rows[0].seq > 0 else None
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


def _message_views(session: models.Session, chain: sessions_chain.ChainPage) -> list[MessageView]:
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for violation in session.violations or []:
        by_seq.setdefault(violation.get("seq", violation.get("index", -1)), []).append(violation)
    window = max(session.agent.context_window, 1)
    url = session.get_absolute_url()  # once: reverse() per message cost more than the rest of the loop

    def link(seq: int) -> str:  # find.permalink, without reversing the URL again
        return f"{url}?at={seq}#m-{seq}"

    out: list[MessageView] = []
    for row in chain.page.rows:
        running = row.token_running  # stored at import: this message and all before it
        place = chain.results.get(row.seq)
        text, is_json = display_text(row)
        out.append(
            MessageView(
                row=row,
                permalink=link(row.seq),
                running_total=running,
                window_percent=round(min(running / window, 1.0) * 100, 1),
                over_window=running > window,
                violations=by_seq.get(row.seq, []),
                in_exchange=place is not None and place.in_exchange,
                call_name=place.call_name if place is not None else "",
                # A late result, or one whose call is on another page: a link to the call.
                call_href=link(place.call_index) if place and place.call_index is not None else "",
                calls=[call_view(tc) for tc in row.tool_calls],
                text=text,
                is_json=is_json,
                fold=len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES,
                preview=find.preview(row.content or "", 160),
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


def display_text(row: models.Message) -> tuple[str, bool]:
    """The content as shown: tool results that are JSON are pretty-printed, everything else as written."""
    text = row.content or ""
    if row.role == "tool" and text[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False), True
        except ValueError:
            pass
    return text, False


def call_view(tool_call: dict[str, Any]) -> dict[str, Any]:
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



# --- export: the page and the download --------------------------------------------------------------------------


@dataclass
class ExportAnswer:
    """What an export request answers: the export page (``page``, its context: a GET, or what is wrong), a job
    (``job``) that writes a file too long for one request, or the download (``chunks`` to stream, with its file
    name, media type, and the conversations the file leaves out)."""

    page: dict[str, Any] | None = None
    job: models.BackgroundJob | None = None
    chunks: Iterator[str] | None = None
    filename: str = ""
    media_type: str = ""
    skipped: list[str] = field(default_factory=list)


def export_request(*, user: access.User, data: Any, download: bool, session_id: int | None = None,
                   interface: str = "web") -> ExportAnswer:
    """One session (``session_id``: 404 when not in the user's projects) or the sessions matching the list's filters
    in ``data`` (the same fields as the session list's query string), whole or as trimmed by ``strategy=`` and
    ``params=``. ``download``: the file (a POST); else the export page filled in from ``data``. ``interface``: who
    asks, for the export record ("web" or "api")."""
    single: models.Session | None = None
    refusal = ""
    listed: listing.SessionFilters | None = None
    if session_id is not None:
        single = access.session_for_user(user, session_id)
        sessions = access.sessions_for_user(user).filter(pk=single.pk)
        scope = f"session {single.pk} ({single.title or single.external_id})"
        filters: dict[str, Any] = {"session": single.pk}
    else:
        form = SessionFilterForm(data, user=user)
        filters = {k: v for k, v in data.items() if k in form.fields and k != "sort" and v}
        scope = "sessions matching " + (", ".join(f"{k}={v}" for k, v in filters.items()) or "no filter (all)")
        # The list page may ignore an invalid field and show its error, or clear an agent of another project; an
        # export must not: dropping a filter widens what is downloaded (a project the user is not in would read
        # as "all").
        refusal = form.refusal()
        listed = form.filters()
        sessions = models.Session.objects.none() if refusal else listing.sessions_filtered(user, listed)
    try:
        if refusal:
            raise exports.ExportFailed(refusal)
        spec, counter = _export_spec(data, user=user, project=single.agent.project if single else None,
                                     filters=listed)
        plan = exports.export_plan(
            sessions=sessions, format=data.get("format") or "native", scope=scope, filters=filters,
            spec=spec, counter=counter, on_invalid=data.get("on_invalid") or "skip",
        )
        if not plan.sessions.exists():
            raise exports.ExportFailed("no session matches these filters")
        if not download:
            return ExportAnswer(page=_export_page(user, data, scope=scope, single=single, plan=plan))
        skipped = _skipped_or_refuse(plan)
    except exports.ExportFailed as exc:
        # The form and what is wrong (200), as every form here answers invalid input.
        return ExportAnswer(page=_export_page(user, data, scope=scope, single=single, error=str(exc)))
    filename = exports.export_filename(plan, single=single)
    total = plan.sessions.aggregate(n=Sum("message_count"))["n"] or 0
    if total > settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES:
        # Too long for one request: a worker writes the file, the job's page links it when done.
        params = {"session_ids": list(plan.sessions.values_list("pk", flat=True)), "format": plan.format,
                  "spec": plan.spec.text if plan.spec is not None else None, "counter": plan.counter,
                  "on_invalid": plan.on_invalid,
                  "scope": scope, "filters": filters, "filename": filename}
        return ExportAnswer(job=jobs_queue.job_enqueue(user=user, kind=models.BackgroundJob.Kind.EXPORT,
                                                       title=f"Export of {scope}", params=params, total=total))
    format_spec = formats.FORMATS[plan.format]
    return ExportAnswer(
        chunks=exports.export_chunks(plan, user=user, interface=interface),
        filename=filename,
        media_type=f"{getattr(format_spec, 'media_type', 'application/json')}; charset=utf-8",
        skipped=skipped,
    )


def _skipped_or_refuse(plan: exports.ExportPlan) -> list[str]:
    """For ``openai_jsonl``, the conversations that break the protocol, which the file leaves out; ExportFailed
    when it would leave out every one (an empty file says nothing) or was asked to stop on them."""
    if plan.format != "openai_jsonl":
        return []
    invalid = exports.invalid_sessions(plan)
    listed = "; ".join(invalid[:20]) + (f"; and {len(invalid) - 20} more" if len(invalid) > 20 else "")
    if invalid and plan.on_invalid == "stop":
        raise exports.ExportFailed(
            "stopped: these conversations break the protocol, and openai_jsonl was asked to stop on them "
            f"(choose 'skip' to leave them out): {listed}"
        )
    if invalid and len(invalid) == plan.sessions.count():
        every = "the conversation breaks" if len(invalid) == 1 else f"all {len(invalid)} conversations break"
        raise exports.ExportFailed(
            f"nothing to export: {every} the protocol, and openai_jsonl leaves out a conversation that does "
            f"(choose another format, or a strategy that keeps the protocol): {listed}"
        )
    return invalid


def _export_page(
    user: access.User, data: Any, *, scope: str, single: models.Session | None,
    plan: exports.ExportPlan | None = None, error: str = "",
) -> dict[str, Any]:
    """The export form on a page of its own, filled in from ``data``; with the error when there is one."""
    return {
        "session": single,
        "scope": scope,
        "plan": plan,
        "summary": plan.sessions.aggregate(sessions=Count("id"), messages=Sum("message_count")) if plan else None,
        "error": error,
        "values": {key: data.get(key, "") for key in ("format", "on_invalid", "strategy", "params")}
        | ({"strategy": presets.PRESET_PREFIX + data["preset"]} if data.get("preset") else {}),
        "presets": presets.presets_for_user(user, project=single.agent.project if single else None),
        "carried": [] if single else session_filter_pairs(data),
        "fixed_strategy": False,
        "back_url": single.get_absolute_url() if single else
        f"{reverse('agents:session_list')}?{urlencode(session_filter_pairs(data))}".rstrip("?"),
        "formats": list(formats.FORMATS.values()),
        "strategies": list(STRATEGIES),
    }


def _export_spec(
    query: Any, *, user: access.User, project: models.Project | None,
    filters: listing.SessionFilters | None = None,
) -> tuple[StrategySpec | None, str | None]:
    """The strategy of ``strategy=`` with its parameters from ``params=key=value, key=value`` and ``set=key=value``
    (repeatable), or a preset of the user's projects (of the session's, for one session; of the filtered project
    first, for the list's ``filters``): ``preset=NAME`` or ``strategy=preset:NAME``, which counts with its own
    counter; and the counter: ``counter=`` (what the lab counted with), else the preset's, else None (each session's
    own). An error names the field."""
    strategy = (query.get("strategy") or "").strip()
    preset = (query.get("preset") or "").strip()
    counter = (query.get("counter") or "").strip() or None
    if counter is not None and counter not in COUNTERS:
        raise exports.ExportFailed(f"counter: unknown counter '{counter}'; valid: {', '.join(sorted(COUNTERS))}")
    if counter is not None and not (strategy or preset):
        raise exports.ExportFailed("counter: counts the tokens of a trimmed export; give a strategy or a preset")
    if strategy.startswith(presets.PRESET_PREFIX) or preset:
        field = "preset" if preset else "strategy"
        if (preset and strategy) or query.getlist("set") or (query.get("params") or "").strip():
            raise exports.ExportFailed(f"{field}: give a preset, or a strategy with its parameters, not both")
        try:
            spec, found = presets.spec_or_preset(user=user, text=strategy or presets.PRESET_PREFIX + preset,
                                                 project=project, filters=filters)
        except presets.PresetError as exc:
            raise exports.ExportFailed(f"{field}: {exc}") from None
        return spec, presets.trim_counter(found, counter)
    try:
        return spec_from_pairs(
            query.get("strategy"), [*query.getlist("set"), *split_pairs(query.get("params", ""))]
        ), counter
    except StrategyError as exc:
        if not exc.problems:
            raise exports.ExportFailed(f"strategy: {exc}") from None
        field = "set" if query.getlist("set") and not query.get("params") else "params"
        raise exports.ExportFailed(exc.text(flag=f"{field}: ")) from None


# --- the lab: one session under one strategy --------------------------------------------------------------------

DEFAULT_STRATEGY = "buffered"


def lab_page(
    *, user: access.User, session_id: int, query: QueryDict, step: int | None, site: str, save_error: str = "",
    preset_name: str = "", replay_part: bool = False,
) -> dict[str, Any]:
    """The lab page's context for the session (404 when not in the user's projects) under the strategy, parameters
    and counter of ``query``, or of the preset it names (``?preset=NAME``), at call ``step`` of the replay.
    ``site``: the scheme and host that the trim API's URL to copy starts with; ``save_error``, ``preset_name``: a
    refused "save as preset" and the name typed.

    A session of more than ``MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES`` messages, with no step asked, is previewed
    without its replay (``replay_deferred``): the page asks for it in a second request, ``replay_part_query``
    (``replay_part=True``: the replay only, no preview), or ``inline_replay_query`` without JavaScript."""
    session = access.session_for_user(user, session_id)
    asked_query = query
    query, preset, preset_error = _lab_query(query, session)
    name = query.get("strategy") or DEFAULT_STRATEGY
    strategy_error = "" if name in STRATEGIES else f"unknown strategy '{name}'"
    strategy = STRATEGIES.get(name) or get_strategy(DEFAULT_STRATEGY)
    counter = query.get("counter") or session.token_counter
    counter_error = "" if counter in COUNTERS else (
        f"Unknown counter ‘{counter}’; counting with {session.token_counter}, the stored one."
    )
    if counter_error:
        counter = session.token_counter
    # The form says which strategy its parameters were for: after a switch (without JS) they start from defaults.
    params_for = query.get("params_for")
    form = strategy_params_form(strategy, None if params_for and params_for != strategy.name else query)
    asked, step = step, None
    preview = run = chart = None
    deferred = (asked is None and not replay_part and asked_query.get("replay") != "inline"
                and session.message_count > settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES)
    # An unknown strategy (or counter) shows the default one's preview, as its message says.
    if form.spec is not None:
        replayed = lab_trimming.session_replay(session=session, spec=form.spec, counter=counter,
                                               step=asked, replayed=not deferred)
        run, step = replayed.replay, replayed.step
        if not replay_part:
            # At a call of the run, its input is the messages before it.
            preview = previews.trim_preview(replayed.sent, replayed.counts[:replayed.sent_from], replayed.result)
        if run is not None:
            chart = charts.replay_chart(run.steps, chosen=step)
    spec = form.spec or strategy_spec(strategy)
    # Opened on a preset, the lab counts with the preset's counter: compare, the diff and the Export menu take the
    # preset itself, so that they count with it too (its strategy and parameters alone count with the session's).
    named = spec.text
    if preset is not None and form.spec is not None:
        named = presets.PRESET_PREFIX + preset.name
    # Counted again with another counter than the stored one (not a preset's own): the diff and the export too.
    recount = named == spec.text and counter != session.token_counter
    other = "safe_token_budget" if strategy.name != "safe_token_budget" else "buffered"
    return {
        "session": session,
        "catalog": strategies_by_framework(),
        "entry": strategy_entry(strategy),
        "strategy": strategy,
        "strategy_error": strategy_error,
        "form": form,
        "preview": preview,
        "counter": counter,
        "counter_error": counter_error,
        "counters": sorted(COUNTERS),
        "replay": run,
        "replay_deferred": deferred and form.spec is not None,
        "replay_part_query": _lab_part_query(asked_query, part="replay"),
        "inline_replay_query": _lab_part_query(asked_query, replay="inline"),
        "chart": chart,
        "step": step,
        "step_call": run.steps[step] if run is not None and step is not None else None,
        "memory_text": MEMORY_KINDS[strategy.memory],
        "replay_links": _replay_links(run, spec, counter, session) if run is not None else None,
        "preset": preset,
        "preset_error": preset_error,
        "presets": presets.presets_for_user(user, project=session.agent.project),
        "can_save_preset": access.editable_projects(user).filter(pk=session.agent.project_id).exists(),
        "spec": spec,
        "preset_fields": [(key, value) for key, values in QueryDict(spec.lab_query).lists() for value in values],
        "equivalents": previews.equivalents(site, session, spec, counter, preset) if form.spec is not None else None,
        "compare_query": urlencode([("s", named), ("s", other)]),
        "diff_query": urlencode({"trim": named, **({"counter": counter} if recount else {})}),
        # The Export menu of the trimmed view: the strategy and its changed parameters (``key=value,key=value``),
        # or the preset.
        "export_strategy": strategy.name if named == spec.text else named,
        "export_params": spec.text.partition(":")[2] if named == spec.text else "",
        "export_counter": counter if recount else "",
        "dropped_shown": previews.DROPPED_SHOWN,
        "preset_save_error": save_error,
        "preset_name": preset_name,
    }


def _lab_part_query(query: QueryDict, **extra: str) -> str:
    """The lab's query with ``extra`` in place of any ``part``, ``replay`` or ``step`` it has."""
    pairs = [(key, value) for key, values in query.lists() if key not in ("part", "replay", "step")
             for value in values]
    return urlencode([*pairs, *extra.items()])


def _lab_query(query: QueryDict, session: models.Session) -> tuple[QueryDict, models.Preset | None, str]:
    """The lab's query: the page's own, or, for ``?preset=NAME`` (a shared link), the preset's strategy,
    parameters and counter. Also the preset, and why it did not apply."""
    name = query.get("preset", "").strip()
    if not name:
        return query, None, ""
    try:
        preset = presets.preset_by_name(user=None, name=name, project=session.agent.project)
        spec = presets.preset_spec(preset)
    except presets.PresetError as exc:
        return query, None, str(exc)
    from_preset = QueryDict(spec.lab_query, mutable=True)
    from_preset["counter"] = preset.counter
    from_preset["params_for"] = spec.name
    return from_preset, preset, ""


def _replay_links(run: Replay, spec: StrategySpec, counter: str, session: models.Session) -> dict[str, Any]:
    """Where the replay's first violation and first lost question are, and the lab's query to link to a step."""
    query = spec.lab_query + (f"&{urlencode({'counter': counter})}" if counter != session.token_counter else "")
    query += f"&{urlencode({'params_for': spec.name})}"

    def at(step: int | None) -> dict[str, int] | None:
        return None if step is None else {"step": step, "call": run.steps[step].call}

    return {"query": query, "violation": at(run.first_violation), "question": at(run.first_question_lost)}
