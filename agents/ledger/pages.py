"""What the memory pages show, read and decided in one call from their views: an agent's memory (its stores, one
store's records searched, filtered, sorted and paged) and the links the memory pages share; one record is
``ledger.record_page``.

Every list is paged by keyset (the last row's place in the sort, never an OFFSET), and the store page counts
nothing it does not have to: a store's own summaries say how many records it holds; a filtered list is counted up
to ``COUNT_CAP`` only. A store of a million records pages at the cost of one of a hundred (bench/bench_memory_pages.py).

The links other pages show to these (the session list, the session page, the agent page) are decided here too:
``agents_with_memory`` and ``memory_store_count``.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from django.contrib.humanize.templatetags.humanize import intcomma
from django.db.models import F, Q, QuerySet
from django.http import Http404
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents import models
from agents.access import User
from agents.ledger import reading
from agents.ledger.health import PERIODS, PeriodHealth, StoreHealth, store_health
from agents.ledger.quality import PeriodRow, store_over_time
from agents.memory.findings import NEAR_LIMIT
from agents.memory.ledger import scope_of

READY = models.MemoryStore.State.READY
RECORDS_PER_PAGE = 50
# A filtered list is counted up to this many (a bounded COUNT over a LIMIT): "1,000+ match" past it.
COUNT_CAP = 1000
# A search's matches up to this many are read by id (see _records_shown).
SEARCH_IDS_INLINE = 5000
# A store of up to this many records is searched by reading its texts, not through the trigram index.
SEARCH_SCAN_MAX = 5000
# A big store's search first tests the text against its newest SEARCH_PROBE records (by id, a range of the primary
# key): more than SEARCH_COMMON of them matching is a common text, which the walk in the sort's order meets at once,
# while the trigram index would list most of the store (2.5x the page of a little store at 100,000 records).
SEARCH_PROBE = 2000
SEARCH_COMMON = RECORDS_PER_PAGE
# Characters of a record's text shown in the table (around the first hit, when searching).
PREVIEW_CHARS = 280
# The keys a record's own scope is read from (mem0's entity keys, as the importers read them).
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# A store's health (ledger.health) is counted from its rows on every request, as its JSON twin counts it: COUNTs over
# the store's records and versions, and every text its recalls sent read and tokenized, so its cost grows with the
# store. The page counts it in place for a store of up to HEALTH_ROWS_MAX records and versions and HEALTH_READS_MAX
# reads (as its stored summaries say); past either it links the JSON twin ("compute health"), so that a page of a
# store of a million records still costs what one of a hundred does (bench/bench_memory_pages.py). On SQLite (the
# tests' database), a page of a store of 100,000 records took 41 ms against 22 ms for 100 (1.3 s the first time, when
# the store's findings had not been computed: an import computes them); the reads cost more (each recalled text is
# tokenized): 0.11 s for 10,000 reads of one item, 2.5 s for 100,000. The panel's periods (a week's by default) add
# three grouped counts and a read of the recalls' ids: at the bounds (100,000 versions, 5,000 reads) 0.25 s against
# 0.10 s for the totals alone (ledger.health.PeriodOf: SQL of each database, not Django's per-row Trunc on SQLite).
HEALTH_ROWS_MAX = 100_000
HEALTH_READS_MAX = 5_000
# The query parameters of the store page's filters (the page, the sort and the store aside), with their labels.
FILTER_LABELS = {
    "q": "Search", "state": "State", "scope": "Scope", "changed_from": "Changed from", "changed_to": "Changed until",
    "read": "Read", "sort": "Sort",
}


# --- the links other pages show --------------------------------------------------------------------------------


def _memory_of(agents: Iterable[models.Agent]) -> QuerySet[models.MemoryStore]:
    """The ready stores the memory pages of ``agents`` show: each agent's own and those its project shares."""
    agents = list(agents)
    return models.MemoryStore.objects.filter(
        Q(agent__in=[a.pk for a in agents]) | Q(agent__isnull=True, project__in={a.project_id for a in agents}),
        state=READY)


def agents_with_memory(agents: Iterable[models.Agent]) -> set[int]:
    """The ids of those of ``agents`` that have a memory page worth opening (a store of their own, or one their
    project shares): one query for a whole page of the session list."""
    agents = list(agents)
    if not agents:
        return set()
    held = set(_memory_of(agents).values_list("agent_id", "project_id").distinct())
    shared = {project for agent, project in held if agent is None}
    return {a.pk for a in agents if (a.pk, a.project_id) in held or a.project_id in shared}


def memory_store_count(agent: models.Agent) -> int:
    return _memory_of([agent]).count()


# --- paging by keyset --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Keyset:
    """One of the store page's sorts as a keyset: a field, its direction, then the id in the same direction. A
    nullable field is read in two runs (its values, then its NULLs, or the other way round), so that the condition
    that starts a page at its anchor is one index range in each (a condition with ``OR ... IS NULL`` is not)."""

    field: str
    descending: bool
    nullable: bool = False
    nulls_first: bool = False  # where NULLs sit in this order (a nullable field only)

    def runs(self, forward: bool) -> list[bool | None]:
        """The runs in reading order: None (the field never NULL), False (its values), True (its NULLs)."""
        if not self.nullable:
            return [None]
        nulls_first = self.nulls_first if forward else not self.nulls_first
        return [True, False] if nulls_first else [False, True]

    def read(self, records: QuerySet[Any], *, anchor: tuple[Any, int] | None, forward: bool, size: int
             ) -> list[Any]:
        """Up to ``size + 1`` rows after (``forward``) or before ``anchor`` (its value and id), in reading order."""
        descending = self.descending == forward
        runs = self.runs(forward)
        if anchor is not None and self.nullable:
            runs = runs[runs.index(anchor[0] is None):]
        rows: list[Any] = []
        for i, null in enumerate(runs):
            part = records
            if null is not None:
                part = part.filter(**{f"{self.field}__isnull": null})
            if anchor is not None and i == 0:
                value, pk = anchor
                beyond = Q(pk__lt=pk) if descending else Q(pk__gt=pk)
                if not null:
                    lookup = "lt" if descending else "gt"
                    # The bound alone (lte/gte) is what lets the database start the index range at the anchor: an
                    # OR of two comparisons, by itself, is read from the start of the range on SQLite.
                    part = part.filter(**{f"{self.field}__{lookup}e": value})
                    beyond = Q(**{f"{self.field}__{lookup}": value}) | (Q(**{self.field: value}) & beyond)
                part = part.filter(beyond)
            order: list[Any] = [F("pk").desc() if descending else F("pk").asc()]
            if null is False:
                # Said as the index holds it (0022: DESC NULLS LAST, read backwards ASC NULLS FIRST; SQLite's order
                # without the clause): a plain DESC means NULLS FIRST to PostgreSQL, which then sorts the whole
                # store although this run holds no NULL.
                order.insert(0, F(self.field).desc(nulls_last=True) if descending else F(self.field).asc(
                    nulls_first=True))
            elif null is None:
                order.insert(0, F(self.field).desc() if descending else F(self.field).asc())
            rows += part.order_by(*order)[: size + 1 - len(rows)]
            if len(rows) > size:
                break
        return rows


# As reading.RECORD_SORTS orders them.
RECORD_KEYSETS: dict[str, Keyset] = {
    "updated": Keyset("updated_at", descending=False, nullable=True, nulls_first=True),
    "-updated": Keyset("updated_at", descending=True, nullable=True, nulls_first=False),
    "reads": Keyset("read_count", descending=False),
    "-reads": Keyset("read_count", descending=True),
    "versions": Keyset("version_count", descending=False),
    "-versions": Keyset("version_count", descending=True),
    "id": Keyset("external_id", descending=False),
}


# --- an agent's memory ---------------------------------------------------------------------------------------------


@dataclass
class StoreRow:
    store: models.MemoryStore
    shared: bool  # the project's, not the agent's own
    scope: str  # "user_id=user_1 · agent_id=Friday"
    url: str
    current: bool


@dataclass
class Fill:
    """A block's text against its limit."""

    chars: int
    limit: int
    near_at: int  # where "near the limit" starts (findings.NEAR_LIMIT)

    @property
    def percent(self) -> int:
        return round(100 * self.chars / self.limit) if self.limit else 0

    @property
    def level(self) -> Literal["over", "near", "ok"]:
        return "over" if self.chars > self.limit else "near" if self.chars >= self.near_at else "ok"

    @property
    def scale(self) -> int:
        """The bar's whole length: the limit, or the text when it is over (the bar then fills, past ``high``)."""
        return max(self.chars, self.limit)


@dataclass
class RecordRow:
    record: models.MemoryRecord
    url: str
    preview: SafeString  # escaped, the search's hits marked
    scope: str
    fill: Fill | None


@dataclass
class RecordsShown:
    rows: list[RecordRow]
    total: int | None  # every record of the store (its stored count), when no filter applies
    matched: int | None  # the records the filters keep, counted up to COUNT_CAP
    capped: bool  # more than COUNT_CAP match
    start: int | None  # the place of the first row shown (1 for the first page), when known
    first_url: str
    previous_url: str
    next_url: str
    show_scope: bool  # some record shown carries a scope of its own

    @property
    def summary(self) -> str:
        """"51–100 of 1,000,000 records", "1–50 of 1,000+ records match", "3 records match"."""
        if self.total is not None:
            count, what = self.total, f"record{pluralize(self.total)}"
        else:
            count, what = self.matched or 0, f"record{pluralize(self.matched or 0)} match" + (
                "es" if self.matched == 1 and not self.capped else "")
        said = f"{intcomma(count)}{'+' if self.capped else ''} {what}"
        if self.rows and self.start is not None:
            said = f"{intcomma(self.start)}–{intcomma(self.start + len(self.rows) - 1)} of {said}"
        elif self.rows:
            said = f"{len(self.rows)} shown of {said}"
        return said


# The periods of the health panel's table: the latest this many (all of them in its JSON twin).
HEALTH_PERIODS_SHOWN = 12
HEALTH_PERIOD_LABELS = {"day": "Day", "week": "Week of", "month": "Month"}


@dataclass(frozen=True)
class PeriodShown:
    """A row of the health panel's table: the period's figures, and its zero-hit share as the panel says shares."""

    row: PeriodHealth
    zero_hit_share: str  # "" when no search of it found nothing


@dataclass
class HealthShown:
    """The shown store's health panel: its figures (None past the bounds above: only the link to compute them),
    per ``period`` (``?health=day|week|month``, a week without it), with links to the other periods."""

    figures: StoreHealth | None
    json_url: str  # GET /api/memory/stores/<id>/health/?period=
    period: str = "week"
    period_links: list[tuple[str, str, bool]] = field(default_factory=list)  # (period, url, shown)
    # Retrieval quality from QA's relevance marks, per week (the latest shown, newest first; none: nothing marked),
    # how many weeks have marks, and the JSON: GET /api/memory/stores/<id>/quality/?period=week.
    quality: list[PeriodRow] = field(default_factory=list)
    quality_weeks: int = 0
    quality_url: str = ""

    @property
    def never_read_share(self) -> str:
        return share(self.figures.never_read, self.figures.records) if self.figures else ""

    @property
    def zero_hit_share(self) -> str:
        return share(self.figures.zero_hit_recalls, self.figures.reads) if self.figures else ""

    @property
    def period_label(self) -> str:
        return HEALTH_PERIOD_LABELS[self.period]

    @property
    def periods(self) -> list[PeriodShown]:
        """The latest periods, newest first."""
        if not self.figures:
            return []
        return [PeriodShown(row=row, zero_hit_share=share(row.zero_hit_recalls, row.reads) if row.zero_hit_recalls
                            else "") for row in reversed(self.figures.periods[-HEALTH_PERIODS_SHOWN:])]

    @property
    def periods_left_out(self) -> int:
        return max(0, len(self.figures.periods) - HEALTH_PERIODS_SHOWN) if self.figures else 0


def share(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage, "12%" (never "0%" or "100%" when it is not quite), "" of nothing."""
    if not whole:
        return ""
    percent = round(100 * part / whole)
    if part and percent == 0:
        return "<1%"
    if part < whole and percent == 100:
        return ">99%"
    return f"{percent}%"


def _health_shown(user: User, store: models.MemoryStore, query: Mapping[str, str], keep: str) -> HealthShown:
    small = max(store.record_count, store.version_count) <= HEALTH_ROWS_MAX and store.read_count <= HEALTH_READS_MAX
    wanted = str(query.get("health", ""))
    period = wanted if wanted in PERIODS else "week"
    # The page's own query (the store and its filters) with the period: the records stay as they are.
    links = [(name, f"?{keep + '&' if keep else ''}{urlencode({'health': name})}#store-health", name == period)
             for name in PERIODS]
    quality, weeks = store_over_time(store, "")[:2] if small else ([], 0)
    return HealthShown(figures=store_health(user=user, store_id=store.pk, period=period) if small else None,
                       json_url=reverse("api:memory_store_health", args=[store.pk]) + "?" + urlencode(
                           {"period": period}), period=period, period_links=links, quality=quality,
                       quality_weeks=weeks,
                       quality_url=reverse("api:memory_store_quality", args=[store.pk]) + "?period=week")


@dataclass
class AgentMemoryPage:
    agent: models.Agent
    stores: list[StoreRow]
    snapshots: int
    store: models.MemoryStore | None  # the one whose records are shown
    filters: reading.RecordFilters
    scope: str  # the scope filter as given (key=value), when valid
    values: dict[str, str]  # what the filter form shows: each field as it was sent
    errors: list[str]  # "State: expected one of ..."
    records: RecordsShown | None
    path: str
    query: str  # the store and the valid filters, for the links that keep them
    sort_prefix: str  # "?store=..&q=..&" : the sort headers' links add sort=
    json_url: str  # the page's JSON twin: GET /api/agents/<id>/memory/
    records_json_url: str  # the records' twin: GET /api/memory/stores/<id>/records/?q=&state=
    health: HealthShown | None  # the shown store's health (none for an htmx request: the records alone)
    scope_choices: list[str] = field(default_factory=list)
    # Following the shown store live (``memory_follow``): the token of what is shown ("" on a later page of its
    # records: nothing to follow there), whether the page polls by itself (written or read lately, or ?follow=1),
    # and the address it polls.
    follow_token: str = ""
    following: bool = False
    follow_url: str = ""


# A store or record written or read this recently is followed live by its page without being asked.
LIVE_FOR = models.Session.LIVE_FOR


def changed_lately(*times: dt.datetime | None) -> bool:
    """Whether any of ``times`` (a last write, a last read) falls within LIVE_FOR of now."""
    now = timezone.now()
    return any(when is not None and now - when < LIVE_FOR for when in times)


def _store_shown(stores: list[models.MemoryStore], wanted: int | None) -> models.MemoryStore | None:
    """The store ``?store=`` names among ``stores`` (None: not one of them); without it, the first store that holds
    records (a knowledge base read but not imported holds none), else the first."""
    if wanted is not None:
        return next((s for s in stores if s.pk == wanted), None)
    return next((s for s in stores if s.record_count), stores[0] if stores else None)


def store_follow_token(store: models.MemoryStore) -> str:
    """What changes when a record, a version or a read of the store arrives: its counters, kept by the ledger's
    upkeep on the store's own row."""
    return f"{store.record_count}.{store.version_count}.{store.read_count}"


def memory_follow(*, user: User, agent_id: int, query: Mapping[str, str], token: str) -> AgentMemoryPage | None:
    """The memory page following its store live: None while nothing arrived since ``token`` (the agent's stores
    read, as the page reads them), else the page's stores, the store's health and its records again, to replace
    what is shown."""
    store = _store_shown(reading.agent_memory(user=user, agent_id=agent_id).stores, int_param(query.get("store")))
    if store is None or store_follow_token(store) == token:
        return None
    return agent_memory_page(user=user, agent_id=agent_id, query={**query, "follow": "1"})


def agent_memory_page(*, user: User, agent_id: int, query: Mapping[str, str], fragment: bool = False
                      ) -> AgentMemoryPage:
    """An agent's memory (404 when the agent is not in the user's projects): its stores and those its project
    shares, and the records of the one ``?store=`` names (404 when it is not one of them; the first store without
    it), searched, filtered and sorted as ``query`` says, one page after ``?after=`` or before ``?before=`` (a
    record's id). A filter that cannot apply is left out and said why in ``errors``. The store's health, unless only
    the records' table is wanted (``fragment``: an htmx request)."""
    memory = reading.agent_memory(user=user, agent_id=agent_id)
    agent = memory.agent
    path = reverse("agents:agent_memory", args=[agent.pk])
    wanted = int_param(query.get("store"))
    store = _store_shown(memory.stores, wanted)
    if wanted is not None and store is None:
        raise Http404("No such memory store.")
    filters, scope, errors = _filters(query)
    kept: dict[str, str] = {"store": str(store.pk)} if store is not None and wanted is not None else {}
    for name in FILTER_LABELS:
        value = scope if name == "scope" else getattr(filters, name, "")
        if value and not (name == "sort" and value == reading.DEFAULT_RECORD_SORT):
            kept[name] = str(value)
    keep = urlencode(kept)
    sort_keep = urlencode({k: v for k, v in kept.items() if k != "sort"})
    stores = [StoreRow(store=s, shared=s.agent_id is None, scope=" · ".join(
        f"{key}={value}" for key, value in (s.scope.items() if isinstance(s.scope, dict) else ())),
                       url=f"{path}?{urlencode({'store': s.pk})}", current=s == store) for s in memory.stores]
    records = None
    if store is not None:
        records = _records_shown(store, filters, scope, query, path=path, keep=keep)
    # What the scope field suggests: the store's scope and the scopes of the records shown (no query of its own).
    scope_choices = sorted(set(_scope_items(store.scope if store else {})).union(
        *(_scope_items(r.record.metadata) for r in (records.rows if records else []))))
    return AgentMemoryPage(
        agent=agent, stores=stores, snapshots=memory.snapshots, store=store, filters=filters, scope=scope,
        values={name: str(query.get(name, "")) for name in FILTER_LABELS}, errors=errors, records=records,
        path=path, query=keep, sort_prefix=f"?{sort_keep}&" if sort_keep else "?",
        json_url=reverse("api:agent_memory", args=[agent.pk]),
        records_json_url=reverse("api:memory_store_records", args=[store.pk]) + (
            "?" + urlencode({k: v for k, v in (("q", filters.q), ("state", filters.state)) if v})
            if filters.q or filters.state else "") if store is not None else "",
        health=_health_shown(user, store, query, keep) if store is not None and not fragment else None,
        scope_choices=scope_choices, **_following(store, query, path, kept),
    )


def _following(store: models.MemoryStore | None, query: Mapping[str, str], path: str,
               kept: Mapping[str, str]) -> dict[str, Any]:
    if store is None or query.get("after") or query.get("before"):
        return {}
    token = store_follow_token(store)
    return {"follow_token": token,
            "following": changed_lately(store.last_write_at, store.last_read_at) or bool(query.get("follow")),
            "follow_url": f"{path}?{urlencode({**kept, 'store': store.pk, 'live': token})}"}


def int_param(value: Any) -> int | None:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _filters(query: Mapping[str, str]) -> tuple[reading.RecordFilters, str, list[str]]:
    """The filters ``query`` asks for, each one that cannot apply left out (``reading.RecordFilters.from_query``
    refuses the first it meets: it is asked again without it), with what was wrong with each."""
    given = {name: str(query.get(name) or "") for name in FILTER_LABELS}
    errors: list[str] = []
    scope = given.pop("scope").strip()
    if scope:
        key, sep, value = scope.partition("=")
        if not sep or key.strip() not in SCOPE_KEYS or not value.strip():
            errors.append(f"Scope: expected {', '.join(f'{k}=…' for k in SCOPE_KEYS)}")
            scope = ""
        else:
            scope = f"{key.strip()}={value.strip()}"
    for _ in range(len(given) + 1):
        try:
            filters = reading.RecordFilters.from_query(given)
            break
        except reading.LedgerRequestError as exc:
            name, _, what = str(exc).partition(": ")
            if not given.get(name):  # not a field this page sends: nothing to leave out
                raise
            errors.append(f"{FILTER_LABELS[name]}: {what}")
            given[name] = ""
    else:  # pragma: no cover (each round leaves a field out)
        filters = reading.RecordFilters()
    if filters.changed_from and filters.changed_to and filters.changed_from > filters.changed_to:
        errors.append("Changed until: before the day it starts from")
        filters.changed_to = None
    return filters, scope, errors


def _probe(records: QuerySet[models.MemoryRecord], text: str) -> int:
    """How many of the newest SEARCH_PROBE of ``records`` hold ``text``, up to COUNT_CAP + 1: one bounded query."""
    newest = records.order_by("-pk").values("pk")[:SEARCH_PROBE]
    return records.filter(pk__in=newest, text__icontains=text).order_by()[:COUNT_CAP + 1].count()


def _records_shown(store: models.MemoryStore, filters: reading.RecordFilters, scope: str, query: Mapping[str, str],
                   *, path: str, keep: str) -> RecordsShown:
    def kept(filters: reading.RecordFilters) -> QuerySet[models.MemoryRecord]:
        records = reading.store_records(store, filters)
        if scope:
            key, _, value = scope.partition("=")
            records = records.filter(**{f"metadata__{key}": value})
        return records.defer("value")

    records = kept(filters)
    matched: int | None = None
    capped = False
    if filters.q and store.record_count <= SEARCH_SCAN_MAX:
        # A small store is searched by reading its records' texts: the trigram index holds every store's, and a
        # common text would have it list the matches of all of them first.
        records = kept(dataclasses.replace(filters, q="")).filter(text__icontains=filters.q)
    elif filters.q and (probed := _probe(kept(dataclasses.replace(filters, q="")), filters.q)) > SEARCH_COMMON:
        # A common text (see SEARCH_PROBE): the store walked in the sort's order, each record's text tested as it
        # goes. Counted by the probe when it found more than COUNT_CAP, or when it read the whole store; else below.
        records = kept(dataclasses.replace(filters, q="")).filter(text__icontains=filters.q)
        if probed > COUNT_CAP:
            matched, capped = COUNT_CAP, True
        elif store.record_count <= SEARCH_PROBE:
            matched = probed
    elif filters.q:
        # A search reads its matches from the trigram index; with an ORDER BY and a LIMIT the database would rather
        # walk the store in the sort's order and test each record against the whole list of matches (reading every
        # record when few match: 0.36 s at a million). So the matches' ids come first, as the session list's search
        # does: few are listed in the page's query, read by id and sorted; many mean a common text, which the walk
        # meets at once, testing each record's text as it goes (the index's list would hold most of the store).
        ids = list(records.order_by().values_list("pk", flat=True)[: SEARCH_IDS_INLINE + 1])
        if len(ids) <= SEARCH_IDS_INLINE:
            records = models.MemoryRecord.objects.filter(pk__in=ids).defer("value")
            matched = len(ids)
        else:
            records = kept(dataclasses.replace(filters, q="")).filter(text__icontains=filters.q)
            matched, capped = SEARCH_IDS_INLINE, True  # counted already: "5,000+ records match"
    keyset = RECORD_KEYSETS[filters.sort]
    after, before = int_param(query.get("after")), int_param(query.get("before"))
    forward = before is None
    anchor = None
    anchor_id = after if forward else before
    if anchor_id is not None:
        found = models.MemoryRecord.objects.filter(store=store, pk=anchor_id).values_list(keyset.field, "pk").first()
        anchor = (found[0], found[1]) if found else None
    rows = keyset.read(records, anchor=anchor, forward=forward, size=RECORDS_PER_PAGE)
    more = len(rows) > RECORDS_PER_PAGE
    rows = rows[:RECORDS_PER_PAGE]
    if not forward:
        rows.reverse()
    start = int_param(query.get("start")) if anchor is not None else 1
    if start is not None and not forward:
        start = max(1, start - len(rows))
    # Earlier rows exist when we came from them (after=), or there are more before (before= read past a page).
    has_previous = anchor is not None and (forward or more)
    has_next = more if forward else anchor is not None
    filtered = bool(filters.q or filters.state or filters.read or filters.changed_from or filters.changed_to or scope)
    if filtered and matched is None:
        matched = records.order_by()[: COUNT_CAP + 1].count()
        capped = matched > COUNT_CAP
        matched = min(matched, COUNT_CAP)

    def link(**more: Any) -> str:
        extra = urlencode({k: v for k, v in more.items() if v is not None})
        return f"{path}?{keep}{'&' if keep and extra else ''}{extra}" if keep or extra else path

    shown = [_record_row(r, filters.q) for r in rows]
    return RecordsShown(
        rows=shown, total=None if filtered else store.record_count, matched=matched, capped=capped, start=start,
        first_url=link() if anchor is not None else "",
        previous_url=link(before=rows[0].pk, start=start) if has_previous and rows else "",
        next_url=link(after=rows[-1].pk, start=start + len(rows) if start is not None else None)
        if has_next and rows else "",
        show_scope=any(r.scope for r in shown),
    )


def _record_row(record: models.MemoryRecord, q: str) -> RecordRow:
    fill = None
    if record.char_limit:
        fill = Fill(chars=len(record.text), limit=record.char_limit, near_at=int(record.char_limit * NEAR_LIMIT))
    return RecordRow(record=record, url=reverse("agents:memory_record", args=[record.pk]),
                     preview=_preview(record.text, q), scope=scope_text(record.metadata), fill=fill)


def _scope_items(values: Any) -> list[str]:
    """``key=value`` for each scope key ``values`` (a store's scope, a record's metadata) carries."""
    if not isinstance(values, dict):
        return []
    return [f"{key}={value}" for key, value in scope_of(values, SCOPE_KEYS).items()]


def scope_text(values: Any) -> str:
    return " · ".join(_scope_items(values))


def _preview(text: str, q: str) -> SafeString:
    """The first characters of ``text`` (from a little before the first hit of ``q``), escaped, each hit marked."""
    begin = 0
    if q:
        hit = text.casefold().find(q.casefold())
        begin = max(0, hit - PREVIEW_CHARS // 4) if hit > PREVIEW_CHARS // 2 else 0
    piece = text[begin:begin + PREVIEW_CHARS]
    html = _marked(piece, q)
    return mark_safe(("…" if begin else "") + html + ("…" if begin + PREVIEW_CHARS < len(text) else ""))


def _marked(text: str, q: str) -> str:
    if not q:
        return str(escape(text))
    parts = re.split(f"({re.escape(q)})", text, flags=re.IGNORECASE)
    return "".join(f'<mark class="hit">{escape(p)}</mark>' if i % 2 else str(escape(p)) for i, p in enumerate(parts))


# --- links other memory pages share ---------------------------------------------------------------------


def message_url(session: models.Session | None, seq: int | None) -> str:
    """The session page at message ``seq`` (as sessions.find.permalink: ``?at=`` opens its page, ``#m-`` scrolls)."""
    if session is None:
        return ""
    if seq is None:
        return session.get_absolute_url()
    return f"{session.get_absolute_url()}?at={seq}#m-{seq}"


def call_url(session_id: int | None, call_id: int | None) -> str:
    if session_id is None or call_id is None:
        return ""
    return reverse("agents:llm_call", args=[session_id, call_id])
