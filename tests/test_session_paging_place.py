"""Paging on the session page keeps the place: "load more" puts the page it loaded in the address (HX-Push-Url),
so that a reload or a shared link comes back there; "load earlier" puts the page before in front of the one on
screen."""
from __future__ import annotations

from django.urls import reverse


def _long(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(n)]


def test_load_more_puts_the_page_it_loaded_in_the_address(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url(), {"after": 299, "start": 0}, headers={"HX-Request": "true"})
    assert response["HX-Push-Url"] == f"{session.get_absolute_url()}?at=300"
    # That address opens the page loaded, from its first message.
    page = alice_client.get(response["HX-Push-Url"])
    assert [m.row.seq for m in page.context["messages"]][:1] == [300]


def test_load_more_keeps_the_search_in_the_address(alice_client, make_session):
    session = make_session(_long(650))
    response = alice_client.get(session.get_absolute_url(), {"after": 299, "q": "number 4"},
                                headers={"HX-Request": "true"})
    assert response["HX-Push-Url"] == f"{session.get_absolute_url()}?q=number+4&at=300"


def test_the_live_tail_and_an_empty_page_push_no_address(alice_client, make_session):
    session = make_session(_long(20))
    past_the_end = alice_client.get(session.get_absolute_url(), {"after": 50}, headers={"HX-Request": "true"})
    assert "HX-Push-Url" not in past_the_end
    live = alice_client.get(session.get_absolute_url(), {"after": 5, "live": 1}, headers={"HX-Request": "true"})
    assert "HX-Push-Url" not in live


def test_load_earlier_answers_the_page_before_to_put_in_front(alice_client, make_session):
    session = make_session(_long(1000))
    url = session.get_absolute_url()
    page = alice_client.get(url, {"at": 700}).content.decode()
    assert f'hx-get="{url}?after=299&amp;earlier=1"' in page
    response = alice_client.get(url, {"after": 299, "earlier": 1}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert "HX-Push-Url" not in response  # the place stays where the reader is
    assert "<html" not in content and 'class="load-more"' not in content
    assert content.index('id="m-300"') < content.index('id="m-599"') and 'id="m-600"' not in content
    # With another page before it, it brings its own "load earlier", first, for the page before that.
    assert content.lstrip().startswith('<p class="notice load-earlier-bar">')
    assert f'hx-get="{url}?after=-1&amp;earlier=1"' in content  # after -1: from #0
    first = alice_client.get(url, {"after": -1, "earlier": 1}, headers={"HX-Request": "true"})
    assert "load-earlier" not in first.content.decode()  # the first page: nothing before it
    assert 'id="m-0"' in first.content.decode()


def test_load_earlier_keeps_the_search(alice_client, make_session):
    session = make_session(_long(1000))
    url = session.get_absolute_url()
    page = alice_client.get(url, {"at": 700, "q": "number 45"}).content.decode()
    assert f'hx-get="{url}?after=299&amp;earlier=1&amp;q=number+45"' in page
    fragment = alice_client.get(url, {"after": 299, "earlier": 1, "q": "number 45"}, headers={"HX-Request": "true"})
    assert '<mark class="hit">message number 45</mark>' not in fragment.content.decode()
    assert 'message <mark class="hit">number 45</mark>0' in fragment.content.decode()


def test_the_jump_url_is_the_session_pages(alice_client, make_session):
    session = make_session(_long(3))
    assert reverse("agents:session_jump", args=[session.pk]) == f"{session.get_absolute_url()}jump/"
