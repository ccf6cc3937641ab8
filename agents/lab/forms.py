"""The lab's parameter form, built from a strategy's pydantic parameter model.

Not a Django form: the pydantic model is the one schema of the parameters and ``spec_from_query`` the one reader
of them (the API, the commands and the export read theirs the same way), so this only lays out the fields and
puts each error next to its field.
"""
from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from django.http import QueryDict
from pydantic.fields import FieldInfo

from agents.memory.trimming import Strategy, StrategyError, StrategySpec, spec_from_query


@dataclass
class ParamField:
    name: str
    kind: str  # number | checkbox | choices | text
    help: str
    default: Any
    value: Any  # what the input shows
    minimum: float | None = None
    exclusive_minimum: float | None = None
    integer: bool = True
    choices: list[str] = field(default_factory=list)
    multiple: bool = False
    error: str = ""

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")

    @property
    def input_min(self) -> float | None:
        if self.minimum is not None:
            return self.minimum
        if self.exclusive_minimum is not None and self.integer:
            return self.exclusive_minimum + 1
        return None

    @property
    def bounds(self) -> str:
        if self.minimum is not None:
            return f"≥ {self.minimum:g}"
        if self.exclusive_minimum is not None:
            return f"> {self.exclusive_minimum:g}"
        return ""

    @property
    def default_text(self) -> str:
        if self.default is None or self.default == []:
            return "none"
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        return self.default if isinstance(self.default, str) else json.dumps(self.default)

    @property
    def text_value(self) -> str:
        """The value as a text input shows it: names comma-separated, true/false, a number, or nothing."""
        if self.value is None or self.value == []:
            return ""
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        if isinstance(self.value, list):
            return ", ".join(str(v) for v in self.value)
        return str(self.value)

    @property
    def selected(self) -> list[str]:
        if self.value is None:
            return []
        return list(self.value) if isinstance(self.value, list) else [str(self.value)]


@dataclass
class StrategyParamsForm:
    strategy: Strategy
    fields: list[ParamField]
    spec: StrategySpec | None  # the strategy with the parameters read and validated (None when one is invalid)
    errors: dict[str, str]

    @property
    def is_valid(self) -> bool:
        return self.spec is not None


def _kind(info: FieldInfo) -> tuple[str, list[str], bool, bool]:
    """(kind, choices, multiple, integer) of a parameter from its annotation."""
    annotation = info.annotation
    if annotation is bool:
        return "checkbox", [], False, False
    if annotation in (int, float):
        return "number", [], False, annotation is int
    choices: list[str] = []
    multiple = False
    members = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    # The 2026 strategies' shapes: an optional number, tool names, true/false or tool names, a number or "all".
    plain = [typing.get_args(m)[0] if typing.get_origin(m) is typing.Annotated else m for m in members]
    others = [m for m in plain if m is not type(None)]
    if type(None) in plain and others and all(m in (int, float) for m in others):
        return "optional_number", [], False, int in others
    if others == [list[str]]:
        return "names", [], True, False
    if bool in others and list[str] in others:
        return "bool_or_names", ["true", "false"], True, False
    if int in others and Literal["all"] in others:
        return "number_or_all", ["all"], False, True
    for member in members:
        if typing.get_origin(member) is Literal:
            choices += [str(c) for c in typing.get_args(member) if str(c) not in choices]
        elif typing.get_origin(member) is list:
            multiple = True
            for inner in typing.get_args(member):
                if typing.get_origin(inner) is Literal:
                    choices += [str(c) for c in typing.get_args(inner) if str(c) not in choices]
    if choices:
        return "choices", choices, multiple, False
    return "text", [], False, False


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def strategy_params_form(strategy: Strategy, query: QueryDict | None) -> StrategyParamsForm:
    """The strategy's parameters read from ``query`` (keys that are not parameters are ignored), validated."""
    spec: StrategySpec | None = None
    errors: dict[str, str] = {}
    try:
        spec = spec_from_query(strategy.name, query if query is not None else QueryDict())
        shown = spec.params.model_dump()
    except StrategyError as exc:
        errors = {p.param: p.reason for p in exc.problems}
        shown = exc.given
    schema = strategy.params_model.model_json_schema()["properties"]
    fields: list[ParamField] = []
    for name, info in strategy.params_model.model_fields.items():
        kind, choices, multiple, integer = _kind(info)
        prop = schema.get(name, {})
        fields.append(
            ParamField(
                name=name,
                kind=kind,
                help=info.description or "",
                default=info.default,
                value=shown.get(name, info.default),
                minimum=prop.get("minimum"),
                exclusive_minimum=prop.get("exclusiveMinimum"),
                integer=integer,
                choices=choices,
                multiple=multiple,
                error=errors.get(name, ""),
            )
        )
    return StrategyParamsForm(strategy, fields, spec, errors)
