"""The lab's report: strategies across the sessions of a filtered list (``trimming_report``), and what its page
shows of it: the rows in an order, only those a count counts, the CSV and JSON downloads."""
from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpResponse, QueryDict
from pydantic import BaseModel

from agents import access, models
from agents.jobs import queue
from agents.lab import recalls as lab_recalls
from agents.lab.charts import savings_chart
from agents.lab.trimming import replay_input, session_trim
from agents.memory.replay import replay
from agents.memory.trimming import StrategySpec, spec_from_text
from agents.store import reading
from agents.store.filters import session_filter_pairs
from agents.store.outlines import sessions_stored_messages

# --- the lab's report: strategies across sessions ----------------------------------------------------------

REPORT_SESSION_LIMIT = 200
# Reading and trimming costs about 0.1 ms per message and strategy: past this many messages a page would take
# too long, so the report stops there too (and says so) even before REPORT_SESSION_LIMIT sessions.
REPORT_MESSAGE_LIMIT = 100_000


@dataclass
class ReportCell:
    spec: StrategySpec
    tokens_after: int
    kept: int
    errors: int
    question_lost: bool | None
    budget_exceeded: bool
    error: str = ""  # the strategy failed on this session (should not happen; said rather than a 500)
    # Per-call mode: the first call of the replayed run that sent a list a provider rejects (its position in the
    # replay's steps, and the input index of the message that call produced), None when no call broke.
    first_broken_step: int | None = None
    first_broken_call: int | None = None
    # Counted with another counter than the session's (a preset's): the tokens before under it (what it saved
    # is measured against these); None: the row's.
    tokens_before: int | None = None
    # The session's recalls whose carrying message the strategy drops (recall_trimmed).
    recalls_dropped: int = 0


@dataclass
class ReportRow:
    session: models.Session
    tokens_before: int
    cells: list[ReportCell]


@dataclass
class ReportSummary:
    spec: StrategySpec
    broken: int = 0
    questions_lost: int = 0
    tokens_after_total: int = 0
    sessions: int = 0
    broken_some_call: int = 0  # per-call mode: sessions where some call of the replayed run broke the protocol
    recalls_dropped: int = 0  # summed over the sessions: recalls whose carrying message the strategy drops

    @property
    def mean_tokens_after(self) -> float:
        return self.tokens_after_total / self.sessions if self.sessions else 0.0


@dataclass
class TrimmingReport:
    specs: list[StrategySpec]
    rows: list[ReportRow]
    summaries: list[ReportSummary]
    capped: bool
    limit: int
    per_call: bool = False


def trimming_report(
    sessions: QuerySet[models.Session],
    specs: Sequence[StrategySpec],
    *,
    limit: int | None = None,
    per_call: bool = False,
    counters: Sequence[str | None] | None = None,
) -> TrimmingReport:
    """Each spec over each session (at most ``limit``; ``sessions`` must already be scoped to the user).
    ``per_call``: also replay every call of each run (``memory.replay``): "breaks at some call" beside "breaks at
    the end". ``counters``: what each spec counts with (a preset's, ``trim_counter``); None: each session's own,
    with its stored counts."""
    spec_counters = list(counters) if counters is not None else [None] * len(specs)
    limit = limit or REPORT_SESSION_LIMIT
    # Whether each has a recall carried by a message, told by the sessions' own query: a report of sessions without
    # memory reads no recall.
    chosen: list[models.Session] = list(sessions.annotate(has_recalls=lab_recalls.has_placed_recalls())[: limit + 1])
    capped = len(chosen) > limit
    chosen = chosen[:limit]
    total = 0
    for k, session in enumerate(chosen):
        total += session.message_count
        if total > REPORT_MESSAGE_LIMIT and k > 0:
            chosen, capped, limit = chosen[:k], True, k
            break
    summaries = [ReportSummary(spec) for spec in specs]
    rows: list[ReportRow] = []
    # The recalls' carrying messages, for every chosen session in one query (as their messages are read).
    recall_seqs = lab_recalls.sessions_recall_seqs([s for s in chosen if getattr(s, "has_recalls", True)])
    for session, messages, counts in sessions_stored_messages(chosen):
        roles = messages.outlines
        newest_user = next((i for i in range(len(roles) - 1, -1, -1) if roles[i].role == "user"), None)
        cells: list[ReportCell] = []
        tokens_before = None
        for spec, summary, counter in zip(specs, summaries, spec_counters, strict=True):
            try:
                trimmed = session_trim(session=session, specs=[spec], read=(messages, counts), counter=counter)
            except ValueError as exc:  # a strategy that fails on this session (should not happen): said, not a 500
                cells.append(ReportCell(spec, 0, 0, 0, None, False, error=str(exc)))
                continue
            result = trimmed.results[0]
            if tokens_before is None and not trimmed.recounted:
                tokens_before = result.tokens_before  # the row's "before" is under the session's own counter
            errors = sum(1 for v in result.violations if v.severity == "error")
            lost = None if newest_user is None else newest_user not in set(result.kept)
            cell = ReportCell(spec, result.tokens_after, len(result.kept), errors, lost, result.budget_exceeded,
                              tokens_before=result.tokens_before if trimmed.recounted else None,
                              recalls_dropped=lab_recalls.recalls_dropped(recall_seqs.get(session.pk, ()), result))
            if per_call:
                run = replay(replay_input(messages, spec, recounted=trimmed.recounted), spec, counter=result.counter,
                             token_counts=trimmed.counts)
                if run.first_violation is not None:
                    cell.first_broken_step = run.first_violation
                    cell.first_broken_call = run.steps[run.first_violation].call
                    summary.broken_some_call += 1
            cells.append(cell)
            summary.sessions += 1
            summary.tokens_after_total += result.tokens_after
            summary.broken += errors > 0
            summary.questions_lost += bool(lost)
            summary.recalls_dropped += cell.recalls_dropped
        rows.append(ReportRow(session, session.token_total if tokens_before is None else tokens_before, cells))
    return TrimmingReport(list(specs), rows, summaries, capped, limit, per_call)


# --- the report: order, the sessions a count counts, downloads -----------------------------------------------

# The report's own order (``?order=``; the list's ``sort`` is one of its filters): by session title, by tokens
# before, or by one column of a strategy ("after-2": tokens after by the second strategy); "-" first: descending.
REPORT_ORDER_FIELDS = ("session", "tokens")
REPORT_CELL_FIELDS = ("after", "kept", "errors")
# What a count of the summary counts (``?show=broken-2``): the sessions the second strategy left broken at the
# end, broken at some call (per-call mode), or without the newest question.
REPORT_SHOWS = {"broken": "left broken", "broken_call": "broke at some call", "lost": "lost the question"}


def _cell_value(cell: ReportCell, name: str) -> int:
    if cell.error:
        return -1
    return {"after": cell.tokens_after, "kept": cell.kept, "errors": cell.errors}[name]


def report_order_key(order: str, columns: int) -> tuple[str, int, bool] | None:
    """``-after-2`` → ("after", 1, True); None when it names nothing the report has."""
    descending = order.startswith("-")
    name, _, number = order.lstrip("-").partition("-")
    if name in REPORT_ORDER_FIELDS and not number:
        return name, -1, descending
    if name in REPORT_CELL_FIELDS and number.isdigit() and 1 <= int(number) <= columns:
        return name, int(number) - 1, descending
    return None


def report_ordered(rows: Sequence[ReportRow], order: str, columns: int) -> list[ReportRow]:
    """The report's rows in ``order`` (the service's order, by session, when it names nothing); ties keep it."""
    key = report_order_key(order, columns)
    if key is None:
        return list(rows)
    name, column, descending = key
    if name == "session":
        return sorted(rows, key=lambda r: (r.session.title or r.session.external_id).casefold(), reverse=descending)
    if name == "tokens":
        return sorted(rows, key=lambda r: r.tokens_before, reverse=descending)
    return sorted(rows, key=lambda r: _cell_value(r.cells[column], name), reverse=descending)


def report_show_key(show: str, columns: int) -> tuple[str, int] | None:
    name, _, number = show.rpartition("-")
    if name in REPORT_SHOWS and number.isdigit() and 1 <= int(number) <= columns:
        return name, int(number) - 1
    return None


def report_shown(rows: Sequence[ReportRow], show: str, columns: int) -> list[ReportRow]:
    """Only the sessions a summary count counts (every row when ``show`` names none)."""
    key = report_show_key(show, columns)
    if key is None:
        return list(rows)
    name, column = key

    def counted(cell: ReportCell) -> bool:
        if cell.error:
            return False
        if name == "broken":
            return cell.errors > 0
        if name == "lost":
            return bool(cell.question_lost)
        return cell.first_broken_step is not None

    return [r for r in rows if counted(r.cells[column])]


class ReportCellOut(BaseModel):
    strategy: str
    tokens_after: int | None
    kept: int | None
    errors: int | None
    question_lost: bool | None
    budget_exceeded: bool
    first_broken_call: int | None = None
    error: str = ""
    recalls_dropped: int | None = None  # the session's recalls whose carrying message the strategy drops


class ReportRowOut(BaseModel):
    session: int
    title: str
    agent: str
    project: str
    messages: int
    tokens_before: int
    cells: list[ReportCellOut]


class ReportSummaryOut(BaseModel):
    strategy: str
    sessions: int
    broken: int
    broken_some_call: int | None
    questions_lost: int
    mean_tokens_after: float
    tokens_saved: float  # share of the tokens before, over the report's sessions
    recalls_dropped: int = 0  # recalls whose carrying message the strategy drops, over the report's sessions


class ReportOut(BaseModel):
    """The report as ``?download=json`` gives it (CSV: one line per session and strategy)."""

    strategies: list[str]
    per_call: bool
    capped: bool
    summaries: list[ReportSummaryOut]
    rows: list[ReportRowOut]


def report_saved(report: TrimmingReport) -> list[tuple[int, int]]:
    """(tokens before, tokens after) per strategy, summed over the sessions it trimmed."""
    out = []
    for k, summary in enumerate(report.summaries):
        # A column counted with its preset's counter saved against the tokens before under that counter.
        before = 0
        for r in report.rows:
            if not r.cells[k].error:
                own = r.cells[k].tokens_before
                before += r.tokens_before if own is None else own
        out.append((before, summary.tokens_after_total))
    return out


def report_out(report: TrimmingReport, rows: Sequence[ReportRow], labels: Sequence[str]) -> ReportOut:
    saved = report_saved(report)
    return ReportOut(
        strategies=list(labels), per_call=report.per_call, capped=report.capped,
        summaries=[
            ReportSummaryOut(
                strategy=label, sessions=s.sessions, broken=s.broken,
                broken_some_call=s.broken_some_call if report.per_call else None, questions_lost=s.questions_lost,
                mean_tokens_after=round(s.mean_tokens_after, 2),
                tokens_saved=round((before - after) / before, 4) if before else 0.0,
                recalls_dropped=s.recalls_dropped,
            )
            for label, s, (before, after) in zip(labels, report.summaries, saved, strict=True)
        ],
        rows=[
            ReportRowOut(
                session=r.session.pk, title=r.session.title or r.session.external_id, agent=r.session.agent.slug,
                project=r.session.agent.project.slug, messages=r.session.message_count, tokens_before=r.tokens_before,
                cells=[
                    ReportCellOut(
                        strategy=label, tokens_after=None if c.error else c.tokens_after,
                        kept=None if c.error else c.kept, errors=None if c.error else c.errors,
                        question_lost=c.question_lost, budget_exceeded=c.budget_exceeded,
                        first_broken_call=c.first_broken_call, error=c.error,
                        recalls_dropped=None if c.error else c.recalls_dropped,
                    )
                    for label, c in zip(labels, r.cells, strict=True)
                ],
            )
            for r in rows
        ],
    )


REPORT_CSV_HEADER = ["session", "title", "project", "agent", "messages", "tokens_before", "strategy", "tokens_after",
                     "kept", "errors", "question_lost", "budget_exceeded", "first_broken_call", "error",
                     "recalls_dropped"]  # added last: the earlier columns keep their places


def report_csv(out: ReportOut) -> str:
    """One line per session and strategy, in the rows' order (spreadsheets pivot it as they like)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(REPORT_CSV_HEADER)
    for row in out.rows:
        for c in row.cells:
            writer.writerow([row.session, _csv_safe(row.title), row.project, row.agent, row.messages,
                             row.tokens_before, c.strategy, _blank(c.tokens_after), _blank(c.kept),
                             _blank(c.errors), _blank(c.question_lost), c.budget_exceeded,
                             _blank(c.first_broken_call), c.error, _blank(c.recalls_dropped)])
    return buffer.getvalue()


def report_shown_context(
    query: QueryDict, report: TrimmingReport | None, labels: Sequence[str]
) -> dict[str, Any] | HttpResponse:
    """What the report page (and a background report's page) shows of ``report`` for its query: the rows in
    ``?order=``, only those of ``?show=``, the links that add one of those, the downloads, the savings chart, and
    the report's own caps. With ``?download=csv|json``: the download instead."""
    order, show = query.get("order", ""), query.get("show", "")
    columns = len(labels)
    rows = report_ordered(report_shown(report.rows, show, columns), order, columns) if report is not None else []
    download = query.get("download", "")
    if report is not None and download in ("csv", "json"):
        out = report_out(report, rows, labels)
        body = report_csv(out) if download == "csv" else out.model_dump_json(indent=2)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8" if download == "csv"
                                else "application/json")
        response["Content-Disposition"] = f'attachment; filename="trimming-report.{download}"'
        return response
    # The report's address without its order, row filter and download: what each link adds one of.
    base = [(k, v) for k, values in query.lists() if k not in ("order", "show", "download") for v in values]
    shown_key = report_show_key(show, columns) if report is not None else None
    saved = report_saved(report) if report is not None else []
    return {
        "report": report,
        "session_limit": REPORT_SESSION_LIMIT,
        "message_limit": REPORT_MESSAGE_LIMIT,
        "labels": labels,
        "rows": rows,
        "order": order,
        "order_base": urlencode(base + ([("show", show)] if shown_key else [])),
        "show_base": urlencode(base + ([("order", order)] if order else [])),
        "shown": {"what": REPORT_SHOWS[shown_key[0]], "label": labels[shown_key[1]]} if shown_key else None,
        "download_query": urlencode([(k, v) for k, values in query.lists() if k != "download" for v in values]),
        "list_query": urlencode(session_filter_pairs(query)),
        "summaries": [
            {"s": s, "label": label, "k": k, "saved": (before - after) / before if before else 0.0}
            for k, (s, label, (before, after)) in enumerate(zip(report.summaries, labels, saved, strict=True), 1)
        ] if report is not None else [],
        "savings": savings_chart([(label, b, a) for label, (b, a) in zip(labels, saved, strict=True)])
        if report is not None and report.rows else None,
    }


def _blank(value: Any) -> Any:
    return "" if value is None else value


def _csv_safe(text: str) -> str:
    """A title from an agent opened in a spreadsheet must not run as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _run_report(job: models.BackgroundJob, progress: Callable[[int], None]) -> None:
    """Every strategy over every chosen session (in the order the list showed them), a chunk of sessions at a time,
    with the progress counted in messages; ``per_call``: every call of each run replayed too."""
    ids: list[int] = job.params["session_ids"]
    specs = [spec_from_text(text) for text in job.params["specs"]]
    per_call = bool(job.params.get("per_call"))
    scoped = access.sessions_for_user(job.user)
    found = {pk: count for pk, count in scoped.filter(pk__in=ids).values_list("pk", "message_count")}
    order = [pk for pk in ids if pk in found]
    rows: list[dict[str, Any]] = []
    # What ReportSummary counts (its spec aside), summed over the chunks.
    counted = [f.name for f in dataclasses.fields(ReportSummary) if f.name != "spec"]
    summaries = [dict.fromkeys(counted, 0) for _ in specs]
    done = 0
    for chunk in _chunks(order, found):
        report = trimming_report(scoped.filter(pk__in=chunk), specs, limit=len(chunk), per_call=per_call,
                                         counters=job.params.get("counters"))
        by_pk = {row.session.pk: row for row in report.rows}
        for pk in chunk:
            row = by_pk.get(pk)
            if row is None:
                continue
            # Each cell as ReportCell holds it, less its spec (the result's "specs" say it once per column).
            rows.append({"session_id": pk, "tokens_before": row.tokens_before, "cells": [
                {f.name: getattr(c, f.name) for f in dataclasses.fields(c) if f.name != "spec"} for c in row.cells]})
        for total, summary in zip(summaries, report.summaries, strict=True):
            for name in counted:
                total[name] += getattr(summary, name)
        done += sum(found[pk] for pk in chunk)
        progress(done)
    job.result = {"specs": [spec.text for spec in specs], "rows": rows, "summaries": summaries, "per_call": per_call}
    if job.params.get("labels"):
        job.result["labels"] = job.params["labels"]  # a preset's column names the preset and its counter


# Messages a report job trims between two progress updates: one read of outlines (outlines.SESSIONS_ROWS_PER_QUERY),
# a few seconds; at most the report service's own per-call bounds.
REPORT_CHUNK_MESSAGES = 20_000


def _chunks(order: Sequence[int], found: dict[int, int]) -> list[list[int]]:
    """Sessions grouped so that each call of the report service stays under its own per-call bounds, and the job's
    page sees progress every ``REPORT_CHUNK_MESSAGES`` messages or so."""
    most = min(REPORT_CHUNK_MESSAGES, REPORT_MESSAGE_LIMIT)
    return list(reading.batches_by_messages(order, found.__getitem__, most=most, count=REPORT_SESSION_LIMIT))


def report_from_result(user: Any, result: dict[str, Any]) -> TrimmingReport:
    """A finished report job's result as the report page shows it (sessions the user can still see)."""
    specs = [spec_from_text(text) for text in result["specs"]]
    sessions = access.sessions_for_user(user).in_bulk([row["session_id"] for row in result["rows"]])
    rows = [
        ReportRow(sessions[row["session_id"]], row["tokens_before"],
                          [ReportCell(spec, **cell) for spec, cell in zip(specs, row["cells"], strict=True)])
        for row in result["rows"] if row["session_id"] in sessions
    ]
    summaries = [
        ReportSummary(spec, **summary) for spec, summary in zip(specs, result["summaries"], strict=True)
    ]
    return TrimmingReport(specs, rows, summaries, capped=False, limit=len(rows),
                                  per_call=bool(result.get("per_call")))


def _report_job_shown(user: Any, job: models.BackgroundJob, query: QueryDict) -> dict[str, Any] | HttpResponse:
    """A report job's page: the finished report ordered, narrowed to what a count counts and downloaded as on the
    report page, with the list's filters it ran with."""
    report = None
    if job.status == job.Status.DONE and job.result:
        report = report_from_result(user, job.result)
    labels = ((job.result or {}).get("labels") or [spec.text for spec in report.specs]) if report else []
    shown = report_shown_context(query, report, labels)
    if isinstance(shown, HttpResponse):
        return shown
    return {
        **shown,
        # The list's filters the report ran with (kept in its arguments; a job enqueued before they were has none).
        "list_query": urlencode([tuple(pair) for pair in job.params["filters"]]) if "filters" in job.params else None,
        "preset_counters": any(job.params.get("counters") or []),
    }


# A report past what one request may hold runs in the background (``lab.views``): the queue runs it as this kind.
queue.job_kind(models.BackgroundJob.Kind.REPORT, shown=_report_job_shown)(_run_report)
