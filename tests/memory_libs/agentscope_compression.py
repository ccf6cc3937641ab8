"""AgentScope 1.0.21 compressing an agent's memory (``ReActAgent(compression_config=...)``) and saving the session
with ``JSONSession``: the compressed messages keep the ``compressed`` mark and ``_compressed_summary`` holds the
summary its model wrote, as the library itself does before a reply (``_compress_memory_if_needed``).

Offline: a scripted ChatModelBase subclass answers the compression prompt with a structured summary (its metadata,
as a real model's structured output) and every other call with text; the threshold is low (CharTokenCounter) so the
third turn compresses. Writes ``user_1_long.json`` after each turn in ``turnN/`` and ``api.json``: the memory's
content with marks and the summary after each turn, and every model call's messages.

Run: python agentscope_compression.py OUT_DIR
"""
import asyncio
import json
import os
import shutil
import sys

OUT = os.path.abspath(sys.argv[1])
WORK = os.path.join(OUT, "work")
os.makedirs(WORK, exist_ok=True)

from agentscope.agent import ReActAgent  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope.memory import InMemoryMemory  # noqa: E402
from agentscope.message import Msg, TextBlock  # noqa: E402
from agentscope.model import ChatModelBase, ChatResponse  # noqa: E402
from agentscope.session import JSONSession  # noqa: E402
from agentscope.token import CharTokenCounter  # noqa: E402
from agentscope.tool import Toolkit  # noqa: E402

SUMMARY = {
    "task_overview": "Plan a week in Lisbon for Alice, by train where possible.",
    "current_state": "Dates fixed (3-10 May); hotel in Alfama chosen.",
    "important_discoveries": "Alice is vegan and dislikes early flights.",
    "next_steps": "Book the Sintra day trip.",
    "context_to_preserve": "Budget 1,500 EUR.",
}


class StubModel(ChatModelBase):
    def __init__(self):
        super().__init__(model_name="stub-compression", stream=False)
        self.calls = []

    async def __call__(self, messages, tools=None, tool_choice=None, structured_model=None, **kw):
        self.calls.append({"messages": messages, "structured": structured_model.__name__ if structured_model else None})
        if structured_model is not None and structured_model.__name__ == "SummarySchema":
            return ChatResponse(content=[TextBlock(type="text", text=json.dumps(SUMMARY))], metadata=SUMMARY)
        n = sum(1 for c in self.calls if c["structured"] is None)
        return ChatResponse(content=[TextBlock(type="text", text=f"Answer {n}: noted, and here is more detail "
                                                                  "about the trip " + "." * 40)])


async def main():
    model = StubModel()
    agent = ReActAgent(
        name="Atlas", sys_prompt="You are Atlas, a trip planner.", model=model, formatter=OpenAIChatFormatter(),
        toolkit=Toolkit(), memory=InMemoryMemory(),
        compression_config=ReActAgent.CompressionConfig(
            enable=True, agent_token_counter=CharTokenCounter(), trigger_threshold=400, keep_recent=2))
    session = JSONSession(save_dir=WORK)
    api = {"memories": {}, "summaries": {}}
    questions = ["I want a week in Lisbon in May, from the 3rd to the 10th.",
                 "I'm vegan and I hate early flights; the budget is 1,500 EUR.",
                 "Pick a hotel in Alfama, please.",
                 "Now plan a day trip to Sintra."]
    for turn, question in enumerate(questions, 1):
        await agent(Msg("user", question, "user"))
        await session.save_session_state(session_id="long", user_id="user_1", atlas=agent)
        os.makedirs(os.path.join(OUT, f"turn{turn}"), exist_ok=True)
        shutil.copyfile(os.path.join(WORK, "user_1_long.json"), os.path.join(OUT, f"turn{turn}", "user_1_long.json"))
        api["memories"][f"turn{turn}"] = [[m.to_dict(), marks] for m, marks in agent.memory.content]
        api["summaries"][f"turn{turn}"] = agent.memory._compressed_summary
    api["calls"] = [{"messages": c["messages"], "structured": c["structured"]} for c in model.calls]
    with open(os.path.join(OUT, "api.json"), "w") as f:
        json.dump(api, f, ensure_ascii=False, indent=1, default=str)


asyncio.run(main())
