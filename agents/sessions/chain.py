"""The session page's pages of messages: keyset pages of a session's rows (filtered by role or tool, or not), each
tool result placed against its call."""
from __future__ import annotations

from dataclasses import dataclass

from agents import access, models
from agents.memory.chain import ResultPlace, place_results
from agents.memory.tokens import get_counter
from agents.sessions import find
from agents.sessions.find import NO_FILTER, ChainFilter
from agents.store.mapping import message_to_schema
from agents.store.reading import session_row_batches

# Messages per page of the session page (and per "load more").
MESSAGE_PAGE_SIZE = 300


@dataclass
class MessagePage:
    """One page of a session's messages, for the session page."""

    rows: list[models.Message]
    after: int | None  # the seq the page starts after (None: from the start)
    next_after: int | None  # the seq to load the next page after (None: this is the last page)
    tokens_before: int  # the sum of token_count of the messages before this page (0 for an empty page)
    shown_through: int  # how many messages are shown once this page is on screen (from the start)


def session_message_page(
    session: models.Session, *, after: int | None = None, size: int = MESSAGE_PAGE_SIZE,
    within: ChainFilter = NO_FILTER,
) -> MessagePage:
    """``seq > after ORDER BY seq LIMIT size``: a page costs the same in a short session and a huge one.

    One query whatever the page's position: the running total before the page comes from its first row's
    stored ``token_running`` (set at import), not from summing every earlier message. With ``within`` (the
    page's role or tool filter), the same query over the messages it shows.
    """
    if within.active:
        shown = within.apply(models.Message.objects.filter(session_id=session.pk)).order_by("seq")
        rows = list(shown.filter(seq__gt=-1 if after is None else after)[: size + 1])
    else:
        rows = next(session_row_batches(session, after=after, size=size + 1), [])
    has_more = len(rows) > size
    rows = rows[:size]
    # An empty page (after the last message) shows no running total, so it needs none.
    tokens_before = rows[0].token_running - rows[0].token_count if rows else 0
    last_seq = rows[-1].seq if rows else (after if after is not None else -1)
    return MessagePage(
        rows=rows,
        after=after,
        next_after=rows[-1].seq if (has_more and rows) else None,
        tokens_before=tokens_before,
        shown_through=min(last_seq + 1, session.message_count) if session.message_count else len(rows),
    )


def session_filtered_page_before(
    session: models.Session, *, within: ChainFilter, before: int, size: int = MESSAGE_PAGE_SIZE
) -> tuple[int, int] | None:
    """For "load earlier" in a filtered chain: the ``after`` of the page of the ``size`` shown messages just
    before seq ``before``, and the seq of the last of them (None when the filter shows none before it). One query
    of at most ``size`` seqs."""
    shown = within.apply(models.Message.objects.filter(session_id=session.pk, seq__lt=before))
    seqs = list(shown.order_by("-seq").values_list("seq", flat=True)[:size])
    return (seqs[-1] - 1, seqs[0]) if seqs else None


@dataclass
class ChainPage:
    """A page of the session page: its messages, each tool result placed against its call (``ResultPlace``)."""

    page: MessagePage
    results: dict[int, ResultPlace]  # seq of each tool result on the page -> where its call is
    per_list: int  # the tokens the session's counter adds once per list (in the header's total, in no message)


def session_chain_page(
    session: models.Session, *, after: int | None = None, at: int | None = None, within: ChainFilter = NO_FILTER
) -> ChainPage:
    """The page of the session page after ``after`` or, for a permalink, the page holding message ``at``, with its
    tool results paired with their calls: right above, earlier on the page (a late result), or on another page,
    found with one query only when the page has such a result.

    Filtered (``within``): the shown messages from ``at`` on (the place a reload returns to is the page's first
    row), and each tool result linked to its call wherever it is, since the messages between are not shown."""
    if after is None and at is not None and at >= 0:
        if within.active:
            after = at - 1 if at > 0 else None
        else:
            # The page that starts at the page boundary holding ``at`` (the first page stays the plain URL's page,
            # so a permalink into it opens the same page the session link does).
            boundary = (at // MESSAGE_PAGE_SIZE) * MESSAGE_PAGE_SIZE
            after = boundary - 1 if boundary > 0 else None
    page = session_message_page(session, after=after, within=within)

    def calls_outside(ids: set[str]) -> dict[str, list[tuple[int, str]]]:
        found: dict[str, list[tuple[int, str]]] = {}
        calls = models.ToolCall.objects.filter(session=session, call_id__in=ids).order_by("message__seq", "position")
        for call_id, name, seq in calls.values_list("call_id", "name", "message__seq"):
            found.setdefault(call_id, []).append((seq, name))
        return found

    results: dict[int, ResultPlace] = {}
    if within.active:
        ids = {row.tool_call_id for row in page.rows if row.role == "tool" and row.tool_call_id}
        found = calls_outside(ids) if ids else {}
        for row in page.rows:
            if row.role != "tool":
                continue
            candidates = found.get(row.tool_call_id) or []
            before = [c for c in candidates if c[0] < row.seq]
            index, name = (before[-1] if before else candidates[0]) if candidates else (None, "")
            results[row.seq] = ResultPlace(name, False, index)
    else:
        start = page.rows[0].seq if page.rows else 0
        results = place_results([message_to_schema(row) for row in page.rows], start=start,
                                calls_outside=calls_outside)
    try:
        per_list = get_counter(session.token_counter).per_list
    except ValueError:  # a counter no longer installed: the header's total shows without it
        per_list = 0
    return ChainPage(page, results, per_list)


@dataclass
class MessagesPage:
    """A page of the API's messages of a session: the rows, whether more follow, and with a search its cleaned
    query and how many messages match it."""

    session: models.Session
    rows: list[models.Message]
    more: bool
    q: str = ""
    count: int | None = None


def session_messages_page(*, user: access.User, session_id: int, after: int | None, limit: int,
                          q: str | None = None) -> MessagesPage:
    """One page of the session's messages in order after seq ``after`` (keyset: every page costs the same), or with
    ``q`` (not None) only those that mention it. 404 outside the user's projects; ValueError for an empty search."""
    session = access.session_for_user(user, session_id)
    if q is not None:
        q = find.clean_query(q)
        if not q:
            raise ValueError("q: say what to look for")
        matches = find.message_matches(session, q)
        found = list((matches.filter(seq__gt=after) if after is not None else matches)[: limit + 1])
        return MessagesPage(session, found[:limit], len(found) > limit, q, matches.count())
    page = session_message_page(session, after=after, size=limit)
    return MessagesPage(session, page.rows, page.next_after is not None)
