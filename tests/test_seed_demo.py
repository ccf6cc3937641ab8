from __future__ import annotations

import io
import json
import re

from django.contrib.auth.models import User
from django.core.management import call_command

from agents import demo_data
from agents.models import Agent, Membership, Message, Project, Session, ToolCall

BROKEN_KINDS = {
    "orphan_tool_result", "unanswered_tool_call", "interrupted_exchange", "duplicate_tool_call_id", "leading_tool_result",
}


def _seed(*args: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def _snapshot() -> dict[str, object]:
    return {
        "projects": sorted(Project.objects.values_list("pk", "slug", "name")),
        "agents": sorted(Agent.objects.values_list("pk", "slug", "model", "context_window")),
        "sessions": sorted(Session.objects.values_list("pk", "external_id", "message_count", "token_total", "violation_count")),
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
    assert BROKEN_KINDS <= kinds
    broken = Session.objects.filter(title__startswith="Broken:")
    assert broken.count() >= len(BROKEN_KINDS)
    assert all(s.violation_count > 0 for s in broken)
    assert Session.objects.filter(violation_count=0).count() > broken.count()


def test_it_stores_what_the_product_is_for(db):
    _seed()
    assistant_calls = Message.objects.filter(role="assistant").exclude(tool_calls=[])
    assert any(len(m.tool_calls) >= 2 for m in assistant_calls)  # parallel calls
    assert Message.objects.filter(role="tool", is_error=True).exists()  # tool errors
    loops = [s for s in Session.objects.all() if s.messages.filter(role="assistant").exclude(tool_calls=[]).count() >= 3]
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
    first, second = demo_data.demo_sessions(7), demo_data.demo_sessions(7)
    assert [s.conversation for s in first] == [s.conversation for s in second]
    assert [s.conversation for s in demo_data.demo_sessions(8)] != [s.conversation for s in first]


def test_it_generates_sessions_with_unique_external_ids_per_agent():
    keys = [(s.agent, s.conversation.external_id) for s in demo_data.demo_sessions()]
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
