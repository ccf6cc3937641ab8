"""The LLM calls that spans and log records describe: what each call was sent and what it answered.

Three conventions, read as the real instrumentation packages write them (tests drive those packages):

- **OpenTelemetry GenAI semantic conventions**, current: ``gen_ai.input.messages``, ``gen_ai.output.messages``
  and ``gen_ai.system_instructions`` hold JSON arrays of ``{"role", "parts": [...]}`` messages, parts typed
  ``text``, ``tool_call``, ``tool_call_response``, ``reasoning``, ... (opentelemetry-instrumentation-openai-v2 2.4,
  and OpenLLMetry since 0.53). Older: one log record per message, ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice``, tied to
  the call's span by their span id (opentelemetry-instrumentation-openai-v2 2.3 and earlier).
- **OpenInference**: ``llm.input_messages.N.message.role|content|name|tool_call_id``,
  ``...tool_calls.M.tool_call.id|function.name|function.arguments``, ``...contents.M.message_content.*`` and the
  same under ``llm.output_messages`` (openinference-instrumentation-openai, -langchain, ...).
- **OpenLLMetry / Traceloop** before 0.53: ``gen_ai.prompt.N.role|content|tool_call_id``,
  ``gen_ai.prompt.N.tool_calls.M.id|name|arguments`` and ``gen_ai.completion.N.*``.

Where a call belongs: ``session.id`` or ``gen_ai.conversation.id`` on the span, on an ancestor span (which may
arrive later, so ancestry is kept apart in ``SpanLink``), or on the resource; else the trace. The agent:
``gen_ai.agent.name`` on the span or an ancestor, else the resource's ``service.name``.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from .formats.base import dict_or_empty
from .otlp import Batch, LogRecord, Span, loads_attribute
from .schema import Message, describe_validation_error

SESSION_KEYS = ("session.id", "gen_ai.conversation.id", "traceloop.association.properties.session_id")
AGENT_KEYS = ("gen_ai.agent.name",)
CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
EVENTS_CONVENTION = "genai_events"  # a call told by log events; "genai+genai_events" once its span came too
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
_USAGE_KEYS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"),
    "total_tokens": ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total"),
}


def told_by_span(convention: str) -> bool:
    """Whether a call described as ``convention`` came in its span, not only in log events: those have no start
    (``observed_ns``, when the first was emitted, stands in for it until the span comes)."""
    return any(part != EVENTS_CONVENTION for part in convention.split("+"))


@dataclass(frozen=True)
class SpanLink:
    """What any span says about where the calls under it belong."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    session_id: str | None
    agent_name: str | None


@dataclass(frozen=True)
class CapturedCall:
    """One model call. ``inputs``/``outputs`` are None when the span carried no content (it may come in logs)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    convention: str = ""
    model: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    observed_ns: int | None = None  # log events only: when the first was emitted (stands in for the start)
    input_times: list[int] | None = None  # log events only: when each input was emitted, to join split batches
    usage: dict[str, int] = field(default_factory=dict)
    inputs: list[Message] | None = None
    outputs: list[Message] | None = None
    session_id: str | None = None  # from the span itself or its resource
    agent_name: str | None = None
    service_name: str | None = None
    error: str | None = None

    @property
    def has_content(self) -> bool:
        return self.inputs is not None or self.outputs is not None

    @property
    def reply(self) -> Message | None:
        return next((m for m in self.outputs or () if m.role == "assistant"), None)

    def merged(self, other: CapturedCall) -> CapturedCall:
        """The same call seen twice or in parts (a span and its log events, or log events that an exporter sent
        in two batches): each field from whichever has it; split event inputs joined in the order emitted."""
        fields: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            fields[name] = mine if mine not in (None, "", {}, []) else theirs
        if (
            self.input_times is not None
            and other.input_times is not None
            and self.inputs is not None
            and other.inputs is not None
        ):
            joined = _joined_events(list(zip(self.input_times, self.inputs, strict=True)),
                                    list(zip(other.input_times, other.inputs, strict=True)))
            fields["input_times"] = [t for t, _ in joined]
            fields["inputs"] = [m for _, m in joined]
        if self.observed_ns and other.observed_ns:
            fields["observed_ns"] = min(self.observed_ns, other.observed_ns)
        if self.convention and other.convention:
            fields["convention"] = "+".join(sorted({*self.convention.split("+"), *other.convention.split("+")}))
        return replace(self, **fields)


def _joined_events(mine: list[tuple[int, Message]], theirs: list[tuple[int, Message]]) -> list[tuple[int, Message]]:
    """The input events of one call, seen in two parts or twice, each once and in the order emitted.

    An event is its time and its message's key (``message_key``), not the whole message: a part read back from
    the stored session carries what storing added (``created_at``, ...), and is the same event all the same. The
    two are joined as multisets: an event of ``theirs`` is new unless ``mine`` already has as many of it, so a
    part seen twice adds nothing, and two equal events of one part (a clock too coarse to tell them apart) stay
    two."""
    have = Counter((t, message_key(m)) for t, m in mine)
    seen: Counter[tuple[int, str]] = Counter()
    joined = list(mine)
    for t, m in theirs:
        event = (t, message_key(m))
        seen[event] += 1
        if seen[event] > have[event]:
            joined.append((t, m))
    return sorted(joined, key=lambda pair: pair[0])  # stable: events of one time keep the order they came in


def message_key(message: Message) -> str:
    """What makes two messages the same message resent: 32 hex digits. Role, content (text parts read as their
    text), tool calls (arguments compared as JSON) and tool call id; not ids, timestamps or usage, which a
    framework does not resend and the store adds."""
    canonical = [
        message.role,
        _content_key(message.content),
        message.tool_call_id or "",
        [[call.id, call.function.name, _arguments_key(call.function.arguments)] for call in message.tool_calls],
    ]
    raw = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def _content_key(content: str | list[dict[str, Any]] | None) -> Any:
    if not content:
        return ""
    if isinstance(content, str):
        return content
    if all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "\n".join(str(p.get("text") or "") for p in content)
    return content


def _arguments_key(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return arguments


@dataclass
class Rejected:
    trace_id: str
    span_id: str
    reason: str


@dataclass
class Extraction:
    calls: list[CapturedCall] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def extract(batch: Batch) -> Extraction:
    """The calls in one decoded request, the session/agent links of all its spans, and what could not be read."""
    out = Extraction()
    for span in batch.spans:
        if not span.trace_id or not span.span_id:
            out.rejected.append(Rejected(span.trace_id, span.span_id, f"span {span.name!r} has no trace or span id"))
            continue
        out.links.append(SpanLink(span.trace_id, span.span_id, span.parent_span_id,
                                  first_str(span.attributes, SESSION_KEYS), first_str(span.attributes, AGENT_KEYS)))
        try:
            call = call_from_span(span)
        except ValueError as exc:
            out.rejected.append(Rejected(span.trace_id, span.span_id, f"span {span.span_id} ({span.name}): {exc}"))
            continue
        if call is not None:
            out.calls.append(call)
    grouped: dict[tuple[str, str], list[LogRecord]] = defaultdict(list)
    for record in batch.logs:
        if record.event_name in EVENT_ROLES or record.event_name == CHOICE_EVENT:
            if record.trace_id and record.span_id:
                grouped[(record.trace_id, record.span_id)].append(record)
            else:
                out.rejected.append(Rejected(record.trace_id or "", record.span_id or "",
                                             f"{record.event_name} event outside any span: no call to attach it to"))
    for (trace_id, span_id), records in grouped.items():
        try:
            out.calls.append(call_from_events(trace_id, span_id, records))
        except ValueError as exc:
            out.rejected.append(Rejected(trace_id, span_id, f"events of span {span_id}: {exc}"))
    return out


def call_from_span(span: Span) -> CapturedCall | None:
    """The call a span describes, or None when it is not a model call. Raises ``ValueError`` for bad content."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation is not None and operation not in CALL_OPERATIONS:
        return None
    inputs: list[Message] | None = None
    outputs: list[Message] | None = None
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        convention = "genai"
        inputs = _genai_messages(attrs.get("gen_ai.input.messages"), "gen_ai.input.messages")
        system = attrs.get("gen_ai.system_instructions")
        if system is not None:
            inputs = [_genai_system(system)] + inputs
        outputs = _genai_messages(attrs.get("gen_ai.output.messages"), "gen_ai.output.messages")
    elif attrs.get("openinference.span.kind") == "LLM" or any(k.startswith("llm.input_messages.") for k in attrs):
        if attrs.get("openinference.span.kind", "LLM") != "LLM":
            return None
        convention = "openinference"
        inputs = _flat_messages(attrs, "llm.input_messages.", _openinference_message)
        outputs = _flat_messages(attrs, "llm.output_messages.", _openinference_message)
    elif any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attrs):
        convention = "openllmetry"
        inputs = _flat_messages(attrs, "gen_ai.prompt.", _openllmetry_message)
        outputs = _flat_messages(attrs, "gen_ai.completion.", _openllmetry_message)
    elif operation in CALL_OPERATIONS:
        convention = "genai"  # content off, or sent as log events: the span still gives model, usage and timing
    else:
        return None
    usage = _usage(attrs)
    if outputs and usage:
        outputs = [m.model_copy(update={"usage": usage}) if m.role == "assistant" else m for m in outputs]
    return CapturedCall(
        trace_id=span.trace_id, span_id=span.span_id, parent_span_id=span.parent_span_id, convention=convention,
        model=first_str(attrs, _MODEL_KEYS), started_ns=span.start_ns or None, ended_ns=span.end_ns or None,
        usage=usage, inputs=inputs, outputs=outputs,
        session_id=first_str(attrs, SESSION_KEYS) or first_str(span.resource, SESSION_KEYS),
        agent_name=first_str(attrs, AGENT_KEYS), service_name=first_str(span.resource, ("service.name",)),
        error=(span.status_message or "error") if span.status_error else None,
    )


def call_from_events(trace_id: str, span_id: str, records: Iterable[LogRecord]) -> CapturedCall:
    """The call told by the older GenAI log events of one span, in the order they were emitted."""
    ordered = sorted(records, key=lambda r: (r.order, r.time_ns))
    inputs: list[Message] = []
    choices: list[tuple[int, Message]] = []
    resource: Mapping[str, Any] = ordered[0].resource if ordered else {}
    for n, record in enumerate(ordered):
        body = record.body if isinstance(record.body, dict) else {"content": record.body}
        place = f"{record.event_name}[{n}]"
        if record.event_name == CHOICE_EVENT:
            message = dict_or_empty(body.get("message"))
            choices.append((int(body.get("index") or 0), _openai_like({"role": "assistant", **message}, place)))
        else:
            inputs.append(_openai_like({**body, "role": EVENT_ROLES[record.event_name]}, place))
    outputs = [m for _, m in sorted(choices, key=lambda c: c[0])][:1]
    input_records = [r for r in ordered if r.event_name != CHOICE_EVENT]
    return CapturedCall(
        trace_id=trace_id, span_id=span_id, convention=EVENTS_CONVENTION,
        # None, not empty, for a half that an exporter sent apart from the other: the other half fills it in.
        inputs=inputs or None, outputs=outputs or None, input_times=[r.time_ns for r in input_records] or None,
        observed_ns=min((r.time_ns for r in ordered if r.time_ns), default=None),
        session_id=first_str(resource, SESSION_KEYS), service_name=first_str(resource, ("service.name",)),
    )


def merge_calls(calls: Iterable[CapturedCall]) -> list[CapturedCall]:
    """One call per (trace, span): duplicates and the span/log halves of one call merged, first seen first."""
    by_id: dict[tuple[str, str], CapturedCall] = {}
    for call in calls:
        key = (call.trace_id, call.span_id)
        by_id[key] = by_id[key].merged(call) if key in by_id else call
    return list(by_id.values())


def resolve(call: CapturedCall, links: Mapping[str, SpanLink]) -> tuple[str, str | None]:
    """(session id, agent name) of a call given the links known so far (by span id). The session id falls back
    to ``trace:<trace id>``; the agent to the resource's service name (None if neither is known)."""
    session, agent = call.session_id, call.agent_name
    span_id: str | None = call.parent_span_id
    seen: set[str] = set()
    while span_id and span_id in links and span_id not in seen and (session is None or agent is None):
        seen.add(span_id)
        link = links[span_id]
        session = session or link.session_id
        agent = agent or link.agent_name
        span_id = link.parent_span_id
    return session or f"trace:{call.trace_id}", agent or call.service_name


# --- message shapes ---------------------------------------------------------------------------------------------


def first_str(attrs: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    """The first of ``keys`` that ``attrs`` holds a value for, not empty, as text."""
    for key in keys:
        value = attrs.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def _usage(attrs: Mapping[str, Any]) -> dict[str, int]:
    usage: dict[str, int] = {}
    for name, keys in _USAGE_KEYS.items():
        for key in keys:
            value = attrs.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                usage[name] = int(value)
                break
    return usage


def _json_value(raw: Any, place: str) -> Any:
    if isinstance(raw, str):
        try:
            return loads_attribute(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{place}: not JSON ({exc.msg} at column {exc.colno})") from None
    return raw  # some SDKs send the structure itself as an OTLP array/kvlist


def _arguments(value: Any) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _validated(data: dict[str, Any], place: str) -> Message:
    try:
        return Message.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, place)) from None


def _genai_system(raw: Any) -> Message:
    parts = _json_value(raw, "gen_ai.system_instructions")
    if isinstance(parts, str):
        return Message(role="system", content=parts)
    if not isinstance(parts, list):
        raise ValueError("gen_ai.system_instructions: expected a list of parts")
    message = _genai_message({"role": "system", "parts": parts}, "gen_ai.system_instructions")
    return message[0] if message else Message(role="system", content="")


def _genai_messages(raw: Any, place: str) -> list[Message]:
    if raw is None:
        return []
    data = _json_value(raw, place)
    if not isinstance(data, list):
        raise ValueError(f"{place}: expected a list of messages, got {type(data).__name__}")
    out: list[Message] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{place}[{i}]: expected a message object")
        out.extend(_genai_message(item, f"{place}[{i}]"))
    return out


def _genai_message(item: dict[str, Any], place: str) -> list[Message]:
    """A GenAI message; its ``tool_call_response`` parts become one ``tool`` message each, as in OpenAI chat."""
    role = item.get("role")
    parts = item.get("parts") or []
    if not isinstance(parts, list):
        raise ValueError(f"{place}.parts: expected a list")
    content: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    results: list[Message] = []
    reasoning: list[str] = []
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            raise ValueError(f"{place}.parts[{j}]: expected an object")
        kind = part.get("type")
        if kind == "text":
            content.append({"type": "text", "text": str(part.get("content") or "")})
        elif kind == "tool_call":
            tool_calls.append(
                {
                    "id": str(part.get("id") or f"call_{j}"),
                    "type": "function",
                    "function": {"name": str(part.get("name") or ""), "arguments": _arguments(part.get("arguments"))},
                }
            )
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
            results.append(_validated({"role": "tool", "tool_call_id": str(part.get("id") or ""), "content": text},
                                      f"{place}.parts[{j}]"))
        elif kind == "reasoning":
            reasoning.append(str(part.get("content") or ""))
        else:
            content.append(part)  # blob, uri, file, ...: kept as the part it is
    if role == "tool" or (results and not content and not tool_calls):
        return results
    data: dict[str, Any] = {"role": role, "content": _content(content), "tool_calls": tool_calls}
    if item.get("name"):
        data["name"] = str(item["name"])
    if reasoning:
        data["reasoning"] = "\n".join(reasoning)
    return [_validated(data, place), *results]


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    if not parts:
        return None
    if len(parts) == 1 and parts[0].get("type") == "text":
        text: str = parts[0]["text"]
        return text
    return parts


def _openai_like(body: dict[str, Any], place: str) -> Message:
    """An OpenAI-shaped message dict (the GenAI log events' bodies)."""
    data: dict[str, Any] = {"role": body.get("role"), "content": body.get("content")}
    calls = body.get("tool_calls") or []
    data["tool_calls"] = [
        {"id": str(c.get("id") or ""), "type": "function",
         "function": {"name": str((c.get("function") or {}).get("name") or ""),
                      "arguments": _arguments((c.get("function") or {}).get("arguments"))}}
        for c in calls if isinstance(c, dict)
    ]
    if data["role"] == "tool":
        data["tool_call_id"] = str(body.get("id") or body.get("tool_call_id") or "")
    if isinstance(data["content"], dict):  # some emitters wrap text as {"text": ...}
        data["content"] = str(data["content"].get("text") or "")
    return _validated(data, place)


def _unflatten(attrs: Mapping[str, Any], prefix: str) -> dict[int, Any]:
    """``prefix + "0.message.tool_calls.1.tool_call.id"`` keys into nested dicts keyed by int or str."""
    tree: dict[Any, Any] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        path = [int(p) if p.isdigit() else p for p in key[len(prefix):].split(".")]
        if not path or not isinstance(path[0], int):
            continue
        node = tree
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    return tree


def _indexed(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return []
    return [node[k] for k in sorted(k for k in node if isinstance(k, int))]


def _flat_messages(attrs: Mapping[str, Any], prefix: str, read: Any) -> list[Message]:
    tree = _unflatten(attrs, prefix)
    return [read(tree[i], f"{prefix}{i}") for i in sorted(tree)]


def _openinference_message(node: dict[str, Any], place: str) -> Message:
    message = dict_or_empty(node.get("message"))
    content: Any = message.get("content")
    parts = _indexed(message.get("contents"))
    if content is None and parts:
        content = []
        for part in parts:
            part = (part or {}).get("message_content") or {}
            if part.get("type") == "text":
                content.append({"type": "text", "text": str(part.get("text") or "")})
            elif part.get("type") == "image":
                url = ((part.get("image") or {}).get("image") or {}).get("url")
                content.append({"type": "image_url", "image_url": {"url": url}})
            else:
                content.append(part)
        content = _content(content)
    data: dict[str, Any] = {
        "role": message.get("role"), "content": content,
        "tool_calls": [
            {"id": str(tc.get("id") or f"call_{j}"), "type": "function",
             "function": {"name": str((tc.get("function") or {}).get("name") or ""),
                          "arguments": _arguments((tc.get("function") or {}).get("arguments"))}}
            for j, tc in enumerate((c or {}).get("tool_call") or {} for c in _indexed(message.get("tool_calls")))
        ],
    }
    if message.get("tool_call_id") is not None:
        data["tool_call_id"] = str(message["tool_call_id"])
    if message.get("name") and data["role"] != "tool":
        data["name"] = str(message["name"])
    return _validated(data, place)


def _openllmetry_message(node: dict[str, Any], place: str) -> Message:
    content = node.get("content")
    if isinstance(content, str) and content.startswith("[") and content.endswith("]"):
        # OpenLLMetry writes a list of content parts as its JSON text.
        try:
            parts = loads_attribute(content)
        except json.JSONDecodeError:
            parts = None
        if isinstance(parts, list) and parts and all(isinstance(p, dict) and "type" in p for p in parts):
            content = _content(parts)
    data: dict[str, Any] = {
        "role": node.get("role"), "content": content,
        "tool_calls": [
            {"id": str(tc.get("id") or f"call_{j}"), "type": "function",
             "function": {"name": str(tc.get("name") or ""), "arguments": _arguments(tc.get("arguments"))}}
            for j, tc in enumerate(t for t in _indexed(node.get("tool_calls")) if isinstance(t, dict))
        ],
    }
    if node.get("tool_call_id") is not None:
        data["tool_call_id"] = str(node["tool_call_id"])
    return _validated(data, place)
