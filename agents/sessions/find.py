"""Finding things inside one session: text search over what a message says and calls, and the jumps of the
session page (next tool error, violation, user message, go to #N). Each answer is one indexed query bounded by
the session, whatever its length, and resolves to seqs: the page then opens the page of messages holding one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import Count, Exists, Max, Min, OuterRef, Q, QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents import models

# Hits listed per request (the page shows the count and steps through them; the API pages them).
HITS_LISTED = 1_000
QUERY_MAX = 200


def permalink(session: models.Session, seq: int) -> str:
    """A link that opens the session page holding message ``seq`` (``?at=``) and scrolls to it."""
    return f"{session.get_absolute_url()}?at={seq}#m-{seq}"


def clean_query(text: str | None) -> str:
    """The search as typed, its spaces folded; a NUL is dropped: SQLite's LIKE would stop reading the pattern at
    it (matching every message) and PostgreSQL refuses it in a text parameter."""
    return " ".join((text or "").replace("\x00", " ").split())[:QUERY_MAX]


def message_matches(session: models.Session, q: str, within: ChainFilter | None = None) -> QuerySet[models.Message]:
    """The session's messages that mention ``q`` (case-insensitive) in their content (results included),
    reasoning or sender name, or whose tool calls name it or carry it in their arguments; a tool call id given
    whole finds its call and its results. In seq order; with ``within``, only the messages the filter shows."""
    q = clean_query(q)
    in_calls = models.ToolCall.objects.filter(message=OuterRef("pk")).filter(
        Q(name__icontains=q) | Q(arguments__icontains=q) | Q(call_id=q)
    )
    rows = (within or NO_FILTER).apply(models.Message.objects.filter(session=session))
    return (
        rows
        .filter(
            Q(content__icontains=q)
            | Q(reasoning__icontains=q)
            | Q(name__icontains=q)
            | Q(tool_call_id=q)
            | Exists(in_calls)
        )
        .order_by("seq")
    )


def hit_seqs(session: models.Session, q: str, limit: int = HITS_LISTED, within: ChainFilter | None = None) -> list[int]:
    """The seqs of the first ``limit`` messages matching ``q`` (one query)."""
    if not clean_query(q):
        return []
    return list(message_matches(session, q, within).values_list("seq", flat=True)[:limit])


def first_hit(session: models.Session, q: str, within: ChainFilter | None = None) -> int | None:
    """The seq of the first message matching ``q`` (one query), or None."""
    if not clean_query(q):
        return None
    return message_matches(session, q, within).values_list("seq", flat=True).first()


@dataclass
class SearchPlace:
    """Where the page stands among the hits of a search: how many, which one this is, the ones either side."""

    q: str
    total: int
    before: int  # hits before the place
    here: bool  # the message at the place is a hit
    previous: int | None
    next: int | None

    @property
    def number(self) -> int:
        """The hit's number, 1-based (the place's own when it is a hit, else the next one's)."""
        return self.before + 1


def search_place(session: models.Session, q: str, *, at: int, within: ChainFilter | None = None) -> SearchPlace:
    """The hits of ``q`` around message ``at``: one aggregate query over the session's matches, whatever their
    number (the count, the hits before, the nearest either side)."""
    q = clean_query(q)
    found = message_matches(session, q, within).order_by().aggregate(
        total=Count("pk"),
        before=Count("pk", filter=Q(seq__lt=at)),
        here=Count("pk", filter=Q(seq=at)),
        previous=Max("seq", filter=Q(seq__lt=at)),
        next=Min("seq", filter=Q(seq__gt=at)),
    )
    return SearchPlace(q=q, total=found["total"], before=found["before"], here=bool(found["here"]),
                       previous=found["previous"], next=found["next"])


def message_mentions(row: models.Message, q: str) -> bool:
    """Whether a message read from the page matches ``q``: the twin in Python of ``message_matches``, for the
    messages already on screen (no query)."""
    needle = clean_query(q).casefold()
    if not needle:
        return False
    if needle in (row.content or "").casefold() or needle in (row.reasoning or "").casefold():
        return True
    if needle in (row.name or "").casefold() or clean_query(q) == row.tool_call_id:
        return True
    for call in row.tool_calls or []:
        function = call.get("function") or {}
        said = f'{function.get("name", "")}\n{function.get("arguments", "")}'
        if needle in said.casefold():
            return True
        if call.get("id") == clean_query(q):
            return True
    return False


def highlight(text: str | None, q: str) -> SafeString:
    """``text`` escaped, each occurrence of ``q`` (any case) inside a ``<mark>``. The text is split first and
    each piece escaped, so nothing the agent wrote can open or close a tag."""
    text = text or ""
    q = clean_query(q)
    if not q:
        return escape(text)
    pieces = re.split(f"({re.escape(q)})", text, flags=re.IGNORECASE)
    # re.split with one group alternates text, match, text, ...
    return mark_safe("".join(
        f'<mark class="hit">{escape(piece)}</mark>' if i % 2 else escape(piece) for i, piece in enumerate(pieces)
    ))


# What the page can jump between. Each is a filter on the session's messages; violations are stored on the
# session (found at import), so they need no query at all.
JUMPS: dict[str, str] = {
    "error": "tool error",
    "user": "user message",
    "violation": "violation",
}


def _jump_rows(session: models.Session, kind: str) -> QuerySet[models.Message]:
    rows = models.Message.objects.filter(session=session)
    if kind == "error":
        return rows.filter(is_error=True)
    if kind == "user":
        return rows.filter(role="user")
    raise ValueError(f"jump: unknown kind {kind!r}; valid: {', '.join(JUMPS)}")


def violation_seqs(session: models.Session) -> list[int]:
    return sorted({int(v.get("seq", v.get("index", 0))) for v in session.violations or []})


def jump_target(
    session: models.Session, kind: str, *, from_seq: int, forward: bool = True, within: ChainFilter | None = None
) -> int | None:
    """The seq of the next (or previous) ``kind`` after (before) ``from_seq``, or None when there is none. With
    ``within``, only among the messages the filter shows (one query)."""
    within = within or NO_FILTER
    if kind == "violation":
        seqs = violation_seqs(session)
        if within.active:
            # Stored on the session: which of them the filter shows is one query over those seqs.
            wanted = [s for s in seqs if (s > from_seq if forward else s < from_seq)]
            shown = within.apply(models.Message.objects.filter(session=session, seq__in=wanted))
            return (shown.order_by("seq" if forward else "-seq").values_list("seq", flat=True).first()
                    if wanted else None)
        if forward:
            return next((s for s in seqs if s > from_seq), None)
        return next((s for s in reversed(seqs) if s < from_seq), None)
    rows = within.apply(_jump_rows(session, kind))
    if forward:
        return rows.filter(seq__gt=from_seq).order_by("seq").values_list("seq", flat=True).first()
    return rows.filter(seq__lt=from_seq).order_by("-seq").values_list("seq", flat=True).first()


@dataclass
class ToolError:
    seq: int
    tool_call_id: str
    tool: str
    preview: str


TOOL_ERRORS_LISTED = 200


def tool_errors(session: models.Session, limit: int = TOOL_ERRORS_LISTED) -> tuple[list[ToolError], int]:
    """The session's tool results marked as errors (the first ``limit``, with the tools that failed) and how
    many there are: three queries, none when the session has no errors."""
    if not session.has_errors:
        return [], 0
    rows = list(
        models.Message.objects.filter(session=session, is_error=True).order_by("seq")
        .values_list("seq", "tool_call_id", "name", "content")[:limit]
    )
    total = len(rows) if len(rows) < limit else models.Message.objects.filter(session=session, is_error=True).count()
    ids = {r[1] for r in rows if r[1]}
    names: dict[str, str] = {}
    if ids:
        calls = models.ToolCall.objects.filter(session=session, call_id__in=ids)
        for call_id, name in calls.values_list("call_id", "name"):
            names.setdefault(call_id, name)
    return [
        ToolError(seq=seq, tool_call_id=call_id, tool=names.get(call_id) or name or "",
                  preview=preview(content or "", 120))
        for seq, call_id, name, content in rows
    ], total


def preview(text: str, width: int) -> str:
    """A one-line preview of ``text``: at most ``width`` characters, read from its first ``2.5 * width``."""
    read = width * 5 // 2
    flat = " ".join(text[:read].split())
    return flat[:width] + ("…" if len(flat) > width or len(text) > read else "")


ROLES = tuple(str(role) for role in models.Role.values)
TOOL_MAX = 255


@dataclass(frozen=True)
class ChainFilter:
    """The session page's "show only": one role, the calls of one tool and their results, or both. Kept in the
    URL (``?role=&tool=``) by every link of the page, so paging, search and jumps stay inside it."""

    role: str = ""
    tool: str = ""
    error: str = ""  # what was wrong with the asked filter (an unknown role), said on the page

    @classmethod
    def from_query(cls, role: str | None, tool: str | None) -> ChainFilter:
        role = (role or "").strip()
        tool = (tool or "").strip()[:TOOL_MAX]
        if role and role not in ROLES:
            return cls(tool=tool, error=f"role: {role!r} is not a role; valid: {', '.join(ROLES)}")
        return cls(role=role, tool=tool)

    @property
    def active(self) -> bool:
        return bool(self.role or self.tool)

    def apply(self, rows: QuerySet[models.Message]) -> QuerySet[models.Message]:
        """Narrow the chain to the role, to the calls of the tool and their results, or both."""
        if self.role:
            rows = rows.filter(role=self.role)
        if self.tool:
            calls = models.ToolCall.objects.filter(session=OuterRef("session"), name=self.tool)
            rows = rows.filter(
                Exists(calls.filter(message=OuterRef("pk")))
                | Q(role="tool", tool_call_id__in=calls.values("call_id"))
            )
        return rows

    def count(self, session: models.Session) -> int:
        """How many of the session's messages the filter shows (one count on the (session, role) index, or on the
        tool's calls)."""
        return self.apply(models.Message.objects.filter(session=session)).count()

    def query(self) -> dict[str, str]:
        """The filter's URL parameters (none when it shows everything)."""
        return {k: v for k, v in (("role", self.role), ("tool", self.tool)) if v}

    @property
    def url_query(self) -> str:
        return urlencode(self.query())

    @property
    def label(self) -> str:
        """What the chain shows, in words: "assistant messages", "calls of lookup_order and their results"."""
        if self.role and self.tool:
            return f"{self.role} messages of tool {self.tool}"
        if self.role:
            return f"{self.role} messages"
        if self.tool:
            return f"calls of {self.tool} and their results"
        return "all messages"


NO_FILTER = ChainFilter()


def session_tool_names(session: models.Session) -> list[str]:
    """The tools the session called (for the filter's choices): one query on the (session, call_id) index."""
    return sorted(set(models.ToolCall.objects.filter(session=session).values_list("name", flat=True).distinct()))

