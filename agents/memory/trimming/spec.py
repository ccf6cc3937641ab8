"""A strategy with its parameters, read one way however an interface writes it: the one parameter parser.

- Python values (a stored record, JSON, a script): ``strategy_spec("buffered", {"buffer_size": 5})``;
- a query string (the lab's form, the trim API): ``spec_from_query("buffered", request.GET)``, where a parameter
  given twice is a list (``end_on=human&end_on=ai``) and a scalar's last value counts (a checkbox follows the
  hidden ``false`` that stands for it unchecked);
- ``key=value`` pairs (the commands' ``--set``, the export's ``set=``): ``spec_from_pairs("buffered", pairs)``;
- a spec's text (the lab's columns and report, the export's ``params=``): ``spec_from_text("buffered:buffer_size=5")``,
  and ``StrategySpec.text`` writes it back.

A written value is read the same way everywhere: blank means the default; ``true``/``false`` (and the other
``TRUE_WORDS``/``FALSE_WORDS``) for a yes/no parameter; a JSON list or comma-separated names for a parameter
that takes a list; ``"quoted"`` JSON text and ``null`` as JSON; anything else as the text, which the parameter
model converts (``5`` for a number). Then the strategy's pydantic model validates it, once: the result is a
``StrategySpec``, which ``trim`` runs as it is.

Errors name the parameter as written (``buffer_size=0: buffer_size must be greater than 0``) and nothing of any
interface; ``StrategyError.text(flag)`` puts an interface's own way of writing a parameter in front of each
(``--set buffer_size=0: ...``), and ``problems`` lets a form put each next to its field.

Reading is linear in the length of the text (a spec or a query string comes from outside).
"""
from __future__ import annotations

import json
import re
import types
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union, get_args, get_origin
from urllib.parse import urlencode

from pydantic import ValidationError

from agents.memory.trimming.registry import ParamProblem, Strategy, StrategyError, StrategyParams, get_strategy

# Yes/no words, whatever the interface (the lab's checkboxes send "true"/"false"; the API and the commands take
# these too). Compared lower-cased.
TRUE_WORDS = frozenset({"true", "on", "yes", "1"})
FALSE_WORDS = frozenset({"false", "off", "no", "0"})


class Query(Protocol):
    """A query string as Django and DRF hold it (``QueryDict``): its keys, and every value of one key."""

    def __iter__(self) -> Iterator[str]: ...

    def getlist(self, key: str) -> list[str]: ...


@dataclass(frozen=True)
class StrategySpec:
    """A strategy with its validated parameters: what ``trim`` runs, and what every interface reads into."""

    strategy: Strategy
    params: StrategyParams

    @property
    def name(self) -> str:
        return self.strategy.name

    def changed(self) -> dict[str, Any]:
        """The parameters whose values differ from the strategy's defaults (a short spec, a short URL)."""
        out: dict[str, Any] = {}
        for name, info in type(self.params).model_fields.items():
            value = getattr(self.params, name)
            if value != info.default:
                out[name] = value
        return out

    @property
    def text(self) -> str:
        """``name:key=value,key=value`` with the changed parameters; ``spec_from_text`` reads it back."""
        parts = [f"{key}={_written(value)}" for key, value in self.changed().items()]
        return self.name + (":" + ",".join(parts) if parts else "")

    @property
    def lab_query(self) -> str:
        """The lab page's query string for this spec (a list as repeated values, as its checkboxes send it)."""
        pairs: list[tuple[str, str]] = [("strategy", self.name)]
        for key, value in self.changed().items():
            for item in value if isinstance(value, list) else [value]:
                pairs.append((key, _written(item)))
        return urlencode(pairs)


def _written(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# --- Python values ------------------------------------------------------------------------------------------


def strategy_spec(
    strategy: str | Strategy,
    values: Mapping[str, Any] | None = None,
    *,
    written: Mapping[str, str] | None = None,
    problems: Sequence[ParamProblem] = (),
) -> StrategySpec:
    """The strategy with ``values`` validated against its parameter model. StrategyError names every invalid
    parameter (``written``: how each was written, when it came as text) and lists the valid ones.

    A value of a yes/no parameter may be one of the words; a value of a list parameter may be comma-separated
    (``"human,ai"``) or a list whose items are (a query parameter repeated). ``problems``: what the reader of
    the text already found wrong (those parameters are not validated again)."""
    strat = get_strategy(strategy) if isinstance(strategy, str) else strategy
    fields = strat.params_model.model_fields
    given = dict(values or {})
    as_written = dict(written or {})
    found: dict[str, ParamProblem] = {}
    for problem in problems:
        found.setdefault(problem.param, problem)

    def place(name: str) -> str:
        return as_written.get(name) or f"{name}={json.dumps(given.get(name), default=str)}"

    readable: dict[str, Any] = {}
    for name, value in given.items():
        if name in found:
            continue
        if name not in fields:
            found[name] = ParamProblem(name, place(name), f"unknown parameter '{name}'")
            continue
        annotation = fields[name].annotation
        word = value.strip().lower() if isinstance(value, str) else None
        if word is not None and _accepts_bool(annotation) and word in TRUE_WORDS | FALSE_WORDS:
            value = word in TRUE_WORDS  # also where a yes/no is one choice among others (true, or a list of names)
        elif word is not None and annotation is bool:
            found[name] = ParamProblem(name, place(name), f"{name} must be true or false (or on/off, yes/no, 1/0)")
            continue
        elif _accepts_list(annotation):
            value = _as_list(value)
        readable[name] = value
    try:
        params = strat.params_model.model_validate(readable)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            if not err.get("loc"):  # a rule across parameters (compact_to <= max_n): name what was given
                name = ", ".join(readable) or "params"
                reason = err["msg"].removeprefix("Value error, ")
                found.setdefault(name, ParamProblem(name, ", ".join(place(n) for n in readable), reason))
                continue
            name = str(err["loc"][0])
            # A union reports one error per member: the first says enough.
            found.setdefault(name, ParamProblem(name, place(name), _sentence(name, err)))
    if found:
        # What a form shows again: each value as read, converted where that went well.
        shown = {**given, **{k: v for k, v in readable.items() if k not in found}}
        raise StrategyError(
            strategy=strat.name, problems=list(found.values()), valid=_describe_params(strat), given=shown
        )
    return StrategySpec(strat, params)


# pydantic's error types, said as a sentence about the parameter ("buffer_size must be greater than 0") rather
# than pydantic's "Input should be greater than 0".
_SENTENCES = {
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be {ge} or more",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be {le} or less",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false (or on/off, yes/no, 1/0)",
    "bool_type": "must be true or false (or on/off, yes/no, 1/0)",
    "literal_error": "must be one of {expected}",
    "string_type": "must be text",
    "list_type": "must be a list (comma-separated, or the parameter repeated)",
}


def _sentence(name: str, err: Any) -> str:
    template = _SENTENCES.get(err.get("type", ""))
    if template is not None:
        try:
            return f"{name} {template.format(**err.get('ctx', {}))}"
        except (KeyError, IndexError):
            pass
    message = str(err["msg"]).removeprefix("Value error, ")
    if message.startswith("Input should be "):
        return f"{name} must be {message.removeprefix('Input should be ')}"
    return f"{name}: {message}"


def _describe_params(strategy: Strategy) -> str:
    parts = []
    for row in strategy.parameters():
        bound = ""
        if "exclusiveMinimum" in row:
            bound = f" > {row['exclusiveMinimum']}"
        elif "minimum" in row:
            bound = f" >= {row['minimum']}"
        parts.append(f"{row['name']} ({row['type']}{bound}, default {json.dumps(row['default'])})")
    return ", ".join(parts)


def _accepts_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    return get_origin(annotation) in (Union, types.UnionType) and any(_accepts_bool(a) for a in get_args(annotation))


def _accepts_list(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is list:
        return True
    if origin is Union or origin is types.UnionType:
        return any(_accepts_list(a) for a in get_args(annotation))
    return False


def _as_list(value: Any) -> Any:
    """A list parameter as written anywhere: ``"human,ai"``, a list whose items may themselves be comma-separated
    (``end_on=human&end_on=ai``), or a JSON list. One name stays a name, so a single choice keeps its type."""
    if isinstance(value, str) and "," in value:
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for item in value:
            split = _as_list(item)
            out.extend(split if isinstance(split, list) else [split])
        return out
    return value


# --- text ---------------------------------------------------------------------------------------------------


def _read(texts: Sequence[str], takes_list: bool) -> tuple[bool, Any, str]:
    """(given, value, as written) of one parameter from the texts written for it, in order."""
    texts = [t.strip() for t in texts if t.strip()]
    if not texts:
        return False, None, ""
    if takes_list:
        values = [_json_or_text(t) for t in texts]
        return True, values if len(values) > 1 else values[0], ",".join(texts)
    return True, _json_or_text(texts[-1]), texts[-1]


def _json_or_text(text: str) -> Any:
    # Only what cannot be meant as text: a JSON list or string, or null. Numbers stay text ("5" is 5 for a
    # number and "5" for a text parameter: the model converts).
    if text == "null" or text[0] in '["':
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _spec_from_texts(
    strategy: Strategy, texts: Mapping[str, Sequence[str]], problems: Sequence[ParamProblem] = ()
) -> StrategySpec:
    fields = strategy.params_model.model_fields
    values: dict[str, Any] = {}
    written: dict[str, str] = {}
    for key, given_texts in texts.items():
        given, value, as_written = _read(given_texts, key in fields and _accepts_list(fields[key].annotation))
        if given:
            values[key] = value
            written[key] = f"{key}={as_written}"
    return strategy_spec(strategy, values, written=written, problems=problems)


def spec_from_query(name: str, query: Query, *, other_keys: Collection[str] | None = None) -> StrategySpec:
    """The strategy ``name`` with its parameters read from a query string.

    ``other_keys=None``: only the strategy's parameters are read, other keys are the page's own (a form).
    Otherwise the keys in ``other_keys`` are the interface's own and every other key is a parameter, so an
    unknown one is an error (an API)."""
    strat = get_strategy(name.strip())
    keys = [k for k in query if (k in strat.params_model.model_fields if other_keys is None else k not in other_keys)]
    return _spec_from_texts(strat, {key: query.getlist(key) for key in keys})


def spec_from_pairs(name: str | None, pairs: Sequence[str]) -> StrategySpec | None:
    """The strategy ``name`` with ``key=value`` pairs (a key given twice: a list, or its last value).
    None when there is neither a name nor a pair; StrategyError for pairs without a strategy."""
    if not (name or "").strip():
        if any(p.strip() for p in pairs):
            raise StrategyError("parameters were given without a strategy")
        return None
    return _spec_from_pairs(get_strategy((name or "").strip()), pairs)


def spec_from_text(text: str) -> StrategySpec:
    """``buffered:buffer_size=5,pin_system=false`` (what ``StrategySpec.text`` writes) → its StrategySpec."""
    name, _, rest = text.strip().partition(":")
    return _spec_from_pairs(get_strategy(name.strip()), split_pairs(rest))


def _spec_from_pairs(strategy: Strategy, pairs: Sequence[str]) -> StrategySpec:
    texts: dict[str, list[str]] = {}
    problems: list[ParamProblem] = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(ParamProblem(key or pair, repr(pair), "expected key=value"))
            continue
        texts.setdefault(key, []).append(value)
    return _spec_from_texts(strategy, texts, problems)


# A pair starts at a key followed by "=": "buffer_size=5, start_on=["human","ai"]" splits before "start_on" only,
# so a JSON value with commas stays whole.
_SEPARATORS = re.compile(r"[,\s]+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def split_pairs(text: str) -> list[str]:
    """``'buffer_size=5, start_on=["human","ai"]'`` → ``['buffer_size=5', 'start_on=["human","ai"]']``.

    Linear: each run of separators is found once and the key after it is matched once (a regular expression
    that looked ahead from every separator took minutes on a long run of commas)."""
    pairs: list[str] = []
    start = 0
    for run in _SEPARATORS.finditer(text):
        if _KEY.match(text, run.end()):
            pairs.append(text[start : run.start()])
            start = run.end()
    pairs.append(text[start:])
    return [p.strip() for p in pairs if p.strip()]
