"""The trimming lab: one session under one strategy, strategies side by side, and strategies across sessions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Sum
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect, push_url

from agents import access, models
from agents.http import HtmxHttpRequest, collector_paused, int_or_none
from agents.jobs import queue
from agents.lab import pages, presets, previews, reports
from agents.lab import reports as lab_reports
from agents.lab import trimming as lab_trimming
from agents.lab.forms import StrategyParamsForm, strategy_params_form
from agents.memory.compare import compare_aligned
from agents.memory.trimming import (
    STRATEGIES,
    StrategyError,
    StrategySpec,
    spec_from_query,
    spec_from_text,
)
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry
from agents.store import listing
from agents.store.filters import SessionFilterForm, session_filter_pairs
from agents.throttling import expensive

DEFAULT_COMPARE = ["buffered", "langchain_last", "safe_token_budget"]
DEFAULT_REPORT = ["buffered", "langchain_last", "safe_token_budget"]
MAX_COLUMNS = 4


@require_http_methods(["GET", "POST"])
@expensive
@collector_paused
def session_lab(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """The lab; a POST saves its setting as a preset (the form posts to the lab's own address, so that a refused
    save answers the lab itself, its links intact, with the error beside the form)."""
    if request.method == "POST":
        return _save_preset(request, access.session_for_user(request.user, session_id))
    return _render_lab(request, session_id, request.GET)


def _render_lab(request: HtmxHttpRequest, session_id: int, query: QueryDict, *, save_error: str = "",
                preset_name: str = "") -> HttpResponse:
    # ?part=replay: the replay of a long session, asked for by its lab page once the preview is shown.
    replay_part = query.get("part") == "replay"
    context = pages.lab_page(user=request.user, session_id=session_id, query=query,
                             step=int_or_none(query.get("step")), site=request.build_absolute_uri("/").rstrip("/"),
                             save_error=save_error, preset_name=preset_name, replay_part=replay_part)
    if replay_part:
        if context["replay"] is None:  # no valid spec: the page says why; nothing to add
            return HttpResponse("")
        return render(request, "agents/_lab_replay.html", context)
    # Only the result is swapped on a parameter change: the field errors travel out of band.
    context["oob_errors"] = bool(request.htmx) and request.htmx.target != "lab-main"
    template_name = "agents/lab.html"
    if request.htmx:
        # The strategy select replaces the form and the result; any other change only the result. Invalid input
        # answers 200 with the errors like every form here (under DEBUG, django-htmx's script replaces the whole
        # document with a 400 answer to htmx).
        template_name += "#lab-main" if request.htmx.target == "lab-main" else "#lab-result"
    return render(request, template_name, context)


def _save_preset(request: HtmxHttpRequest, session: models.Session) -> HttpResponse:
    """Save the lab's strategy, parameters and counter as a preset of the session's project (POST-redirect-GET to
    the lab under the preset's link). The parameters come as the lab's form sends them. A refused save answers 200
    with the error beside the form and the name as typed (htmx swaps no 4xx answer, and under DEBUG django-htmx's
    script would replace the whole page with it): over htmx the form alone, without JS the whole lab."""
    name = request.POST.get("strategy", "")
    typed = request.POST.get("preset_name", "")
    counter = request.POST.get("counter") or session.token_counter
    try:
        spec = spec_from_query(name, request.POST)
        preset = presets.preset_create(
            user=request.user, project=session.agent.project, name=typed,
            strategy=spec.name, params=spec.params.model_dump(mode="json"), counter=counter,
        )
    except (StrategyError, presets.PresetError) as exc:
        error = str(exc)
    else:
        lab_url = reverse("agents:session_lab", args=[session.pk])
        target = f"{lab_url}?{urlencode({'preset': preset.name})}"
        return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
    # The lab's own fields, as the form sent them.
    query = request.POST.copy()
    for key in ("csrfmiddlewaretoken", "preset_name"):
        query.pop(key, None)
    if request.htmx:
        return render(request, "agents/_lab_elsewhere.html#preset-save", {
            "session": session, "counter": counter, "preset_save_error": error, "preset_name": typed,
            "preset_fields": [(key, value) for key, values in query.lists() if key != "counter" for value in values],
        })
    query["params_for"] = name
    return _render_lab(request, session.pk, query, save_error=error, preset_name=typed)


@dataclass
class CompareColumn:
    text: str  # the column as the URL names it: a spec's text, "preset:NAME", or what was given when invalid
    spec: StrategySpec | None
    error: str
    # The column's own parameter form (None for a preset column and an unknown strategy), and the select's value.
    form: StrategyParamsForm | None = None
    chosen: str = ""
    preset: models.Preset | None = None
    counter: str = ""  # what it counts with: the session's, or its preset's (set by the view)
    preview: previews.TrimPreview | None = None
    prefix: str = ""  # its fields' names and ids: "c2-buffer_size"
    remove_query: str = ""
    lab_query: str = ""
    left_query: str = ""  # the columns with this one moved one place to the left ("" for the first)

    @property
    def entry(self) -> Any:
        return strategy_entry(self.form.strategy) if self.form is not None else None


def _column_from_text(text: str, session: models.Session) -> CompareColumn:
    """A column named in the URL: ``buffered:buffer_size=3`` or ``preset:NAME``."""
    if text.startswith(presets.PRESET_PREFIX):
        try:
            spec, preset = presets.spec_or_preset(user=None, text=text, project=session.agent.project)
        except presets.PresetError as exc:
            return CompareColumn(text, None, str(exc), chosen=text)
        chosen = presets.PRESET_PREFIX + preset.name if preset is not None else text
        return CompareColumn(chosen, spec, "", chosen=chosen, preset=preset)
    name = text.partition(":")[0].strip()
    strategy = STRATEGIES.get(name)
    try:
        spec = spec_from_text(text)
    except StrategyError as exc:
        # A known strategy with a bad value: its form starts from the defaults, the error above it.
        form = strategy_params_form(strategy, QueryDict()) if strategy is not None else None
        return CompareColumn(text, None, str(exc), form=form, chosen=name)
    return CompareColumn(spec.text, spec, "", form=strategy_params_form(spec.strategy, QueryDict(spec.lab_query)),
                         chosen=spec.name)


def _column_from_form(query: QueryDict, k: int, session: models.Session) -> CompareColumn:
    """Column ``k`` as its form sends it: ``c2`` the strategy (or preset), ``c2-KEY`` its parameters, ``c2-for``
    the strategy they were for (after a switch they start from the defaults, as in the lab)."""
    prefix = f"c{k}-"
    chosen = query.get(f"c{k}", "").strip()
    strategy = STRATEGIES.get(chosen)
    if strategy is None:
        return _column_from_text(chosen, session)
    given = QueryDict(mutable=True)
    if query.get(prefix + "for") == chosen:
        for key in query:
            if key.startswith(prefix) and key != prefix + "for":
                given.setlist(key[len(prefix):], query.getlist(key))
    form = strategy_params_form(strategy, given)
    if form.spec is None:
        return CompareColumn(chosen, None, "", form=form, chosen=chosen)
    return CompareColumn(form.spec.text, form.spec, "", form=form, chosen=chosen)


@require_GET
@expensive
@collector_paused
def session_lab_compare(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """Two to four columns, each a strategy with its own parameter form (or a preset). The URL names the columns
    (``?s=buffered:buffer_size=3&s=preset:NAME``); a column's form (``c2``, ``c2-KEY``) and "add" answer with that
    URL: a redirect without htmx, the result and the URL pushed with htmx."""
    session = access.session_for_user(request.user, session_id)
    query = request.GET
    from_form = "c1" in query
    if from_form:
        columns = [_column_from_form(query, k, session) for k in range(1, MAX_COLUMNS + 2) if f"c{k}" in query]
    else:
        texts = [t.strip() for t in query.getlist("s") if t.strip()] or DEFAULT_COMPARE
        columns = [_column_from_text(text, session) for text in texts]
    added = query.get("add", "").strip()
    if added:
        columns.append(_column_from_text(added, session))
    too_many = max(0, len(columns) - MAX_COLUMNS)
    columns = columns[:MAX_COLUMNS]
    only = query.get("only") == "1"
    keep_only = [("only", "1")] if only else []
    texts = [c.text for c in columns]
    canonical = urlencode([("s", t) for t in texts] + keep_only)
    all_valid = all(c.spec is not None for c in columns)
    if (from_form or added) and all_valid and not request.htmx:
        return redirect(f"{request.path}?{canonical}")
    for k, column in enumerate(columns):
        column.prefix = f"c{k + 1}-"
        column.remove_query = urlencode([("s", t) for j, t in enumerate(texts) if j != k] + keep_only)
        if k > 0:
            moved = [*texts[: k - 1], texts[k], texts[k - 1], *texts[k + 1 :]]
            column.left_query = urlencode([("s", t) for t in moved] + keep_only)
        if column.preset is not None:
            column.lab_query = urlencode({"preset": column.preset.name})
        elif column.spec is not None:
            column.lab_query = column.spec.lab_query
    valid = [c for c in columns if c.spec is not None]
    aligned = lines = None
    rows_counter = session.token_counter  # what the rows' token counts are under
    if valid:
        # A preset column counts with its preset's counter (as the lab does when the preset is opened), every
        # other column with the session's stored counts: one session_trim per counter, in the columns' order.
        for column in valid:
            column.counter = presets.trim_counter(column.preset) or session.token_counter
        results: dict[int, Any] = {}
        base = None
        for counter in dict.fromkeys(c.counter for c in valid):
            group = [c for c in valid if c.counter == counter]
            trimmed = lab_trimming.session_trim(session=session, specs=[c.spec for c in group if c.spec is not None],
                                                counter=counter)
            for column, result in zip(group, trimmed.results, strict=True):
                column.preview = previews.trim_preview(trimmed.messages, trimmed.counts, result, bodies=False)
                results[id(column)] = result
            if base is None or counter == session.token_counter:
                base, rows_counter = trimmed, counter
        assert base is not None
        aligned = compare_aligned(base.messages, [results[id(c)] for c in valid], only_disagreements=only,
                                  offset=int_or_none(query.get("offset")) or 0)
        lines = previews.aligned_lines(base.messages, base.counts, aligned)
    context = {
        "session": session,
        "columns": columns,
        "valid_columns": valid,
        "aligned": aligned,
        "rows_counter": rows_counter,
        "counters_differ": len({c.counter for c in valid}) > 1,
        "aligned_summaries": list(zip(valid, aligned.summaries, strict=True)) if aligned is not None else [],
        "lines": lines,
        "page_end": aligned.offset + len(aligned.items) if aligned is not None else 0,
        "only": only,
        "page_query": canonical,
        "too_many": too_many,
        "too_few": len(columns) < 2,
        "can_add": len(columns) < MAX_COLUMNS,
        "catalog": strategies_by_framework(),
        "presets": presets.presets_for_user(request.user, project=session.agent.project),
        "lab_url": reverse("agents:session_lab", args=[session.pk]),
    }
    template_name = "agents/lab_compare.html"
    if request.htmx:
        template_name += "#compare-result"
    response = render(request, template_name, context)
    if request.htmx and all_valid:
        # Whatever changed the columns (a form field, add, move, remove), the address names them.
        push_url(response, f"{request.path}?{canonical}")
    return response


@require_GET
@expensive
def trimming_report(request: HtmxHttpRequest) -> HttpResponse:
    filter_form = SessionFilterForm(request.GET or None, user=request.user)
    filter_form.is_valid()  # invalid filters are dropped and shown with their error, as on the session list
    filters = filter_form.filters()
    texts = [t.strip() for t in request.GET.getlist("s") if t.strip()][:MAX_COLUMNS] or DEFAULT_REPORT
    specs: list[StrategySpec] = []
    counters: list[str | None] = []  # what each counts with: a preset's counter, else None (each session's own)
    labels: list[str] = []  # each strategy as the report names it: its text, or the preset, its text and counter
    spec_fields: list[dict[str, Any]] = []
    for text in texts:
        try:
            # A box may name a preset of the user's projects: "preset:NAME".
            spec, preset = presets.spec_or_preset(user=request.user, text=text, filters=filters)
        except (StrategyError, presets.PresetError) as exc:
            spec_fields.append({"text": text, "error": str(exc)})
            continue
        specs.append(spec)
        counters.append(presets.trim_counter(preset))
        spec_fields.append({"text": text if preset is not None else spec.text, "error": ""})
        labels.append(f"{text} ({spec.text}; {preset.counter})" if preset is not None else spec.text)
    # Over htmx only the result is swapped: what the report leaves out is said there too, not only beside the box.
    left_out = [{"box": k, **f} for k, f in enumerate(spec_fields, 1) if f["error"]]
    spec_fields += [{"text": "", "error": ""}] * (MAX_COLUMNS - len(spec_fields))
    sessions = listing.sessions_filtered(request.user, filters)
    per_call = request.GET.get("per_call") == "1"
    if specs:
        counted = sessions.aggregate(n=Sum("message_count"), sessions=Count("pk"))
        total, count = counted["n"] or 0, counted["sessions"]
        # What one request may hold (the report's own caps included): past it, a worker runs the report over every
        # matching session and its page shows progress; the report never covers fewer sessions than match.
        most = min(settings.MEMORYVIZ_BACKGROUND_REPORT_MESSAGES, reports.REPORT_MESSAGE_LIMIT)
        if total > most or count > reports.REPORT_SESSION_LIMIT:
            texts = [s.text for s in specs]
            # The list's filters it ran with are kept too: its page links "of N" to these sessions in the list.
            params: dict[str, Any] = {"session_ids": list(sessions.values_list("pk", flat=True)), "specs": texts,
                                      "filters": session_filter_pairs(request.GET)}
            if per_call:
                params["per_call"] = True
            if any(counters):
                params["counters"], params["labels"] = counters, labels
            title = f"Trimming report{' (every call)' if per_call else ''}: {', '.join(texts)}"
            job = queue.job_enqueue(user=request.user, kind=models.BackgroundJob.Kind.REPORT, params=params,
                                    title=title, total=total)
            return HttpResponseClientRedirect(job.get_absolute_url()) if request.htmx else redirect(job)
    report = reports.trimming_report(sessions, specs, per_call=per_call, counters=counters) if specs else None
    shown = lab_reports.report_shown_context(request.GET, report, labels)
    if isinstance(shown, HttpResponse):
        return shown  # ?download=csv|json
    context = {
        **shown,
        "filter_form": filter_form,
        "spec_fields": spec_fields,
        "left_out": left_out,
        # (The form has a field named "errors", which {{ filter_form.errors }} would give.)
        "filter_problems": [f"{name}: {' '.join(map(str, errors))}" for name, errors in filter_form.errors.items()],
        "per_call": per_call,
        "preset_counters": any(counters),
        "strategies": list(STRATEGIES.values()),
    }
    template_name = "agents/lab_report.html"
    if request.htmx:
        template_name += "#report-result"
    return render(request, template_name, context)
