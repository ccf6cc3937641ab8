"""The OpenAI Agents SDK 0.24.0 writes its session databases here (in .venv-mem), for the openai_agents_session
reader's tests; adapted from tests/samples/memory/openai_agents/make_openai_agents.py: a Model subclass returns
scripted Responses output items, tracing is off, nothing is sent.

Beyond the sample: ``sessions.db`` holds two sessions of ``SQLiteSession``: ``user-7`` runs twice (a tool call then
an answer, then a plain answer), ``user-9`` gets a reasoning item before its answer, then ``pop_item()`` takes that
answer back and a second run answers again (the ids have a gap). ``advanced.db`` holds an ``AdvancedSQLiteSession``
(``user-adv``) run twice, then branched from its second turn (``create_branch_from_turn``) and run on the branch,
with ``store_run_usage`` after each run. Besides the databases:

- ``get_items.json``: ``{session_id: await session.get_items()}`` of sessions.db;
- ``advanced_items.json``: ``{branch_id: await session.get_items(branch_id=...)}`` for every branch of ``user-adv``,
  and ``advanced_usage.json``: ``{branch_id: await session.get_turn_usage(branch_id=...)}``.

Run: python agents_sdk_files.py OUT_DIR
"""
import asyncio
import json
import os
import sys

from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.extensions.memory import AdvancedSQLiteSession
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage

OUT = os.path.abspath(sys.argv[1])
set_tracing_disabled(True)


def message(n, text):
    return ResponseOutputMessage(type="message", id=f"msg_{n}", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class ScriptedModel(Model):
    """Answers each call with the next scripted output items."""

    def __init__(self, script):
        self.script = list(script)

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None, **kw):
        return ModelResponse(output=self.script.pop(0), usage=Usage(requests=1, input_tokens=10, output_tokens=5,
                                                                    total_tokens=15), response_id=None)

    def stream_response(self, *a, **kw):
        raise NotImplementedError


@function_tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"{city}: 3C, snow"


def agent(script):
    return Agent(name="Weather", instructions="You answer weather questions.", model=ScriptedModel(script),
                 tools=[get_weather])


def dump(name, value):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False, default=str)


async def main():
    db = os.path.join(OUT, "sessions.db")
    user7 = SQLiteSession("user-7", db)
    weather = agent([
        [ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="call_1", name="get_weather",
                                  arguments='{"city": "Oslo"}', status="completed")],
        [message(2, "Oslo: 3°C and snowing.")],
        [message(3, "Take boots.")],
    ])
    await Runner.run(weather, "Weather in Oslo?", session=user7)
    await Runner.run(weather, "What should I wear?", session=user7)
    user9 = SQLiteSession("user-9", db)
    thinker = agent([
        [ResponseReasoningItem(type="reasoning", id="rs_1", summary=[Summary(type="summary_text",
                                                                             text="The user asks about Bergen.")]),
         message(4, "Bergen: rain.")],
        [message(5, "Bergen: rain, 8°C.")],
    ])
    await Runner.run(thinker, "Weather in Bergen?", session=user9)
    await user9.pop_item()  # the answer taken back
    await Runner.run(thinker, "And the temperature?", session=user9)
    dump("get_items.json", {"user-7": await user7.get_items(), "user-9": await user9.get_items()})
    user7.close()
    user9.close()

    advanced = AdvancedSQLiteSession(session_id="user-adv", db_path=os.path.join(OUT, "advanced.db"),
                                     create_tables=True)
    planner = agent([[message(6, "Oslo: snow.")], [message(7, "Pack boots.")], [message(8, "Pack an umbrella.")]])
    for text in ("Weather in Oslo?", "What should I pack?"):
        result = await Runner.run(planner, text, session=advanced)
        await advanced.store_run_usage(result)
    await advanced.create_branch_from_turn(2, "rainy")
    result = await Runner.run(planner, "What should I pack if it rains?", session=advanced)
    await advanced.store_run_usage(result)
    branches = [b["branch_id"] for b in await advanced.list_branches()]
    dump("advanced_items.json", {b: await advanced.get_items(branch_id=b) for b in branches})
    dump("advanced_usage.json", {b: await advanced.get_turn_usage(branch_id=b) for b in branches})
    advanced.close()


if __name__ == "__main__":
    asyncio.run(main())
