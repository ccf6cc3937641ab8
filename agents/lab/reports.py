"""The lab's report: strategies across the sessions of a filtered list."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from agents import models
from agents.lab.trimming import replay_input, session_trim
from agents.memory.replay import replay
from agents.memory.trimming import (
    StrategySpec,
)
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
    chosen = list(sessions[: limit + 1])
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
                              tokens_before=result.tokens_before if trimmed.recounted else None)
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
        rows.append(ReportRow(session, session.token_total if tokens_before is None else tokens_before, cells))
    return TrimmingReport(list(specs), rows, summaries, capped, limit, per_call)
