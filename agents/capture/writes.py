"""Sessions written through the API by the clients that record them: a session created with its first messages,
and messages appended as they come (a message whose id the session has already is skipped, so a retried request
appends nothing twice). Writing needs the editor or admin role in the session's project (an API key has it in its
own)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from agents import access, models
from agents.capture import ingest
from agents.memory import schema
from agents.store import writing


def parsed_messages(raw: list[dict[str, Any]]) -> list[schema.Message]:
    """OpenAI-shaped messages; ``id`` is the message's id (``external_id``)."""
    items = []
    for item in raw:
        if isinstance(item, dict) and "id" in item and "external_id" not in item:
            item = {**item, "external_id": str(item["id"])}
            del item["id"]
        items.append(item)
    return schema.parse_messages(items)


@dataclass
class SessionCreated:
    session: models.Session | None = None
    conflict: str = ""  # the agent has a session of this external id already: nothing was stored


def session_created(*, user: access.User, project: str | None, agent: str, external_id: str | None, title: str,
                    metadata: dict[str, Any], messages: list[dict[str, Any]]) -> SessionCreated:
    """A new session in ``project`` (a slug; none: the only project the user may write to), under the agent named
    or slugged ``agent`` (created when missing), with its first ``messages``."""
    target = access.project_to_write(user, project)
    parsed = parsed_messages(messages)
    found = models.Agent.objects.filter(project=target).filter(Q(slug=agent) | Q(name=agent)).first()
    if found is None:
        found, _ = models.Agent.objects.get_or_create(
            project=target, slug=slugify(agent)[:100] or "agent", defaults={"name": agent})
    external_id = external_id or uuid.uuid4().hex
    if models.Session.objects.filter(agent=found, external_id=external_id).exists():
        return SessionCreated(conflict=f"external_id {external_id}: agent {found.slug} already has this session")
    conversation = schema.Conversation(messages=parsed, external_id=external_id, title=title or None,
                                       source_format="api", metadata=metadata)
    session = writing.session_store(agent=found, conversation=conversation)
    session.last_activity_at = timezone.now()
    session.save(update_fields=["last_activity_at"])
    return SessionCreated(session)


@dataclass
class MessagesAppended:
    session: models.Session
    added: int
    start: int  # the seq of the first message added
    skipped: list[str] = field(default_factory=list)  # the ids the session had already


def messages_appended(*, user: access.User, session_id: int, messages: list[dict[str, Any]]) -> MessagesAppended:
    """Append ``messages`` (OpenAI-shaped) to the session: 404 outside the user's projects, PermissionDenied without
    the editor or admin role; a message the database cannot store refuses the whole batch (ValueError, nothing
    appended)."""
    session = access.session_for_user(user, session_id)
    if not access.editable_projects(user).filter(pk=session.agent.project_id).exists():
        raise PermissionDenied("appending messages needs the editor or admin role in this session's project")
    parsed = parsed_messages(messages)
    with ingest.session_writer(), transaction.atomic():
        session = (
            models.Session.objects.select_for_update(of=("self",)).select_related("agent__project").get(pk=session.pk)
        )
        ids = [m.external_id for m in parsed if m.external_id]
        known = set(
            models.Message.objects.filter(session=session, external_id__in=ids).values_list("external_id", flat=True)
        )
        new: list[schema.Message] = []
        skipped = []
        for message in parsed:
            if message.external_id and message.external_id in known:
                skipped.append(message.external_id)
                continue
            if message.external_id:
                known.add(message.external_id)
            new.append(message)
        start = session.message_count
        ingest.session_append(session=session, messages=new)  # a refusal (ValueError) rolls the batch back
        ingest.session_refresh(session=session)
    return MessagesAppended(session, len(new), start, skipped)
