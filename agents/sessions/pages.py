"""What the session page shows, read and decided in one call from its view: the view parses the request, calls
``session_page``, and renders what it returns (the export page's twin is ``transfer.pages``, the lab's ``lab.pages``).

It sits above the services it composes (the session's pages of messages, ``find``, the review panel, the captured
calls) and below the view, so that a request goes view -> here -> services -> core and comes back up once, to
render.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.humanize.templatetags.humanize import intcomma
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from agents import access, models
from agents.capture import calls as capture_calls
from agents.ledger import compactions_shown, recalls_shown, writes_shown
from agents.ledger import findings as ledger_findings
from agents.ledger.pages import agents_with_memory
from agents.memory.tokens import COUNTERS
from agents.review import workflow
from agents.sessions import chain as sessions_chain
from agents.sessions import find
from agents.sessions.find import permalink
from agents.sessions.message_html import MessageView, message_html
from agents.sessions.safe_markdown import markdown_to_safe_html

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
    session = access.session_for_user(user, session_id, compacted=compactions_shown.has_compactions(),
                                      wrote=writes_shown.has_writes())
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
    memory_findings, recalls = _add_memory_findings(session, messages, summary=not fragment)
    if recalls:  # a session without recalls reads none (the findings' aggregate counted them)
        _add_recalls(session, messages)
    if getattr(session, "wrote", False):  # nor one that wrote no memory (the annotation above)
        _add_writes(session, messages)
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
        "memory_findings": memory_findings,
        "page_size": sessions_chain.MESSAGE_PAGE_SIZE,
        "per_list": chain.per_list,
        "recount": _recount_choices(user, session),
        "recounted": recounted,
        "live": session.is_live,
        "last_seq": page.rows[-1].seq if page.rows else (page.after if page.after is not None else -1),
        **_review_context(user, session, messages, annotate=annotate, queue=queue),
        # The agent's memory page, in the header, when it has stores (the header is not part of a fragment).
        "memory_url": reverse("agents:agent_memory", args=[session.agent_id])
        if not fragment and agents_with_memory([session.agent]) else "",
    }
    found = context["find"]
    current = place if found is not None and found.here else None
    window = session.agent.context_window
    annotate = bool(context["can"]["annotate"])
    compactions = _compactions(session, messages)
    window_url = reverse("agents:session_window", args=[session.pk])  # once, not per reply
    for m in messages:
        m.html = message_html(m, q=q, current=current, annotate=annotate, window=window)
        if m.row.role == "assistant":
            m.html = _with_window_disclosure(m, window_url)
        if m.row.seq in compactions:
            m.html = SafeString(compactions[m.row.seq] + m.html)
    address = ""
    if fragment and page.rows:
        # "Load more": the address follows to the page loaded, so a reload or a shared link comes back here.
        address = f"{session.get_absolute_url()}?{_keep_query(q, within, at=page.rows[0].seq)}"
    return SessionPage(context, address=address)


# The end of a message's body and article, as message_html writes it: the disclosure goes just before.
_MESSAGE_END = "\n      </div>\n    </article>\n"


def _with_window_disclosure(m: MessageView, window_url: str) -> SafeString:
    """A reply's "What filled the window": a <details> that loads the bar (agents.ledger.window_views) when first
    opened, so the page reads nothing for it; its link opens the bar's own page without JavaScript. A reply a
    captured call produced shows what that call was sent."""
    query = f"call={m.llm_call['id']}" if m.llm_call else f"seq={m.row.seq}"
    url = f"{window_url}?{query}"
    what = "the call's input, by part" if m.llm_call else "every message before it, by part"
    disclosure = (f'\n        <details class="window-disclosure" id="window-{m.row.seq}" hx-get="{url}" '
                  f'hx-trigger="toggle once" hx-target="find .window-slot" hx-swap="innerHTML">'
                  f'<summary class="small" title="What this reply\'s call was sent: {what}, against the context '
                  f'window">What filled the window</summary><div class="window-slot"><a class="small" href="{url}">'
                  "Open the window bar</a></div></details>")
    html = m.html
    if html.endswith(_MESSAGE_END):
        return SafeString(html[: -len(_MESSAGE_END)] + disclosure + _MESSAGE_END)
    return SafeString(html + disclosure)


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
    context = workflow.session_review_context(
        user, session,
        first_seq=messages[0].row.seq if messages else None, last_seq=messages[-1].row.seq if messages else None,
    )
    for m in messages:
        m.annotations = context["annotations_by_seq"].get(m.row.seq, [])
    context["annotate_seq"] = annotate
    context["queue"] = workflow.queue_state(user, queue)
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
            "id": call.pk,
            "sent": received,
            "before": before,
            "left_out": max(before - received, 0),
            "violations": [v for v in call.sent_violations if v.get("severity") == "error"],
            "href": reverse("agents:llm_call", args=[session.pk, call.pk]),
            "model": call.model,
            "sent_seqs": set(call.sent),  # which earlier messages it received: a recall sent again or not
        }




def _compactions(session: models.Session, messages: list[MessageView]) -> dict[int, SafeString]:
    """By seq, the compaction events shown before the message (ledger.compactions_shown: one query for the page's
    range, none when the session has no compactions)."""
    if not messages or not getattr(session, "compacted", False):
        return {}
    shown = compactions_shown.session_compactions_shown(session, messages[0].row.seq, messages[-1].row.seq)
    return {seq: SafeString("".join(_compaction_html(session, c) for c in events)) for seq, events in shown.items()}


def _compaction_html(session: models.Session, c: compactions_shown.CompactionShown) -> SafeString:
    """One event row: what went out (linked to its first and last message) and the summary that came in, folded."""
    out: str
    if c.went_out and c.first_out is not None and c.last_out is not None:
        n, first, last = c.went_out, c.first_out, c.last_out
        span = (format_html('<a href="{}">#{}</a>', permalink(session, first), first) if first == last else
                format_html('<a href="{}">#{}</a>\u2013<a href="{}">#{}</a>', permalink(session, first), first,
                            permalink(session, last), last))
        out = format_html("{} message{} went out ({})", n, "" if n == 1 else "s", span)
    elif c.went_out is None:
        out = "what went out is not recorded"
    else:
        out = "nothing went out of what the call after it was sent"
    if c.summary is None:
        came, summary = "no summary captured", ""
    else:
        came = "a summary came in"
        summary = format_html('<details class="compaction-summary"><summary>Summary</summary>'
                              '<div class="compaction-text">{}</div></details>', c.summary)
    return format_html('\n    <aside id="compaction-{}" class="compaction-event" aria-label="Compaction before message '
                       '{}"><p class="compaction-head"><strong>Compacted:</strong> {}, {}</p>{}</aside>',
                       c.pk, c.seq, out, came, summary)


def _add_memory_findings(session: models.Session, messages: list[MessageView], *,
                         summary: bool) -> tuple[dict[str, Any] | None, int]:
    """On each message, the memory findings flagged on it (ledger.findings, for the page's range only); and for a
    whole page the summary at the top: how many of each kind, what to do about it, a link to the first. None when
    the session has none. With it, how many recalls the session has."""
    shown = ledger_findings.session_findings_shown(
        session, messages[0].row.seq if messages else None, messages[-1].row.seq if messages else None,
        summary=summary)
    if not shown.total:
        return None, shown.recalls
    for m in messages:
        m.memory_findings = [
            {"kind": f.kind, "message": f.message, "advice": ledger_findings.advice(f.kind),
             "record_url": reverse("agents:memory_record", args=[f.record_id]) if f.record_id else ""}
            for f in shown.by_seq.get(m.row.seq, [])]
    return {
        "total": shown.total,
        "kinds": [{"kind": k.kind, "count": k.count, "advice": k.advice, "first_seq": k.first_seq,
                   "href": permalink(session, k.first_seq) if k.first_seq is not None else ""} for k in shown.kinds],
        "api_url": reverse("api:session_memory_findings", args=[session.pk]),
    }, shown.recalls


def _add_writes(session: models.Session, messages: list[MessageView]) -> None:
    """On each message that caused memory writes, what it wrote (ledger.writes_shown: one query for the page's
    range), each linked to the record's page at that version."""
    if not messages:
        return
    shown = writes_shown.session_writes_shown(session, messages[0].row.seq, messages[-1].row.seq)
    record_base = reverse("agents:memory_record", args=[0]).removesuffix("0/")  # once, not per write
    for m in messages:
        m.writes = [{"store": w.store, "record": w.record, "number": w.number, "op": w.op, "text": w.text,
                     "captured": w.body_captured, "href": f"{record_base}{w.record_id}/?versions_before="
                                                          f"{w.number + 1}#v-{w.number}"}
                    for w in shown.get(m.row.seq, [])]


def _add_recalls(session: models.Session, messages: list[MessageView]) -> None:
    """On each message carrying recalls, what was recalled (ledger.recalls_shown, for the page's range only: two
    queries wherever the page stands); on each later reply, the persisted recalls it was sent again."""
    if not messages:
        return
    shown = recalls_shown.session_recalls_shown(session, messages[0].row.seq, messages[-1].row.seq)
    url = session.get_absolute_url()
    first = messages[0].row.seq
    record_base = reverse("agents:memory_record", args=[0]).removesuffix("0/")  # once, not per item
    recall_base = reverse("agents:memory_recall", args=[0]).removesuffix("0/")

    def record_url(item: recalls_shown.ItemShown) -> str:
        if item.record_id is None:
            return ""
        return f"{record_base}{item.record_id}/" + (f"#v-{item.version}" if item.version is not None else "")

    for m in messages:
        seq = m.row.seq
        m.recalls = [{
            "store": r.store, "query": r.query, "params": _params_shown(r.params), "placement": r.placement,
            "persisted": r.persisted, "url": f"{recall_base}{r.pk}/",
            "items": [{"rank": i.rank, "score": i.score, "text": i.text, "record_url": record_url(i),
                       "version": i.version} for i in r.items],
        } for r in shown.by_seq.get(seq, [])]
        if m.row.role != "assistant":
            continue
        sent = m.llm_call.get("sent_seqs") if m.llm_call else None
        again, more = shown.sent_again(seq, sent)
        if again:
            m.sent_again = {
                "recalls": [{"seq": r.seq, "store": r.store, "href": f"{url}?at={r.seq}#m-{r.seq}"}
                            for r in again[:recalls_shown.EARLIER_READ]],
                "others": len(again) - recalls_shown.EARLIER_READ if len(again) > recalls_shown.EARLIER_READ else 0,
                # Persisted recalls before the page were read only up to EARLIER_READ: more came before those, and
                # a reply sent the last of them was sent those too (unless its captured call says otherwise).
                "more": more and sent is None and any(r.seq < first for r in again),
            }


def _params_shown(params: dict[str, Any]) -> list[tuple[str, str]]:
    """A recall's parameters (limit, threshold, ...) as (name, shown value) pairs, as stored; agent content, escaped
    where rendered."""
    return [(str(key), (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))[:80])
            for key, value in list(params.items())[:8]]


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


