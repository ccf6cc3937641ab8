"""A tool-calling agent on the ``openai`` SDK, instrumented by the package named on the command line, exporting
its spans (and log events) with the stock OTLP/HTTP exporters. Runs in a reference virtualenv of its own.

    python agent_openai.py {otel-genai|otel-genai-events|openinference|openllmetry} BASE_URL
        [--keep N] [--session ID] [--session-on {parent,resource}]

The exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_EXPORTER_OTLP_HEADERS`` as any application's would.
``--keep N`` trims the history the way many frameworks do: the system message plus the last N messages.
``--session ID`` names the session: on an ``invoke_agent`` span around the run (``gen_ai.conversation.id``; it
ends, and so is exported, after the calls inside it), or on the resource (``session.id``).
"""
from __future__ import annotations

import argparse
import contextlib
import json

from openai import OpenAI
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "book_table", "description": "Book a restaurant table.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "people": {"type": "integer"}}}}},
]
USER_TURNS = [
    "What's the weather in Paris and Atlantis?",
    "Book a table for two in Rome tonight.",
    "Thanks!",
    "Thanks!",
]


def run_tool(name: str, args: dict) -> str:
    if name == "get_weather":
        weather = {"Paris": "18°C, sunny", "Rome": "24°C, clear"}
        if args["city"] not in weather:
            return json.dumps({"error": f"unknown city: {args['city']}"})
        return weather[args["city"]]
    return "Booked for 20:00."


def setup(kind: str, resource_attributes: dict) -> tuple[TracerProvider, object | None]:
    resource = Resource.create({"service.name": "travel-agent", **resource_attributes})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    logs = None
    if kind.startswith("otel-genai"):
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logs = LoggerProvider(resource=resource)
        logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        set_logger_provider(logs)
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logs)
    elif kind == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif kind == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown instrumentation: {kind}")
    return provider, logs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("base_url")
    parser.add_argument("--keep", type=int)
    parser.add_argument("--session")
    parser.add_argument("--session-on", choices=["parent", "resource"], default="parent")
    args = parser.parse_args()
    on_resource = args.session and args.session_on == "resource"
    provider, logs = setup(args.kind, {"session.id": args.session} if on_resource else {})
    client = OpenAI(base_url=args.base_url, api_key="sk-stub", max_retries=0)
    parent = None
    if args.session and not on_resource:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Travel agent",
                      "gen_ai.conversation.id": args.session}
        parent = trace.get_tracer("agent").start_span("invoke_agent Travel agent", attributes=attributes)
    with trace.use_span(parent, end_on_exit=True) if parent else contextlib.nullcontext():
        history = converse(client, args.keep)
    provider.shutdown()
    if logs is not None:
        logs.shutdown()
    print(json.dumps(history))


def converse(client: OpenAI, keep: int | None) -> list[dict]:
    history: list[dict] = [{"role": "system", "content": "You are a travel assistant."}]
    for text in USER_TURNS:
        history.append({"role": "user", "content": text})
        while True:
            sent = history if keep is None else history[:1] + history[1:][-keep:]
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=sent, tools=TOOLS)
            message = reply.choices[0].message
            history.append(message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                result = run_tool(call.function.name, json.loads(call.function.arguments))
                history.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return history


if __name__ == "__main__":
    main()
