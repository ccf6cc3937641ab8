"""The session page's messages, built in Python (agents/message_html.py) instead of a template partial: agent content
stays escaped everywhere it goes, and the figures and times read as the template's filters wrote them."""
from __future__ import annotations

import datetime as dt
import json

from django.contrib.humanize.templatetags.humanize import intcomma
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.lab.html import lab_message_html, lab_strip_html
from agents.sessions import chain
from agents.sessions.message_html import _time, number

EVIL = "<x-agent onload=alert(1)>&"
ESCAPED = "&lt;x-agent onload=alert(1)&gt;&amp;"

EVERYWHERE = [
    {"role": "system", "content": EVIL},
    {"role": "user", "name": EVIL, "content": f"**{EVIL}**"},
    {
        "role": "assistant",
        "content": f"Calling *now* {EVIL}",
        "reasoning": EVIL,
        "usage": {EVIL: EVIL, "prompt_tokens": 12345},
        "tool_calls": [
            {"id": EVIL, "type": "function", "function": {"name": EVIL, "arguments": json.dumps({"q": EVIL})}},
            {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": f"{{{EVIL}"}},
        ],
    },
    {"role": "tool", "tool_call_id": EVIL, "content": json.dumps({"found": EVIL})},
    {"role": "tool", "tool_call_id": "call_2", "content": EVIL * 200},
]


def _messages_part(content: str) -> str:
    return content[content.index('id="messages"'):content.index('id="keys-help"')]


def test_agent_content_is_escaped_wherever_a_message_shows_it(alice_client, make_session):
    session = make_session(EVERYWHERE)
    for query in ({}, {"q": "x-agent", "at": 0}):
        part = _messages_part(alice_client.get(session.get_absolute_url(), query).content.decode())
        assert "<x-agent" not in part
        # The name, the reasoning, the usage key and value, both calls' ids, names and arguments, both results'
        # ids and texts: each shows the text escaped (some twice: raw and Markdown views, previews).
        assert part.count("x-agent") >= 12
        assert "&lt;x-agent" in part
    html = _messages_part(alice_client.get(session.get_absolute_url()).content.decode())
    assert f'<span class="name">{ESCAPED}</span>' in html
    assert f'<span class="mono">{ESCAPED}</span> {ESCAPED}</span>' in html  # a usage key and its value
    assert '<span class="badge badge-violation">arguments are not JSON</span>' in html
    assert "<strong>" in html  # the Markdown view is the sanitiser's HTML, not escaped twice


def test_a_search_marks_hits_inside_escaped_text(alice_client, make_session):
    session = make_session(EVERYWHERE)
    html = _messages_part(alice_client.get(session.get_absolute_url(), {"q": "onload", "at": 0}).content.decode())
    assert '&lt;x-agent <mark class="hit">onload</mark>=alert(1)&gt;&amp;' in html
    assert 'aria-current="true"' in html  # the hit the page stands on


def test_figures_read_as_the_intcomma_filter_writes_them():
    for value in (0, 7, 999, 1000, 12345, 1_000_000, 128_000, -4321):
        assert number(value) == intcomma(value)


def test_times_read_as_the_date_filter_writes_them():
    template = Template("{{ t|date:'c' }}|{{ t|date:'Y-m-d H:i:s' }}|{{ t|date:'H:i:s' }}")
    for value in (dt.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=dt.UTC),
                  dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=5)))):
        assert "|".join(_time(value)) == template.render(Context({"t": value}))


def test_annotations_on_many_messages_cost_no_query_per_message(alice_client, alice, make_session):
    session = make_session([{"role": "user", "content": f"m{i}"} for i in range(60)])
    url = session.get_absolute_url()
    with CaptureQueriesContext(connection) as bare:
        assert alice_client.get(url).status_code == 200
    label = models.Label.objects.create(project=session.agent.project, name="odd", color="#123456")
    for row in session.messages.filter(seq__lt=40):
        models.Annotation.objects.create(session=session, message=row, author=alice, label=label,
                                         comment=f"<b>note</b> {row.seq}")
    with CaptureQueriesContext(connection) as annotated:
        content = alice_client.get(url).content.decode()
    assert content.count('<div class="msg-annotation">') == 40
    assert "&lt;b&gt;note&lt;/b&gt; 39" in content
    assert len(annotated.captured_queries) <= len(bare.captured_queries) + 2


def test_the_first_page_shows_a_full_page_of_messages(alice_client, make_session):
    session = make_session([{"role": "user", "content": f"m{i}"} for i in range(chain.MESSAGE_PAGE_SIZE + 5)])
    content = alice_client.get(session.get_absolute_url()).content.decode()
    assert content.count('<article id="m-') == chain.MESSAGE_PAGE_SIZE


# --- the lab's messages ----------------------------------------------------------------------------------------


def _lab_messages_part(content: str) -> str:
    return content[content.index('id="lab-messages"'):content.index("</main>")]


def test_the_labs_messages_keep_agent_content_escaped(alice_client, make_session):
    """Every agent value of the lab's preview, kept, dropped, edited (its original shown) and with its violations,
    is escaped in the Python-built messages (message_html.lab_message_html)."""
    session = make_session(EVERYWHERE + [{"role": "user", "content": "next"}])
    client = alice_client
    # langchain_clear_tool_uses clears the results and the calls' inputs: each edited message and its original show.
    response = client.get(f"{session.get_absolute_url()}lab/?strategy=langchain_clear_tool_uses&trigger=1&keep=0"
                          "&clear_tool_inputs=true")
    assert response.status_code == 200
    part = _lab_messages_part(response.content.decode())
    assert "<x-agent" not in part and ESCAPED in part
    assert part.count('class="msg role-') == len(EVERYWHERE) + 1
    assert "lab-edited" in part and "As stored (before the edit)" in part
    dropped = client.get(f"{session.get_absolute_url()}lab/?strategy=buffered&buffer_size=1&pin_system=false")
    part = _lab_messages_part(dropped.content.decode())
    assert "<x-agent" not in part and "lab-dropped" in part and ESCAPED in part


def test_a_lab_message_reads_as_the_template_wrote_it():
    """Figures with thousands separators, a long text folded with its first 160 characters, a message past the
    session page's first page linked with ?after=, a placeholder without a count, the session's address escaped."""
    from agents.lab.previews import PreviewRow
    from agents.memory.schema import Message

    long = Message(role="tool", tool_call_id="c1", content="word " * 200, is_error=True, name="search")
    row = PreviewRow("kept", 1234, 3, long, 12345, "in the last 10 messages")
    html = str(lab_message_html(row, session_url="/sessions/9/?a=<b>"))
    assert 'href="/sessions/9/?a=&lt;b&gt;?after=1233#m-1234"' in html and "#1234</a>" in html
    assert "12,345 tok" in html and "(1,000 chars)" in html and '<details class="folded">' in html
    assert 'class="badge badge-error"' in html and '<span class="name">search</span>' in html
    placeholder = PreviewRow("inserted", None, 4, Message(role="user", name="System", content="Skipped 3 messages."),
                             None, "AutoGen's placeholder")
    html = str(lab_message_html(placeholder, session_url="/sessions/9/"))
    assert '<span class="seq">new</span>' in html and ">placeholder</span>" in html and 'id="lp-4"' in html


def test_the_labs_strip_marks_each_message_or_folds_long_runs(alice_client, make_session):
    """The strip (message_html.lab_strip_html): a cell per message of a short session, its reason in the title,
    escaped; compare's columns without the legend."""
    session = make_session(EVERYWHERE + [{"role": "user", "content": "next"}])
    url = f"{session.get_absolute_url()}lab/"
    page = alice_client.get(url, {"strategy": "buffered", "buffer_size": 2, "pin_system": "false"}).content.decode()
    strip = page[page.index('class="lab-strip-wrap"'):page.index('id="lab-messages"')]
    assert strip.count('class="strip-cell strip-') == len(EVERYWHERE) + 1 + 5  # the cells, then the legend's 5
    assert 'href="#lm-0" title="#0 system · dropped: outside the last 2 messages' in strip
    assert "<x-agent" not in strip and "strip-legend" in strip
    compare = alice_client.get(f"{url}compare/", {"s": ["buffered:buffer_size=2", "unbounded"]}).content.decode()
    # Two compact strips; the page's one legend is its own.
    assert compare.count('class="lab-strip-wrap"') == 2 and compare.count('class="strip-legend') == 1


def test_a_long_run_of_the_strip_is_folded():
    from agents.lab.previews import StripRun

    html = str(lab_strip_html([StripRun("dropped", [], 12345, 10, 12354, True, has_violation=True),
                               StripRun("kept", [], 3, None, None, True)], compact=True))
    assert ('<a class="strip-run strip-dropped strip-flag" href="#lm-10" title="#10–#12354: 12,345 dropped">'
            "… 12,345 dropped …</a>") in html
    assert '<a class="strip-run strip-kept" href="#lab-messages" title="3 kept">3 kept</a>' in html
    assert "strip-legend" not in html
