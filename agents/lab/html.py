"""The lab's preview as HTML, built in Python like the session page's messages (``sessions.message_html``): up to
``previews.MAX_RENDERED`` messages a preview and its strip of runs, where a template partial per message was most of
a preview's CPU."""
from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from agents.lab.previews import PreviewRow, StripRun
from agents.sessions.message_html import number


def _calls_html(calls: list[dict[str, str]]) -> str:
    return "".join(
        f'<div class="call"><div class="call-head"><span class="call-arrow" aria-hidden="true">→</span> '
        f'<span class="tool-name">{escape(c["name"])}</span> <span class="mono small call-id">{escape(c["id"])}</span>'
        f'</div><pre class="json">{escape(Truncator(c["arguments"]).chars(2000))}</pre></div>'
        for c in calls
    )


def lab_message_html(row: PreviewRow, *, session_url: str) -> SafeString:
    """The ``<article>`` of one message of the lab's preview (kept, edited, dropped or inserted), as the template
    partial wrote it: up to ``lab.MAX_RENDERED`` (300) of them a preview, like the session page's. Everything the
    agent wrote, and the strategy's reason, goes through ``escape``. ``session_url``: the session page's address,
    which each message links to."""
    m, status, index = row.message, escape(row.status), row.index
    role = escape(m.role)
    out = [f'<article id="{escape(row.anchor)}" class="msg role-{role} lab-msg lab-{status}'
           f'{" has-violation" if row.violations else ""}">\n  <div class="msg-gutter">\n    ']
    if index is not None:
        after = f"?after={index - 1}" if index >= 300 else ""
        out.append(f'<a class="seq" href="{escape(session_url)}{after}#m-{index}" title="Message {index} on the '
                   f'session page">#{index}</a>')
    else:
        out.append('<span class="seq">new</span>')
    out.append(f'\n    <span class="lab-mark lab-mark-{status}">{status}</span>\n  </div>\n  <div class="msg-body">\n'
               f'    <header class="msg-head">\n      <span class="role">{role}</span>\n      ')
    if m.name:
        out.append(f'<span class="name">{escape(m.name)}</span>')
    out.append("\n      ")
    if m.tool_call_id:
        out.append(f'<span class="mono small call-id" title="tool_call_id">{escape(m.tool_call_id)}</span>')
    out.append("\n      ")
    if m.is_error:
        out.append('<span class="badge badge-error">error</span>')
    out.append('\n      <span class="tokens">')
    if row.tokens is not None:
        out.append(f"{number(row.tokens)} tok")
        if row.original_tokens is not None and row.original_tokens != row.tokens:
            out.append(' <span class="muted" title="Tokens of the message as stored, before the edit">(stored '
                       f"{number(row.original_tokens)})</span>")
    else:
        out.append("placeholder")
    out.append("</span>\n    </header>\n    ")
    if row.recalls:
        stores = ", ".join(escape(store) or "a store not known" for store in row.recalls)
        said = ("recall_trimmed: the recalled memory it carries goes with it" if row.status == "dropped"
                else "carries recalled memory")
        badge = "badge-violation" if row.status == "dropped" else "badge-ok"
        out.append(f'<p class="lab-recall small"><span class="badge {badge}">recall</span> {said} ({stores})</p>\n    ')
    out.append(f'<p class="lab-reason lab-reason-{status}">{escape(row.reason)}</p>\n    ')
    for v in row.violations:
        out.append(f'<div class="violation-note severity-{escape(v.severity)}" role="note"><strong>{escape(v.kind)}'
                   f"</strong> {escape(v.message)}</div>")
    out.append("\n    \n    ")
    text = row.text
    if text:
        if len(text) > 600:
            out.append(f'\n      <details class="folded"><summary><span class="preview">'
                       f'{escape(Truncator(text).chars(160))}</span> <span class="muted small">({number(len(text))} '
                       f'chars)</span></summary><div class="text">{escape(text)}</div></details>\n      \n    ')
        else:
            out.append(f'\n      <div class="text">{escape(text)}</div>\n    ')
    elif not m.tool_calls:
        out.append('<div class="muted small">(no content)</div>')
    out.append("\n    \n    ")
    for call in row.calls:
        out.append(f"\n    {_calls_html([call])}\n    ")
    out.append("\n    ")
    if row.original is not None:
        original = row.original_text
        kept_text = f'<div class="text">{escape(Truncator(original).chars(4000))}</div>' if original else ""
        out.append('\n    <details class="lab-original"><summary class="small">As stored (before the edit)</summary>\n'
                   f"      {kept_text}\n      {_calls_html(row.original_calls)}\n    </details>\n    ")
    out.append("\n  </div>\n</article>\n")
    return mark_safe("".join(out))  # noqa: S308 (every value above is escaped, or a number)


_STRIP_LEGEND = (
    '<div class="strip-legend small muted"><span class="strip-cell strip-kept"></span> kept <span class="strip-cell '
    'strip-edited"></span> edited <span class="strip-cell strip-dropped"></span> dropped <span class="strip-cell '
    'strip-inserted"></span> inserted <span class="strip-cell strip-kept strip-flag"></span> violation · first '
    "message on the left</div>"
)


def lab_strip_html(strip: list[StripRun], *, compact: bool = False) -> SafeString:
    """The lab's map of the session (``lab.TrimPreview.strip``): one cell per message where the runs are short, a
    folded run where they are long; up to ``lab.STRIP_CELLS`` cells, in each of compare's columns too. Reasons and
    roles are escaped. ``compact``: without the legend (compare)."""
    out = ['<div class="lab-strip-wrap">\n  <div class="lab-strip" aria-label="Each message, first on the left: kept, '
           'edited, dropped or inserted">\n    ']
    for run in strip:
        status = escape(run.status)
        if run.folded:
            flag = " strip-flag" if run.has_violation else ""
            href = f"#lm-{run.first}" if run.first is not None else "#lab-messages"
            where = f"#{run.first}–#{run.last}: " if run.first is not None else ""
            count = number(run.count)
            text = f"… {count} dropped …" if run.status == "dropped" else f"{count} {status}"
            out.append(f'<a class="strip-run strip-{status}{flag}" href="{href}" title="{where}{count} {status}">'
                       f"{text}</a>")
            continue
        for r in run.rows:
            cell = escape(r.status)
            at = f"#{r.index} " if r.index is not None else ""
            out.append(f'<a class="strip-cell strip-{cell}{" strip-flag" if r.violations else ""}" '
                       f'href="#{escape(r.anchor)}" title="{at}{escape(r.message.role)} · {cell}: {escape(r.reason)}" '
                       f'aria-label="{at}{cell}"></a>')
    out.append("\n  </div>\n  ")
    if not compact:
        out.append(_STRIP_LEGEND)
    out.append("\n</div>\n")
    return mark_safe("".join(out))  # noqa: S308 (every value above is escaped, or a number)
