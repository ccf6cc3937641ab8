"""What the session page's actions do, each in one call from its view: jump to the next or previous thing of a kind,
count the session again, delete it (after a page that says what goes with it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import BadRequest, PermissionDenied
from django.urls import reverse

from agents import access, models
from agents.http import int_or_none
from agents.sessions import find
from agents.store import recount, writing


def session_jump_target(*, user: access.User, session_id: int, query: Any) -> str:
    """Where the session page's jump (``kind``, ``dir``, ``from``, the search ``q`` and the filter ``role``/``tool``
    of ``query``) lands: the page holding the next (or previous) tool error, violation or user message, resolved
    to a seq by one query, the search and filter kept; with none that way, the page where it was, saying so.
    BadRequest for a kind there is nothing of."""
    session = access.session_for_user(user, session_id)
    kind = query.get("kind", "")
    if kind not in find.JUMPS:
        raise BadRequest(f"kind: {kind!r} is not something to jump to; valid: {', '.join(find.JUMPS)}")
    forward = query.get("dir", "next") != "prev"
    start = int_or_none(query.get("from"))
    if start is None:
        start = -1 if forward else session.message_count
    within = find.ChainFilter.from_query(query.get("role"), query.get("tool"))
    target = find.jump_target(session, kind, from_seq=start, forward=forward, within=within)
    keep = {**({"q": q} if (q := find.clean_query(query.get("q"))) else {}), **within.query()}
    if target is None:
        here = min(max(start, 0), max(session.message_count - 1, 0))
        shown = urlencode({**keep, "at": here, "none": f"{kind}-{'next' if forward else 'prev'}"})
        return f"{session.get_absolute_url()}?{shown}#m-{here}"
    return f"{session.get_absolute_url()}?{urlencode({**keep, 'at': target})}#m-{target}"


def session_recount_asked(*, user: access.User, session_id: int, counter: str) -> models.Session:
    """Count the session's stored messages again with ``counter`` and store the counts. PermissionDenied (403)
    for a viewer or annotator, ``recount.RecountError`` for a counter that cannot be used."""
    session = access.session_for_user(user, session_id)
    if not access.editable_projects(user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("Counting a session again needs the editor or admin role in its project.")
    return recount.session_recount(session=session, counter=counter, user=user)


def session_delete_page(*, user: access.User, session_id: int) -> dict[str, Any]:
    """The page that asks to confirm a delete, saying what goes with the session: 404 outside the user's projects,
    403 for a viewer or annotator (the role check of ``writing.session_delete``, asked first)."""
    session = access.session_for_user(user, session_id)
    access.require_role(user, session.agent.project, "edit")
    return {"session": session, "annotation_count": session.annotations.count()}


@dataclass
class DeletedSession:
    said: str  # what the list says once it opens
    list_url: str  # the list, kept to the session's agent


def session_delete_confirmed(*, user: access.User, session_id: int) -> DeletedSession:
    """Delete the session with its messages, calls and annotations (editors and admins of its project)."""
    session = access.session_for_user(user, session_id)
    name = session.title or session.external_id or f"#{session.pk}"
    writing.session_delete(user=user, session=session)
    return DeletedSession(said=f"Deleted the session {name!r} and its {session.message_count:,} messages.",
                          list_url=f"{reverse('agents:session_list')}?agent={session.agent_id}")
