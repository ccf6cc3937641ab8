"""What the export page and the export API answer: the page filled in from a query, the download, or the background
job that writes a file too long for one request."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Sum
from django.http import StreamingHttpResponse
from django.urls import reverse

from agents import access, models
from agents.jobs import queue as jobs_queue
from agents.lab import presets
from agents.memory import formats
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import STRATEGIES, StrategyError, StrategySpec, spec_from_pairs, split_pairs
from agents.store import listing
from agents.store.filters import SessionFilterForm, session_filter_pairs
from agents.transfer import exports

# --- export: the page and the download --------------------------------------------------------------------------


@dataclass
class ExportAnswer:
    """What an export request answers: the export page (``page``, its context: a GET, or what is wrong), a job
    (``job``) that writes a file too long for one request, or the download (``chunks`` to stream, with its file
    name, media type, and the conversations the file leaves out)."""

    page: dict[str, Any] | None = None
    job: models.BackgroundJob | None = None
    chunks: Iterator[str] | None = None
    filename: str = ""
    media_type: str = ""
    skipped: list[str] = field(default_factory=list)


def export_request(*, user: access.User, data: Any, download: bool, session_id: int | None = None,
                   interface: str = "web") -> ExportAnswer:
    """One session (``session_id``: 404 when not in the user's projects) or the sessions matching the list's filters
    in ``data`` (the same fields as the session list's query string), whole or as trimmed by ``strategy=`` and
    ``params=``. ``download``: the file (a POST); else the export page filled in from ``data``. ``interface``: who
    asks, for the export record ("web" or "api")."""
    single: models.Session | None = None
    refusal = ""
    listed: listing.SessionFilters | None = None
    if session_id is not None:
        single = access.session_for_user(user, session_id)
        sessions = access.sessions_for_user(user).filter(pk=single.pk)
        scope = f"session {single.pk} ({single.title or single.external_id})"
        filters: dict[str, Any] = {"session": single.pk}
    else:
        form = SessionFilterForm(data, user=user)
        filters = {k: v for k, v in data.items() if k in form.fields and k != "sort" and v}
        scope = "sessions matching " + (", ".join(f"{k}={v}" for k, v in filters.items()) or "no filter (all)")
        # The list page may ignore an invalid field and show its error, or clear an agent of another project; an
        # export must not: dropping a filter widens what is downloaded (a project the user is not in would read
        # as "all").
        refusal = form.refusal()
        listed = form.filters()
        sessions = models.Session.objects.none() if refusal else listing.sessions_filtered(user, listed)
    try:
        if refusal:
            raise exports.ExportFailed(refusal)
        spec, counter = _export_spec(data, user=user, project=single.agent.project if single else None,
                                     filters=listed)
        plan = exports.export_plan(
            sessions=sessions, format=data.get("format") or "native", scope=scope, filters=filters,
            spec=spec, counter=counter, on_invalid=data.get("on_invalid") or "skip",
        )
        if not plan.sessions.exists():
            raise exports.ExportFailed("no session matches these filters")
        if not download:
            return ExportAnswer(page=_export_page(user, data, scope=scope, single=single, plan=plan))
        skipped = _skipped_or_refuse(plan)
    except exports.ExportFailed as exc:
        # The form and what is wrong (200), as every form here answers invalid input.
        return ExportAnswer(page=_export_page(user, data, scope=scope, single=single, error=str(exc)))
    filename = exports.export_filename(plan, single=single)
    total = plan.sessions.aggregate(n=Sum("message_count"))["n"] or 0
    if total > settings.MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES:
        # Too long for one request: a worker writes the file, the job's page links it when done. The job is its
        # owner's alone: an API key works for the user who created it; one made on the command line has no one.
        if access.recorded_user(user) is None:
            return ExportAnswer(page=_export_page(user, data, scope=scope, single=single, error=(
                f"an export of {total:,} messages is written by a background job, which belongs to a person: this "
                "API key was made on the command line and belongs to no one; use a key created by a user "
                "(Projects, API keys), or export_history")))
        params = {"session_ids": list(plan.sessions.values_list("pk", flat=True)), "format": plan.format,
                  "spec": plan.spec.text if plan.spec is not None else None, "counter": plan.counter,
                  "on_invalid": plan.on_invalid,
                  "scope": scope, "filters": filters, "filename": filename}
        return ExportAnswer(job=jobs_queue.job_enqueue(user=user, kind=models.BackgroundJob.Kind.EXPORT,
                                                       title=f"Export of {scope}", params=params, total=total))
    format_spec = formats.FORMATS[plan.format]
    return ExportAnswer(
        chunks=exports.export_chunks(plan, user=user, interface=interface),
        filename=filename,
        media_type=f"{getattr(format_spec, 'media_type', 'application/json')}; charset=utf-8",
        skipped=skipped,
    )


def _skipped_or_refuse(plan: exports.ExportPlan) -> list[str]:
    """For ``openai_jsonl``, the conversations that break the protocol, which the file leaves out; ExportFailed
    when it would leave out every one (an empty file says nothing) or was asked to stop on them."""
    if plan.format != "openai_jsonl":
        return []
    invalid = exports.invalid_sessions(plan)
    listed = "; ".join(invalid[:20]) + (f"; and {len(invalid) - 20} more" if len(invalid) > 20 else "")
    if invalid and plan.on_invalid == "stop":
        raise exports.ExportFailed(
            "stopped: these conversations break the protocol, and openai_jsonl was asked to stop on them "
            f"(choose 'skip' to leave them out): {listed}"
        )
    if invalid and len(invalid) == plan.sessions.count():
        every = "the conversation breaks" if len(invalid) == 1 else f"all {len(invalid)} conversations break"
        raise exports.ExportFailed(
            f"nothing to export: {every} the protocol, and openai_jsonl leaves out a conversation that does "
            f"(choose another format, or a strategy that keeps the protocol): {listed}"
        )
    return invalid


def _export_page(
    user: access.User, data: Any, *, scope: str, single: models.Session | None,
    plan: exports.ExportPlan | None = None, error: str = "",
) -> dict[str, Any]:
    """The export form on a page of its own, filled in from ``data``; with the error when there is one."""
    return {
        "session": single,
        "scope": scope,
        "plan": plan,
        "summary": plan.sessions.aggregate(sessions=Count("id"), messages=Sum("message_count")) if plan else None,
        "error": error,
        "values": {key: data.get(key, "") for key in ("format", "on_invalid", "strategy", "params")}
        | ({"strategy": presets.PRESET_PREFIX + data["preset"]} if data.get("preset") else {}),
        "presets": presets.presets_for_user(user, project=single.agent.project if single else None),
        "carried": [] if single else session_filter_pairs(data),
        "fixed_strategy": False,
        "back_url": single.get_absolute_url() if single else
        f"{reverse('agents:session_list')}?{urlencode(session_filter_pairs(data))}".rstrip("?"),
        "formats": list(formats.FORMATS.values()),
        "strategies": list(STRATEGIES),
    }


def _export_spec(
    query: Any, *, user: access.User, project: models.Project | None,
    filters: listing.SessionFilters | None = None,
) -> tuple[StrategySpec | None, str | None]:
    """The strategy of ``strategy=`` with its parameters from ``params=key=value, key=value`` and ``set=key=value``
    (repeatable), or a preset of the user's projects (of the session's, for one session; of the filtered project
    first, for the list's ``filters``): ``preset=NAME`` or ``strategy=preset:NAME``, which counts with its own
    counter; and the counter: ``counter=`` (what the lab counted with), else the preset's, else None (each session's
    own). An error names the field."""
    strategy = (query.get("strategy") or "").strip()
    preset = (query.get("preset") or "").strip()
    counter = (query.get("counter") or "").strip() or None
    if counter is not None and counter not in COUNTERS:
        raise exports.ExportFailed(f"counter: unknown counter '{counter}'; valid: {', '.join(sorted(COUNTERS))}")
    if counter is not None and not (strategy or preset):
        raise exports.ExportFailed("counter: counts the tokens of a trimmed export; give a strategy or a preset")
    if strategy.startswith(presets.PRESET_PREFIX) or preset:
        field = "preset" if preset else "strategy"
        if (preset and strategy) or query.getlist("set") or (query.get("params") or "").strip():
            raise exports.ExportFailed(f"{field}: give a preset, or a strategy with its parameters, not both")
        try:
            spec, found = presets.spec_or_preset(user=user, text=strategy or presets.PRESET_PREFIX + preset,
                                                 project=project, filters=filters)
        except presets.PresetError as exc:
            raise exports.ExportFailed(f"{field}: {exc}") from None
        return spec, presets.trim_counter(found, counter)
    try:
        return spec_from_pairs(
            query.get("strategy"), [*query.getlist("set"), *split_pairs(query.get("params", ""))]
        ), counter
    except StrategyError as exc:
        if not exc.problems:
            raise exports.ExportFailed(f"strategy: {exc}") from None
        field = "set" if query.getlist("set") and not query.get("params") else "params"
        raise exports.ExportFailed(exc.text(flag=f"{field}: ")) from None


def export_download(answer: ExportAnswer) -> StreamingHttpResponse:
    """The file of an export answer, streamed with its content type and name (the pages and the API)."""
    assert answer.chunks is not None, "an answer with its file"
    response = StreamingHttpResponse(answer.chunks, content_type=answer.media_type)
    response["Content-Disposition"] = f'attachment; filename="{answer.filename}"'
    if answer.skipped:
        # The body is streamed, so the skipped conversations are told up front, and kept on the export record.
        response["X-Memoryviz-Skipped"] = str(len(answer.skipped))
    return response
