"""What the session list shows, read and decided in one call from its view: the filters (as the form read them),
one page of the sessions they keep with their labels, the links that keep the filters, and the choices the filter
form offers (on a whole page only)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import QueryDict

from agents import access, models
from agents.ledger.pages import agents_with_memory
from agents.review import workflow
from agents.store import layer_search, listing
from agents.store.filters import SessionFilterForm

SESSIONS_PER_PAGE = 50


@dataclass
class SessionListPage:
    """The list's context; and where a filter the form had to clear (an agent of another project, a bad date) is
    left out of the address: ``address`` is then the list's address without it (a redirect for a whole page, the
    URL htmx pushes for the table)."""

    context: dict[str, Any] = field(default_factory=dict)
    address: str = ""


def session_list_page(*, user: access.User, query: QueryDict, path: str, fragment: bool) -> SessionListPage:
    """The session list for ``query`` (the list's query string) at ``path``; ``fragment``: the table alone (htmx),
    without the form's choices. A whole page asked with a filter the form clears is only its new ``address``."""
    form = SessionFilterForm(query or None, user=user)
    form.is_valid()  # invalid fields are dropped from the filters and shown with their error
    address = ""
    if form.cleared:
        kept = query.copy()
        for name in form.cleared:
            kept.pop(name, None)
        address = f"{path}?{kept.urlencode()}" if kept else path
        if not fragment:
            return SessionListPage(address=address)
    filters = form.filters()
    hits = listing.MessageHits()
    sessions = listing.sessions_filtered(user, filters, message_hits=hits).select_related("assignee")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(query.get("page"))
    shown = query.copy()
    for name in ["page", "queue", *form.cleared]:
        shown.pop(name, None)
    sort_query = shown.copy()
    sort_query.pop("sort", None)
    context = {
        "form": form,
        "page": page,
        "query": shown.urlencode(),
        "sort_prefix": f"?{sort_query.urlencode()}&" if sort_query else "?",
        "sort": filters.sort,
        # Asked by the template only when the list is empty.
        "has_projects": access.user_projects(user).exists,
        # Opened from a search, a session lands on its first hit.
        "hit_query": urlencode({"q": filters.q}) if filters.q else "",
        "queue_empty": query.get("queue") == "empty",
        # From /review/next/ with an invalid filter: the queue did not open, for the error the form shows.
        "queue_refused": query.get("queue") == "invalid" and (form.refusal() or "a filter is not valid"),
    }
    workflow.attach_labels(page.object_list)
    # Searched: where each session of the page matched (a message, a recall, a memory record), linked.
    matched = layer_search.matches_on_page(user=user, q=filters.q, sessions=page.object_list, message_hits=hits)
    for s in page.object_list:
        s.matched_in = matched.get(s.pk, [])
    # The agents of this page with a memory page: one query for the page, whatever it lists.
    context["memory_agents"] = agents_with_memory({s.agent_id: s.agent for s in page.object_list}.values())
    if not fragment:
        # The filter form's choices and tool suggestions: the table alone does not show them.
        context["tool_names"] = listing.tool_names_for_user(user)
        context |= workflow.list_choices(user)
    return SessionListPage(context, address=address)


def sessions_listed(*, user: access.User, query: QueryDict,
                    message_hits: listing.MessageHits | None = None) -> QuerySet[models.Session]:
    """The user's sessions that the list's filters in ``query`` keep, sorted (the API's list). A filter that cannot
    apply (an invalid value, another project's agent) is refused with ValueError naming it, never dropped.
    ``message_hits``: as ``listing.sessions_filtered``'s."""
    form = SessionFilterForm(query or None, user=user)
    if form.is_bound and form.refusal():
        raise ValueError(form.refusal())
    return listing.sessions_filtered(user, form.filters(), message_hits=message_hits)

