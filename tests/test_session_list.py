from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.urls import reverse

from agents.models import Agent

URL = reverse("agents:session_list")
CHAT = [{"role": "user", "content": "Wie spät ist es in Tokio?"}, {"role": "assistant", "content": "Es ist 21 Uhr."}]
CALL = [
    {"role": "user", "content": "Find flights"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "timeout", "is_error": True},
    {"role": "assistant", "content": "The search timed out."},
]
BROKEN = [{"role": "tool", "tool_call_id": "lost", "content": "42"}, {"role": "assistant", "content": "ok"}]


def _day(d: int) -> dt.datetime:
    return dt.datetime(2026, 4, d, 10, tzinfo=dt.UTC)


@pytest.fixture
def sessions(make_session, project):
    helper = Agent.objects.create(project=project, name="Helper", slug="helper")
    return {
        "chat": make_session(CHAT, title="Time in Tokyo", started_at=_day(1)),
        "call": make_session(CALL, title="Flights", started_at=_day(2), agent=helper),
        "broken": make_session(BROKEN, title="Trimmed", started_at=_day(3)),
    }


def _titles(response) -> list[str]:
    return [s.title for s in response.context["page"].object_list]


def test_it_renders_the_full_page(alice_client, sessions):
    response = alice_client.get(URL)
    assert response.status_code == 200
    content = response.content.decode()
    assert "<html" in content and 'id="session-filters"' in content and 'id="session-table"' in content
    assert _titles(response) == ["Trimmed", "Flights", "Time in Tokyo"]
    for header in ("Title", "Agent", "Messages", "Tokens", "Violations", "Errors", "Started"):
        assert header in content
    assert 'hx-headers=\'{"X-CSRFToken": "' in content
    assert "htmx" in content


def test_it_renders_only_the_table_for_htmx(alice_client, sessions):
    response = alice_client.get(URL, {"q": "tokyo"}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in content and 'id="session-filters"' not in content
    assert content.strip().startswith('<div id="session-table"')
    assert "Time in Tokyo" in content and "Flights" not in content


def test_it_shows_each_rows_counts_and_badges(alice_client, sessions):
    content = alice_client.get(URL).content.decode()
    broken = sessions["broken"]
    assert f'<a href="{broken.get_absolute_url()}">Trimmed</a>' in content
    assert 'class="badge badge-violation"' in content
    assert "tool error" in content
    assert f'{sessions["call"].token_total}' in content
    assert "Apr 2, 10:00" in content


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"q": "flights"}, ["Flights"]),
        ({"q": "spät"}, ["Time in Tokyo"]),  # message content
        ({"tool": "search_flights"}, ["Flights"]),
        ({"violations": "on"}, ["Trimmed"]),
        ({"errors": "on"}, ["Flights"]),
        ({"date_from": "2026-04-02"}, ["Trimmed", "Flights"]),
        ({"date_to": "2026-04-01"}, ["Time in Tokyo"]),
        ({"agent": "helper"}, ["Flights"]),
        ({"sort": "started"}, ["Time in Tokyo", "Flights", "Trimmed"]),
        ({"sort": "-messages"}, ["Flights", "Trimmed", "Time in Tokyo"]),  # ties: newest id first
    ],
)
def test_it_filters_and_sorts_from_the_url(alice_client, sessions, params, expected):
    if params.get("agent") == "helper":
        params = {"agent": str(sessions["call"].agent_id)}
    assert _titles(alice_client.get(URL, params)) == expected


def test_it_filters_by_project_and_tokens(alice_client, sessions, project):
    assert len(_titles(alice_client.get(URL, {"project": project.slug}))) == 3
    low = min(s.token_total for s in sessions.values())
    assert _titles(alice_client.get(URL, {"max_tokens": low})) == [
        s.title for s in sessions.values() if s.token_total == low
    ]
    assert _titles(alice_client.get(URL, {"min_tokens": low + 1})) == [
        t
        for t in ["Trimmed", "Flights", "Time in Tokyo"]
        if next(s for s in sessions.values() if s.title == t).token_total > low
    ]


def test_it_keeps_filters_in_sort_and_page_links(alice_client, sessions):
    content = alice_client.get(URL, {"q": "i", "sort": "-tokens"}).content.decode()
    assert 'href="?q=i&amp;sort=tokens"' in content
    assert 'hx-push-url="true"' in content


def test_it_shows_bad_filter_values_without_failing(alice_client, sessions):
    response = alice_client.get(URL, {"date_from": "yesterday", "min_tokens": "-5", "sort": "nonsense"})
    assert response.status_code == 200
    assert len(_titles(response)) == 3
    assert "Enter a valid date." in response.content.decode()


def test_it_sends_the_filter_errors_with_the_table_htmx_swaps_in(alice_client, sessions):
    # htmx swaps the table only: the errors of the filters it was asked for reach the sidebar out of band.
    response = alice_client.get(URL, {"min_tokens": "abc", "agent": "999999"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert len(_titles(response)) == 3  # the invalid filters are ignored, the others hold
    content = response.content.decode()
    errors = content.split('<div id="filter-errors" hx-swap-oob="true">', 1)[1].split("</div>", 1)[0]
    assert "Min tokens: Enter a whole number." in errors
    assert "Agent: Select a valid choice." in errors
    # A valid request sends the box empty, so that the errors of the last one go away.
    content = alice_client.get(URL, {"min_tokens": "5"}, headers={"HX-Request": "true"}).content.decode()
    assert '<div id="filter-errors" hx-swap-oob="true"></div>' in content


def test_it_keeps_the_url_filters_errors_in_the_sidebar_when_a_sort_link_swaps_the_table(alice_client, sessions):
    # The whole page of /?min_tokens=abc&date_from=yesterday says both errors; its sort links keep the URL's filters,
    # and the table they swap in over htmx sends the same errors to the sidebar (out of band), not an empty box.
    page = alice_client.get(URL, {"min_tokens": "abc", "date_from": "yesterday"}).content.decode()
    sort_link = re.search(r'hx-get="([^"]*sort=-tokens)"', page)
    assert sort_link and "min_tokens=abc" in sort_link.group(1) and "date_from=yesterday" in sort_link.group(1)
    fragment = alice_client.get(html.unescape(sort_link.group(1)), headers={"HX-Request": "true"}).content.decode()
    assert '<aside class="sidebar"' not in fragment  # the table alone
    errors = fragment.split('<div id="filter-errors" hx-swap-oob="true">', 1)[1].split("</div>", 1)[0]
    assert "Started from: Enter a valid date." in errors and "Min tokens: Enter a whole number." in errors


def test_it_shows_the_filter_errors_in_the_sidebar_of_the_whole_page(alice_client, sessions):
    content = alice_client.get(URL, {"min_tokens": "abc"}).content.decode()
    sidebar = content.split('<div id="filter-errors">', 1)[1].split("</div>", 1)[0]
    assert "Min tokens: Enter a whole number." in sidebar
    assert "hx-swap-oob" not in content.split('id="session-table"', 1)[0]


def test_it_pages_fifty_sessions_at_a_time(alice_client, make_session):
    for i in range(53):
        make_session(CHAT, title=f"S{i:02d}", started_at=_day(1) + dt.timedelta(minutes=i))
    first = alice_client.get(URL)
    assert len(_titles(first)) == 50
    assert "1–50 of 53 sessions" in first.content.decode()
    assert 'href="?page=2"' in first.content.decode()
    second = alice_client.get(URL, {"page": 2})
    assert _titles(second) == ["S02", "S01", "S00"]


def test_it_says_when_nothing_matches(alice_client, sessions):
    assert "No session matches these filters." in alice_client.get(URL, {"q": "zzz-nothing"}).content.decode()


def test_it_says_when_the_user_has_no_project(client, bob):
    client.force_login(bob)
    assert "not a member of any project" in client.get(URL).content.decode()


def test_it_lists_in_a_bounded_number_of_queries(alice_client, make_session, django_assert_max_num_queries):
    for i in range(30):
        make_session(CHAT, title=f"S{i}")
    with django_assert_max_num_queries(12):
        alice_client.get(URL)


def test_it_sends_the_current_sort_with_the_filters(alice_client, sessions):
    content = alice_client.get(URL, {"sort": "-tokens"}, headers={"HX-Request": "true"}).content.decode()
    assert '<input type="hidden" name="sort" value="-tokens" form="session-filters">' in content


def test_it_offers_the_chosen_projects_agents_only(alice_client, sessions, alice, other_project, other_agent):
    from agents.models import Membership

    Membership.objects.create(project=other_project, user=alice)
    response = alice_client.get(URL, {"project": other_project.slug}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert '<div id="agent-choice" hx-swap-oob="true">' in content  # the agent menu follows the project
    assert f'<option value="{other_agent.pk}">Beta bot (Beta)</option>' in content
    assert "Travel bot (Alpha)" not in content


def test_it_ignores_an_agent_of_another_project_than_the_chosen_one(
    alice_client, sessions, project, alice, other_project, other_agent
):
    from agents.models import Membership

    Membership.objects.create(project=other_project, user=alice)
    response = alice_client.get(URL, {"project": project.slug, "agent": other_agent.pk}, follow=True)
    assert response.redirect_chain == [(f"{URL}?project={project.slug}", 302)]
    assert len(_titles(response)) == 3


def test_it_finds_a_session_by_a_tool_call_id(alice_client, sessions):
    # "c1" is in no title, external id or message text: only the call's id names the session.
    assert _titles(alice_client.get(URL, {"q": "c1"})) == ["Flights"]
    assert _titles(alice_client.get(URL, {"q": " c1 "})) == ["Flights"]


def test_it_cuts_a_long_external_id_and_keeps_it_in_a_tooltip(alice_client, make_session):
    long_id = "sha256:" + "ab" * 32
    make_session(CHAT, title="Hashed", external_id=long_id)
    content = alice_client.get(URL).content.decode()
    assert f'class="muted small mono ext-id" title="{long_id}"' in content


def test_it_sends_search_keystrokes_with_a_valid_htmx_trigger(alice_client, sessions):
    content = alice_client.get(URL).content.decode()
    # htmx 2 reads a selector with spaces only inside parentheses ("from:(...)"); unwrapped it is a syntax error.
    assert "from:(#session-filters input[type=search])" in content


def test_it_varies_on_htmx_so_a_browser_never_shows_the_cached_table_as_the_page(alice_client, sessions):
    page = alice_client.get(URL, {"violations": "on"})
    fragment = alice_client.get(URL, {"violations": "on"}, headers={"HX-Request": "true"})
    for response in (page, fragment):
        assert "HX-Request" in [v.strip() for v in response["Vary"].split(",")]


def test_it_answers_a_history_restore_without_htmx_with_the_whole_page(alice_client, sessions):
    # htmx is configured (base.html) to ask for a page it has no snapshot of without HX-Request.
    content = alice_client.get(URL, {"violations": "on"}, headers={"HX-History-Restore-Request": "true"}).content
    assert b"<html" in content and b'id="session-filters"' in content
    assert b'"historyRestoreAsHxRequest": false' in alice_client.get(URL).content


def test_it_pushes_a_url_without_the_agent_of_the_previous_project(
    alice_client, sessions, project, alice, other_project, other_agent
):
    from agents.models import Membership

    Membership.objects.create(project=other_project, user=alice)
    travel_bot = Agent.objects.get(slug="travel-bot")
    # The agent menu said Travel bot (Alpha); then the project changed to Beta: the form sends both.
    response = alice_client.get(URL, {"project": other_project.slug, "agent": travel_bot.pk, "violations": "on"},
                                headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response["HX-Push-Url"] == f"{URL}?project={other_project.slug}&violations=on"
    content = response.content.decode()
    assert f'<option value="{other_agent.pk}">Beta bot (Beta)</option>' in content
    assert "selected" not in content.split('id="agent-choice"', 1)[1].split("</div>", 1)[0]
    # Without htmx (a shared link), the page redirects to the URL it shows.
    plain = alice_client.get(URL, {"project": other_project.slug, "agent": travel_bot.pk})
    assert plain.status_code == 302 and plain["Location"] == f"{URL}?project={other_project.slug}"
    # The agent of the chosen project stays.
    kept = alice_client.get(
        URL, {"project": other_project.slug, "agent": other_agent.pk}, headers={"HX-Request": "true"}
    )
    assert "HX-Push-Url" not in kept and "No session matches these filters." in kept.content.decode()


def test_it_prints_no_template_comment_on_the_page(alice_client) -> None:
    page = alice_client.get(URL).content.decode()
    assert "{#" not in page and "#}" not in page
