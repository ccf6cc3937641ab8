"""The session list's query: its filters, sorts and text search (through a trigram index where the database has
one), scoped to the user. The list page, the API's list, the lab's report, exports and the review queue all list
sessions with ``sessions_filtered``."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Case, Exists, F, Min, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents import models
from agents.access import User, sessions_for_user, user_projects

# --- the session list ---------------------------------------------------------------------------------------

# Sessions without a start time sort last either way, on SQLite and PostgreSQL alike.
SESSION_SORTS: dict[str, tuple[Any, ...]] = {
    "started": (F("started_at").asc(nulls_last=True), "id"),
    "-started": (F("started_at").desc(nulls_last=True), "-id"),
    "messages": ("message_count", "id"),
    "-messages": ("-message_count", "-id"),
    "tokens": ("token_total", "id"),
    "-tokens": ("-token_total", "-id"),
    "violations": ("violation_count", "id"),
    "-violations": ("-violation_count", "-id"),
    # Sessions that never received live messages sort by their import, which is when their messages came.
    "activity": (Coalesce("last_activity_at", "imported_at").asc(), "id"),
    "-activity": (Coalesce("last_activity_at", "imported_at").desc(), "-id"),
    # Review: unreviewed, in review, done (the order of the work), and assignees by name, nobody's last.
    "status": (Case(*(When(review_status=s, then=i) for i, s in enumerate(models.ReviewStatus.values))).asc(), "id"),
    "-status": (Case(*(When(review_status=s, then=i) for i, s in enumerate(models.ReviewStatus.values))).desc(), "-id"),
    "assignee": (F("assignee__username").asc(nulls_last=True), "id"),
    "-assignee": (F("assignee__username").desc(nulls_last=True), "-id"),
    # A session's first label by name (sessions without a label last).
    "label": (F("first_label").asc(nulls_last=True), "id"),
    "-label": (F("first_label").desc(nulls_last=True), "-id"),
}
DEFAULT_SESSION_SORT = "-started"


@dataclass
class SessionFilters:
    project: models.Project | None = None
    agent: models.Agent | None = None
    q: str = ""
    tool: str = ""
    has_violations: bool = False
    has_errors: bool = False
    has_memory_findings: bool = False  # Session.memory_finding_count, kept by ledger.findings
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    label: str = ""  # a label name: sessions annotated with it (on a message or the whole session)
    review_status: str = ""
    assignee: str = ""  # a username, or NOBODY
    sort: str = DEFAULT_SESSION_SORT

    @property
    def scope_project(self) -> models.Project | None:
        """The one project these filters keep the sessions to (the project's, or the agent's), if any."""
        if self.project is not None:
            return self.project
        return self.agent.project if self.agent is not None else None


NOBODY = "-"  # the assignee filter's "assigned to nobody"


def sessions_filtered(user: User, filters: SessionFilters, *,
                      message_hits: MessageHits | None = None) -> QuerySet[models.Session]:
    """The user's sessions narrowed by the list's filters, sorted. The text search ``q`` finds sessions by title,
    external id, a whole tool call id, a message's content, and their memory (``memory_match``: a recall's query
    or items, a record they wrote or read). ``message_hits``, when given, receives the first matching message of
    each session the index named, so that saying where a session matched reads no message again."""
    qs = sessions_for_user(user)
    if filters.project is not None:
        qs = qs.filter(agent__project=filters.project)
    if filters.agent is not None:
        qs = qs.filter(agent=filters.agent)
    if filters.q:
        if message_hits is not None:
            message_hits.q = filters.q
        # A tool call id (as pasted from a log) names the session too; exact match serves the (session,
        # call_id) index.
        with_call = models.ToolCall.objects.filter(session=OuterRef("pk"), call_id=filters.q.strip())
        qs = qs.filter(
            Q(title__icontains=filters.q)
            | Q(external_id__icontains=filters.q)
            | _content_match(filters.q, scope=qs, hits=message_hits)
            | Exists(with_call)
            | memory_match(filters.q, user=user)
        )
    if filters.tool:
        qs = qs.filter(Exists(models.ToolCall.objects.filter(session=OuterRef("pk"), name=filters.tool)))
    if filters.has_violations:
        qs = qs.filter(violation_count__gt=0)
    if filters.has_errors:
        qs = qs.filter(has_errors=True)
    if filters.has_memory_findings:
        qs = qs.filter(memory_finding_count__gt=0)
    # Day bounds as datetimes in the site's time zone, so that the started_at index serves the range.
    if filters.date_from is not None:
        qs = qs.filter(started_at__gte=_day_start(filters.date_from))
    if filters.date_to is not None:
        qs = qs.filter(started_at__lt=_day_start(filters.date_to + dt.timedelta(days=1)))
    if filters.min_tokens is not None:
        qs = qs.filter(token_total__gte=filters.min_tokens)
    if filters.max_tokens is not None:
        qs = qs.filter(token_total__lte=filters.max_tokens)
    if filters.label:
        qs = qs.filter(Exists(models.Annotation.objects.filter(session=OuterRef("pk"), label__name=filters.label)))
    if filters.review_status:
        qs = qs.filter(review_status=filters.review_status)
    if filters.assignee == NOBODY:
        qs = qs.filter(assignee__isnull=True)
    elif filters.assignee:
        qs = qs.filter(assignee__username=filters.assignee)
    sort = filters.sort if filters.sort in SESSION_SORTS else DEFAULT_SESSION_SORT
    if sort.lstrip("-") == "label":
        first = models.Annotation.objects.filter(session=OuterRef("pk"), label__isnull=False).order_by("label__name")
        qs = qs.annotate(first_label=Subquery(first.values("label__name")[:1]))
    return qs.order_by(*SESSION_SORTS[sort])


# A trigram index answers a text of at least this many characters; a shorter one is looked for by a plain scan.
TRIGRAM = 3
# Matching sessions are listed by id in the list's query when there are at most this many (the count and the page
# then reuse them); more are matched by a subquery, which each of the two queries runs again.
MATCHED_IDS_INLINE = 5_000


@dataclass
class MessageHits:
    """The first matching message of each session a text search found (session id: seq), when its index lookup
    named them (``named``); else (a text shorter than a trigram, no index, too many sessions) unknown. ``q``: the
    text searched, "" when the list was not searched."""

    q: str = ""
    named: bool = False
    seqs: dict[int, int] = field(default_factory=dict)


def _content_match(text: str, *, scope: QuerySet[models.Session], hits: MessageHits | None = None) -> Q:
    """Sessions with a message whose content contains ``text`` (case-insensitively, as ``icontains``).

    With a trigram index (``search_indexed``) the matching sessions are found once, from the index, and the list's
    count and page both reuse their ids: a request reads the matching messages once, not every message twice. A
    text shorter than a trigram, or a database without the index, is looked for by EXISTS over the session's
    messages, as before: the same sessions either way (``tests/test_search_index.py``)."""
    if len(text) < TRIGRAM or not search_indexed():
        return Q(Exists(models.Message.objects.filter(session=OuterRef("pk"), content__icontains=text)))
    matched = sessions_matching_text(text, scope=scope)
    if not isinstance(matched, dict):
        return Q(pk__in=matched)
    if hits is not None:
        hits.named, hits.seqs = True, matched
    return Q(pk__in=ids_in(matched))


def ids_in(ids: Iterable[int]) -> list[int] | RawSQL:
    """``ids`` for an ``__in`` lookup. On PostgreSQL as one parameter, an array's text, not one placeholder each:
    psycopg parses again, at every execution, a query too long for its cache (4 KB), Django prepares each id of an
    IN list for each of the list's queries, and psycopg adapts a list of ints item by item (1,000 found sessions:
    30 ms of a 130 ms request)."""
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::bigint[])", ("{" + ",".join(map(str, ids)) + "}",))
    return list(ids)


def sessions_matching_text(text: str, *, scope: QuerySet[models.Session]) -> dict[int, int] | QuerySet[Any]:
    """The sessions in ``scope`` with a message containing ``text``, found through the trigram index
    (``len(text) >= TRIGRAM``): when there are few enough to name, each one's id with its first matching message's
    seq (read by the same query: where the list says it matched), else the subquery that finds their ids."""
    messages = models.Message.objects.filter(session__in=scope.order_by().values("pk"))
    if connections[DEFAULT_DB_ALIAS].vendor == "sqlite":
        # The FTS5 trigram table finds candidates (it folds case more widely than LIKE does); LIKE, the plain
        # scan's own test, keeps exactly the messages the scan would keep.
        phrase = '"' + text.replace('"', '""') + '"'
        candidates = RawSQL("SELECT rowid FROM agents_message_fts WHERE agents_message_fts MATCH %s", (phrase,))
        messages = messages.filter(pk__in=candidates)
    # PostgreSQL answers icontains (UPPER(content) LIKE UPPER(...)) from its GIN index on UPPER(content).
    matching = messages.filter(content__icontains=text).order_by().values("session_id").distinct()
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        ids = _postgresql_sessions_matching(text, scope=scope)
    else:
        first = messages.filter(content__icontains=text).order_by().values("session_id").annotate(first=Min("seq"))
        ids = dict(first.values_list("session_id", "first")[: MATCHED_IDS_INLINE + 1])
    return ids if len(ids) <= MATCHED_IDS_INLINE else matching


def _postgresql_sessions_matching(text: str, *, scope: QuerySet[models.Session]) -> dict[int, int]:
    """Up to MATCHED_IDS_INLINE + 1 sessions in ``scope`` with a message containing ``text`` (id: the first
    matching message's seq): the
    matching messages found first, by themselves (a materialized CTE, planned alone: from the trigram index, or a
    scan when most rows match), then kept to the scope. Joined in one query, the planner could take the other
    order on a low guess of the scope's size and a high one of the text's matches (pg_trgm's guess moves with each
    ANALYZE): for each session in scope, every one of its messages read by the session's index and tested, 1.6 s
    instead of 15 ms at 1,000,000 messages."""
    hits = models.Message.objects.filter(content__icontains=text).order_by().values("session_id", "seq")
    hits_sql, hits_params = hits.query.sql_with_params()
    scope_sql, scope_params = scope.order_by().values("pk").query.sql_with_params()
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"WITH hits AS MATERIALIZED ({hits_sql}) "
            f"SELECT session_id, MIN(seq) FROM hits WHERE session_id IN ({scope_sql}) GROUP BY session_id LIMIT %s",
            [*hits_params, *scope_params, MATCHED_IDS_INLINE + 1],
        )
        return {row[0]: row[1] for row in cursor.fetchall()}


# --- the search across the memory layers (issue 25) ---------------------------------------------------------------


def memory_match(text: str, *, user: User) -> Q:
    """Sessions whose memory holds ``text`` (case-insensitively, as ``icontains``): a recall of theirs whose query
    or one of whose items (the text as sent) contains it; a record whose text contains it that they wrote a
    version of (``RecordVersion.session``) or read (``RecallItem.record``).

    A record is matched by its current text, through its trigram index (0020), not by the text of each version:
    exact for what the record says now, and cheap (versions have no text index, and a record's history can hold
    10,000 of them); a word only in an older version is found on the record's page, not here. What a session was
    sent is matched exactly by its recalls' items. Records are kept to the stores of the user's projects, so a
    session of theirs linked to another project's record is never found by that record's text. Subqueries, no
    query of their own: the list's count and page carry them, and a database without memory answers them from
    empty indexes."""
    records = matching_records(text, user=user)
    return (Q(pk__in=matching_recalls(text).values("session_id"))
            | Q(pk__in=models.RecordVersion.objects.filter(record__in=records).values("session_id"))
            | Q(pk__in=models.Recall.objects.filter(items__record__in=records).values("session_id")))


def matching_recalls(text: str) -> QuerySet[models.Recall]:
    """Recalls whose query, or one of whose items' text, contains ``text``."""
    items = models.RecallItem.objects.filter(_indexed(text, "agents_recallitem", "text", memory=True))
    return models.Recall.objects.filter(
        _indexed(text, "agents_recall", "query", memory=True) | Q(pk__in=items.values("recall_id")))


def matching_records(text: str, *, user: User) -> QuerySet[models.MemoryRecord]:
    """The records of the user's projects' stores whose current text contains ``text``."""
    return models.MemoryRecord.objects.filter(_indexed(text, "agents_memoryrecord", "text", memory=False),
                                              store__project__in=user_projects(user))


def _indexed(text: str, table: str, column: str, *, memory: bool) -> Q:
    """Rows of ``table`` whose ``column`` contains ``text``: on SQLite, candidates from the table's FTS5 trigram
    index, kept by LIKE (as the messages' search); PostgreSQL answers icontains from its GIN index on UPPER(column);
    a text shorter than a trigram, or a database without the index, by a scan. ``memory``: the recalls' indexes
    (0024), else the record's (0020, there whenever the messages' is)."""
    indexed = recall_search_indexed() if memory else search_indexed()
    if len(text) >= TRIGRAM and indexed and connections[DEFAULT_DB_ALIAS].vendor == "sqlite":
        phrase = '"' + text.replace('"', '""') + '"'
        candidates = RawSQL(f"SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH %s", (phrase,))
        return Q(pk__in=candidates, **{f"{column}__icontains": text})
    return Q(**{f"{column}__icontains": text})


def recall_search_indexed() -> bool:
    """Whether this database has the recalls' trigram indexes of migration 0024 (and the setting allows them)."""
    return _has_index("agents_recallitem_fts", "agents_recallitem_text_trgm")


_SEARCH_INDEXED: dict[str, bool] = {}


def search_indexed() -> bool:
    """Whether this database has the trigram index of migration 0011 (and the setting allows using it)."""
    return _has_index("agents_message_fts", "agents_message_content_trgm")


def _has_index(sqlite_table: str, postgresql_index: str) -> bool:
    if not getattr(settings, "MEMORYVIZ_SEARCH_INDEX", True):
        return False
    db = connections[DEFAULT_DB_ALIAS]
    key = f"{db.vendor}:{db.settings_dict.get('NAME')}:{sqlite_table}"
    if key not in _SEARCH_INDEXED:
        with db.cursor() as cursor:
            if db.vendor == "sqlite":
                cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [sqlite_table])
            elif db.vendor == "postgresql":
                cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [postgresql_index])
            else:
                _SEARCH_INDEXED[key] = False
                return False
            _SEARCH_INDEXED[key] = cursor.fetchone() is not None
    return _SEARCH_INDEXED[key]


def _day_start(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def tool_names_for_user(user: User) -> list[str]:
    """The tool names used in the user's projects (the filter's suggestions), from the names stored per project
    as calls are written: a few rows, however many calls there are."""
    return list(
        models.ToolName.objects.filter(project__in=user_projects(user))
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()[:200]
    )
