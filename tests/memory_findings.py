"""Files with memory findings, as the libraries wrote them or as mem0 writes them, imported through the one import
path: for the findings' API, page and health tests."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path

from agents import models
from agents.transfer import imports
from tests.paths import MEMORY_SAMPLES

AGENTSCOPE = MEMORY_SAMPLES / "agentscope"
STALE_RECORD = "97471722-3994-4a2e-ae92-ad22be78fc72"
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def import_turn3(project: models.Project, folder: Path) -> models.Session:
    """AgentScope's third turn (its long-term memory a cache of turn 2's answer) and mem0's records, which had
    updated the record that turn sends the old version of."""
    folder.mkdir(parents=True, exist_ok=True)
    imports.import_file(Path(shutil.copy(AGENTSCOPE / "session_user_1_turn3.json", folder / "user_1_trip.json")),
                        project=project)
    imports.import_file(AGENTSCOPE / "ltm_mem0_records.json", project=project)
    return models.Session.objects.get(agent__project=project, external_id="user_1_trip")


def mem0_duplicates(folder: Path, records: int, *, user: str = "dana", text: str = "Likes green tea") -> Path:
    """A mem0 ``get_all`` output with its history, as mem0 writes them: every record holds the same fact (mem0 1.x
    with an eager model adds it again instead of updating), and the first was rewritten with the same text."""
    results, history = [], []
    for i in range(records):
        memory_id = f"00000000-0000-0000-0000-{i + 1:012d}"
        when = (T0 + dt.timedelta(minutes=i)).isoformat()
        results.append({"id": memory_id, "memory": text, "metadata": None, "created_at": when,
                        "updated_at": when, "user_id": user,
                        "hash": hashlib.md5(text.encode()).hexdigest()})
        history.append({"id": f"h-{i}-0", "memory_id": memory_id, "old_memory": None, "new_memory": text,
                        "event": "ADD", "created_at": when, "updated_at": when, "is_deleted": False,
                        "actor_id": user, "role": "user"})
    later = (T0 + dt.timedelta(days=1)).isoformat()
    history.append({"id": "h-0-1", "memory_id": results[0]["id"], "old_memory": text,
                    "new_memory": text, "event": "UPDATE", "created_at": results[0]["created_at"],
                    "updated_at": later, "is_deleted": False, "actor_id": user, "role": "user"})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mem0-{user}-{records}.json"
    path.write_text(json.dumps({"results": results, "history": history}))
    return path
