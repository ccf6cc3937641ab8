from __future__ import annotations

import io
import json
import re

from django.contrib.auth.models import User
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.demo import catalog, chat, travel
from agents.models import Agent, Membership, Message, Project, Session, ToolCall

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
    assert User.objects.get(username="demo").password == demo.password


def test_it_stores_the_same_data_again_after_a_reset(db):
    _seed()
    before = {(s.external_id, s.message_count, s.token_total, s.violation_count) for s in Session.objects.all()}
    _seed("--reset")
    after = {(s.external_id, s.message_count, s.token_total, s.violation_count) for s in Session.objects.all()}
    assert after == before


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
