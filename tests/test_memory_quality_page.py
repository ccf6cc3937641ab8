"""Retrieval quality on the agent's memory page (issue 27, "shown over time"): the Health panel lists the store's
figures per week from QA's relevance marks, the same as its JSON twin (/api/memory/stores/<id>/quality/); says so
when nothing is marked."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from agents import models
from tests.recall_pages import scored_recall


def test_the_memory_page_shows_the_stores_quality_per_week_as_its_json(alice_client, agent) -> None:
    recall = scored_recall(agent)
    page = alice_client.get(f"/agents/{agent.pk}/memory/?store={recall.store_id}").content.decode()
    assert 'id="quality-none"' in page and 'id="store-quality"' not in page

    models.Recall.objects.filter(pk=recall.pk).update(at=datetime(2026, 12, 2, 10, tzinfo=UTC))
    for rank, relevant in ((1, True), (2, False), (3, True)):
        answer = alice_client.post(f"/api/memory/recalls/{recall.pk}/marks/", data=json.dumps(
            {"rank": rank, "relevant": relevant}), content_type="application/json")
        assert answer.status_code in (200, 201), answer.content
    api = alice_client.get(f"/api/memory/stores/{recall.store_id}/quality/", {"period": "week"}).json()
    page = alice_client.get(f"/agents/{agent.pk}/memory/?store={recall.store_id}").content.decode()
    table = re.search(r'<table class="data stacked store-weeks" id="store-quality".*?</table>', page, re.S)
    assert table, page[:2000]
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td>(.*?)</tr>", table.group(0), re.S)
    assert [week for week, _ in rows] == ["2026-11-30"]
    cells = [re.sub(r"<[^>]+>", "", c).split() for c in re.findall(r'<td class="num"[^>]*>(.*?)</td>', rows[0][1])]
    [figures] = api["periods"]  # each period's figures beside its start and end

    def shown(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}".rstrip("0").rstrip(".")

    assert cells[0] == [str(figures["recalls"])]
    assert [c[0] for c in cells[1:]] == [shown(figures[name]) for name in ("precision", "recall", "mrr", "ndcg",
                                                                           "hit_rate")]
    assert shown(figures["precision"]) == "0.667"  # two of the three items relevant, all marked
