"""The import page in a real Chromium: the agent select follows the project (htmx), a jsonl upload reads as
openai_jsonl."""
from __future__ import annotations

import pytest

from agents import models
from tests.paths import SAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def options(tab) -> list[str]:
    return [t.strip() for t in tab.locator("select[name=agent] option").all_inner_texts()]


def test_it_offers_the_agents_of_the_chosen_project_and_reads_jsonl_uploads(logged_in_page, live_server, project):
    other = models.Project.objects.create(name="Beta", slug="beta")
    models.Membership.objects.create(project=other, user=project.memberships.get().user, role="admin")
    models.Agent.objects.create(project=project, name="Mine", slug="mine")
    models.Agent.objects.create(project=other, name="Theirs", slug="theirs")
    tab = logged_in_page
    tab.goto(f"{live_server.url}/import/")
    assert options(tab)[1:] == ["Mine"]
    with tab.expect_response(lambda r: "/import/?project=beta" in r.url):
        tab.select_option("select[name=project]", "beta")
    tab.wait_for_function("() => document.querySelector('#id_agent').innerText.includes('Theirs')")
    assert options(tab)[1:] == ["Theirs"]
    # The swapped select still belongs to the form: choosing it and previewing imports for that agent.
    tab.select_option("select[name=agent]", label="Theirs")
    tab.set_input_files("input[type=file]", str(SAMPLES / "openai_jsonl" / "travel.jsonl"))
    tab.click("button:has-text('Preview')")
    facts = tab.locator("dl.facts").inner_text()
    assert "openai_jsonl" in facts and "detected" in facts
    tab.click("button:has-text('Import 1 session')")
    tab.wait_for_load_state()
    session = models.Session.objects.get()
    assert session.agent.slug == "theirs" and session.source_format == "openai_jsonl"
