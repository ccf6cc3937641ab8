"""What the lab's compare page shows: two to four columns, each a strategy with its own parameter form (or a
preset), trimmed side by side and aligned row by row."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse

from agents import access, models
from agents.http import int_or_none
from agents.lab import presets, previews
from agents.lab import recalls as lab_recalls
from agents.lab.forms import StrategyParamsForm, strategy_params_form
from agents.lab.trimming import session_trim
from agents.memory.compare import compare_aligned
from agents.memory.trimming import (
    STRATEGIES,
    StrategyError,
    StrategySpec,
    spec_from_text,
)
from agents.memory.trimming.catalog import strategies_by_framework, strategy_entry

DEFAULT_COMPARE = ["buffered", "langchain_last", "safe_token_budget"]
MAX_COLUMNS = 4


@dataclass
class CompareColumn:
    text: str  # the column as the URL names it: a spec's text, "preset:NAME", or what was given when invalid
    spec: StrategySpec | None
    error: str
    # The column's own parameter form (None for a preset column and an unknown strategy), and the select's value.
    form: StrategyParamsForm | None = None
    chosen: str = ""
    preset: models.Preset | None = None
    counter: str = ""  # what it counts with: the session's, or its preset's (set by compare_page)
    preview: previews.TrimPreview | None = None
    recalls: lab_recalls.TrimRecalls | None = None  # the session's recalls under this column's trim
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


@dataclass
class ComparePage:
    """The compare page's context; and its canonical address (the columns as ``?s=`` texts): the page redirects
    there when a form or "add" named the columns (without htmx), or htmx pushes it (``push``)."""

    context: dict[str, Any] = field(default_factory=dict)
    redirect: str = ""
    push: str = ""


def compare_page(*, user: access.User, session_id: int, query: QueryDict, path: str, fragment: bool) -> ComparePage:
    """Two to four columns, each a strategy with its own parameter form (or a preset). The URL names the columns
    (``?s=buffered:buffer_size=3&s=preset:NAME``); a column's form (``c2``, ``c2-KEY``) and "add" answer with that
    URL: a redirect without htmx (``fragment``), the result and the URL pushed with htmx."""
    session = lab_recalls.session_for_lab(user, session_id)
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
    if (from_form or added) and all_valid and not fragment:
        return ComparePage(redirect=f"{path}?{canonical}")
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
        stored_recalls = lab_recalls.session_recalls_read(session)
        for counter in dict.fromkeys(c.counter for c in valid):
            group = [c for c in valid if c.counter == counter]
            trimmed = session_trim(session=session, specs=[c.spec for c in group if c.spec is not None],
                                   counter=counter)
            for column, result in zip(group, trimmed.results, strict=True):
                column.preview = previews.trim_preview(trimmed.messages, trimmed.counts, result, bodies=False)
                column.recalls = lab_recalls.trim_recalls(stored_recalls, result, sent_before=len(trimmed.messages))
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
        "presets": presets.presets_for_user(user, project=session.agent.project),
        "lab_url": reverse("agents:session_lab", args=[session.pk]),
    }
    # Whatever changed the columns (a form field, add, move, remove), the address names them.
    return ComparePage(context, push=f"{path}?{canonical}" if fragment and all_valid else "")
