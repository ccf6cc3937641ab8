"""Presets: a named strategy with its parameters and counter, saved per project (model, services, API)."""
from __future__ import annotations

import json

import pytest
from django.db import IntegrityError

from agents.models import Membership, Preset


def post(client, body: dict):
    return client.post("/api/presets/", data=json.dumps(body), content_type="application/json")


def test_it_saves_a_preset_with_every_parameter_as_validated(alice_client, project, alice):
    response = post(alice_client, {"project": "alpha", "name": "tight window", "strategy": "buffered",
                                   "params": {"buffer_size": "6"}, "counter": "approx"})

    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "tight window" and body["project"] == "alpha" and body["counter"] == "approx"
    assert body["params"] == {"pin_system": True, "buffer_size": 6}  # the default written down, "6" a number
    assert body["created_by"] == "alice"
    stored = Preset.objects.get(project=project, name="tight window")
    assert stored.params == {"pin_system": True, "buffer_size": 6} and stored.created_by == alice


def test_it_lists_the_presets_of_the_users_projects_only(alice_client, project, other_project):
    Preset.objects.create(project=project, name="mine", strategy="unbounded", params={}, counter="cl100k")
    Preset.objects.create(project=other_project, name="theirs", strategy="unbounded", params={}, counter="cl100k")

    assert [p["name"] for p in alice_client.get("/api/presets/").json()["presets"]] == ["mine"]
    assert [p["name"] for p in alice_client.get("/api/presets/?project=alpha").json()["presets"]] == ["mine"]
    response = alice_client.get("/api/presets/?project=beta")
    assert response.status_code == 400 and response.json() == {"error": "project: no project 'beta' among yours"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"project": "alpha", "name": "x", "strategy": "newest_five"}, "unknown strategy 'newest_five'"),
        ({"project": "alpha", "name": "x", "strategy": "buffered", "params": {"buffer_size": 0}}, "buffer_size=0"),
        ({"project": "alpha", "name": "x", "strategy": "buffered", "counter": "words"}, "unknown counter 'words'"),
        ({"project": "alpha", "name": "  ", "strategy": "buffered"}, "A preset needs a name."),
        ({"project": "alpha", "strategy": "buffered"}, "name: Field required"),
        ({"project": "alpha", "name": "x", "strategy": "buffered", "colour": "red"}, "colour: Extra inputs"),
        ({"project": "beta", "name": "x", "strategy": "buffered"}, "project: no project 'beta' among yours"),
    ],
)
def test_it_refuses_what_cannot_be_saved_in_one_sentence(alice_client, project, other_project, body, error):
    response = post(alice_client, body)
    assert response.status_code == 400
    assert error in response.json()["error"]
    assert not Preset.objects.exists()


def test_it_refuses_a_second_preset_of_the_same_name_in_a_project(alice_client, project):
    assert post(alice_client, {"project": "alpha", "name": "x", "strategy": "unbounded"}).status_code == 201
    response = post(alice_client, {"project": "alpha", "name": "x", "strategy": "buffered"})
    assert response.status_code == 400
    assert response.json()["error"] == "Project Alpha already has a preset named \u201cx\u201d."
    with pytest.raises(IntegrityError):
        Preset.objects.create(project=project, name="x", strategy="unbounded", params={}, counter="cl100k")


def test_it_lets_only_editors_and_admins_save_presets(client, project, bob):
    Membership.objects.create(project=project, user=bob, role=Membership.Level.VIEWER)
    client.force_login(bob)
    response = post(client, {"project": "alpha", "name": "x", "strategy": "unbounded"})
    assert response.status_code == 400
    assert response.json()["error"] == "Saving a preset in project Alpha needs the editor or admin role there."
    assert client.get("/api/presets/").status_code == 200  # a viewer still reads them


def test_it_needs_the_csrf_token_when_posting_through_a_browser_session(alice, project):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    response = post(browser, {"project": "alpha", "name": "x", "strategy": "unbounded"})
    assert response.status_code == 403 and "CSRF" in response.json()["error"]
    assert not Preset.objects.exists()


def test_it_saves_a_preset_with_an_api_key_as_its_creator(client, project, alice):
    from agents.projects.keys import api_key_create

    created = api_key_create(project=project, name="ci", created_by=alice)
    response = client.post(
        "/api/presets/", data=json.dumps({"project": "alpha", "name": "ci window", "strategy": "unbounded"}),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {created.key}",
    )
    assert response.status_code == 201
    assert Preset.objects.get(name="ci window").created_by == alice
