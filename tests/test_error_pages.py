from __future__ import annotations

from django.test import override_settings


@override_settings(DEBUG=False)
def test_it_shows_a_friendly_404_that_does_not_say_whether_a_session_exists(alice_client, make_session, other_agent):
    secret = make_session([{"role": "user", "content": "hi"}], agent=other_agent)
    for url in (f"/sessions/{secret.pk}/", "/sessions/999999/"):
        response = alice_client.get(url)
        assert response.status_code == 404
        body = response.content.decode()
        assert "Not found" in body and "project you are not a member of" in body
        assert "Traceback" not in body


def test_it_serves_a_favicon_to_anyone_and_links_it_from_every_page(client) -> None:
    from django.contrib.staticfiles import finders

    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/img/favicon.svg"
    assert finders.find("img/favicon.svg")
    login = client.get("/login/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in login
