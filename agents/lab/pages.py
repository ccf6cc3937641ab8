"""What the lab's pages show, each decided in one call from its view: one session under one strategy (or a preset),
its replay call by call and where else the same result comes from; what saving its setting as a preset answers; and
the report of strategies across the sessions of a filtered list (compare: ``lab.compare``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Sum
from django.http import HttpResponse, QueryDict
from django.urls import reverse

from agents import access, models
from agents.http import int_or_none
from agents.jobs import queue
from agents.lab import charts, presets, previews, recalls, reports
from agents.lab import trimming as lab_trimming
from agents.lab.compare import MAX_COLUMNS
from agents.lab.forms import strategy_params_form
from agents.memory.findings import ADVICE
from agents.memory.replay import Replay
from agents.memory.tokens import COUNTERS
from agents.memory.trimmed_recalls import RECALL_TRIMMED_ADVICE
from agents.memory.trimming import (
    MEMORY_KINDS,
    STRATEGIES,
    StrategyError,
    StrategySpec,
    get_strategy,
    spec_from_query,
    strategy_spec,
)
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry
from agents.store import listing
from agents.store.filters import SessionFilterForm, session_filter_pairs

# --- the lab: one session under one strategy --------------------------------------------------------------------

DEFAULT_STRATEGY = "buffered"


def lab_page(
    *, user: access.User, session_id: int, query: QueryDict, step: int | None, site: str, save_error: str = "",
    preset_name: str = "", replay_part: bool = False,
) -> dict[str, Any]:
    """The lab page's context for the session (404 when not in the user's projects) under the strategy, parameters
    and counter of ``query``, or of the preset it names (``?preset=NAME``), at call ``step`` of the replay.
    ``site``: the scheme and host that the trim API's URL to copy starts with; ``save_error``, ``preset_name``: a
    refused "save as preset" and the name typed.

    A session of more than ``MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES`` messages, with no step asked, is previewed
    without its replay (``replay_deferred``): the page asks for it in a second request, ``replay_part_query``
    (``replay_part=True``: the replay only, no preview), or ``inline_replay_query`` without JavaScript."""
    session = recalls.session_for_lab(user, session_id)
    asked_query = query
    query, preset, preset_error = _lab_query(query, session)
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
    asked, step = step, None
    preview = run = chart = trim_recalls = None
    deferred = (asked is None and not replay_part and asked_query.get("replay") != "inline"
                and session.message_count > settings.MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES)
    # An unknown strategy (or counter) shows the default one's preview, as its message says.
    if form.spec is not None:
        replayed = lab_trimming.session_replay(session=session, spec=form.spec, counter=counter,
                                               step=asked, replayed=not deferred)
        run, step = replayed.replay, replayed.step
        if not replay_part:
            # At a call of the run, its input is the messages before it.
            preview = previews.trim_preview(replayed.sent, replayed.counts[:replayed.sent_from], replayed.result)
            # The session's recalls under the trim shown: which the trimmed list holds, which it drops.
            trim_recalls = recalls.trim_recalls(recalls.session_recalls_read(session), replayed.result,
                                                sent_before=replayed.sent_from)
            recalls.mark_rows(preview.items, trim_recalls)
        if run is not None:
            chart = charts.replay_chart(run.steps, chosen=step)
    spec = form.spec or strategy_spec(strategy)
    # Opened on a preset, the lab counts with the preset's counter: compare, the diff and the Export menu take the
    # preset itself, so that they count with it too (its strategy and parameters alone count with the session's).
    named = spec.text
    if preset is not None and form.spec is not None:
        named = presets.PRESET_PREFIX + preset.name
    # Counted again with another counter than the stored one (not a preset's own): the diff and the export too.
    recount = named == spec.text and counter != session.token_counter
    other = "safe_token_budget" if strategy.name != "safe_token_budget" else "buffered"
    return {
        "session": session,
        "catalog": strategies_by_framework(),
        "entry": strategy_entry(strategy),
        "strategy": strategy,
        "strategy_error": strategy_error,
        "form": form,
        "preview": preview,
        "recalls": trim_recalls,
        "recalls_shown": recalls.RECALLS_SHOWN,
        "recall_trimmed_advice": RECALL_TRIMMED_ADVICE,
        "repeated_injection_advice": ADVICE["repeated_injection"],
        "counter": counter,
        "counter_error": counter_error,
        "counters": sorted(COUNTERS),
        "replay": run,
        "replay_deferred": deferred and form.spec is not None,
        "replay_part_query": _lab_part_query(asked_query, part="replay"),
        "inline_replay_query": _lab_part_query(asked_query, replay="inline"),
        "chart": chart,
        "step": step,
        "step_call": run.steps[step] if run is not None and step is not None else None,
        "memory_text": MEMORY_KINDS[strategy.memory],
        "replay_links": _replay_links(run, spec, counter, session) if run is not None else None,
        "preset": preset,
        "preset_error": preset_error,
        "presets": presets.presets_for_user(user, project=session.agent.project),
        "can_save_preset": access.editable_projects(user).filter(pk=session.agent.project_id).exists(),
        "spec": spec,
        "preset_fields": [(key, value) for key, values in QueryDict(spec.lab_query).lists() for value in values],
        "equivalents": previews.equivalents(site, session, spec, counter, preset) if form.spec is not None else None,
        "compare_query": urlencode([("s", named), ("s", other)]),
        "diff_query": urlencode({"trim": named, **({"counter": counter} if recount else {})}),
        # The Export menu of the trimmed view: the strategy and its changed parameters (``key=value,key=value``),
        # or the preset.
        "export_strategy": strategy.name if named == spec.text else named,
        "export_params": spec.text.partition(":")[2] if named == spec.text else "",
        "export_counter": counter if recount else "",
        "dropped_shown": previews.DROPPED_SHOWN,
        "preset_save_error": save_error,
        "preset_name": preset_name,
    }


def _lab_part_query(query: QueryDict, **extra: str) -> str:
    """The lab's query with ``extra`` in place of any ``part``, ``replay`` or ``step`` it has."""
    pairs = [(key, value) for key, values in query.lists() if key not in ("part", "replay", "step")
             for value in values]
    return urlencode([*pairs, *extra.items()])


def _lab_query(query: QueryDict, session: models.Session) -> tuple[QueryDict, models.Preset | None, str]:
    """The lab's query: the page's own, or, for ``?preset=NAME`` (a shared link), the preset's strategy,
    parameters and counter. Also the preset, and why it did not apply."""
    name = query.get("preset", "").strip()
    if not name:
        return query, None, ""
    try:
        preset = presets.preset_by_name(user=None, name=name, project=session.agent.project)
        spec = presets.preset_spec(preset)
    except presets.PresetError as exc:
        return query, None, str(exc)
    from_preset = QueryDict(spec.lab_query, mutable=True)
    from_preset["counter"] = preset.counter
    from_preset["params_for"] = spec.name
    return from_preset, preset, ""


def _replay_links(run: Replay, spec: StrategySpec, counter: str, session: models.Session) -> dict[str, Any]:
    """Where the replay's first violation and first lost question are, and the lab's query to link to a step."""
    query = spec.lab_query + (f"&{urlencode({'counter': counter})}" if counter != session.token_counter else "")
    query += f"&{urlencode({'params_for': spec.name})}"

    def at(step: int | None) -> dict[str, int] | None:
        return None if step is None else {"step": step, "call": run.steps[step].call}

    return {"query": query, "violation": at(run.first_violation), "question": at(run.first_question_lost)}


# --- saving the lab's setting as a preset -----------------------------------------------------------------------


@dataclass
class PresetSave:
    """What saving the lab's setting as a preset answers: the lab under the preset's link (``address``), or, refused,
    the save form with the error beside it and the name as typed (``form_context``, over htmx) or the whole lab
    with it (``lab_context``, without JS; ``replay_part`` as the lab's own query says)."""

    address: str = ""
    form_context: dict[str, Any] = field(default_factory=dict)
    lab_context: dict[str, Any] = field(default_factory=dict)
    replay_part: bool = False


def preset_save(*, user: access.User, session_id: int, data: QueryDict, fragment: bool, site: str) -> PresetSave:
    """Save the lab's strategy, parameters and counter (``data``, as the lab's form sends them, with
    ``preset_name``) as a preset of the session's project (404 outside the user's projects)."""
    session = access.session_for_user(user, session_id)
    name = data.get("strategy", "")
    typed = data.get("preset_name", "")
    counter = data.get("counter") or session.token_counter
    try:
        spec = spec_from_query(name, data)
        preset = presets.preset_create(
            user=user, project=session.agent.project, name=typed,
            strategy=spec.name, params=spec.params.model_dump(mode="json"), counter=counter,
        )
    except (StrategyError, presets.PresetError) as exc:
        error = str(exc)
    else:
        lab_url = reverse("agents:session_lab", args=[session.pk])
        return PresetSave(address=f"{lab_url}?{urlencode({'preset': preset.name})}")
    # The lab's own fields, as the form sent them.
    query = data.copy()
    for key in ("csrfmiddlewaretoken", "preset_name"):
        query.pop(key, None)
    if fragment:
        return PresetSave(form_context={
            "session": session, "counter": counter, "preset_save_error": error, "preset_name": typed,
            "preset_fields": [(key, value) for key, values in query.lists() if key != "counter" for value in values],
        })
    query["params_for"] = name
    replay_part = query.get("part") == "replay"
    return PresetSave(lab_context=lab_page(user=user, session_id=session.pk, query=query,
                                           step=int_or_none(query.get("step")), site=site, save_error=error,
                                           preset_name=typed, replay_part=replay_part),
                      replay_part=replay_part)


# --- the report across sessions ---------------------------------------------------------------------------------

DEFAULT_REPORT = ["buffered", "langchain_last", "safe_token_budget"]


@dataclass
class ReportPage:
    """The report page's context; or the background job that runs a report too big for one request (the page
    opens the job's), or the report as a file (``?download=csv|json``)."""

    context: dict[str, Any] = field(default_factory=dict)
    job: models.BackgroundJob | None = None
    download: HttpResponse | None = None


def report_page(*, user: access.User, query: QueryDict) -> ReportPage:
    """Up to four strategies (``s``: a strategy's text, or a preset of the user's projects) over the sessions the
    list's filters in ``query`` keep (an invalid filter is dropped and shown with its error, as on the list);
    ``per_call``: every call of each run replayed too."""
    filter_form = SessionFilterForm(query or None, user=user)
    filter_form.is_valid()  # invalid filters are dropped and shown with their error, as on the session list
    filters = filter_form.filters()
    texts = [t.strip() for t in query.getlist("s") if t.strip()][:MAX_COLUMNS] or DEFAULT_REPORT
    specs: list[StrategySpec] = []
    counters: list[str | None] = []  # what each counts with: a preset's counter, else None (each session's own)
    labels: list[str] = []  # each strategy as the report names it: its text, or the preset, its text and counter
    spec_fields: list[dict[str, Any]] = []
    for text in texts:
        try:
            # A box may name a preset of the user's projects: "preset:NAME".
            spec, preset = presets.spec_or_preset(user=user, text=text, filters=filters)
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
    sessions = listing.sessions_filtered(user, filters)
    per_call = query.get("per_call") == "1"
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
                                      "filters": session_filter_pairs(query)}
            if per_call:
                params["per_call"] = True
            if any(counters):
                params["counters"], params["labels"] = counters, labels
            title = f"Trimming report{' (every call)' if per_call else ''}: {', '.join(texts)}"
            return ReportPage(job=queue.job_enqueue(user=user, kind=models.BackgroundJob.Kind.REPORT, params=params,
                                                    title=title, total=total))
    report = reports.trimming_report(sessions, specs, per_call=per_call, counters=counters) if specs else None
    shown = reports.report_shown_context(query, report, labels)
    if isinstance(shown, HttpResponse):
        return ReportPage(download=shown)  # ?download=csv|json
    return ReportPage({
        **shown,
        "filter_form": filter_form,
        "spec_fields": spec_fields,
        "left_out": left_out,
        # (The form has a field named "errors", which {{ filter_form.errors }} would give.)
        "filter_problems": [f"{name}: {' '.join(map(str, errors))}" for name, errors in filter_form.errors.items()],
        "per_call": per_call,
        "preset_counters": any(counters),
        "strategies": list(STRATEGIES.values()),
    })
