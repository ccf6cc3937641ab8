"""Assistant text as Markdown, made safe: what an agent wrote is untrusted, so it is parsed with raw HTML off (any tag
in it stays text), images off (a remote image would load from the reader's browser), and the HTML that comes out
is cleaned again by an allow-list sanitizer (nh3, the Ammonia crate): only formatting tags, links only to http(s)
or mailto with ``rel="noopener nofollow noreferrer"``, no relative or ``javascript:`` URL, no attribute that runs
anything."""
from __future__ import annotations

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

# Past this many characters the text is shown as written (a page of 300 such messages must stay fast).
MARKDOWN_MAX_CHARS = 50_000

_PARSER = (
    MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .disable("image")
)

TAGS = {
    "p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "hr",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a",
}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener nofollow noreferrer"


def markdown_to_safe_html(text: str) -> SafeString:
    """``text`` rendered as Markdown and sanitised; too long a text comes back escaped as it is."""
    if len(text) > MARKDOWN_MAX_CHARS:
        return escape(text)
    html = _PARSER.render(text)
    return mark_safe(nh3.clean(  # noqa: S308 (cleaned by an allow-list sanitizer just above)
        html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES, link_rel=LINK_REL, url_relative="deny",
        strip_comments=True,
    ))
