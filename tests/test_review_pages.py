"""QA review on the pages: the members and labels of the settings page, annotations and review status on the
session page, the list's review filters and sorts, the review queue; every page action against every role."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import models
from agents.models import Membership
from agents.projects import labels
from agents.projects import members as projects_members
from agents.review import annotating, workflow

CHAIN = [
    {"role": "user", "content": "Find me a flight to Lisbon."},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "search_flights", "arguments": "{\"to\": \"LIS\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "upstream timeout", "is_error": True},
    {"role": "assistant", "content": "Booked!"},
]
ROLES = ["viewer", "annotator", "editor", "admin"]


@pytest.fixture
def session(make_session):
    return make_session(CHAIN, title="Lisbon")


@pytest.fixture
def members(project) -> dict[str, User]:
    out = {}
    for role in ROLES:
        user = User.objects.create_user(f"{role}-user", password="pw")
        Membership.objects.create(project=project, user=user, role=role)
        out[role] = user
    return out


@pytest.fixture
def label(project) -> models.Label:
    return models.Label.objects.create(project=project, name="hallucination", color="#dc2626")


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


# --- every page action against every role ---------------------------------------------------------------------


@dataclass
class Action:
    name: str
    path: Callable[[models.Session, models.Annotation, models.Label], str]
    data: dict[str, Any]
    least: str
    done: Callable[[models.Session, models.Annotation, models.Label], bool]


def _member(username: str) -> Membership | None:
    return Membership.objects.filter(user__username=username).first()


ACTIONS = [
    Action("annotate", lambda s, a, lb: f"/sessions/{s.pk}/annotations/",
           {"seq": "2", "label": "hallucination", "comment": "no retry"},
           "annotator", lambda s, a, lb: models.Annotation.objects.filter(session=s, message__seq=2).exists()),
    Action("edit one's annotation", lambda s, a, lb: f"/sessions/{s.pk}/annotations/{a.pk}/", {"comment": "changed"},
           "annotator", lambda s, a, lb: models.Annotation.objects.get(pk=a.pk).comment == "changed"),
    Action("delete one's annotation", lambda s, a, lb: f"/sessions/{s.pk}/annotations/{a.pk}/delete/", {},
           "annotator", lambda s, a, lb: not models.Annotation.objects.filter(pk=a.pk).exists()),
    Action("set review status", lambda s, a, lb: f"/sessions/{s.pk}/review/", {"review_status": "in_review"},
           "annotator", lambda s, a, lb: models.Session.objects.get(pk=s.pk).review_status == "in_review"),
    Action("delete the session", lambda s, a, lb: f"/sessions/{s.pk}/delete/", {},
           "editor", lambda s, a, lb: not models.Session.objects.filter(pk=s.pk).exists()),
    Action("add a member", lambda s, a, lb: "/projects/alpha/members/", {"username": "dave", "role": "viewer"},
           "admin", lambda s, a, lb: _member("dave") is not None),
    Action("change a role", lambda s, a, lb: f"/projects/alpha/members/{_member('viewer-user').pk}/role/",
           {"role": "annotator"}, "admin", lambda s, a, lb: _member("viewer-user").role == "annotator"),
    Action("remove a member", lambda s, a, lb: f"/projects/alpha/members/{_member('viewer-user').pk}/remove/", {},
           "admin", lambda s, a, lb: _member("viewer-user") is None),
    Action("add a label", lambda s, a, lb: "/projects/alpha/labels/", {"name": "wrong tool", "color": "#2563eb"},
           "admin", lambda s, a, lb: models.Label.objects.filter(name="wrong tool").exists()),
    Action("change a label", lambda s, a, lb: f"/projects/alpha/labels/{lb.pk}/",
           {"name": "made up", "color": "#000000"},
           "admin", lambda s, a, lb: models.Label.objects.get(pk=lb.pk).name == "made up"),
    Action("delete a label", lambda s, a, lb: f"/projects/alpha/labels/{lb.pk}/delete/", {},
           "admin", lambda s, a, lb: not models.Label.objects.filter(pk=lb.pk).exists()),
]


@pytest.mark.parametrize("who", [*ROLES, "outsider"])
@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_each_page_action_is_for_the_roles_that_may(action, who, htmx, session, members, label, bob, other_project):
    User.objects.create_user("dave")
    user = bob if who == "outsider" else members[who]
    annotation = models.Annotation.objects.create(session=session, message=session.messages.get(seq=1),
                                                  comment="first", author=user)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client_for(user).post(action.path(session, annotation, label), action.data, **headers)
    if who == "outsider":
        assert response.status_code == 404, response.content[:300]
        assert not action.done(session, annotation, label)
    elif Membership.ORDER.index(who) >= Membership.ORDER.index(action.least):
        assert response.status_code == (200 if htmx else 302), (who, action.name, response.content[:500])
        assert action.done(session, annotation, label), (who, action.name)
    else:
        assert response.status_code == 403, (who, action.name, response.status_code)
        assert not action.done(session, annotation, label)


@pytest.mark.parametrize("who", ROLES)
def test_the_delete_button_and_its_confirmation_are_for_editors_and_admins(session, members, label, who):
    models.Annotation.objects.create(session=session, comment="keep?", author=members[who])
    client = client_for(members[who])
    page = client.get(session.get_absolute_url()).content.decode()
    confirm = client.get(f"/sessions/{session.pk}/delete/")
    if who in ("editor", "admin"):
        assert f'id="delete-session" href="/sessions/{session.pk}/delete/"' in page
        # The confirmation says what goes and deletes only on POST.
        assert confirm.status_code == 200
        text = confirm.content.decode()
        assert "its 4 messages" in text and "1 annotation" in text and 'method="post"' in text
        assert models.Session.objects.filter(pk=session.pk).exists()
        response = client.post(f"/sessions/{session.pk}/delete/")
        assert response.status_code == 302 and response["Location"] == f"/?agent={session.agent_id}"
        listing = client.get(response["Location"]).content.decode()
        assert "Deleted the session &#x27;Lisbon&#x27; and its 4 messages." in listing
        assert not models.Message.objects.filter(session_id=session.pk).exists()
        assert not models.Annotation.objects.filter(session_id=session.pk).exists()
    else:
        assert 'id="delete-session"' not in page and confirm.status_code == 403


@pytest.mark.parametrize("path", ["/projects/alpha/members/", "/sessions/{s}/annotations/", "/sessions/{s}/review/"])
def test_the_page_actions_take_no_get(alice_client, session, path):
    assert alice_client.get(path.format(s=session.pk)).status_code == 405


# --- the settings page ----------------------------------------------------------------------------------------


def test_the_settings_page_has_members_labels_and_api_keys_on_one_page(alice_client, project, members, label):
    page = alice_client.get("/projects/alpha/settings/").content.decode()
    for section in ('id="members"', 'id="labels"', 'id="api-keys"'):
        assert section in page
    assert "annotator-user" in page and "hallucination" in page and 'data-color="#dc2626"' in page


@pytest.mark.parametrize(("color", "ink"), [
    ("#ffffff", labels.INK_DARK), ("#000000", labels.INK_LIGHT),
    ("#ca8a04", labels.INK_DARK),   # the offered yellow: white on it is 2.9:1
    ("#fde047", labels.INK_DARK), ("#0891b2", labels.INK_DARK), ("#2563eb", labels.INK_LIGHT),
    ("#dc2626", labels.INK_LIGHT), ("#6b7280", labels.INK_LIGHT), ("#777777", labels.INK_DARK),
])
def test_a_label_chips_text_is_the_ink_that_contrasts_more_with_its_colour(color, ink):
    assert labels.label_ink(color) == ink
    assert labels.contrast_ratio(color, ink) >= 4.5


def test_every_colour_gets_a_label_ink_of_at_least_wcag_aa_contrast():
    steps = range(0, 256, 15)
    worst = min(labels.contrast_ratio(c, labels.label_ink(c))
                for c in (f"#{r:02x}{g:02x}{b:02x}" for r in steps for g in steps for b in steps))
    assert 4.5 <= worst < 4.7  # the worst colours sit near 4.58:1 with both inks
    assert labels.contrast_ratio("#ffffff", "#000000") == pytest.approx(21)


def test_the_pages_render_each_label_chip_with_its_ink(alice_client, alice, project, session, label):
    models.Label.objects.create(project=project, name="fine", color="#fde047")
    annotating.annotation_create(user=alice, session=session, seq=2, label="fine", comment="")
    annotating.annotation_create(user=alice, session=session, seq=3, label="hallucination", comment="")
    dark_chip = 'class="label-chip ink-dark" data-color="#fde047"'
    light_chip = 'class="label-chip ink-light" data-color="#dc2626"'
    for url in ("/projects/alpha/settings/", session.get_absolute_url(), "/"):
        page = alice_client.get(url).content.decode()
        assert dark_chip in page and light_chip in page, url


def test_the_last_admin_cannot_leave_or_step_down(alice_client, project, alice):
    mine = Membership.objects.get(user=alice)
    response = alice_client.post(f"/projects/alpha/members/{mine.pk}/role/", {"role": "viewer"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "last admin cannot step down" in response.content.decode()
    response = alice_client.post(f"/projects/alpha/members/{mine.pk}/remove/", {})
    assert response.status_code == 200 and "last admin cannot leave" in response.content.decode()
    assert Membership.objects.get(user=alice).role == "admin"


@pytest.mark.parametrize(("data", "error"), [
    ({"name": "", "color": "#000000"}, "a label needs a name"),
    ({"name": "x", "color": "red"}, "is not a colour as #rrggbb"),
    ({"name": "Hallucination", "color": "#000000"}, "already has a label"),
])
def test_a_bad_label_is_refused_next_to_the_form(alice_client, label, data, error):
    response = alice_client.post("/projects/alpha/labels/", data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and error in response.content.decode()
    assert models.Label.objects.count() == 1


def test_deleting_a_label_keeps_the_comments_and_drops_bare_labels(alice, session, label):
    bare = annotating.annotation_create(user=alice, session=session, seq=1, label="hallucination", comment="")
    commented = annotating.annotation_create(user=alice, session=session, seq=2, label="hallucination", comment="why")
    assert labels.label_delete(user=alice, label=label) == 1
    assert not models.Annotation.objects.filter(pk=bare.pk).exists()
    assert models.Annotation.objects.get(pk=commented.pk).label is None


def test_removing_a_member_unassigns_their_sessions(alice, session, members):
    workflow.session_review_update(user=alice, session=session, assignee="annotator-user")
    projects_members.member_remove(user=alice, membership=_member("annotator-user"))
    assert models.Session.objects.get(pk=session.pk).assignee is None


# --- the session page -----------------------------------------------------------------------------------------


def test_the_session_page_shows_annotations_in_the_chain_and_the_side_list(alice_client, alice, session, label):
    annotating.annotation_create(user=alice, session=session, seq=2, label="hallucination",
                                 comment="<script>alert(1)</script>")
    annotating.annotation_create(user=alice, session=session, seq=None, label=None, comment="whole run")
    page = alice_client.get(session.get_absolute_url()).content.decode()
    chain_part = page[page.index('id="m-2"'):]
    assert "hallucination" in chain_part[:chain_part.index("</article>")]
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    side = page[page.index('id="review"'):page.index("</aside>", page.index('id="review"'))]
    assert "whole session" in side and "whole run" in side and "#2" in side
    assert 'id="annotate"' in side and "Edit" in side


def test_a_viewer_sees_the_review_but_no_forms(session, members, alice, label):
    annotating.annotation_create(user=alice, session=session, seq=2, label="hallucination", comment="seen")
    page = client_for(members["viewer"]).get(session.get_absolute_url()).content.decode()
    assert "seen" in page and "Unreviewed" in page.title() or "unreviewed" in page
    for form_bit in ('id="annotate"', 'name="review_status"', "annotations/", 'class="annotate-link'):
        assert form_bit not in page, form_bit


def test_adding_an_annotation_by_htmx_answers_the_panel_and_the_message_out_of_band(alice_client, session, label):
    response = alice_client.post(f"/sessions/{session.pk}/annotations/",
                                 {"seq": "2", "label": "hallucination", "comment": "late"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and body.startswith('\n<aside id="review"') or '<aside id="review"' in body
    assert 'id="ann-2" class="msg-annotations" hx-swap-oob="true"' in body and "late" in body
    bad = alice_client.post(f"/sessions/{session.pk}/annotations/", {"seq": "99", "comment": "x"},
                            HTTP_HX_REQUEST="true")
    assert bad.status_code == 200 and "no message #99" in bad.content.decode()


def test_without_htmx_an_annotation_redirects_to_its_message(alice_client, session):
    response = alice_client.post(f"/sessions/{session.pk}/annotations/", {"seq": "2", "comment": "note"})
    assert response.status_code == 302 and response["Location"].endswith("?at=2#m-2")


def test_annotating_from_the_queue_keeps_the_queue_bar(alice_client, session, label):
    fields = {"seq": "", "label": "hallucination", "comment": "first pass", "queue_view": "sort=started"}
    panel = alice_client.post(f"/sessions/{session.pk}/annotations/", fields, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="queue-done"' in panel and 'name="queue_view" value="sort=started"' in panel
    assert "first pass" in panel and "(edited)" not in panel
    response = alice_client.post(f"/sessions/{session.pk}/annotations/", {**fields, "seq": "2"})
    assert response.status_code == 302 and response["Location"].endswith("?at=2&queue=sort%3Dstarted#m-2")
    assert 'id="queue-done"' in alice_client.get(response["Location"]).content.decode()


def test_the_session_page_stays_within_its_queries_with_annotations(alice_client, alice, make_session, label,
                                                                    django_assert_max_num_queries):
    chain = [{"role": "user", "content": f"q{i}"} if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}
             for i in range(400)]
    session = make_session(chain)
    for seq in range(0, 400, 3):
        annotating.annotation_create(user=alice, session=session, seq=seq, label="hallucination", comment=f"n{seq}")
    with django_assert_max_num_queries(20):
        page = alice_client.get(session.get_absolute_url())
    assert page.status_code == 200 and "n297" in page.content.decode()
    with django_assert_max_num_queries(20):
        assert alice_client.get(session.get_absolute_url() + "?after=299", HTTP_HX_REQUEST="true").status_code == 200


# --- the list: filters, sorts, queue --------------------------------------------------------------------------


@pytest.fixture
def three(make_session, alice, members, label):
    a = make_session(CHAIN, title="A run")
    b = make_session(CHAIN, title="B run")
    c = make_session(CHAIN, title="C run")
    annotating.annotation_create(user=alice, session=b, seq=2, label="hallucination", comment="")
    workflow.session_review_update(user=alice, session=b, review_status="in_review", assignee="annotator-user")
    workflow.session_review_update(user=alice, session=c, review_status="done", assignee="alice")
    return a, b, c


def titles(client: Client, **query: str) -> list[str]:
    response = client.get("/", query)
    return [s.title for s in response.context["page"].object_list]


def test_the_list_filters_by_label_status_and_assignee(alice_client, three):
    assert titles(alice_client, label="hallucination") == ["B run"]
    assert titles(alice_client, status="done") == ["C run"]
    assert titles(alice_client, assignee="annotator-user") == ["B run"]
    assert titles(alice_client, assignee="me") == ["C run"]
    assert titles(alice_client, assignee="-") == ["A run"]
    page = alice_client.get("/", {"label": "hallucination"}).content.decode()
    assert "In review" in page or "in review" in page


def test_the_list_sorts_by_status_assignee_and_label(alice_client, three):
    assert titles(alice_client, sort="status") == ["A run", "B run", "C run"]
    assert titles(alice_client, sort="-status") == ["C run", "B run", "A run"]
    assert titles(alice_client, sort="assignee") == ["C run", "B run", "A run"]  # alice, annotator-user, nobody
    assert titles(alice_client, sort="label")[0] == "B run"


def test_the_list_stays_within_its_queries_with_labels(alice_client, three, django_assert_max_num_queries):
    with django_assert_max_num_queries(14):
        assert alice_client.get("/").status_code == 200


def test_the_queue_walks_the_unreviewed_sessions_of_the_list_and_marks_them_done(alice_client, three):
    a, b, c = three
    response = alice_client.get("/review/next/", {"sort": "started"})
    assert response.status_code == 302 and response["Location"].startswith(a.get_absolute_url() + "?queue=")
    page = alice_client.get(response["Location"]).content.decode()
    assert "Queue: 1 unreviewed" in page and 'id="queue-done"' in page
    done = alice_client.post(f"/sessions/{a.pk}/review/", {"review_status": "done", "queue": "sort=started"})
    assert models.Session.objects.get(pk=a.pk).review_status == "done"
    assert done.status_code == 302 and done["Location"] == f"/review/next/?sort=started&after={a.pk}"
    empty = alice_client.get(done["Location"])
    assert empty.status_code == 302 and "queue=empty" in empty["Location"]
    assert "The review queue is empty" in alice_client.get(empty["Location"]).content.decode()


def test_skipping_moves_past_a_session_and_comes_round_again(alice_client, make_session):
    first = make_session(CHAIN, title="first")
    second = make_session(CHAIN, title="second")
    query = {"sort": "-started"}
    order = [second, first] if titles(alice_client, **query)[0] == "second" else [first, second]
    assert alice_client.get("/review/next/", query)["Location"].startswith(order[0].get_absolute_url())
    after_first = alice_client.get("/review/next/", {**query, "after": order[0].pk})["Location"]
    assert after_first.startswith(order[1].get_absolute_url())
    again = alice_client.get("/review/next/", {**query, "after": order[1].pk})["Location"]
    assert again.startswith(order[0].get_absolute_url())


def test_the_queue_keeps_within_the_lists_filters(alice_client, three, make_session):
    other = make_session(CHAIN, title="Z other")
    response = alice_client.get("/review/next/", {"q": "Z other"})
    assert response["Location"].startswith(other.get_absolute_url())


def test_the_queue_refuses_an_invalid_filter_as_the_list_shows_it_rather_than_widening(
        alice_client, three, other_project):
    # Another user's project, a status that is none: the list shows the field's error; the queue opened no session
    # of the wider list but went back to the list, saying why.
    for query, said in [({"project": other_project.slug}, "project: Select a valid choice."),
                        ({"status": "bogus", "sort": "started"}, "status: Select a valid choice.")]:
        response = alice_client.get("/review/next/", query)
        assert response.status_code == 302 and response["Location"].startswith("/?"), (query, response["Location"])
        assert "queue=invalid" in response["Location"]
        page = alice_client.get(response["Location"]).content.decode()
        assert 'id="queue-refused"' in page and f"The review queue did not open: {said}" in page, query
    # "Done, next" from a queue whose filters no longer hold goes the same way (the session is still marked).
    a = three[0]
    done = alice_client.post(f"/sessions/{a.pk}/review/", {"review_status": "done", "queue": "status=bogus"})
    refused = alice_client.get(done["Location"])
    assert refused.status_code == 302 and "queue=invalid" in refused["Location"]
    assert models.Session.objects.get(pk=a.pk).review_status == "done"
    # Valid filters open the queue as before.
    assert "queue=invalid" not in alice_client.get("/review/next/", {"status": "done"})["Location"]


def test_a_session_opened_from_a_list_search_links_with_its_query(alice_client, three):
    page = alice_client.get("/", {"q": "timeout"}).content.decode()
    assert f'{three[0].get_absolute_url()}?q=timeout' in page
