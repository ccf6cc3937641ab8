"""What the lab's page shows: one session under one strategy (or a preset), its replay call by call, and where else
the same result comes from."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import QueryDict

from agents import access, models
from agents.lab import charts, presets, previews
from agents.lab import trimming as lab_trimming
from agents.lab.forms import strategy_params_form
from agents.memory.replay import Replay
from agents.memory.tokens import COUNTERS
from agents.memory.trimming import MEMORY_KINDS, STRATEGIES, StrategySpec, get_strategy, strategy_spec
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry

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
    session = access.session_for_user(user, session_id)
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
    preview = run = chart = None
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
