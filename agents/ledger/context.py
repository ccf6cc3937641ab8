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
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.expressions import RawSQL
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
    # How many messages hold it when ``ranges`` lists only its first runs (``reply_context(runs=N)``); None: all.
    messages: int | None = None

    def add(self, seq: int) -> None:
        if self.ranges and self.ranges[-1][1] == seq:
            return  # a message that holds this part twice (two blocks of one system prompt) is one of its messages
        if self.ranges and self.ranges[-1][1] == seq - 1:
            self.ranges[-1][1] = seq
        else:
            self.ranges.append([seq, seq])

    @property
    def count(self) -> int:
        return self.messages if self.messages is not None else self.listed

    @property
    def listed(self) -> int:
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


def reply_context(*, user: User, session_id: int, seq: int | None = None, call_id: int | None = None,
                  runs: int | None = None) -> Composition:
    """What was sent for the reply at ``seq`` (or for the captured call ``call_id``) of a session the user sees.
    ``runs``: list only the first that many runs of each part of a reply (the window bar's links), its tokens and
    messages summed by the database, so that a reply after 50,000 recalls costs what one after five does."""
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
    return _compose(session, range(seq), reply=seq, call=None, runs=runs)


def sorted_sent(call: models.LlmCall) -> list[int]:
    return [int(s) for s in (call.sent or []) if isinstance(s, int)]


def _compose(session: models.Session, sent: Sequence[int], *, reply: int | None,
             call: models.LlmCall | None, runs: int | None = None) -> Composition:
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
    recalls = models.Recall.objects.filter(session=session, seq__isnull=False)
    recalls = recalls.filter(seq__lt=sent.stop) if isinstance(sent, range) else recalls.filter(seq__in=list(sent))
    summed = runs is not None and isinstance(sent, range)
    # With ``runs``, the carriers are listed up to ``bound`` (every carrier before it read; None: all of them).
    carriers, bound = _carriers(recalls, CARRIERS_LISTED if summed else None)
    system_recalled = _system_placed(recalls, head)
    # Summaries: where a framework's compaction came in (models.Compaction), among the messages sent.
    compacted = models.Compaction.objects.filter(session=session, seq__isnull=False)
    compacted = compacted.filter(seq__lt=sent.stop) if isinstance(sent, range) else compacted.filter(
        seq__in=list(sent))
    summaries = {seq for seq in compacted.values_list("seq", flat=True) if seq is not None}
    after = _after(in_sent, last_reply)
    if summed and after:  # the carriers among what this call adds, which the listed first ones may not reach
        carriers |= _carriers(recalls.filter(seq__gte=after[0], seq__lte=after[-1]), None)[0]
    if summed and summaries:  # and whether a summary carries a recall (then it is counted as a carrier)
        carriers |= _carriers(recalls.filter(seq__in=sorted(summaries)), None)[0]
    special_head = set(head)
    special = set(carriers) | summaries | special_head
    after = [s for s in after if s not in special]
    if summed:
        counted = dict(rows.filter(seq__in=sorted({*head, *after, *summaries})).values_list("seq", "token_count"))
    else:
        counted = _tokens_of(rows, recalls, compacted, [*head, *after])
    _head_parts(session, head, counted, system_recalled, counter, parts)
    carried = 0
    if summed:  # every carrier after the head, in the database
        carried = _carriers_summed(session, recalls, len(head), parts)
    for seq in sorted(special - set(head)):
        part = carriers.get(seq, "summary")
        if not summed or part == "summary":
            parts[part].tokens += counted.get(seq, 0)
        parts[part].add(seq)
    for seq in after:
        parts["input"].tokens += counted.get(seq, 0)
        parts["input"].add(seq)
    parts["input"].tokens += counter.per_list
    total += counter.per_list
    tools = _tools_tokens(session, counter)
    parts["tool_definitions"].tokens = tools
    total += tools
    # History: every other message sent, as runs between the named ones (never one entry per message).
    named = sorted(special | set(after))
    parts["history"].tokens = total - sum(p.tokens for p in parts.values())
    parts["history"].ranges = _between(sent, named)
    if summed:
        assert runs is not None and isinstance(sent, range)
        alone = [seq for seq in summaries if seq not in carriers and seq not in special_head]
        _first_runs(parts, runs, bound=bound, history=len(sent) - len(head) - carried - len(alone) - len(after))
    return Composition(session=session, seq=reply, call=call, window=session.agent.context_window, total=total,
                       parts=[parts[name] for name in PARTS])


def _system_placed(recalls: Any, head: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
    """By seq, the (part, item text) of the recalls placed in the system prompt (``head``), read with their items."""
    system_recalled: dict[int, list[tuple[str, str]]] = {}
    if head:
        placed = recalls.filter(placement=models.Recall.Placement.SYSTEM, seq__in=list(head)).select_related("store")
        for recall in placed.prefetch_related("items").order_by("seq", "id"):
            part = _recall_part(recall.store.kind if recall.store else None)
            system_recalled.setdefault(recall.seq, []).extend((part, item.text) for item in recall.items.all())
    return system_recalled


def _carriers(recalls: Any, limit: int | None) -> tuple[dict[int, str], int | None]:
    """The carriers of the recalls (or of the first ``limit``), with the last seq read when the limit cut them."""
    carriers: dict[int, str] = {}
    system = models.Recall.Placement.SYSTEM
    placed = recalls.exclude(placement=system).order_by("seq", "id").values_list("seq", "store__kind")
    rows = list(placed[:limit] if limit is not None else placed)
    for seq, kind in rows:
        carriers.setdefault(seq, _recall_part(kind))
    return carriers, rows[-1][0] if limit is not None and len(rows) >= limit else None


# With ``runs``, the carriers of recalls read one by one: the first this many recalls (their runs are listed).
CARRIERS_LISTED = 500


def _carriers_summed(session: models.Session, recalls: Any, head_end: int, parts: dict[str, Part]) -> int:
    """The tokens and messages of the recalled memory and the retrieved documents after the head (seq
    ``head_end`` on), summed by the database (``_carrier_sums``). Returns how many messages carry a recall."""
    for name in ("recalled_memory", "retrieved_documents"):
        parts[name].messages = parts[name].listed  # the system prompt's, when recalled text was placed there
    carried = 0
    for _bucket, kind, total, n in _carrier_sums(session, recalls, head_end, Value(0)):
        into = parts[_recall_part(kind)]
        into.tokens += int(total or 0)
        into.messages = (into.messages or 0) + int(n)
        carried += int(n)
    return carried


def _carrier_sums(session: models.Session, recalls: Any, head_end: int, bucket: Any) -> Any:
    """(bucket, store kind, tokens, messages) of the messages carrying ``recalls`` from seq ``head_end`` on, summed
    by the database by ``bucket`` (an expression of the seq) and kind: each message once, in the kind of its first
    recall (the one with no earlier recall at its seq)."""
    system = models.Recall.Placement.SYSTEM
    placed = recalls.exclude(placement=system)
    # On the index (session, seq, id) by equality: with ``recalls``' range on seq, SQLite searched that range instead.
    earlier = models.Recall.objects.filter(session=session, seq=OuterRef("seq"), id__lt=OuterRef("id")).exclude(
        placement=system)
    tokens = models.Message.objects.filter(session=session, seq=OuterRef("seq")).order_by().values("token_count")
    return (placed.filter(seq__gte=head_end).exclude(Exists(earlier))
            .annotate(tokens=Subquery(tokens[:1]), bucket=bucket)
            .order_by().values("bucket", "store__kind").annotate(total=Sum("tokens"), n=Count("id"))
            .values_list("bucket", "store__kind", "total", "n"))


def _reply_index(replies: list[int]) -> RawSQL:
    """For a recall before ``replies[-1]``, the index of the first of ``replies`` after its seq, as nested CASEs: a
    binary search, a handful of comparisons a row (written out: Django's When and Case objects for 200 replies
    cost tens of milliseconds to build)."""
    column = f"{connection.ops.quote_name(models.Recall._meta.db_table)}.{connection.ops.quote_name('seq')}"

    def search(lo: int, hi: int) -> tuple[str, list[int]]:
        if hi - lo == 1:
            return str(lo), []
        mid = (lo + hi) // 2
        (left, left_params), (right, right_params) = search(lo, mid), search(mid, hi)
        return f"CASE WHEN {column} < %s THEN {left} ELSE {right} END", [replies[mid - 1], *left_params,
                                                                          *right_params]

    sql, params = search(0, len(replies))
    return RawSQL(sql, params, output_field=IntegerField())


def _first_runs(parts: dict[str, Part], runs: int, *, bound: int | None, history: int) -> None:
    """Each part's first ``runs`` runs, and how many messages it has (``history``: those in no other part). With a
    ``bound`` (not every carrier was read), the carriers' and history's runs are those before it: past it, a
    carrier not read may be missing or split a run."""
    for part in parts.values():
        if part.messages is None:
            part.messages = part.listed
    parts["history"].messages = history
    for name in ("recalled_memory", "retrieved_documents", "history"):
        if bound is not None:
            parts[name].ranges = [r for r in parts[name].ranges if r[1] < bound]
    for part in parts.values():
        part.ranges = part.ranges[:runs]


def _tokens_of(rows: Any, recalls: Any, compacted: Any, seqs: list[int]) -> dict[int, int]:
    """By seq, the tokens of the messages carrying ``recalls`` or ``compacted``'s summaries, and of ``seqs``: the
    first two as subqueries (a session may hold more recalls than a query may have parameters)."""
    wanted = Q(seq__in=recalls.values("seq")) | Q(seq__in=compacted.values("seq"))
    if seqs:
        wanted |= Q(seq__in=seqs)
    return dict(rows.filter(wanted).values_list("seq", "token_count"))


def _recall_part(store_kind: str | None) -> str:
    return "retrieved_documents" if store_kind == "knowledge" else "recalled_memory"


def _head_parts(session: models.Session, head: list[int], counted: dict[int, int],
                system_recalled: dict[int, list[tuple[str, str]]], counter: Any, parts: dict[str, Part]) -> None:
    """The leading system messages into ``parts``: the core memory blocks rendered into them and the recalled text
    placed in them, counted as their text is, and the rest as ``system``."""
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


def _tools_tokens(session: models.Session, counter: Any) -> int:
    """The tool schemas sent with every call of the session, where it kept them."""
    return _text_tokens(counter, json.dumps(session.tools, ensure_ascii=False)) if session.tools else 0


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


# --- how the parts grow over the session -------------------------------------------------------------------------

# The growth chart composes at most this many replies: the first reply at or after each of as many messages spaced
# evenly over the session (every message of a shorter session), so its cost does not grow with the session.
GROWTH_SAMPLES = 200
# The most seqs a growth query names one by one (what the sampled replies add); past it, as ranges.
GROWTH_SEQS_MAX = 10_000


@dataclass
class GrowthPoint:
    seq: int  # the reply
    total: int
    tokens: dict[str, int]  # by part, in PARTS' order

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "total": self.total, "parts": self.tokens}


@dataclass
class Growth:
    session: models.Session
    window: int
    sampled: bool  # the replies are a sample: the session has more messages than GROWTH_SAMPLES
    points: list[GrowthPoint]

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session.pk, "window": self.window, "counter": self.session.token_counter,
                "messages": self.session.message_count, "sampled": self.sampled, "samples": GROWTH_SAMPLES,
                "parts": list(PARTS), "points": [p.to_dict() for p in self.points]}


def session_growth(*, user: User, session_id: int, samples: int = GROWTH_SAMPLES) -> Growth:
    """What filled the window at each of up to ``samples`` replies spread evenly over a session the user sees: each
    point's tokens by part are ``reply_context``'s for that reply, found for all of them in a fixed number of
    queries (the running totals, the messages carrying recalls and summaries, the leading system prompt)."""
    session = session_for_user(user, session_id)
    n = session.message_count
    targets = list(range(n)) if n <= samples else sorted({k * (n - 1) // (samples - 1) for k in range(samples)})
    replies = _replies_from(session, targets)
    window = session.agent.context_window
    if not replies:
        return Growth(session=session, window=window, sampled=n > samples, points=[])
    counter = get_counter(session.token_counter)
    rows = models.Message.objects.filter(session=session)
    first_other = rows.exclude(role__in=SYSTEM_ROLES).order_by("seq").values_list("seq", flat=True).first()
    head = list(range(first_other or 0))  # the same leading system messages for every reply
    last = replies[-1][0]
    recalls = models.Recall.objects.filter(session=session, seq__isnull=False, seq__lt=last)
    system_recalled = _system_placed(recalls, head)
    compacted = models.Compaction.objects.filter(session=session, seq__isnull=False, seq__lt=last)
    summaries = {seq for seq in compacted.values_list("seq", flat=True) if seq is not None and seq >= len(head)}
    # What each reply adds starts after the reply before it, for up to SEQS_LISTED messages (as ``_after``).
    spans = {seq: (lo, min(seq - 1, lo + SEQS_LISTED - 1)) for seq, lo in
             ((seq, previous + 1 if previous is not None else 0) for seq, previous in replies)}
    # The carriers read one by one: those inside what a reply adds (left out of its input) and the summaries'; by
    # their seqs (on the index) unless what the sampled replies add is longer than a query's parameters allow.
    added = [(lo, hi) for lo, hi in spans.values() if lo <= hi]
    if sum(hi - lo + 1 for lo, hi in added) <= GROWTH_SEQS_MAX:
        inside = Q(seq__in=sorted(summaries.union(*(range(lo, hi + 1) for lo, hi in added))))
    else:
        inside = Q(seq__in=sorted(summaries))
        for lo, hi in added:
            inside |= Q(seq__gte=lo, seq__lte=hi)
    carriers = _carriers(recalls.filter(inside), None)[0]
    special = set(carriers) | summaries | set(head)
    counted = dict(rows.filter(seq__in=sorted(special)).values_list("seq", "token_count"))
    base = {name: Part(name) for name in PARTS}
    _head_parts(session, head, counted, system_recalled, counter, base)
    # Every carrier's tokens summed by the database by the first sampled reply after it, per part; the summaries
    # that carry no recall; and the tokens of all those read before each seq, to take those inside a reply's input
    # out of it by bisection.
    seqs = [seq for seq, _ in replies]
    by_reply = {part: [0] * len(seqs) for part in ("recalled_memory", "retrieved_documents", "summary")}
    for index, kind, total, _n in _carrier_sums(session, recalls, len(head), _reply_index(seqs)):
        by_reply[_recall_part(kind)][index] += int(total or 0)
    for seq in summaries - set(carriers):
        by_reply["summary"][bisect_right(seqs, seq)] += counted.get(seq, 0)
    by_part_before = {part: _prefix(values) for part, values in by_reply.items()}
    special_sorted = sorted(special)
    special_before = _prefix([counted.get(seq, 0) for seq in special_sorted])
    wanted = {seq - 1 for seq in spans} | {lo - 1 for lo, _ in spans.values() if lo} | {hi for _, hi in spans.values()}
    running = dict(rows.filter(seq__in=sorted(s for s in wanted if s >= 0)).values_list("seq", "token_running"))
    running[-1] = 0
    tools = _tools_tokens(session, counter)
    points = []
    for seq, (lo, hi) in spans.items():
        tokens = {name: 0 for name in PARTS}
        for name in ("system", "memory_blocks", "recalled_memory", "retrieved_documents"):
            tokens[name] = base[name].tokens
        k = bisect_right(seqs, seq)  # this reply's index + 1: the carriers before it
        for part, before in by_part_before.items():
            tokens[part] += before[k]
        named = special_before[bisect_right(special_sorted, hi)] - special_before[bisect_left(special_sorted, lo)]
        tokens["input"] = int(running.get(hi, 0)) - int(running.get(lo - 1, 0)) - named + counter.per_list
        tokens["tool_definitions"] = tools
        total = int(running.get(seq - 1, 0)) + counter.per_list + tools
        tokens["history"] = total - sum(tokens.values())
        points.append(GrowthPoint(seq=seq, total=total, tokens=tokens))
    return Growth(session=session, window=window, sampled=n > samples, points=points)


def _replies_from(session: models.Session, targets: list[int]) -> list[tuple[int, int | None]]:
    """The first reply at or after each target seq (once each, in order), with the reply before it (None: none)."""
    if not targets:
        return []
    replies = models.Message.objects.filter(session=session, role="assistant")
    found = models.Message.objects.filter(session=session, seq__in=targets).annotate(
        reply=Subquery(replies.filter(seq__gte=OuterRef("seq")).order_by("seq").values("seq")[:1]))
    seqs = sorted({seq for seq in found.values_list("reply", flat=True) if seq is not None})
    if not seqs:
        return []
    before = models.Message.objects.filter(session=session, seq__in=seqs).annotate(
        previous=Subquery(replies.filter(seq__lt=OuterRef("seq")).order_by("-seq").values("seq")[:1]))
    return sorted(before.values_list("seq", "previous"))


def _prefix(values: list[int]) -> list[int]:
    out = [0]
    for value in values:
        out.append(out[-1] + value)
    return out
