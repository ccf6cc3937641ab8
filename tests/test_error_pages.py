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
