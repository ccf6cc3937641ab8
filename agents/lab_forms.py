"""The lab's parameter form, built from a strategy's pydantic parameter model.

Not a Django form: the pydantic model is the one schema of the parameters (the API, the commands and the export
form validate against it too), so this only maps query-string values to it and its errors back to the fields.
"""
from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from django.http import QueryDict
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from agents.memory.trimming import Strategy

TRUE_WORDS = {"true", "on", "1", "yes"}
FALSE_WORDS = {"false", "off", "0", "no"}


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
    params: dict[str, Any]  # the given values, as the trimmer takes them
    errors: dict[str, str]

    @property
    def is_valid(self) -> bool:
        return not self.errors


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


def _read(kind: str, multiple: bool, values: list[str]) -> tuple[bool, Any]:
    """(given, value) of one parameter from its query values; an empty input means "use the default"."""
    if kind == "checkbox":
        # A hidden "false" precedes the checkbox, so an unchecked box still says so; the last value wins.
        if not values:
            return False, None
        last = values[-1].strip().lower()
        if last in TRUE_WORDS:
            return True, True
        if last in FALSE_WORDS or last == "":
            return True, False
        return True, values[-1]  # pydantic names the problem
    values = [v.strip() for v in values if v.strip()]
    if not values:
        return False, None
    if kind == "choices":
        if len(values) == 1 and values[0].startswith("["):
            try:
                return True, json.loads(values[0])
            except ValueError:
                return True, values[0]
        return True, (values if multiple and len(values) > 1 else values[0])
    return True, values[-1]


def strategy_params_form(strategy: Strategy, query: QueryDict | None) -> StrategyParamsForm:
    """The strategy's parameters read from ``query`` (keys that are not parameters are ignored), validated."""
    schema = strategy.params_model.model_json_schema()["properties"]
    fields: list[ParamField] = []
    params: dict[str, Any] = {}
    for name, info in strategy.params_model.model_fields.items():
        kind, choices, multiple, integer = _kind(info)
        given, value = _read(kind, multiple, query.getlist(name) if query is not None else [])
        if given:
            params[name] = value
        prop = schema.get(name, {})
        fields.append(
            ParamField(
                name=name,
                kind=kind,
                help=info.description or "",
                default=info.default,
                value=value if given else info.default,
                minimum=prop.get("minimum"),
                exclusive_minimum=prop.get("exclusiveMinimum"),
                integer=integer,
                choices=choices,
                multiple=multiple,
            )
        )
    errors: dict[str, str] = {}
    try:
        strategy.params_model.model_validate(params)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            name = str(err["loc"][0]) if err.get("loc") else "params"
            errors.setdefault(name, err["msg"])  # a union reports one error per member: the first says enough
    for f in fields:
        f.error = errors.get(f.name, "")
    return StrategyParamsForm(strategy, fields, params, errors)
