"""The import page in a real Chromium: the agent select follows the project (htmx), a jsonl upload reads as
openai_jsonl."""
from __future__ import annotations

import os

import pytest

from agents import models
from tests.browser.conftest import browser, logged_in_page, page  # noqa: F401 - fixtures
from tests.paths import SAMPLES

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def options(page) -> list[str]:  # noqa: F811
    return [t.strip() for t in page.locator("select[name=agent] option").all_inner_texts()]


def test_the_agent_select_follows_the_project(logged_in_page, live_server, project):  # noqa: F811
    other = models.Project.objects.create(name="Beta", slug="beta")
    models.Membership.objects.create(project=other, user=project.memberships.get().user, role="admin")
    models.Agent.objects.create(project=project, name="Mine", slug="mine")
    models.Agent.objects.create(project=other, name="Theirs", slug="theirs")
    page = logged_in_page
    page.goto(f"{live_server.url}/import/")
    assert options(page)[1:] == ["Mine"]
    with page.expect_response(lambda r: "/import/?project=beta" in r.url):
        page.select_option("select[name=project]", "beta")
    page.wait_for_function("document.querySelector('#id_agent').innerText.includes('Theirs')")
    assert options(page)[1:] == ["Theirs"]
    # The swapped select still belongs to the form: choosing it and previewing imports for that agent.
    page.select_option("select[name=agent]", label="Theirs")
    page.set_input_files("input[type=file]", str(SAMPLES / "openai_jsonl" / "travel.jsonl"))
    page.click("button:has-text('Preview')")
    facts = page.locator("dl.facts").inner_text()
    assert "openai_jsonl" in facts and "detected" in facts
    page.click("button:has-text('Import 1 session')")
    page.wait_for_load_state()
    session = models.Session.objects.get()
    assert session.agent.slug == "theirs" and session.source_format == "openai_jsonl"
