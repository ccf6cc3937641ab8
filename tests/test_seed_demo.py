from __future__ import annotations

import io
import json
import re

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Max
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.access import sessions_for_user, user_projects
from agents.demo import catalog, chat, memory_layers, travel
from agents.ledger.reading import stores_for_user
from agents.models import (
    Agent,
    Membership,
    MemoryRecord,
    MemoryStore,
    Message,
    Project,
    Recall,
    RecallItem,
    RecordVersion,
    Session,
    Snapshot,
    ToolCall,
)
from tests.paths import MEMORY_SAMPLES

BROKEN_KINDS = {
    "orphan_tool_result",
    "unanswered_tool_call",
    "interrupted_exchange",
    "duplicate_tool_call_id",
    "leading_tool_result",
}


def _seed(*args: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def _snapshot() -> dict[str, object]:
    return {
        "projects": sorted(Project.objects.values_list("pk", "slug", "name")),
        "agents": sorted(Agent.objects.values_list("pk", "slug", "model", "context_window")),
        "sessions": sorted(
            Session.objects.values_list("pk", "external_id", "message_count", "token_total", "violation_count")
        ),
        "messages": Message.objects.count(),
        "tool_calls": ToolCall.objects.count(),
        "memberships": sorted(Membership.objects.values_list("project__slug", "user__username", "role")),
        "stores": sorted(MemoryStore.objects.values_list(
            "pk", "agent_id", "kind", "state", "record_count", "version_count", "read_count", "last_read_at")),
        "records": sorted(MemoryRecord.objects.values_list("pk", "text", "state", "version_count", "read_count")),
        "versions": sorted(RecordVersion.objects.values_list("pk", "record_id", "number", "op", "text", "at")),
        "recalls": sorted(Recall.objects.values_list("pk", "session_id", "seq", "store_id", "persisted")),
        "recall_items": sorted(RecallItem.objects.values_list("pk", "recall_id", "record_id", "version", "text")),
        "snapshots": sorted(Snapshot.objects.values_list("pk", "agent_id", "session_id", "seq", "parent_id")),
    }


def test_it_seeds_projects_agents_and_dozens_of_sessions(db, client):
    out = _seed()
    assert Project.objects.count() >= 2
    assert Agent.objects.count() >= 4
    assert Session.objects.count() >= 24
    assert Session.objects.filter(message_count__gte=5000).exists()
    for session in Session.objects.all():
        assert session.messages.count() == session.message_count
        assert session.token_total == sum(session.messages.values_list("token_count", flat=True)) + 3
    assert "Log in as demo / memoryviz-demo" in out
    assert client.login(username="demo", password="memoryviz-demo")
    demo = User.objects.get(username="demo")
    assert set(Membership.objects.filter(user=demo).values_list("role", flat=True)) == {"admin"}
    assert Membership.objects.filter(user=demo).count() == Project.objects.count()


def test_it_stores_a_session_for_each_way_the_protocol_breaks(db):
    _seed()
    kinds = {v["kind"] for s in Session.objects.filter(violation_count__gt=0) for v in s.violations}
    assert kinds >= BROKEN_KINDS
    broken = Session.objects.filter(title__startswith="Broken:")
    assert broken.count() >= len(BROKEN_KINDS)
    assert all(s.violation_count > 0 for s in broken)
    assert Session.objects.filter(violation_count=0).count() > broken.count()


def test_it_stores_what_the_product_is_for(db):
    _seed()
    assistant_calls = Message.objects.filter(role="assistant").exclude(tool_calls=[])
    assert any(len(m.tool_calls) >= 2 for m in assistant_calls)  # parallel calls
    assert Message.objects.filter(role="tool", is_error=True).exists()  # tool errors
    loops = [
        s for s in Session.objects.all() if s.messages.filter(role="assistant").exclude(tool_calls=[]).count() >= 3
    ]
    assert len(loops) >= 5  # multi-step tool loops
    long_json = [m for m in Message.objects.filter(role="tool") if len(m.content or "") >= 4000]
    assert long_json and isinstance(json.loads(long_json[0].content), dict)  # several KB of JSON
    assert Message.objects.exclude(reasoning="").exists()
    texts = " ".join(Message.objects.filter(role="user").values_list("content", flat=True))
    assert re.search(r"[\u3040-\u30ff]", texts)  # Japanese
    assert re.search(r"[äöüß]", texts)  # German
    assert ToolCall.objects.order_by().values("name").distinct().count() >= 10
    assert Session.objects.order_by().values("source_format").distinct().count() >= 3


def test_it_is_idempotent(db):
    _seed()
    before = _snapshot()
    demo = User.objects.get(username="demo")
    out = _seed()
    assert _snapshot() == before
    assert "0 sessions stored" in out
    assert "0 sessions, 0 stores, 0 records, 0 versions, 0 recalls, 0 snapshots added" in out
    assert User.objects.get(username="demo").password == demo.password


def _memory_layers() -> dict[str, object]:
    return {
        "stores": sorted(MemoryStore.objects.values_list("project__slug", "name", "kind", "record_count",
                                                          "version_count", "read_count")),
        "versions": sorted(RecordVersion.objects.values_list("record__external_id", "number", "op", "text", "seq")),
        "items": sorted(RecallItem.objects.values_list("recall__session__external_id", "recall__seq", "rank",
                                                       "record__external_id", "version")),
        "snapshots": sorted(Snapshot.objects.values_list("external_id", "seq", "parent__external_id")),
    }


def test_it_stores_the_same_data_again_after_a_reset(db):
    _seed()
    before = {(s.external_id, s.message_count, s.token_total, s.violation_count) for s in Session.objects.all()}
    layers = _memory_layers()
    out = _seed("--reset")
    after = {(s.external_id, s.message_count, s.token_total, s.violation_count) for s in Session.objects.all()}
    assert after == before
    assert _memory_layers() == layers
    assert "4 sessions, 5 stores, 11 records, 17 versions, 7 recalls, 9 snapshots added" in out


def test_it_generates_the_same_conversations_from_the_same_seed():
    first, second = catalog.demo_sessions(7), catalog.demo_sessions(7)
    assert [s.conversation for s in first] == [s.conversation for s in second]
    assert [s.conversation for s in catalog.demo_sessions(8)] != [s.conversation for s in first]


def test_it_generates_sessions_with_unique_external_ids_per_agent():
    keys = [(s.agent, s.conversation.external_id) for s in catalog.demo_sessions()]
    assert len(keys) == len(set(keys))


def test_it_lets_the_demo_user_browse_the_admin_read_only(db, client):
    _seed()
    demo = User.objects.get(username="demo")
    assert demo.is_staff and not demo.is_superuser
    assert client.login(username="demo", password="memoryviz-demo")
    assert client.get("/admin/").status_code == 200
    for model in ("project", "agent", "session", "message", "toolcall"):
        assert client.get(f"/admin/agents/{model}/").status_code == 200, model
        assert demo.has_perm(f"agents.view_{model}") and not demo.has_perm(f"agents.change_{model}")
    assert client.get("/admin/auth/user/").status_code == 403
    session = Session.objects.first()
    assert client.post(f"/admin/agents/session/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    _seed()  # a second run keeps it so, with no duplicate permissions
    assert User.objects.get(username="demo").user_permissions.count() == demo.user_permissions.count()


def test_it_searches_message_content_in_the_admin(db, admin_client, make_session):
    make_session([{"role": "user", "content": "my quota ran out yesterday"}, {"role": "assistant", "content": "ok"}])
    response = admin_client.get("/admin/agents/message/", {"q": "quota ran out"})
    assert response.status_code == 200
    assert [m.content for m in response.context["cl"].result_list] == ["my quota ran out yesterday"]


# --- the memory layers ---------------------------------------------------------------------------------------


def test_it_seeds_a_store_of_each_kind_in_the_demo_users_projects_and_no_one_elses(db):
    _seed()
    demo = User.objects.get(username="demo")
    stores = stores_for_user(demo)
    assert sorted(stores.values_list("project__slug", "kind", "source_format", "name")) == [
        ("memory-agentscope", "knowledge", "agentscope_session", "knowledge of Friday"),
        ("memory-agentscope", "records", "mem0", "long-term memory of Friday"),
        ("memory-autogen", "list", "autogen_memory", "user_prefs"),
        ("memory-langgraph", "records", "langgraph_store", "users.u-42.memories"),
        ("memory-letta", "blocks", "letta_af", "core_memory"),
    ]
    assert stores.count() == MemoryStore.objects.count()  # every store ready, in a project of the demo user
    assert all(store.record_count and store.version_count >= store.record_count for store in stores)
    # Each agent of the memory projects came from its file, none from a format's name; each has its session.
    agents = Agent.objects.filter(project__slug__startswith="memory-")
    assert sorted(agents.values_list("project__slug", "name")) == [
        ("memory-agentscope", "Friday"), ("memory-autogen", "assistant"), ("memory-langgraph", "travel helper"),
        ("memory-letta", "memgpt_agent")]
    assert all(agent.sessions.count() == 1 for agent in agents)
    # Letta's blocks keep their limit, and every edit the agent made is a version pointing to its message.
    blocks = MemoryRecord.objects.filter(store__kind="blocks")
    assert sorted(blocks.values_list("external_id", "char_limit", "version_count")) == [
        ("human", 5000, 5), ("persona", 5000, 2)]
    assert RecordVersion.objects.filter(record__in=blocks, op="UPDATE", seq__isnull=False).count() == 5
    stranger = User.objects.create_user("stranger")
    assert not stores_for_user(stranger).exists() and not sessions_for_user(stranger).exists()
    assert not Snapshot.objects.filter(agent__project__in=user_projects(stranger)).exists()


def test_it_seeds_recalls_that_match_their_records_and_chunks(db):
    _seed()
    friday = Session.objects.get(agent__name="Friday")
    assert friday in sessions_for_user(User.objects.get(username="demo"))
    assert friday.message_count == 20  # three saves of one session, each adding its turn
    knowledge = Recall.objects.filter(session=friday, store__kind="knowledge").order_by("seq")
    assert list(knowledge.values_list("seq", flat=True)) == [2, 8, 14]
    for recall in knowledge:  # every chunk sent matched to its chunk of the knowledge base
        assert [(i.rank, i.record.metadata["doc_id"], i.record.metadata["chunk_id"], i.version)
                for i in recall.items.order_by("rank")] == [
            (1, "hangzhou_guide.md", 1, 1), (2, "hangzhou_guide.md", 0, 1), (3, "hangzhou_guide.md", 2, 1)]
    memories = Recall.objects.filter(session=friday, store__kind="records").order_by("seq")
    assert [(r.seq, r.persisted, r.items.filter(record__isnull=False).count()) for r in memories] == [
        (7, True, 2), (13, True, 2)]
    # AutoGen's state names no memory: its two persisted recalls (the second sends the same memory again) stay
    # unmatched, as the import says.
    autogen = Recall.objects.filter(session__agent__name="assistant").order_by("seq")
    assert [(r.seq, r.persisted, r.store_id) for r in autogen] == [(1, True, None), (6, True, None)]
    assert [list(r.items.order_by("rank").values_list("text", flat=True)) for r in autogen] == [
        ["The user prefers metric units", "{'home_city': 'Paris'}"]] * 2
    assert not RecallItem.objects.filter(recall__in=autogen, record__isnull=False).exists()


def _stale(item: RecallItem) -> bool:
    """The item sent an older version than its record had when it was recalled."""
    then = RecordVersion.objects.filter(record=item.record, at__lte=item.recall.at).aggregate(n=Max("number"))["n"]
    return item.version is not None and then is not None and item.version < then


def test_it_seeds_a_stale_recall(db):
    _seed()
    matched = RecallItem.objects.filter(record__isnull=False).select_related("recall", "record")
    stale = [i for i in matched if _stale(i)]
    # Turn 3 (a day after mem0's UPDATE) still sent the text of version 1; turn 2 sent the same text before it.
    assert [(i.recall.seq, i.text, i.version, i.record.text, i.record.version_count) for i in stale] == [
        (13, "User prefers trains over flights", 1, "User prefers high-speed trains over flights", 2)]
    update = RecordVersion.objects.get(record=stale[0].record, number=2)
    assert update.op == "UPDATE" and update.at < stale[0].recall.at
    earlier = matched.get(recall__seq=7, text="User prefers trains over flights")
    assert earlier.version == 1 and not _stale(earlier)


def test_it_seeds_snapshots_with_their_parents(db):
    _seed()
    demo = User.objects.get(username="demo")
    snapshots = Snapshot.objects.filter(agent__project__in=user_projects(demo))
    assert snapshots.count() == Snapshot.objects.count() == 9

    def chain(agent: str) -> list[tuple[int | None, int | None]]:
        rows = snapshots.filter(agent__name=agent).select_related("parent").order_by("id")
        return [(s.seq, s.parent.seq if s.parent else None) for s in rows]

    assert chain("Friday") == [(5, None), (11, 5), (19, 11)]  # AgentScope's three saves, each the next's parent
    assert chain("travel helper") == [(None, None), (0, None), (1, 0), (2, 1), (3, 2)]  # LangGraph's checkpoints
    assert snapshots.filter(agent__name="travel helper", seq=0).get().parent.seq is None
    assert chain("memgpt_agent") == [(90, None)]


# Each demo file and the sample it is a copy of (agents/demo/memory_files/README.md).
DEMO_COPIES = {
    "agentscope/turn1/user_1_trip.json": "agentscope/session_user_1_turn1.json",
    "agentscope/turn2/user_1_trip.json": "agentscope/session_user_1_turn2.json",
    "agentscope/turn3/user_1_trip.json": "agentscope/session_user_1_turn3.json",
    "agentscope/ltm_mem0_records.json": "agentscope/ltm_mem0_records.json",
    "letta/memgpt_agent_with_convo.v1.af": "letta/memgpt_agent_with_convo.v1.af",
    "autogen/list_memory_component.json": "autogen/list_memory_component.json",
    "autogen/assistant_state_after_run2.json": "autogen/assistant_state_after_run2.json",
    "langgraph/state_history.json": "langgraph/state_history.json",
    "langgraph/store_items.json": "langgraph/store_items.json",
}


def test_the_demo_memory_files_are_the_libraries_own():
    imported = {f.path for f in memory_layers.FILES_IN_ORDER}
    assert imported == {*DEMO_COPIES, "agentscope/hangzhou_guide.knowledge.json"}
    on_disk = {str(p.relative_to(memory_layers.FILES)) for p in memory_layers.FILES.rglob("*") if p.is_file()}
    assert on_disk == imported | {"README.md"}
    for demo, sample in DEMO_COPIES.items():
        assert (memory_layers.FILES / demo).read_bytes() == (MEMORY_SAMPLES / sample).read_bytes(), demo
    knowledge = (memory_layers.FILES / "agentscope/hangzhou_guide.knowledge.json").read_text(encoding="utf-8")
    assert knowledge == memory_layers.knowledge_file_text()


# --- the demo data reads as real ------------------------------------------------------------------------------

# IATA designators, independent of the generator's table: a flight number starts with its airline's code.
IATA = {"TAP Air Portugal": "TP", "Lufthansa": "LH", "Iberia": "IB", "KLM": "KL", "United": "UA", "Delta": "DL",
        "Air France": "AF", "Icelandair": "FI", "Turkish Airlines": "TK"}
WINTER = {12, 1, 2}


def _tool_results(conversation, name: str) -> list[dict]:
    calls = {tc.id: tc for m in conversation.messages for tc in (m.tool_calls or [])}
    return [json.loads(m.content) for m in conversation.messages
            if m.role == "tool" and m.tool_call_id in calls and calls[m.tool_call_id].function.name == name
            and not m.is_error]


def _travel(seed: int, day: int):
    import datetime as dt
    import random

    start = chat.EPOCH + dt.timedelta(days=day)
    return travel.travel_session(random.Random(seed), 1, start)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), day=st.integers(0, 300))
def test_it_forecasts_highs_that_fit_the_city_and_the_season(seed, day):
    conversation = _travel(seed, day)
    for forecast in _tool_results(conversation, "get_weather"):
        for d in forecast["days"]:
            month = int(d["date"][5:7])
            assert d["low"] < d["high"]
            assert -15 <= d["high"] <= 38
            if forecast["city"] in ("Oslo", "Montréal") and month in WINTER:
                assert d["high"] < 5, (forecast["city"], d)
            if forecast["city"] in ("Oslo", "Edinburgh", "Reykjavík", "Vienna", "Montréal") and month in WINTER:
                assert d["high"] < 12, (forecast["city"], d)
            if forecast["city"] in ("Cape Town", "Hanoi", "Mexico City") and month in WINTER:
                assert d["high"] >= 15, (forecast["city"], d)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_it_numbers_flights_with_the_airlines_own_code(seed):
    conversation = _travel(seed, 3)
    flights = [f for result in _tool_results(conversation, "search_flights") for f in result["results"]]
    assert flights
    for flight in flights:
        assert re.fullmatch(r"[A-Z]{2}\d{3,4}", flight["flight"])
        assert flight["flight"][:2] == IATA[flight["airline"]], flight
    # The assistant quotes the cheapest flight as it was found.
    cheapest = min(flights, key=lambda f: f["price"]["amount"])
    assert f"{cheapest['airline']} {cheapest['flight']}" in " ".join(
        m.content for m in conversation.messages if m.role == "assistant" and m.content)


# Words only one of the languages uses (the demo's own vocabulary is small, so a handful each decides).
MARKERS = {
    "en": {"the", "your", "you", "shall", "want", "thank", "sorry", "have", "with"},
    "fr": {
        "vous",
        "est",
        "nuit",
        "nuits",
        "je",
        "pour",
        "quel",
        "bonjour",
        "réservé",
        "voulez-vous",
        "petit-déjeuner",
        "plutôt",
        "bon",
    },
    "es": {
        "por",
        "noche",
        "noches",
        "quiero",
        "hola",
        "qué",
        "tiempo",
        "reservado",
        "quiere",
        "hará",
        "desayuno",
        "buen",
        "presupuesto",
    },
    "de": {
        "ist",
        "ihre",
        "sie",
        "gern",
        "geschehen",
        "einen",
        "tag",
        "noch",
        "hallo",
        "meine",
        "die",
        "der",
        "bestellung",
        "nicht",
        "vielen",
        "dank",
        "wir",
        "bei",
    },
}


def _language(text: str) -> str:
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", text):
        return "ja"
    words = re.findall(r"[\w'-]+", text.lower())
    scores = {lang: sum(w in markers for w in words) for lang, markers in MARKERS.items()}
    return max(scores, key=scores.get)


def test_it_answers_in_the_language_the_user_writes():
    languages = set()
    for demo in catalog.demo_sessions():
        messages = demo.conversation.messages
        first_user = next((m.content for m in messages if m.role == "user"), None)
        if not first_user or first_user.startswith("Summary of earlier"):
            continue
        expected = _language(first_user)
        languages.add(expected)
        for m in messages:
            if m.role == "assistant" and m.content and not m.tool_calls:
                assert _language(m.content) == expected, (demo.conversation.title, m.content)
    assert {"en", "fr", "de", "ja"} <= languages


def test_it_gives_every_session_its_own_title():
    for seed in (catalog.DEFAULT_SEED, 1, 2):
        titles = [s.conversation.title for s in catalog.demo_sessions(seed)]
        assert all(titles) and len(titles) == len(set(titles)), [t for t in titles if titles.count(t) > 1]


def test_the_demo_leaves_the_planner_knowing_its_tables_on_postgresql(db):
    """A bulk load: on PostgreSQL, seed_demo analyzes the tables it filled, so that the next page is planned for
    thousands of messages, not for the empty tables autovacuum last saw (the admin's tool calls took minutes in CI)."""
    from django.db import connection

    _seed()
    if connection.vendor != "postgresql":  # SQLite plans without table statistics: nothing to refresh
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [Message._meta.db_table])
        (estimated,) = cursor.fetchone()
    assert estimated == Message.objects.count() > 1000


def test_the_demo_keeps_each_sessions_structure_so_its_first_trim_reads_no_row(db):
    from agents.models import SessionStructure

    _seed()
    current = {(s.session_id, s.content_version, s.token_counter, s.message_count)
               for s in SessionStructure.objects.all()}
    sessions = {(s.pk, s.content_version, s.token_counter, s.message_count) for s in Session.objects.all()}
    assert sessions and current == sessions
