"""Assistant text as Markdown on the session page, sanitised: agent text is untrusted, so no raw HTML, event
handler or script URL passes; links are nofollow; the text as written is one click away ("raw")."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

from agents.sessions.safe_markdown import MARKDOWN_MAX_CHARS, markdown_to_safe_html

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<javascript:alert(1)>",
    "![x](javascript:alert(1))",
    '[click](https://ok.example "x\\" onmouseover=\\"alert(1)")',
    "<svg onload=alert(1)>",
    "<iframe src=https://evil.example></iframe>",
    "```html\n<script>alert(1)</script>\n```",
    "<div style=\"background:url(javascript:alert(1))\">x</div>",
    "[ref]\n\n[ref]: javascript:alert(1)",
]


class _Elements(HTMLParser):
    """Every element of a fragment as the browser's tokenizer reads it: (tag, {attribute: value})."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.found


@pytest.mark.parametrize("text", HOSTILE)
def test_it_lets_no_markup_or_script_url_through(text):
    html = str(markdown_to_safe_html(text))
    elements = _elements(html)
    assert {tag for tag, _ in elements} <= {"p", "a", "pre", "code", "br"}, html
    for tag, attributes in elements:
        # No event handler, no style, and a link goes to http(s) or mail only, never to a script URL.
        assert set(attributes) <= ({"href", "title", "rel"} if tag == "a" else set()), html
        assert (attributes.get("href") or "https://").startswith(("http://", "https://", "mailto:")), html
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "<iframe" not in html


def test_it_formats_markdown_and_marks_links_nofollow():
    html = str(markdown_to_safe_html(
        "# Plan\n**bold**, *it*, `code`, ~~no~~\nnext line\n\n- a\n- b\n\n[docs](https://docs.example/x?a=1&b=2)\n\n"
        "| k | v |\n|---|---|\n| 1 | 2 |\n\n```\nif a < b: pass\n```"
    ))
    for fragment in ("<h1>Plan</h1>", "<strong>bold</strong>", "<em>it</em>", "<code>code</code>", "<s>no</s>",
                     "<br>", "<li>a</li>", "<table>", "<td>1</td>", "<pre><code>if a &lt; b: pass"):
        assert fragment in html, (fragment, html)
    assert '<a href="https://docs.example/x?a=1&amp;b=2" rel="noopener nofollow noreferrer">docs</a>' in html


def test_it_drops_relative_links_and_shows_no_remote_image():
    html = str(markdown_to_safe_html("[delete](/sessions/1/delete/) ![pixel](https://tracker.example/p.gif)"))
    assert "href=\"/sessions" not in html and "<img" not in html
    assert 'href="https://tracker.example/p.gif" rel="noopener nofollow noreferrer">pixel</a>' in html  # a link


def test_a_very_long_text_is_shown_as_written():
    text = "*x* <b>" * (MARKDOWN_MAX_CHARS // 7 + 1)
    html = str(markdown_to_safe_html(text))
    assert "<em>" not in html and "&lt;b&gt;" in html


@pytest.fixture
def chat(make_session):
    return make_session([
        {"role": "user", "content": "**not formatted** <img src=x onerror=alert(1)>"},
        {"role": "assistant",
         "content": "Here is **the plan**:\n\n1. [read](javascript:alert(1))\n2. <script>x()</script>"},
        {"role": "assistant", "content": "Search me: **needle**"},
    ])


def test_the_session_page_shows_assistant_text_as_safe_markdown_with_the_raw_text_beside(alice_client, chat):
    page = alice_client.get(chat.get_absolute_url()).content.decode()
    reply = page.split('id="m-1"')[1].split("</article>")[0]
    assert '<div class="text markdown"><p>Here is <strong>the plan</strong>:</p>' in reply
    assert "<li>[read](javascript:alert(1))</li>" in reply and "&lt;script&gt;x()&lt;/script&gt;" in reply
    raw = reply.split('class="raw-view"')[1]
    assert "Here is **the plan**:" in raw and "&lt;script&gt;x()&lt;/script&gt;" in raw
    assert "<script>" not in page.split("<main")[1].split("</main>")[0].replace('<script src=', "")
    # Only assistant text: a user's message stays as written.
    user = page.split('id="m-0"')[1].split("</article>")[0]
    assert "markdown" not in user and "**not formatted** &lt;img src=x onerror=alert(1)&gt;" in user


def test_a_search_hit_shows_the_text_as_written_with_its_marks_and_the_formatted_view_beside(alice_client, chat):
    page = alice_client.get(chat.get_absolute_url(), {"q": "needle", "at": 2}).content.decode()
    hit = page.split('id="m-2"')[1].split("</article>")[0]
    assert 'Search me: **<mark class="hit">needle</mark>**' in hit
    assert '<details class="formatted-view">' in hit and "<strong>needle</strong>" in hit
