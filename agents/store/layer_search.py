"""Where each session of a searched list's page matched ``q`` (issue 25, search across the layers): in a message, in
a recall (its query or an item), in a memory record it wrote or read; each place linked (the message's permalink,
the record's page). Read for one page only, after the list found its sessions (``listing.sessions_filtered``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import Min
from django.urls import reverse

from agents import models
from agents.access import User
from agents.store import listing

# Records named per session, at most: the rest are on the session's page.
RECORDS_SHOWN = 3


@dataclass(frozen=True)
class Match:
    """One place a session matched: ``layer`` message, recall or record; ``seq`` the message (the carrying message
    of a recall, the message that caused a write, the message a read fed), None where unknown; ``record`` the
    record's id and ``record_name`` its external id (a record only); ``how`` read or written (a record only)."""

    layer: str
    seq: int | None
    url: str
    text: str
    record: int | None = None
    record_name: str = ""
    how: str = ""

    def as_json(self, absolute: Callable[[str], str]) -> dict[str, object]:
        """The API's ``matched_in`` item; ``absolute`` makes the link absolute (the request's build_absolute_uri)."""
        out: dict[str, object] = {"layer": self.layer, "seq": self.seq, "text": self.text}
        if self.record is not None:
            out |= {"record": self.record, "record_external_id": self.record_name, "how": self.how}
        out["url"] = absolute(self.url)
        return out


def _at(session: models.Session, seq: int | None) -> str:
    """The session page at message ``seq`` (``sessions.find.permalink``), or the session itself."""
    url = session.get_absolute_url()
    return url if seq is None else f"{url}?at={seq}#m-{seq}"


def matches_on_page(*, user: User, q: str, sessions: Iterable[models.Session],
                    message_hits: listing.MessageHits | None = None) -> dict[int, list[Match]]:
    """Where each of ``sessions`` (a page of the list searched for ``q``) matched, by session id. ``message_hits``:
    the first matching messages the list's own search read (``sessions_filtered``); a session it did not name
    (the text shorter than a trigram, no index, too many sessions found) is looked for among the page's messages.
    At most four queries, whatever the page holds: the messages (only when needed), the recalls, the records
    written, the records read. A session found by its title, id or a call id alone has no place to say."""
    sessions = list(sessions)
    if not q or not sessions:
        return {}
    by_id = {s.pk: s for s in sessions}
    page = listing.ids_in(by_id)  # one parameter on PostgreSQL, as the list's own ids
    found: dict[int, list[Match]] = {pk: [] for pk in by_id}
    if message_hits is not None and message_hits.named:
        seqs = message_hits.seqs
    else:
        # The list's search did not name them: the page's sessions' messages, for their first hit.
        seqs = dict(models.Message.objects.filter(session_id__in=page, content__icontains=q).order_by()
                    .values("session_id").annotate(first=Min("seq")).values_list("session_id", "first"))
    for pk, seq in seqs.items():
        if pk in by_id:
            found[pk].append(Match("message", seq, _at(by_id[pk], seq), f"in a message at #{seq}"))
    recalls = (listing.matching_recalls(q).filter(session_id__in=page).order_by()
               .values("session_id").annotate(first=Min("seq")).values_list("session_id", "first"))
    for pk, seq in recalls:
        where = f"in a recall at #{seq}" if seq is not None else "in a recall"
        found[pk].append(Match("recall", seq, _at(by_id[pk], seq), where))
    records = listing.matching_records(q, user=user)
    written = (models.RecordVersion.objects.filter(session_id__in=page, record__in=records).order_by()
               .values("session_id", "record_id", "record__external_id").annotate(first=Min("seq"))
               .values_list("session_id", "record_id", "record__external_id", "first"))
    read = (models.RecallItem.objects.filter(recall__session_id__in=page, record__in=records).order_by()
            .values("recall__session_id", "record_id", "record__external_id").annotate(first=Min("recall__seq"))
            .values_list("recall__session_id", "record_id", "record__external_id", "first"))
    named: dict[int, set[int]] = {}
    for how, rows in (("written", written), ("read", read)):
        for pk, record, name, seq in sorted(rows, key=lambda r: (r[0], r[3] is None, r[3] or 0, r[1])):
            seen = named.setdefault(pk, set())
            if record not in seen and len(seen) >= RECORDS_SHOWN:
                continue
            seen.add(record)
            at = f" at #{seq}" if seq is not None else ""
            found[pk].append(Match("record", seq, reverse("agents:memory_record", args=[record]),
                                   f"in memory record {name} {how}{at}", record=record, record_name=name, how=how))
    return {pk: places for pk, places in found.items() if places}
