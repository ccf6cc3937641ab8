"""The trimming lab: one session under one strategy, strategies side by side, and strategies across sessions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Sum
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from agents import jobs, lab, lab_charts, models, services
from agents.forms import SessionFilterForm
from agents.http import HtmxHttpRequest
from agents.lab_forms import strategy_params_form
from agents.memory.compare import compare_aligned
from agents.memory.replay import Replay
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import (
    MEMORY_KINDS,
    STRATEGIES,
    StrategyError,
    StrategySpec,
    get_strategy,
    spec_from_query,
    spec_from_text,
    strategy_spec,
)
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry
from agents.throttling import expensive

DEFAULT_STRATEGY = "buffered"
DEFAULT_COMPARE = ["buffered", "langchain_last", "safe_token_budget"]
DEFAULT_REPORT = ["buffered", "langchain_last", "safe_token_budget"]
MAX_COLUMNS = 4


@require_GET
@expensive
def session_lab(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = services.session_for_user(request.user, session_id)
    query, preset, preset_error = _lab_query(request, session)
    name = query.get("strategy") or DEFAULT_STRATEGY
    strategy_error = "" if name in STRATEGIES else f"unknown strategy '{name}'"
    strategy = STRATEGIES.get(name) or get_strategy(DEFAULT_STRATEGY)
    counter = query.get("counter") or session.token_counter
    counter_error = "" if counter in COUNTERS else (
        f"Unknown counter ‘{counter}’; counting with {session.token_counter}, the stored one."
    )
    if counter_error:
        counter = session.token_counter
    # The form says which strategy its parameters were for: after a switch (without JS) they start from defaults.
    params_for = query.get("params_for")
    form = strategy_params_form(strategy, None if params_for and params_for != strategy.name else query)
    preview = run = chart = step = None
    # An unknown strategy (or counter) shows the default one's preview, as its message says.
    if form.spec is not None:
        replayed = services.session_replay(session=session, spec=form.spec, counter=counter,
                                           step=_int_or_none(query.get("step")))
        run, step = replayed.replay, replayed.step
        # At a call of the run, its input is the messages before it.
        call = replayed.sent_from
        preview = lab.trim_preview(replayed.messages[:call], replayed.counts[:call], replayed.result)
        chart = lab_charts.replay_chart(run.steps, chosen=step)
    spec = form.spec or strategy_spec(strategy)
    other = "safe_token_budget" if strategy.name != "safe_token_budget" else "buffered"
    context = {
        "session": session,
        "catalog": strategies_by_framework(),
        "entry": strategy_entry(strategy),
        "strategy": strategy,
        "strategy_error": strategy_error,
        "form": form,
        "preview": preview,
        "counter": counter,
        "counter_error": counter_error,
        "counters": sorted(COUNTERS),
        "replay": run,
        "chart": chart,
        "step": step,
        "step_call": run.steps[step] if run is not None and step is not None else None,
        "memory_text": MEMORY_KINDS[strategy.memory],
        "replay_links": _replay_links(run, spec, counter, session) if run is not None else None,
        "preset": preset,
        "preset_error": preset_error,
        "presets": services.presets_for_user(request.user, project=session.agent.project),
        "can_save_preset": services.editable_projects(request.user).filter(pk=session.agent.project_id).exists(),
        "spec": spec,
        "preset_fields": [(key, value) for key, values in QueryDict(spec.lab_query).lists() for value in values],
        "equivalents": lab.equivalents(request, session, spec, counter, preset) if form.spec is not None else None,
        "compare_query": urlencode([("s", spec.text), ("s", other)]),
        "diff_query": urlencode({"trim": spec.text}),
        # The Export menu of the trimmed view: the strategy and its changed parameters (``key=value,key=value``).
        "export_params": spec.text.partition(":")[2],
        "dropped_shown": lab.DROPPED_SHOWN,
        # Only the result is swapped on a parameter change: the field errors travel out of band.
        "oob_errors": bool(request.htmx) and request.htmx.target != "lab-main",
    }
    template_name = "agents/lab.html"
    if request.htmx:
        # The strategy select replaces the form and the result; any other change only the result. Invalid input
        # answers 200 with the errors like every form here (under DEBUG, django-htmx's script replaces the whole
        # document with a 400 answer to htmx).
        template_name += "#lab-main" if request.htmx.target == "lab-main" else "#lab-result"
    return render(request, template_name, context)


def _lab_query(request: HtmxHttpRequest, session: Any) -> tuple[QueryDict, Any, str]:
    """The lab's query: the page's own, or, for ``?preset=NAME`` (a shared link), the preset's strategy,
    parameters and counter (a ``step`` of the link is kept). Also the preset, and why it did not apply."""
    name = request.GET.get("preset", "").strip()
    if not name:
        return request.GET, None, ""
    try:
        preset = services.preset_for_session(session=session, name=name)
        spec = services.preset_spec(preset)
    except services.PresetError as exc:
        return request.GET, None, str(exc)
    query = QueryDict(spec.lab_query, mutable=True)
    query["counter"] = preset.counter
    query["params_for"] = spec.name
    if request.GET.get("step"):
        query["step"] = request.GET["step"]
    return query, preset, ""


def _replay_links(run: Replay, spec: StrategySpec, counter: str, session: Any) -> dict[str, Any]:
    """Where the replay's first violation and first lost question are, and the lab's query to link to a step."""
    query = spec.lab_query + (f"&{urlencode({'counter': counter})}" if counter != session.token_counter else "")
    query += f"&{urlencode({'params_for': spec.name})}"

    def at(step: int | None) -> dict[str, int] | None:
        return None if step is None else {"step": step, "call": run.steps[step].call}

    return {"query": query, "violation": at(run.first_violation), "question": at(run.first_question_lost)}


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


@require_POST
def session_lab_preset(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Save the lab's strategy, parameters and counter as a preset of the session's project (POST-redirect-GET to
    the lab under the preset's link). The parameters come as the lab's form sends them."""
    session = services.session_for_user(request.user, session_id)
    name = request.POST.get("strategy", "")
    try:
        spec = spec_from_query(name, request.POST)
        preset = services.preset_create(
            user=request.user, project=session.agent.project, name=request.POST.get("preset_name", ""),
            strategy=spec.name, params=spec.params.model_dump(mode="json"),
            counter=request.POST.get("counter") or session.token_counter,
        )
    except (StrategyError, services.PresetError) as exc:
        return render(request, "agents/lab_preset_error.html", {"session": session, "error": str(exc)}, status=400)
    lab_url = reverse("agents:session_lab", args=[session.pk])
    return redirect(f"{lab_url}?{urlencode({'preset': preset.name})}")


@dataclass
class CompareColumn:
    text: str
    spec: StrategySpec | None
    error: str
    preview: lab.TrimPreview | None = None
    remove_query: str = ""
    lab_query: str = ""
    left_query: str = ""  # the columns with this one moved one place to the left ("" for the first)


@require_GET
@expensive
def session_lab_compare(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = services.session_for_user(request.user, session_id)
    texts = [t.strip() for t in request.GET.getlist("s") if t.strip()]
    added = request.GET.get("add", "").strip()
    if added:
        # "Add column" is a GET form too: redirect to the URL that names the columns only.
        return redirect(f"{request.path}?{urlencode([('s', t) for t in [*texts, added][:MAX_COLUMNS]])}")
    texts = texts or DEFAULT_COMPARE
    too_many = max(0, len(texts) - MAX_COLUMNS)
    texts = texts[:MAX_COLUMNS]
    only = request.GET.get("only") == "1"
    columns: list[CompareColumn] = []
    for k, text in enumerate(texts):
        others = urlencode([("s", t) for j, t in enumerate(texts) if j != k])
        left = ""
        if k > 0:
            moved = [*texts[: k - 1], texts[k], texts[k - 1], *texts[k + 1 :]]
            left = urlencode([("s", t) for t in moved] + ([("only", "1")] if only else []))
        try:
            spec = spec_from_text(text)
        except StrategyError as exc:
            columns.append(CompareColumn(text, None, str(exc), remove_query=others, left_query=left))
            continue
        columns.append(CompareColumn(spec.text, spec, "", remove_query=others, lab_query=spec.lab_query,
                                     left_query=left))
    valid = [c for c in columns if c.spec is not None]
    aligned = lines = None
    if valid:
        trimmed = services.session_trim(session=session, specs=[c.spec for c in valid if c.spec is not None])
        for column, result in zip(valid, trimmed.results, strict=True):
            column.preview = lab.trim_preview(trimmed.messages, trimmed.counts, result, bodies=False)
        aligned = compare_aligned(trimmed.messages, trimmed.results, only_disagreements=only,
                                  offset=_int_or_none(request.GET.get("offset")) or 0)
        lines = lab.aligned_lines(trimmed.messages, trimmed.counts, aligned)
    context = {
        "session": session,
        "columns": columns,
        "valid_columns": valid,
        "aligned": aligned,
        "aligned_summaries": list(zip(valid, aligned.summaries, strict=True)) if aligned is not None else [],
        "lines": lines,
        "page_end": aligned.offset + len(aligned.items) if aligned is not None else 0,
        "only": only,
        "page_query": urlencode([("s", c.text) for c in columns] + ([("only", "1")] if only else [])),
        "too_many": too_many,
        "too_few": len(columns) < 2,
        "can_add": len(columns) < MAX_COLUMNS,
        "strategies": list(STRATEGIES.values()),
        "lab_url": reverse("agents:session_lab", args=[session.pk]),
    }
    template_name = "agents/lab_compare.html"
    if request.htmx:
        template_name += "#compare-result"
    return render(request, template_name, context)


@require_GET
@expensive
def trimming_report(request: HtmxHttpRequest) -> HttpResponse:
    filter_form = SessionFilterForm(request.GET or None, user=request.user)
    filter_form.is_valid()  # invalid filters are dropped and shown with their error, as on the session list
    texts = [t.strip() for t in request.GET.getlist("s") if t.strip()][:MAX_COLUMNS] or DEFAULT_REPORT
    specs: list[StrategySpec] = []
    spec_fields: list[dict[str, Any]] = []
    for text in texts:
        try:
            spec = spec_from_text(text)
        except StrategyError as exc:
            spec_fields.append({"text": text, "error": str(exc)})
            continue
        specs.append(spec)
        spec_fields.append({"text": spec.text, "error": ""})
    # Over htmx only the result is swapped: what the report leaves out is said there too, not only beside the box.
    left_out = [{"box": k, **f} for k, f in enumerate(spec_fields, 1) if f["error"]]
    spec_fields += [{"text": "", "error": ""}] * (MAX_COLUMNS - len(spec_fields))
    sessions = services.sessions_filtered(request.user, filter_form.filters())
    # The per-call mode replays every call: it stays in the request, capped like any in-request report (the
    # background worker does not replay).
    per_call = request.GET.get("per_call") == "1"
    if specs and not per_call:
        total = sessions.aggregate(n=Sum("message_count"))["n"] or 0
        if total > settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES:
            # Too long for one request: a worker runs it over every matching session; its page shows progress.
            texts = [s.text for s in specs]
            params = {"session_ids": list(sessions.values_list("pk", flat=True)), "specs": texts}
            job = jobs.job_enqueue(user=request.user, kind=models.BackgroundJob.Kind.REPORT, params=params,
                                   title=f"Trimming report: {', '.join(texts)}", total=total)
            return HttpResponseClientRedirect(job.get_absolute_url()) if request.htmx else redirect(job)
    report = services.trimming_report(sessions, specs, per_call=per_call) if specs else None
    context = {
        "filter_form": filter_form,
        "spec_fields": spec_fields,
        "left_out": left_out,
        # (The form has a field named "errors", which {{ filter_form.errors }} would give.)
        "filter_problems": [f"{name}: {' '.join(map(str, errors))}" for name, errors in filter_form.errors.items()],
        "report": report,
        "per_call": per_call,
        "strategies": list(STRATEGIES.values()),
        "session_limit": services.REPORT_SESSION_LIMIT,
        "message_limit": services.REPORT_MESSAGE_LIMIT,
    }
    template_name = "agents/lab_report.html"
    if request.htmx:
        template_name += "#report-result"
    return render(request, template_name, context)
