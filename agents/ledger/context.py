"""What filled the window: one model call's input, by part, in tokens, against the agent's context window.

The call is a reply (the assistant message at ``seq``: an imported session's model was sent every message before
it) or a captured call (``LlmCall.sent``: the seqs it really received). Its input splits into DESIGN's parts:

- ``system``: the leading system and developer messages, less what of them is one of the parts below;
- ``memory_blocks``: the values of core memory blocks rendered into the system prompt (Letta's ``<memory_blocks>``,
  or the older ``<persona characters="n/limit">`` sections: ``letta_af.rendered_blocks``);
- ``recalled_memory``: messages that carry a recall of a memory store (a ``<long_term_memory>`` message, AutoGen's
  ``ListMemory`` message, an ``archival_memory_search`` result), and recalled text placed in the system prompt;
- ``retrieved_documents``: the same for a knowledge store (``<retrieved_knowledge>``, a retriever's chunks);
- ``summary``: messages a framework inserted to stand for others (marked ``summary``);
- ``input``: what this call adds: the messages after the last assistant message it was sent, and the list's own
  priming tokens (the counter's ``per_list``);
- ``history``: every other message it was sent;
- ``tool_definitions``: the tool schemas sent with the messages, where the session kept them.

The parts add up to ``total``, what was sent as the session's counter counts it. A reply of a 200,000-message session
costs what one of a short session does: the stored running total gives the sum, and only the messages of the other
parts are read (by the indexes on the session's seqs and roles), never every message.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Sum
from django.http import Http404

from agents import models
from agents.access import User, session_for_user
from agents.memory.formats.letta_af import rendered_blocks
from agents.memory.schema import SYSTEM_ROLES, Message
from agents.memory.tokens import get_counter

PARTS = ("system", "memory_blocks", "recalled_memory", "retrieved_documents", "summary", "history",
         "tool_definitions", "input")
# A part lists its messages' seqs when it has this many or fewer; every part gives them as ranges too.
SEQS_LISTED = 2000


class ContextRequestError(ValueError):
    """``seq`` or ``call`` that names no model call; ``str(e)`` is ``field: what is wrong``."""


@dataclass
class Part:
    part: str
    tokens: int = 0
    ranges: list[list[int]] = field(default_factory=list)  # [first, last] runs of seqs, in order

    def add(self, seq: int) -> None:
        if self.ranges and self.ranges[-1][1] == seq:
            return  # a message that holds this part twice (two blocks of one system prompt) is one of its messages
        if self.ranges and self.ranges[-1][1] == seq - 1:
            self.ranges[-1][1] = seq
        else:
            self.ranges.append([seq, seq])

    @property
    def count(self) -> int:
        return sum(last - first + 1 for first, last in self.ranges)

    @property
    def seqs(self) -> list[int]:
        return [seq for first, last in self.ranges for seq in range(first, last + 1)]

    def to_dict(self) -> dict[str, Any]:
        count = self.count
        out: dict[str, Any] = {"part": self.part, "tokens": self.tokens, "count": count, "ranges": self.ranges}
        if count <= SEQS_LISTED:
            out["seqs"] = self.seqs
        return out


@dataclass
class Composition:
    session: models.Session
    seq: int | None  # the reply
    call: models.LlmCall | None
    window: int
    total: int
    parts: list[Part]

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session.pk, "seq": self.seq, "call": self.call.pk if self.call else None,
                "window": self.window, "total": self.total, "counter": self.session.token_counter,
                "parts": [p.to_dict() for p in self.parts]}


def reply_context(*, user: User, session_id: int, seq: int | None = None, call_id: int | None = None) -> Composition:
    """What was sent for the reply at ``seq`` (or for the captured call ``call_id``) of a session the user sees."""
    session = session_for_user(user, session_id)
    if call_id is not None:
        call = models.LlmCall.objects.filter(session=session, pk=call_id).first()
        if call is None:
            raise Http404("No such call in this session.")
        return _compose(session, sorted_sent(call), reply=call.reply_seq, call=call)
    if seq is None:
        raise ContextRequestError("seq: give the reply's message number (or call: a captured call's id)")
    role = models.Message.objects.filter(session=session, seq=seq).values_list("role", flat=True).first()
    if role is None:
        raise ContextRequestError(f"seq: no message #{seq}; the session has {session.message_count}")
    if role != "assistant":
        raise ContextRequestError(f"seq: message #{seq} is a {role} message; a reply is an assistant message")
    return _compose(session, range(seq), reply=seq, call=None)


def sorted_sent(call: models.LlmCall) -> list[int]:
    return [int(s) for s in (call.sent or []) if isinstance(s, int)]


def _compose(session: models.Session, sent: Sequence[int], *, reply: int | None,
             call: models.LlmCall | None) -> Composition:
    counter = get_counter(session.token_counter)
    parts = {name: Part(name) for name in PARTS}
    rows = models.Message.objects.filter(session=session)
    if isinstance(sent, range):
        in_sent = rows.filter(seq__lt=sent.stop)
        total = _running(session, sent)
    else:
        in_sent = rows.filter(seq__in=list(sent))
        total = in_sent.aggregate(n=Sum("token_count"))["n"] or 0
    # The leading system messages, and the last assistant message (what this call adds comes after it).
    head = _leading_system(session, sent)
    last_reply = in_sent.filter(role="assistant").order_by("-seq").values_list("seq", flat=True).first()
    # The messages that carry recalls, by what they recalled; recalled text placed in the system prompt.
    carriers: dict[int, str] = {}
    system_recalled: dict[int, list[tuple[str, str]]] = {}
    recalls = models.Recall.objects.filter(session=session, seq__isnull=False).select_related("store")
    recalls = recalls.filter(seq__lt=sent.stop) if isinstance(sent, range) else recalls.filter(seq__in=list(sent))
    for recall in recalls.prefetch_related("items"):
        part = "retrieved_documents" if recall.store and recall.store.kind == "knowledge" else "recalled_memory"
        assert recall.seq is not None
        if recall.placement == models.Recall.Placement.SYSTEM:
            system_recalled.setdefault(recall.seq, []).extend((part, item.text) for item in recall.items.all())
        else:
            carriers.setdefault(recall.seq, part)
    # Summaries: where a framework's compaction came in (models.Compaction), among the messages sent.
    compacted = models.Compaction.objects.filter(session=session, seq__isnull=False)
    compacted = compacted.filter(seq__lt=sent.stop) if isinstance(sent, range) else compacted.filter(
        seq__in=list(sent))
    summaries = {seq for seq in compacted.values_list("seq", flat=True) if seq is not None}
    special = set(carriers) | summaries | set(head)
    after = [s for s in _after(in_sent, last_reply) if s not in special]
    counted = dict(rows.filter(seq__in=[*special, *after]).values_list("seq", "token_count"))
    for seq in head:
        tokens = counted.get(seq, 0)
        text = _text_of(session, seq)
        inside: list[tuple[str, int]] = [("memory_blocks", _text_tokens(counter, value))
                                         for value in rendered_blocks(text).values() if value]
        inside += [(part, _text_tokens(counter, item)) for part, item in system_recalled.get(seq, [])
                   if item and item in text]
        for part, n in inside:
            n = min(n, tokens)
            parts[part].tokens += n
            parts[part].add(seq)
            tokens -= n
        parts["system"].tokens += tokens
        parts["system"].add(seq)
    for seq in sorted(special - set(head)):
        part = carriers.get(seq, "summary")
        parts[part].tokens += counted.get(seq, 0)
        parts[part].add(seq)
    for seq in after:
        parts["input"].tokens += counted.get(seq, 0)
        parts["input"].add(seq)
    parts["input"].tokens += counter.per_list
    total += counter.per_list
    if session.tools:
        tools = _text_tokens(counter, json.dumps(session.tools, ensure_ascii=False))
        parts["tool_definitions"].tokens = tools
        total += tools
    # History: every other message sent, as runs between the named ones (never one entry per message).
    named = sorted(special | set(after))
    parts["history"].tokens = total - sum(p.tokens for p in parts.values())
    parts["history"].ranges = _between(sent, named)
    return Composition(session=session, seq=reply, call=call, window=session.agent.context_window, total=total,
                       parts=[parts[name] for name in PARTS])


def _between(sent: Sequence[int], named: list[int]) -> list[list[int]]:
    """The runs of ``sent`` that are not in ``named`` (sorted): for a range, computed from the named alone."""
    if not isinstance(sent, range):
        taken = set(named)
        part = Part("history")
        for seq in sent:
            if seq not in taken:
                part.add(seq)
        return part.ranges
    out: list[list[int]] = []
    start = sent.start
    for seq in named:
        if seq >= sent.stop:
            break
        if seq > start:
            out.append([start, seq - 1])
        start = max(start, seq + 1)
    if start < sent.stop:
        out.append([start, sent.stop - 1])
    return out


def _running(session: models.Session, sent: range) -> int:
    """The tokens of messages 0..stop-1: the stored running total of the last of them (set at import)."""
    if sent.stop <= 0:
        return 0
    value = models.Message.objects.filter(session=session, seq=sent.stop - 1).values_list(
        "token_running", flat=True).first()
    return int(value or 0)


def _leading_system(session: models.Session, sent: Sequence[int]) -> list[int]:
    if not sent:
        return []
    if isinstance(sent, range):
        first_other = models.Message.objects.filter(session=session, seq__lt=sent.stop).exclude(
            role__in=SYSTEM_ROLES).order_by("seq").values_list("seq", flat=True).first()
        end = first_other if first_other is not None else sent.stop
        return list(range(0, end))
    roles = dict(models.Message.objects.filter(session=session, seq__in=list(sent[:200])).values_list("seq", "role"))
    head = []
    for seq in sent:
        if roles.get(seq) not in SYSTEM_ROLES:
            break
        head.append(seq)
    return head


def _after(in_sent: Any, last_reply: int | None) -> list[int]:
    rows = in_sent if last_reply is None else in_sent.filter(seq__gt=last_reply)
    return list(rows.order_by("seq").values_list("seq", flat=True)[:SEQS_LISTED])


def _text_of(session: models.Session, seq: int) -> str:
    content = models.Message.objects.filter(session=session, seq=seq).values_list("content", flat=True).first()
    return content or ""


def _text_tokens(counter: Any, text: str) -> int:
    """The tokens of a piece of text as the counter counts a message's text (its per-message overhead left out)."""
    empty = counter.count(Message(role="system", content=""))
    return max(0, int(counter.count(Message(role="system", content=text))) - int(empty))
