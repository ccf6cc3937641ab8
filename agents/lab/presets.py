"""Presets: a strategy with its parameters and counter, saved under a name in a project; ``spec_or_preset`` reads
what names either one (a compare column, the report's boxes, an export's field, ``trim --preset``)."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents import models
from agents.access import User, editable_projects, recorded_user, user_projects
from agents.memory.tokens import get_counter
from agents.memory.trimming import StrategyError, StrategySpec, spec_from_text, strategy_spec
from agents.store.listing import SessionFilters

# --- presets ------------------------------------------------------------------------------------------------


class PresetError(ValueError):
    """A preset that cannot be saved or is not there; the text is a sentence a person reads."""


def presets_for_user(user: User, *, project: models.Project | None = None) -> QuerySet[models.Preset]:
    """The presets of the user's projects (of one of them when ``project`` is given)."""
    qs = models.Preset.objects.filter(project__in=user_projects(user)).select_related("project", "created_by")
    return qs.filter(project=project) if project is not None else qs


# A column of compare or the report, or a strategy field, that names a preset instead of a strategy: "preset:NAME".
PRESET_PREFIX = "preset:"


def preset_by_name(
    *, user: User | None, name: str, project: models.Project | None = None, prefer: models.Project | None = None,
    choose: str = "name the project",
) -> models.Preset:
    """The preset called ``name`` among the user's projects (or in ``project``); ``user=None``: any project (the
    management commands, run by the operator). ``prefer``: the project whose preset wins when several projects have
    one of that name (the one a list's filters keep the sessions to). PresetError when there is none, or several
    projects have one; ``choose`` ends that sentence with how to pick one."""
    name = name.strip()
    qs = (presets_for_user(user, project=project) if user is not None else
          models.Preset.objects.select_related("project", "created_by").filter(
              **({"project": project} if project is not None else {})))
    found = list(qs.filter(name=name).order_by("project__name")[:10])
    if not found:
        where = f"project {project.name}" if project is not None else ("your projects" if user else "any project")
        raise PresetError(f"There is no preset named \u201c{name}\u201d in {where}.")
    preferred = [p for p in found if prefer is not None and p.project_id == prefer.pk]
    if len(found) > 1 and not preferred:
        raise PresetError(f"Several projects have a preset named \u201c{name}\u201d "
                          f"({', '.join(p.project.slug for p in found)}): {choose}.")
    return (preferred or found)[0]


def spec_or_preset(
    *, user: User | None, text: str, project: models.Project | None = None, filters: SessionFilters | None = None
) -> tuple[StrategySpec, models.Preset | None]:
    """A strategy's text (``buffered:buffer_size=5``) or a preset (``preset:NAME``) → the spec to run, and the
    preset (count with ``trim_counter(preset)``). ``filters``: a list's filters, for the sessions they keep (the
    report, an export of the list): a name several of the user's projects share is the filtered project's preset.
    StrategyError or PresetError say what is wrong."""
    text = text.strip()
    if text.startswith(PRESET_PREFIX):
        name = text[len(PRESET_PREFIX):]
        if filters is None:
            preset = preset_by_name(user=user, name=name, project=project)
        else:
            preset = preset_by_name(user=user, name=name, project=project, prefer=filters.scope_project,
                                    choose="filter the sessions by project")
        return preset_spec(preset), preset
    return spec_from_text(text), None


def trim_counter(preset: models.Preset | None, counter: str | None = None) -> str | None:
    """What a trim counts with: ``counter`` when one is asked for, else the preset's own (a preset is a strategy
    with its parameters *and* counter: the lab, ``trim --preset`` and the trim API count with it), else None: the
    session's own, with its stored counts. Pass it to ``session_trim``, which recounts when it differs."""
    if counter:
        return counter
    return preset.counter if preset is not None else None


def preset_create(
    *, user: User, project: models.Project, name: str, strategy: str, params: dict[str, Any], counter: str
) -> models.Preset:
    """Save a strategy with its parameters and counter under ``name`` in ``project``. The parameters are
    validated by the core and stored whole (defaults included). PresetError says what is wrong."""
    name = name.strip()
    if not name:
        raise PresetError("A preset needs a name.")
    if len(name) > 100:
        raise PresetError("A preset's name has at most 100 characters.")
    if not editable_projects(user).filter(pk=project.pk).exists():
        raise PresetError(f"Saving a preset in project {project.name} needs the editor or admin role there.")
    try:
        get_counter(counter)
    except ValueError as exc:
        raise PresetError(str(exc)) from None
    try:
        resolved = strategy_spec(strategy, params).params
    except StrategyError as exc:
        raise PresetError(str(exc)) from None
    if models.Preset.objects.filter(project=project, name=name).exists():
        raise PresetError(f"Project {project.name} already has a preset named \u201c{name}\u201d.")
    return models.Preset.objects.create(
        project=project, name=name, strategy=strategy, params=resolved.model_dump(mode="json"), counter=counter,
        created_by=recorded_user(user),
    )


def preset_spec(preset: models.Preset) -> StrategySpec:
    """The preset's strategy with its stored parameters (validated again: a strategy may have changed since)."""
    try:
        return strategy_spec(preset.strategy, preset.params)
    except StrategyError as exc:
        raise PresetError(f"Preset \u201c{preset.name}\u201d no longer applies: {exc}") from None


def presets_listed(*, user: User, project: str | None = None) -> QuerySet[models.Preset]:
    """The presets of the user's projects, or of the one of them slugged ``project`` (ValueError when it is not
    one of theirs)."""
    found = None
    if project:
        found = user_projects(user).filter(slug=project).first()
        if found is None:
            raise ValueError(f"project: no project {project!r} among yours")
    return presets_for_user(user, project=found)


def preset_saved(*, user: User, project: str, name: str, strategy: str, params: dict[str, Any],
                 counter: str) -> models.Preset:
    """``preset_create`` in the user's project slugged ``project`` (ValueError when it is not one of theirs)."""
    found = user_projects(user).filter(slug=project).first()
    if found is None:
        raise ValueError(f"project: no project {project!r} among yours")
    return preset_create(user=user, project=found, name=name, strategy=strategy, params=params, counter=counter)
