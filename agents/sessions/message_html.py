"""One message of the session page as HTML, built in Python.

The session page shows up to ``sessions.chain.MESSAGE_PAGE_SIZE`` (300) messages; rendered by the template language,
each cost about 1.5 ms of CPU on a slow core (60 variable lookups, 40 ``{% if %}``, five ``intcomma`` and three
``date`` filters, each going through the locale machinery): 0.45 s of the page's 0.53 s. Built here, with the
same markup, a message costs a tenth of that. Everything the agent wrote goes through ``escape`` (or
``find.highlight``, which escapes and marks the search's hits); the Markdown view is the sanitiser's output
(``safe_markdown``), a ``SafeString`` already. A message's annotations, rare, are rendered by the template's
``message-annotations`` partial, which the review views also render on their own.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.template.loader import get_template
from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import is_aware, localtime

from agents.sessions import find

if TYPE_CHECKING:
    from agents import models

ANNOTATIONS_PARTIAL = "agents/session_detail.html#message-annotations"


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
    # The memory findings flagged on it (ledger.findings): {"kind", "message", "advice", "record_url"}.
    memory_findings: list[dict[str, str]] = field(default_factory=list)
    # The recalls it carries (ledger.recalls_shown): {"store", "query", "params", "placement", "persisted", "url"
    # (the recall's page), "items": [{"rank", "score", "text", "record_url", "version"}]}; shown instead of the text,
    # which stays under "as sent".
    recalls: list[dict[str, Any]] = field(default_factory=list)
    # A reply sent persisted recalls again: {"recalls": [{"seq", "store", "href"}], "others": int, "more": bool}.
    sent_again: dict[str, Any] | None = None
    # The memory writes it caused (ledger.writes_shown): {"store", "record", "number", "op", "text", "captured",
    # "href"} (href: the record's page at that version).
    writes: list[dict[str, Any]] = field(default_factory=list)
    html: str = ""  # the whole message as the page shows it (message_html), once everything above is set


def number(value: int) -> str:
    """An integer with thousands separators, as the ``intcomma`` filter writes it in the site's locale (en-us)."""
    return f"{value:,}"


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


def _time(value: dt.datetime) -> tuple[str, str, str]:
    """A message's time as the template's ``date`` filter wrote it: ``c`` (ISO 8601), ``Y-m-d H:i:s``, ``H:i:s``,
    in the current time zone."""
    local = localtime(value) if is_aware(value) else value  # as the filter's template_localtime does
    clock = f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
    return local.isoformat(), f"{local.year:04d}-{local.month:02d}-{local.day:02d} {clock}", clock


def _mentions(text: str, needle: str) -> bool:
    return bool(needle) and needle in text.casefold()


def _annotations(m: MessageView) -> str:
    seq = m.row.seq
    if not m.annotations:
        return f'\n<div id="ann-{seq}" class="msg-annotations"></div>\n'
    return str(get_template(ANNOTATIONS_PARTIAL).render({"seq": seq, "seq_annotations": m.annotations}))


def _text(m: MessageView, q: str) -> str:
    """The message's text: its Markdown view with the raw text under "raw", or (JSON, plain, or a search hit in
    it) the text as written, hits marked, with the Markdown view under "formatted"."""
    if m.markdown and not m.hit:
        return (f'<div class="text markdown">{m.markdown}</div><details class="raw-view"><summary class="small" '
                f'title="The text as the agent wrote it">raw</summary><div class="text">{escape(m.text)}</div>'
                "</details>")
    out = f'<div class="text{" json" if m.is_json else ""}">{find.highlight(m.text, q)}</div>'
    if m.markdown:
        out += ('<details class="formatted-view"><summary class="small" title="Shown as written while it holds a '
                f'search hit">formatted</summary><div class="text markdown">{m.markdown}</div></details>')
    return out


def _field(item: dict[str, Any], key: str) -> str:
    """``{{ item.key }}`` of the template: the value escaped, "" when the key is missing."""
    return str(conditional_escape(item[key])) if key in item else ""


# A recalled item's text longer than this is folded under a <details> with a one-line preview.
RECALL_FOLD_CHARS = 280


def _score(score: float | None) -> str:
    return "no score" if score is None else f"score {score:.3g}"


def _recall_item(item: dict[str, Any]) -> str:
    text = item["text"]
    if len(text) > RECALL_FOLD_CHARS or text.count("\n") > 4:
        shown = (f'<details class="recall-fold"><summary><span class="preview">{escape(find.preview(text, 120))}'
                 f'</span> <span class="muted small">({number(len(text))} chars)</span></summary>'
                 f'<div class="recall-text">{escape(text)}</div></details>')
    else:
        shown = f'<div class="recall-text">{escape(text)}</div>'
    if item["record_url"]:
        version = f" v{item['version']}" if item["version"] is not None else ""
        link = (f'<a class="recall-record small" href="{escape(item["record_url"])}" title="The record, at the '
                f'version this recall sent">record{version}</a>')
    else:
        link = ('<span class="recall-unmatched small" title="No record of the store holds this text">matches no '
                "record</span>")
    return (f'<li class="recall-item"><div class="recall-item-head"><span class="recall-rank mono">#{item["rank"]}'
            f'</span> <span class="recall-score mono small">{_score(item["score"])}</span> {link}</div>{shown}</li>')


def _recall_link(r: dict[str, Any]) -> str:
    if not r.get("url"):
        return ""
    return (f' <a class="small recall-open" href="{escape(r["url"])}" title="The recall on its own page: mark its '
            'items relevant or not, try another limit">open recall</a>')


def _recalls(m: MessageView) -> str:
    out = []
    for r in m.recalls:
        store = escape(r["store"]) if r["store"] else "a store not known"
        persisted = (' <span class="badge recall-persisted" title="The carrying message stays in the list: every '
                     'later call is sent it again">stays in the list</span>') if r["persisted"] else ""
        query = (f'<q class="recall-query-text">{escape(r["query"])}</q>' if r["query"]
                 else '<span class="muted">(no query)</span>')
        params = "".join(f' <span class="recall-param"><span class="mono">{escape(k)}</span> {escape(v)}</span>'
                         for k, v in r["params"])
        items = "".join(_recall_item(i) for i in r["items"])
        items = (f'<ol class="recall-items">{items}</ol>' if items
                 else '<div class="muted small">Nothing was found: no item sent.</div>')
        out.append(f'\n        <section class="recall-panel" aria-label="Recalled memory"><div class="recall-head">'
                   f'<strong>Recalled from</strong> <span class="recall-store">{store}</span>{persisted} '
                   f'<span class="muted small">{len(r["items"])} item{_plural(len(r["items"]))}</span>'
                   f'{_recall_link(r)}</div>'
                   f'<div class="recall-query small"><span class="muted">query</span> {query}{params}</div>'
                   f"{items}</section>")
    return "".join(out)


def _sent_again(m: MessageView) -> str:
    again = m.sent_again
    if not again:
        return ""
    recalls = again["recalls"]
    links = ", ".join(f'<a href="{escape(r["href"])}" title="Recalled from {escape(r["store"]) or "a store not known"}'
                      f'">#{r["seq"]}</a>' for r in recalls)
    tail = " and earlier ones" if again["more"] else (f" and {number(again['others'])} earlier" if again["others"]
                                                      else "")
    many = len(recalls) + again["others"] > 1 or again["more"]
    return (f'\n        <div class="sent-again-note small" title="Persisted recalls: their carrying messages stayed in '
            f'the list, so this call was sent them again">sent again: recall{"s" if many else ""} at {links}{tail}'
            "</div>")


def message_html(m: MessageView, *, q: str, current: int | None, annotate: bool, window: int) -> SafeString:
    """The ``<article>`` of one message. ``q``: the page's search (cleaned), whose hits are marked; ``current``:
    the hit the page stands on (``aria-current``), if any; ``annotate``: whether the user may annotate (the
    "note" link); ``window``: the agent's context window, in the token figures' tooltip."""
    row = m.row
    seq = row.seq
    role = escape(row.role)
    needle = find.clean_query(q).casefold()
    is_current = m.hit and current is not None and seq == current
    classes = (f"msg role-{role}{' in-exchange' if m.in_exchange else ''}{' has-violation' if m.violations else ''}"
               f"{' has-memory-finding' if m.memory_findings else ''}{' has-recall' if m.recalls else ''}"
               f"{' is-error' if row.is_error else ''}{' is-hit' if m.hit else ''}"
               f"{' hit-current' if is_current else ''}")
    permalink = escape(m.permalink)
    aria = ' aria-current="true"' if is_current else ""
    out = [
        f'\n    <article id="m-{seq}" class="{classes}"{aria}>\n'
        f'      <div class="msg-gutter">\n'
        f'        <a class="seq" href="{permalink}" title="Permalink to message {seq}">#{seq}</a>\n        ',
    ]
    if annotate:
        out.append(f'<a class="annotate-link small" href="?at={seq}&amp;annotate={seq}#annotate" '
                   f'data-annotate="{seq}" title="Annotate message {seq}">note</a>')
    out.append(f'\n      </div>\n      <div class="msg-body">\n        <header class="msg-head">\n'
               f'          <span class="role">{role}</span>\n          ')
    if row.name:
        out.append(f'<span class="name">{find.highlight(row.name, q)}</span>')
    out.append("\n          ")
    if row.role == "tool":
        out.append("\n            ")
        if m.call_name:
            name = escape(m.call_name)
            out.append('<span class="muted">result of</span> ')
            if m.call_href:
                out.append(f'<a class="tool-name" href="{escape(m.call_href)}" title="The call this answers">'
                           f"{name}</a>")
            else:
                out.append(f'<span class="tool-name">{name}</span>')
        out.append(f'\n            <span class="mono small call-id" title="tool_call_id">{escape(row.tool_call_id)}'
                   "</span>\n          ")
    out.append("\n          ")
    if row.is_error:
        out.append('<span class="badge badge-error">error</span>')
    out.append("\n          ")
    if row.created_at:
        iso, full, clock = _time(row.created_at)
        out.append(f'<span class="msg-time small muted"><time datetime="{iso}" title="{full} UTC">{clock}</time>')
        if m.gap:
            out.append(f' <span class="gap" title="Since the message before">{escape(m.gap)}</span>')
        out.append("</span>")
    out.append("\n          ")
    if m.text:
        tool = row.role == "tool"
        what = "result" if tool else "message's text"
        out.append(f'<button type="button" class="copy-button" data-copy="text" title="Copy the {what}">'
                   f'copy{" result" if tool else ""}</button>')
    tokens, running = number(row.token_count), number(m.running_total)
    out.append(
        f'\n          <span class="tokens" title="{tokens} tokens; the list up to here costs {running} of '
        f'{number(window)}">\n            {tokens} tok\n'
        f'            <span class="running{" over-window" if m.over_window else ""}">Σ {running}</span>\n'
        f'            <meter class="meter" aria-hidden="true" min="0" max="100" value="{m.window_percent}"></meter>\n'
        "          </span>\n        </header>\n        "
    )
    if m.usage:
        items = " ·".join(f' <span class="usage-item"><span class="mono">{escape(key)}</span> {escape(value)}</span>'
                          for key, value in m.usage)
        out.append('<div class="msg-usage small muted" title="Token usage the provider reported for this message, '
                   f'as stored"><span class="usage-label">usage</span>{items}</div>')
    out.append("\n        ")
    for v in m.violations:
        out.append(f'\n        <div class="violation-note severity-{_field(v, "severity")}" role="note"><strong>'
                   f'{_field(v, "kind")}</strong> {_field(v, "message")}</div>\n        ')
    for f in m.memory_findings:
        record = (f' <a class="small" href="{_field(f, "record_url")}" title="The record: its versions and reads">'
                  "record</a>") if f.get("record_url") else ""
        out.append(f'\n        <div class="memory-finding-note" role="note"><strong>{_field(f, "kind")}</strong> '
                   f'{_field(f, "message")}{record}<div class="finding-advice small">{_field(f, "advice")}</div>'
                   "</div>\n        ")
    out.append("\n        ")
    out.append(_annotations(m))
    out.append("\n        ")
    call = m.llm_call
    if call:
        href = escape(call["href"])
        out.append(f'\n        <div class="sent-note{" trimmed" if call["left_out"] else ""}">\n'
                   f'          <a href="{href}" title="Exactly what the call that produced this message received">'
                   f'sent with {number(call["sent"])} of {number(call["before"])} message{_plural(call["before"])}'
                   "</a>")
        if call["left_out"]:
            out.append(f'; {number(call["left_out"])} left out by the framework')
        out.append("\n          ")
        violations = call["violations"]
        if violations:
            said = "".join(f'{_field(v, "kind")}: {_field(v, "message")} ' for v in violations)
            out.append(f'<a href="{href}" class="badge badge-violation" title="{said}">{len(violations)} '
                       f"violation{_plural(len(violations))} in what was sent</a>")
        out.append("\n        </div>\n        ")
    out.append(_sent_again(m))
    out.append("\n        ")
    if row.reasoning:
        opened = " open" if _mentions(row.reasoning, needle) else ""
        out.append(f'\n        <details class="reasoning"{opened}><summary>Reasoning <span class="muted small">'
                   f'({number(len(row.reasoning))} chars)</span></summary><div class="text">'
                   f"{find.highlight(row.reasoning, q)}</div></details>\n        ")
    out.append("\n        ")
    if m.recalls:
        out.append(_recalls(m))
    if m.text and m.recalls:
        # What was recalled is shown above; the text the model read stays a click away.
        opened = " open" if _mentions(m.text, needle) else ""
        out.append(f'\n          <details class="as-sent"{opened}><summary class="small">as sent <span class="muted">'
                   f'({number(len(m.text))} chars)</span></summary>{_text(m, q)}</details>\n        ')
    elif m.text:
        out.append("\n          ")
        if m.fold:
            opened = " open" if _mentions(m.text, needle) else ""
            out.append(f'\n          <details class="folded"{opened}><summary><span class="preview">'
                       f'{escape(m.preview)}</span> <span class="muted small">({number(len(m.text))} chars'
                       f'{", JSON" if m.is_json else ""})</span></summary>{_text(m, q)}</details>\n          ')
        else:
            out.append(f"\n          {_text(m, q)}\n          ")
        out.append("\n        ")
    elif not m.calls:
        out.append('\n          <div class="muted small">(no content)</div>\n        ')
    out.append("\n        ")
    for c in m.calls:
        invalid = not c["valid"]
        badge = ' <span class="badge badge-violation">arguments are not JSON</span>' if invalid else ""
        out.append(
            f'\n        <div class="call{" call-invalid" if invalid else ""}">\n'
            f'          <div class="call-head"><span class="call-arrow" aria-hidden="true">→</span> '
            f'<span class="tool-name">{find.highlight(c["name"], q)}</span> <span class="mono small call-id">'
            f'{find.highlight(c["id"], q)}</span>'
            f"{badge} "
            "<button type=\"button\" class=\"copy-button\" data-copy=\"arguments\" title=\"Copy the call's arguments\">"
            "copy arguments</button></div>\n"
            f'          <pre class="json">{find.highlight(c["arguments"], q)}</pre>\n        </div>\n        '
        )
    if m.writes:
        out.append(_writes(m))
    out.append("\n      </div>\n    </article>\n")
    return mark_safe("".join(out))  # noqa: S308 (every value above is escaped or already safe)


# A written text longer than this is folded under a <details> with a one-line preview.
WRITE_FOLD = 160


def _writes(m: MessageView) -> str:
    """The memory writes this message caused: one line each (op, store, record at its version), the text it left."""
    rows = []
    for w in m.writes:
        text = w["text"]
        if not w["captured"]:
            body = '<span class="muted small">(written without its text: content capture was off)</span>'
        elif text is None:
            body = '<span class="muted small">(no text: deleted)</span>'
        elif len(text) > WRITE_FOLD:
            body = (f'<details class="recall-fold"><summary><span class="preview">'
                    f'{escape(find.preview(text, 120))}</span> <span class="muted small">({number(len(text))} chars)'
                    f'</span></summary><div class="recall-text">{escape(text)}</div></details>')
        else:
            body = f'<div class="recall-text">{escape(text)}</div>'
        rows.append(f'<li class="memory-write-item"><div class="recall-item-head"><span class="op op-'
                    f'{escape(w["op"].lower())}">{escape(w["op"])}</span> <a class="mono small" '
                    f'href="{escape(w["href"])}" title="The record: this version, the ones around it, its reads">'
                    f'{escape(w["record"]) or "(no id)"} v{w["number"]}</a> <span class="muted small">in</span> '
                    f'<span class="recall-store">{escape(w["store"])}</span></div>{body}</li>')
    count = len(m.writes)
    return (f'\n        <section class="recall-panel memory-writes" aria-label="Memory written">'
            f'<div class="recall-head">'
            f'<strong>Wrote to memory</strong> <span class="muted small">{count} write{_plural(count)}</span></div>'
            f'<ul class="recall-items">{"".join(rows)}</ul></section>')


