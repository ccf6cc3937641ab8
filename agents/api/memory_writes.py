"""The memory write API, for teams that do not trace (issue 26): a store created, versions of its records written
(one or a batch), a recall posted with its items and the message (or captured call) it fed, a snapshot posted.

The writes are ``agents.capture.memory_writes`` (each a small memory document stored by ``ledger.storing``, the one
path for storing); each thing written carries the client's id, so that a retry never duplicates (what was stored
already is counted in ``skipped``).

Writing needs the editor or admin role in the project, as every write of the API: a project API key has it in its
own project (``Authorization: Bearer <key>``). ``project`` (a slug) names the project when the caller may write to
several.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiExample
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.endpoints import body_as, documented, write_api
from agents.capture.memory_writes import (
    ApiRecall,
    ApiSnapshot,
    ApiStoreCreate,
    ApiVersions,
    Conflict,
    recall_posted,
    snapshot_posted,
    store_created,
    versions_written,
)
from agents.ledger import storing

# --- the endpoints --------------------------------------------------------------------------------------------------


def _answer(outcome: storing.MemoryOutcome, made: int) -> Response:
    data = {name: value for name, value in outcome.to_dict().items() if name != "stores"}
    return Response(data, status=201 if made else 200)


_STORE_EXAMPLE = OpenApiExample("A user's preferences", request_only=True, value={
    "id": "prefs-alice", "name": "Alice's preferences", "kind": "records", "agent": "travel-agent",
    "scope": {"user_id": "alice"}})
_VERSIONS_EXAMPLE = OpenApiExample("Two writes of one record", request_only=True, value={
    "store": "prefs-alice", "versions": [
        {"id": "evt-1", "record": "mem-1", "op": "ADD", "text": "Alice is vegetarian",
         "metadata": {"source": "chat"}, "at": "2026-12-07T09:00:00Z"},
        {"id": "evt-2", "record": "mem-1", "op": "UPDATE", "text": "Alice is vegan", "at": "2026-12-07T09:05:00Z",
         "session": 42, "seq": 3}]})
_RECALL_EXAMPLE = OpenApiExample("A search that fed the system prompt", request_only=True, value={
    "id": "read-7", "session": 42, "seq": 0, "store": "prefs-alice", "query": "what does alice eat",
    "params": {"limit": 5}, "placement": "system", "persisted": False, "at": "2026-12-07T09:06:00Z",
    "items": [{"record": "mem-1", "text": "Alice is vegan", "score": 0.83}]})
_SNAPSHOT_EXAMPLE = OpenApiExample("An agent's saved state", request_only=True, value={
    "id": "state-3", "agent": "travel-agent", "format": "autogen", "value": {"messages": []},
    "parent": "state-2", "step": 3, "session": 42, "seq": 5})
_OUTCOME_EXAMPLE = OpenApiExample("What was stored", response_only=True, status_codes=["201"], value={
    "records": 1, "versions": 2, "recalls": 0, "recall_items": 0, "unmatched_items": 0, "snapshots": 0,
    "compactions": 0, "skipped": 0, "notes": []})


@documented("memory_store_write", "Create a memory store (idempotent by id)", 400, 401, 403, 409, ok=(200, 201),
            method="POST", request=ApiStoreCreate, examples=[_STORE_EXAMPLE])
@write_api(["POST"])
def store_write(request: Request) -> Response:
    """Create a memory store (``ApiStoreCreate``): 201 with the store, or 200 with the one this ``id`` made
    before; 409 when the id names a store of another kind or agent."""
    try:
        store, made = store_created(user=request.user, body=body_as(request, ApiStoreCreate))
    except Conflict as exc:
        return Response({"error": str(exc)}, status=409)
    return Response({"id": store.external_id, "store": store.pk, "name": store.name, "kind": store.kind,
                     "scope": store.scope, "agent": store.agent.slug if store.agent else None,
                     "record_count": store.record_count}, status=201 if made else 200)


@documented("memory_versions_write", "Write versions of a store's records, one or a batch (idempotent by id)", 400,
            401, 403, ok=(200, 201), method="POST", request=ApiVersions,
            examples=[_VERSIONS_EXAMPLE, _OUTCOME_EXAMPLE])
@write_api(["POST"])
def versions_write(request: Request) -> Response:
    """Write versions (``ApiVersions``): each a record's whole new body, placed by its time among the record's
    versions (a late one renumbers them). 201 when something new was stored; 200 when every version was stored
    already (``skipped``)."""
    outcome = versions_written(user=request.user, body=body_as(request, ApiVersions))
    return _answer(outcome, outcome.versions)


@documented("memory_recall_write", "Post a recall with its items (idempotent by id)", 400, 401, 403,
            ok=(200, 201), method="POST", request=ApiRecall, examples=[_RECALL_EXAMPLE])
@write_api(["POST"])
def recall_write(request: Request) -> Response:
    """Post a recall (``ApiRecall``): its items matched to the store's records by id, then by text, at the version
    current then; an item that matches none stays, unmatched. 200 when this id was posted before."""
    outcome = recall_posted(user=request.user, body=body_as(request, ApiRecall))
    return _answer(outcome, outcome.recalls)


@documented("memory_snapshot_write", "Post a snapshot of an agent's state (idempotent by id)", 400, 401, 403,
            ok=(200, 201), method="POST", request=ApiSnapshot, examples=[_SNAPSHOT_EXAMPLE])
@write_api(["POST"])
def snapshot_write(request: Request) -> Response:
    """Post a snapshot (``ApiSnapshot``), kept verbatim; its parent by the client id of the one before (or, in a
    session, the one before it there). 200 when this id was posted before."""
    outcome = snapshot_posted(user=request.user, body=body_as(request, ApiSnapshot))
    return _answer(outcome, outcome.snapshots)

