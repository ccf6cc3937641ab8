"""Records written during a session appear where they were written (issue 25, the session page): the message that
caused a version shows what it wrote (op, store, record at that version, the text it left), linked to the record's
page at that version; on Letta's own agent file (each core_memory_* call edits a block). A session that wrote
nothing reads no version; a page costs one query more with writes, wherever it stands."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import models
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def letta(alice) -> models.Session:
    imports.import_file(MEMORY_SAMPLES / "letta" / "memgpt_agent_with_convo.v1.af", project="letta")
    project = models.Project.objects.get(slug="letta")
    models.Membership.objects.create(user=alice, project=project, role="viewer")
    return models.Session.objects.get(agent__project=project)


def article(html: str, seq: int) -> str:
    match = re.search(rf'<article id="m-{seq}".*?</article>', html, re.S)
    assert match, f"message {seq} is not on the page"
    return match.group(0)


def test_each_block_edit_shows_on_the_message_that_made_it(alice_client, letta) -> None:
    versions = models.RecordVersion.objects.filter(session=letta, seq__isnull=False).select_related(
        "record", "record__store").order_by("seq", "id")
    by_seq: dict[int, list[models.RecordVersion]] = {}
    for v in versions:
        by_seq.setdefault(v.seq, []).append(v)
    assert 5 in by_seq and 15 in by_seq  # the core_memory_* calls the Letta reader's own test names
    html = alice_client.get(f"{letta.get_absolute_url()}?at=5").content.decode()
    shown = article(html, 5)
    assert "Wrote to memory" in shown
    for v in by_seq[5]:
        assert f'href="/memory/records/{v.record_id}/?versions_before={v.number + 1}#v-{v.number}"' in shown
        assert f"{v.record.external_id} v{v.number}" in shown and v.op in shown
    human = next(v for v in by_seq[5] if v.record.external_id.endswith("human"))
    assert "First name: Sarah" in shown and human.text is not None and "First name: Sarah" in human.text
    # A message that wrote nothing shows no write.
    assert "Wrote to memory" not in article(html, 4)
    # The link lands on the record's page with that version in it.
    record_page = alice_client.get(f"/memory/records/{human.record_id}/?versions_before={human.number + 1}")
    assert f'id="v-{human.number}"' in record_page.content.decode()


def test_a_session_without_writes_reads_none_and_one_with_writes_one_query_more(
        alice_client, letta, make_session) -> None:
    plain = make_session([{"role": "user", "content": f"question {i}"} if i % 2 == 0 else
                          {"role": "assistant", "content": f"answer {i}"} for i in range(80)], title="Plain")

    def queries(url: str) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert alice_client.get(url).status_code == 200
        return [q["sql"] for q in captured.captured_queries]

    assert not any("agents_recordversion" in q and "WHERE" in q and "EXISTS" not in q
                   for q in queries(plain.get_absolute_url()))
    first, later = queries(f"{letta.get_absolute_url()}?at=5"), queries(f"{letta.get_absolute_url()}?at=80")
    reads = [q for q in first if "agents_recordversion" in q and "EXISTS" not in q]
    assert len(reads) == 1 and len(first) == len(later)


def test_written_text_is_escaped(alice_client, letta) -> None:
    version = models.RecordVersion.objects.filter(session=letta, seq=5).first()
    assert version is not None
    models.RecordVersion.objects.filter(pk=version.pk).update(text="<script>alert(1)</script>")
    shown = article(alice_client.get(f"{letta.get_absolute_url()}?at=5").content.decode(), 5)
    assert "<script>alert(1)</script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
