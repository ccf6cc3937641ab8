"""AgentScope 2.0.11 runs an Agent here (in .venv-mem-agentscope2) and dumps its state, for the agentscope_session
reader's tests. AgentScope 2.x has no session file: an application keeps ``agent.state`` in its own storage, and
``agent.state.model_dump(mode="json")`` is what can be exported (tests/samples/memory has no 2.x sample).

Offline: a scripted ChatModelBase subclass (a tool call, then text; then text), which keeps the messages of every
call formatted by AgentScope's own OpenAIChatFormatter (what an OpenAI model would have been sent); the tool allowed
by a permission rule (without one the agent waits for the user's confirmation). Two turns, the state dumped after
each: ``state_turn1.json``, ``state_turn2.json``; ``api.json`` holds the formatted model calls and each turn's
``state.context`` as AgentScope's Msg objects dump it.

Run: python agentscope2_files.py OUT_DIR
"""
import asyncio
import json
import os
import sys

from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.tool import FunctionTool, Toolkit
from pydantic import BaseModel

OUT = os.path.abspath(sys.argv[1])
CALLS = []


class StubModel(ChatModelBase):
    class Parameters(BaseModel):
        pass

    def __init__(self):
        super().__init__(credential=OpenAICredential(api_key="sk-offline-stub"), model="stub",
                         parameters=self.Parameters(), stream=False, max_retries=0)
        self.n = 0
        self.formatter = OpenAIChatFormatter()  # the agent asks its model's formatter which media it takes

    async def _call_api(self, model_name, messages, tools=None, tool_choice=None, **kwargs):
        CALLS.append({"messages": await self.formatter.format(messages),
                      "tools": [t["function"]["name"] for t in (tools or [])]})
        self.n += 1
        if self.n == 1:
            return ChatResponse(content=[TextBlock(text="Let me check the weather first."),
                                         ToolCallBlock(id="call_weather_1", name="get_weather",
                                                       input=json.dumps({"city": "Hangzhou"}))], is_last=True)
        if self.n == 2:
            return ChatResponse(content=[TextBlock(text="It will be sunny, 24°C in Hangzhou.")], is_last=True)
        return ChatResponse(content=[TextBlock(text="Take the train: it takes about one hour.")], is_last=True)


async def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city (str): The city name.
    """
    return f"weather in {city}: sunny, 24C"


async def main():
    agent = Agent(name="Friday", system_prompt="You are Friday, a travel assistant.", model=StubModel(),
                  toolkit=Toolkit(tools=[FunctionTool(get_weather)]))
    agent.state.permission_context.allow_rules["get_weather"] = [
        PermissionRule(tool_name="get_weather", rule_content=None, behavior=PermissionBehavior.ALLOW,
                       source="userSettings")]
    api = {"context": {}}
    for turn, question in enumerate(["What's the weather in Hangzhou?", "How do I get there from Shanghai?"], 1):
        await agent.reply(Msg(name="user", role="user", content=[TextBlock(text=question)]))
        state = agent.state.model_dump(mode="json")
        with open(os.path.join(OUT, f"state_turn{turn}.json"), "w", encoding="utf-8") as f:
            json.dump(state, f, ensure_ascii=False)
        api["context"][f"turn{turn}"] = [m.model_dump(mode="json") for m in agent.state.context]
    api["calls"] = CALLS
    with open(os.path.join(OUT, "api.json"), "w", encoding="utf-8") as f:
        json.dump(api, f, ensure_ascii=False, indent=1)
    print("wrote state_turn1.json state_turn2.json api.json")


if __name__ == "__main__":
    asyncio.run(main())
