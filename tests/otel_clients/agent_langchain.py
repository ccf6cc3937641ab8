"""A LangChain agent (``langchain.agents.create_agent``) on ``ChatOpenAI``, instrumented with
openinference-instrumentation-langchain, exporting with the stock OTLP/HTTP exporter. Runs in a reference
virtualenv of its own.

    python agent_langchain.py BASE_URL [--session ID]

Prints the conversation as the agent holds it (system prompt first), as OpenAI chat messages.
"""
from __future__ import annotations

import argparse
import contextlib
import json

from langchain.agents import create_agent
from langchain_core.messages import convert_to_openai_messages
from langchain_core.tools import ToolException, tool
from langchain_openai import ChatOpenAI
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SYSTEM = "You are a travel assistant."
USER_TURNS = [
    "What's the weather in Paris and Atlantis?",
    "Book a table for two in Rome tonight.",
    "Thanks!",
    "Thanks!",
]


@tool(response_format="content")
def get_weather(city: str) -> str:
    """The weather in a city."""
    weather = {"Paris": "18°C, sunny", "Rome": "24°C, clear"}
    if city not in weather:
        raise ToolException(f"unknown city: {city}")
    return weather[city]


get_weather.handle_tool_error = True


@tool
def book_table(city: str, people: int) -> str:
    """Book a restaurant table."""
    return "Booked for 20:00."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--session")
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-agent-langchain"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    model = ChatOpenAI(model="gpt-4o-mini", base_url=args.base_url, api_key="sk-stub", max_retries=0)
    agent = create_agent(model, tools=[get_weather, book_table], system_prompt=SYSTEM)
    messages: list = []
    with using_session(args.session) if args.session else contextlib.nullcontext():
        for text in USER_TURNS:
            state = agent.invoke({"messages": [*messages, {"role": "user", "content": text}]})
            messages = state["messages"]
    provider.shutdown()
    print(json.dumps([{"role": "system", "content": SYSTEM}, *convert_to_openai_messages(messages)]))


if __name__ == "__main__":
    main()
