"""AutoGen AgentChat 0.7.5 writes ListMemory components, TaskResults and save_state() here (in .venv-mem), for the
autogen_memory reader's tests; adapted from tests/samples/memory/autogen/make_autogen.py, with the same offline
model (ReplayChatCompletionClient, every call's messages kept).

Beyond the sample: contents of every kind (text, a dict, bytes, a text of two lines, one without metadata), three
runs with a memory added between the second and the third (so the recalls differ), a thought with a tool call (a
ThoughtEvent), and the agent's state after the three runs (three memory messages in llm_context). ``api.json``
holds what AutoGen's own calls returned: ``query()`` of the memory after each run and the messages each model call
received.

Run: python autogen_files.py OUT_DIR                       write the files
     python autogen_files.py OUT_DIR load-memory FILE      ListMemory.load_component(FILE): its contents, as JSON
     python autogen_files.py OUT_DIR load-state FILE       AssistantAgent.load_state(FILE): its model context
"""
import asyncio
import json
import os
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

OUT = os.path.abspath(sys.argv[1])
INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
        "structured_output": False}


class RecordingReplay(ReplayChatCompletionClient):
    seen: list = []

    async def create(self, messages, **kw):
        RecordingReplay.seen.append([m.model_dump(mode="json") for m in messages])
        return await super().create(messages, **kw)


async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"The weather in {city} is 18 degrees and cloudy."


def dump(name, obj):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, default=str)


async def make():
    memory = ListMemory(name="user_prefs")
    await memory.add(MemoryContent(content="The user prefers metric units", mime_type=MemoryMimeType.TEXT,
                                   metadata={"category": "units"}))
    await memory.add(MemoryContent(content={"home_city": "Paris", "visits": [2024, 2025]},
                                   mime_type=MemoryMimeType.JSON, metadata={"source": "profile"}))
    await memory.add(MemoryContent(content=b"raw note", mime_type=MemoryMimeType.BINARY))
    await memory.add(MemoryContent(content="Allergies:\n2. none known", mime_type=MemoryMimeType.MARKDOWN))
    usage = RequestUsage(prompt_tokens=10, completion_tokens=5)
    client = RecordingReplay([
        CreateResult(finish_reason="function_calls", usage=usage, cached=False, thought="I should look it up.",
                     content=[FunctionCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')]),
        "It is 18 °C and cloudy in Paris.",
        "You told me you prefer metric units.",
        "You like tea.",
    ], model_info=INFO)
    agent = AssistantAgent("assistant", model_client=client, tools=[get_weather], memory=[memory],
                           reflect_on_tool_use=True, system_message="You are a helpful assistant.")
    api = {"query": []}
    for run, task in enumerate(["What's the weather in my home city?", "Which units do I prefer?",
                                "What do I drink?"], 1):
        if run == 3:
            await memory.add(MemoryContent(content="The user drinks tea", mime_type=MemoryMimeType.TEXT,
                                           metadata={"category": "food"}))
        result = await agent.run(task=task)
        dump(f"task_result_run{run}.json", result.model_dump(mode="json"))
        api["query"].append((await memory.query("anything")).model_dump(mode="json")["results"])
    dump("assistant_state.json", await agent.save_state())
    dump("list_memory_component.json", memory.dump_component().model_dump(mode="json"))
    api["llm_calls"] = RecordingReplay.seen
    api["rendered"] = [str(c.content) for c in memory.content]
    dump("api.json", api)


async def load_state(path):
    with open(path, encoding="utf-8") as f:
        state = json.load(f)
    agent = AssistantAgent("assistant", model_client=ReplayChatCompletionClient([], model_info=INFO))
    await agent.load_state(state)
    messages = await agent.model_context.get_messages()
    print(json.dumps([m.model_dump(mode="json") for m in messages], ensure_ascii=False))


def load_memory(path):
    with open(path, encoding="utf-8") as f:
        memory = ListMemory.load_component(json.load(f))
    print(json.dumps({"name": memory.name, "contents": [c.model_dump(mode="json") for c in memory.content],
                      "rendered": [str(c.content) for c in memory.content]}, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "load-memory":
        load_memory(sys.argv[3])
    elif len(sys.argv) > 2 and sys.argv[2] == "load-state":
        asyncio.run(load_state(sys.argv[3]))
    else:
        asyncio.run(make())
