"""The reference oracle for the 2026 strategies: runs the real libraries on a batch of cases.

Run by the tests in the reference virtualenv (``.venv-ref-2026``, made by ``make test`` from
``requirements-ref-2026.txt``): those libraries cannot be installed beside the pinned environment. Reads a JSON
list of cases on standard input and writes a JSON list of answers on standard output, one per case:

    case   {"strategy", "params", "counter": "messages" | "approx", "messages": [the view, OpenAI dicts]}
    answer {"messages": [{"source": view index or null, "message": OpenAI dict}], "error": text or null, ...}

``source`` is the view message an output message came from (null for a message the library inserted). The counter
is memoryviz's own (agents.memory.tokens, pure Python, imported from the checkout), handed to the library as its
token counter; library messages are turned back into memoryviz messages to be counted, so an edited message is
recounted exactly as memoryviz recounts it (once per message object: the libraries copy a message to change it).

A case with ``"repeat": n`` is also timed (bench/bench_trimming.py): the library's trim alone runs n times, each on
inputs converted afresh before the timer (fewer times once the runs add up to a minute), and the answer
carries ``"seconds"``, the median of the process's CPU time (``time.process_time``, as the bench's own side: on a
shared machine, time spent waiting for a core is no one's).
"""
from __future__ import annotations

import gc
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _import_memoryviz_core() -> tuple[Any, Any]:
    """memoryviz's schema and counters from the checkout. Its package is named ``agents``, like the Agents SDK's:
    import ours, then take it out of the way so that ``import agents`` finds the SDK."""
    root = str(Path(__file__).resolve().parents[2])
    sys.path.insert(0, root)
    try:
        from agents.memory import schema, tokens
    finally:
        sys.path.remove(root)
        for name in [n for n in sys.modules if n == "agents" or n.startswith("agents.")]:
            del sys.modules[name]
    return schema, tokens


_schema, _tokens = _import_memoryviz_core()
FunctionCall, Message, ToolCall = _schema.FunctionCall, _schema.Message, _schema.ToolCall
get_counter = _tokens.get_counter

SUMMARY_MARK = "<<SUMMARY>>"


class Case:
    def __init__(self, data: dict[str, Any]) -> None:
        self.strategy: str = data["strategy"]
        self.params: dict[str, Any] = data.get("params", {})
        self.counter = get_counter(data.get("counter", "messages"))
        self.messages = [Message.model_validate(m) for m in data["messages"]]
        self.repeat = int(data.get("repeat", 0))
        self.seconds: float | None = None
        self._counted: dict[int, tuple[Any, int]] = {}  # id of a library message -> (it, kept alive; its tokens)

    def count(self, messages: list[Message]) -> int:
        return sum(self.counter.count(m) for m in messages) + self.counter.per_list

    def count_each(self, batch: Any, convert: Callable[[Any], Message]) -> int:
        """The library's list counted as memoryviz counts it: each library message converted back and counted once
        (a library never changes a message in place, it copies it); ``timed``'s ``prepare`` counts the input's."""
        total = self.counter.per_list
        for m in batch:
            seen = self._counted.get(id(m))
            if seen is None:
                seen = self._counted[id(m)] = (m, self.counter.count(convert(m)))
            total += seen[1]
        return total

    def timed(self, prepare: Callable[[], Any], run: Callable[[Any], Any]) -> tuple[Any, Any]:
        """``run(prepare())``, returned with the prepared inputs. With ``repeat``, ``run`` alone is timed that many
        times (fewer once they add up to a minute), each time on inputs prepared afresh (a library changes its
        input in place), and ``seconds`` is the median."""
        if not self.repeat:
            inputs = prepare()
            return inputs, run(inputs)
        times: list[float] = []
        while len(times) < self.repeat and sum(times) < 60:  # a library taking minutes is timed fewer times
            inputs = prepare()
            gc.collect()
            start = time.process_time()
            result = run(inputs)
            times.append(time.process_time() - start)
        self.seconds = statistics.median(times)
        return inputs, result


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# --- LangChain ------------------------------------------------------------------------------------------------


def _to_langchain(case: Case) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for i, m in enumerate(case.messages):
        content: Any = m.content if m.content is not None else ""
        common = {"id": str(i), **({"name": m.name} if m.name else {})}
        if m.role in ("system", "developer"):
            out.append(SystemMessage(content=content, **common))
        elif m.role == "user":
            out.append(HumanMessage(content=content, **common))
        elif m.role == "tool":
            out.append(ToolMessage(content=content, tool_call_id=m.tool_call_id or "",
                                   status="error" if m.is_error else "success", **common))
        else:
            calls = [{"name": tc.function.name, "args": _args(tc.function.arguments), "id": tc.id, "type": "tool_call"}
                     for tc in m.tool_calls]
            out.append(AIMessage(content=content, tool_calls=calls, **common))
    return out


def _from_langchain(case: Case, lc: Any) -> Message:
    """A LangChain message as memoryviz's (for counting and for the answer): the original's role and fields, the
    library's content and arguments (unchanged arguments keep their original string)."""
    if lc.id is None or not str(lc.id).isdigit() or int(lc.id) >= len(case.messages):
        return Message(role="user" if lc.type == "human" else "assistant", content=lc.content)
    original = case.messages[int(lc.id)]
    # LangChain holds a missing content as "": it stays missing.
    update: dict[str, Any] = {"content": None if lc.content == "" and original.content is None else lc.content}
    if original.role == "assistant":
        calls = []
        for tc, lc_call in zip(original.tool_calls, lc.tool_calls, strict=False):
            same = lc_call["args"] == _args(tc.function.arguments)
            arguments = tc.function.arguments if same else json.dumps(lc_call["args"])
            calls.append(ToolCall(id=tc.id, function=FunctionCall(name=tc.function.name, arguments=arguments)))
        update["tool_calls"] = calls
    return original.model_copy(update=update)


def _langchain_answer(case: Case, messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for lc in messages:
        source = int(lc.id) if lc.id is not None and str(lc.id).isdigit() else None
        if lc.type == "human" and lc.additional_kwargs.get("lc_source") == "summarization":
            source = None
        message = _from_langchain(case, lc) if source is not None else Message(role="user", content=lc.content)
        out.append({"source": source, "message": message.to_openai()})
    return out


def langchain_summarization(case: Case) -> dict[str, Any]:
    from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT, SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages.utils import get_buffer_string

    p = case.params

    def counter(batch: Any) -> int:
        return case.count_each(batch, lambda m: _from_langchain(case, m))

    read: list[Any] = []

    def summarizer(trimmed: list[Any]) -> str:
        read.extend(trimmed)
        return SUMMARY_MARK

    trigger: Any = None
    clauses = {k: p[v] for k, v in (("tokens", "trigger_tokens"), ("messages", "trigger_messages"))
               if p.get(v) is not None}
    if clauses:
        trigger = dict(clauses) if p.get("trigger_all") else [(k, v) for k, v in clauses.items()]
    keep = (
        ("tokens", p["keep_tokens"]) if p.get("keep_tokens") is not None else ("messages", p.get("keep_messages", 20))
    )
    middleware = SummarizationMiddleware(
        FakeListChatModel(responses=["unused"]), trigger=trigger, keep=keep, token_counter=counter,
        trim_tokens_to_summarize=p.get("trim_tokens_to_summarize", 4000), summarizer=summarizer,
    )

    def prepare() -> list[Any]:
        read.clear()
        messages = _to_langchain(case)
        counter(messages)
        return messages

    messages, update = case.timed(prepare, lambda messages: middleware.before_model({"messages": messages}, None))
    result = messages if update is None else [m for m in update["messages"] if m.type != "remove"]
    answer: dict[str, Any] = {"messages": _langchain_answer(case, result), "error": None}
    if read:
        answer["read"] = [
            {"source": int(m.id), "message": _from_langchain(case, m).to_openai()} for m in read
        ]
        answer["prompt"] = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(read, format="xml")).rstrip()
    return answer


def langchain_clear_tool_uses(case: Case) -> dict[str, Any]:
    from langchain.agents.middleware.context_editing import ClearToolUsesEdit

    p = case.params
    edit = ClearToolUsesEdit(
        trigger=p.get("trigger", 100_000), clear_at_least=p.get("clear_at_least", 0), keep=p.get("keep", 3),
        clear_tool_inputs=p.get("clear_tool_inputs", False), exclude_tools=p.get("exclude_tools", []),
        placeholder=p.get("placeholder", "[cleared]"),
    )

    def count_tokens(batch: Any) -> int:
        return case.count_each(batch, lambda m: _from_langchain(case, m))

    def prepare() -> list[Any]:
        messages = _to_langchain(case)
        count_tokens(messages)
        return messages

    messages, _ = case.timed(prepare, lambda messages: edit.apply(messages, count_tokens=count_tokens))
    return {"messages": _langchain_answer(case, messages), "error": None}


# --- OpenAI Agents SDK ----------------------------------------------------------------------------------------


def _to_responses_items(case: Case) -> list[dict[str, Any]]:
    """reference/trimming-2026.md §0: an assistant message's text (when not empty) is a message item, then one
    function_call per call; a tool message one function_call_output; any other message one message item. Each item
    carries an id naming its message (m3) or its call (m3c1), which the SDK passes through."""
    items: list[dict[str, Any]] = []
    for i, m in enumerate(case.messages):
        if m.role == "assistant":
            if m.text:
                items.append({"role": "assistant", "content": m.text, "id": f"m{i}"})
            for k, tc in enumerate(m.tool_calls):
                items.append({"type": "function_call", "call_id": tc.id, "name": tc.function.name,
                              "arguments": tc.function.arguments, "id": f"m{i}c{k}"})
        elif m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text, "id": f"m{i}"})
        else:
            items.append({"role": m.role, "content": m.text, "id": f"m{i}"})
    return items


def _from_responses_items(case: Case, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items back into messages, in the order of their first item; a message keeps only its items sent."""
    order: list[int] = []
    parts: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        i = int(item["id"][1:].split("c")[0])
        if i not in parts:
            order.append(i)
            parts[i] = []
        parts[i].append(item)
    out = []
    for i in order:
        original = case.messages[i]
        if original.role == "assistant":
            text = next((p["content"] for p in parts[i] if p.get("role") == "assistant"), None)
            calls = [ToolCall(id=p["call_id"], function=FunctionCall(name=p["name"], arguments=p["arguments"]))
                     for p in parts[i] if p.get("type") == "function_call"]
            message = original.model_copy(update={
                "content": original.content if text is not None else None, "tool_calls": calls})
        elif original.role == "tool":
            [p] = parts[i]
            message = original.model_copy(update={"content": p["output"] if p["output"] != original.text
                                                  else original.content})
        else:
            message = original
        out.append({"source": i, "message": message.to_openai()})
    return out


def openai_session_limit(case: Case) -> dict[str, Any]:
    import asyncio

    from agents.memory import SessionSettings, SQLiteSession
    from agents.run_internal.session_persistence import prepare_input_with_session

    loop = asyncio.new_event_loop()
    sessions: list[Any] = []

    def prepare() -> Any:
        session = SQLiteSession("memoryviz")
        sessions.append(session)
        loop.run_until_complete(session.add_items(_to_responses_items(case)))
        return session

    def run(session: Any) -> list[dict[str, Any]]:
        prepared, _ = loop.run_until_complete(prepare_input_with_session(
            [], session, None, SessionSettings(limit=case.params.get("limit"))))
        return prepared

    try:
        _, prepared = case.timed(prepare, run)
    finally:
        for session in sessions:
            session.close()
        loop.close()
    return {"messages": _from_responses_items(case, prepared), "error": None}


def openai_tool_output_trimmer(case: Case) -> dict[str, Any]:
    from agents.extensions import ToolOutputTrimmer
    from agents.run_config import CallModelData, ModelInputData

    p = case.params
    trimmer = ToolOutputTrimmer(recent_turns=p.get("recent_turns", 2), max_output_chars=p.get("max_output_chars", 500),
                                preview_chars=p.get("preview_chars", 200), trimmable_tools=p.get("trimmable_tools"))
    _, data = case.timed(
        lambda: CallModelData(model_data=ModelInputData(input=_to_responses_items(case), instructions=None),
                              agent=None, context=None),
        trimmer,
    )
    return {"messages": _from_responses_items(case, data.input), "error": None}


# --- Strands ------------------------------------------------------------------------------------------------


def _to_strands(case: Case) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """§0: a run of tool messages is one user message of toolResult blocks; an assistant message is its text and
    toolUse blocks; any other message a plain user message. Returns the messages and the view indices of each."""
    out: list[dict[str, Any]] = []
    members: list[list[int]] = []
    for i, m in enumerate(case.messages):
        if m.role == "tool":
            block = {"toolResult": {"toolUseId": m.tool_call_id, "content": [{"text": m.text}],
                                    "status": "error" if m.is_error else "success"}}
            if out and members[-1] and case.messages[members[-1][-1]].role == "tool":
                out[-1]["content"].append(block)
                members[-1].append(i)
                continue
            out.append({"role": "user", "content": [block]})
        elif m.role == "assistant":
            content: list[dict[str, Any]] = [{"text": m.text}] if m.text else []
            content += [
                {"toolUse": {"toolUseId": tc.id, "name": tc.function.name, "input": _args(tc.function.arguments)}}
                for tc in m.tool_calls
            ]
            out.append({"role": "assistant", "content": content})
        else:
            out.append({"role": "user", "content": [{"text": m.text}]})
        members.append([i])
    return out, members


def _from_strands(case: Case, originals: list[dict[str, Any]], members: list[list[int]],
                  result: list[dict[str, Any]]) -> list[dict[str, Any]]:
    where = {id(m): u for u, m in enumerate(originals)}
    out = []
    for message in result:
        u = where.get(id(message))
        if u is None:  # the summary
            text = "".join(b["text"] for b in message["content"] if "text" in b)
            out.append({"source": None, "message": {"role": message["role"], "content": text}})
            continue
        if case.messages[members[u][0]].role == "tool":
            for i, block in zip(members[u], message["content"], strict=False):
                text = "".join(item.get("text", "") for item in block["toolResult"]["content"])
                original = case.messages[i]
                changed = original if text == original.text else original.model_copy(update={"content": text})
                out.append({"source": i, "message": changed.to_openai()})
        else:
            out.append({"source": members[u][0], "message": case.messages[members[u][0]].to_openai()})
    return out


def strands_sliding_window(case: Case) -> dict[str, Any]:
    from types import SimpleNamespace

    from strands.agent.conversation_manager import SlidingWindowConversationManager
    from strands.types.exceptions import ContextWindowOverflowException

    p = case.params

    def prepare() -> tuple[Any, list[dict[str, Any]], list[list[int]], Any]:
        messages, members = _to_strands(case)
        manager = SlidingWindowConversationManager(window_size=p.get("window_size", 40),
                                                   should_truncate_results=p.get("should_truncate_results", True),
                                                   pin_first=p.get("pin_first"))
        return SimpleNamespace(messages=list(messages)), messages, members, manager

    def run(inputs: tuple[Any, list[dict[str, Any]], list[list[int]], Any]) -> str | None:
        agent, _, _, manager = inputs
        try:
            if p.get("context_overflow"):
                manager.reduce_context(agent, e=RuntimeError("context overflow"))
            else:
                manager.apply_management(agent)
        except ContextWindowOverflowException as exc:
            return str(exc)
        return None

    (agent, messages, members, _), error = case.timed(prepare, run)
    if error is not None:
        return {"messages": None, "error": error}
    return {"messages": _from_strands(case, messages, members, agent.messages), "error": None}


def strands_summarizing(case: Case) -> dict[str, Any]:
    from types import SimpleNamespace

    from strands.agent.conversation_manager import SummarizingConversationManager
    from strands.types.exceptions import ContextWindowOverflowException

    read: list[Any] = []

    class Recording(SummarizingConversationManager):
        def _generate_summary(self, messages: list[Any], agent: Any) -> Any:  # the model call, recorded
            read.extend(messages)
            return {"role": "user", "content": [{"text": SUMMARY_MARK}]}

    p = case.params

    def prepare() -> tuple[Any, list[dict[str, Any]], list[list[int]], Any]:
        read.clear()
        messages, members = _to_strands(case)
        manager = Recording(summary_ratio=p.get("summary_ratio", 0.3),
                            preserve_recent_messages=p.get("preserve_recent_messages", 10),
                            pin_first=p.get("pin_first"))
        return SimpleNamespace(messages=list(messages)), messages, members, manager

    def run(inputs: tuple[Any, list[dict[str, Any]], list[list[int]], Any]) -> str | None:
        agent, _, _, manager = inputs
        try:
            manager.reduce_context(agent, e=RuntimeError("context overflow"))
        except ContextWindowOverflowException as exc:
            return str(exc)
        return None

    (agent, messages, members, _), error = case.timed(prepare, run)
    if error is not None:
        return {"messages": None, "error": error}
    where = {id(m): u for u, m in enumerate(messages)}
    return {"messages": _from_strands(case, messages, members, agent.messages), "error": None,
            "summarized": [i for m in read for i in members[where[id(m)]]]}


# --- Microsoft Agent Framework -------------------------------------------------------------------------------


def _to_maf(case: Case) -> list[Any]:
    from agent_framework import Content
    from agent_framework import Message as MafMessage

    out = []
    for i, m in enumerate(case.messages):
        contents: list[Any] = [m.text] if m.text and m.role != "tool" else []
        if m.role == "assistant":
            contents += [
                Content.from_function_call(call_id=tc.id, name=tc.function.name, arguments=tc.function.arguments)
                for tc in m.tool_calls
            ]
        if m.role == "tool":
            contents = [Content.from_function_result(call_id=m.tool_call_id, result=m.text)]
        out.append(MafMessage(role=m.role, contents=contents, message_id=f"m{i}"))
    return out


def _from_maf(case: Case, messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        mid = message.message_id or ""
        if mid.startswith("m") and mid[1:].isdigit():
            out.append({"source": int(mid[1:]), "message": case.messages[int(mid[1:])].to_openai()})
        else:
            out.append({"source": None, "message": {"role": message.role, "content": message.text}})
    return out


def _run_maf(case: Case, strategy: Any, tokenizer: Any = None,
             before: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    import asyncio

    from agent_framework._compaction import apply_compaction

    def prepare() -> list[Any]:
        before()
        return _to_maf(case)

    loop = asyncio.new_event_loop()
    try:
        _, result = case.timed(prepare, lambda messages: loop.run_until_complete(
            apply_compaction(messages, strategy=strategy, tokenizer=tokenizer)))
    finally:
        loop.close()
    return _from_maf(case, result)


def maf_sliding_window(case: Case) -> dict[str, Any]:
    from agent_framework._compaction import SlidingWindowStrategy

    p = case.params
    strategy = SlidingWindowStrategy(keep_last_groups=p.get("keep_last_groups", 20),
                                     preserve_system=p.get("preserve_system", True))
    return {"messages": _run_maf(case, strategy), "error": None}


def maf_truncation(case: Case) -> dict[str, Any]:
    from agent_framework._compaction import TruncationStrategy, _serialize_message

    p = case.params
    tokenizer = None
    if p.get("count_tokens"):
        counts = {_serialize_message(m): case.counter.count(case.messages[k]) for k, m in enumerate(_to_maf(case))}

        class CounterTokenizer:  # memoryviz's counter, per message, as MAF's tokenizer
            def count_tokens(self, text: str) -> int:
                return counts[text]

        tokenizer = CounterTokenizer()
    strategy = TruncationStrategy(max_n=p.get("max_n", 40), compact_to=p.get("compact_to", 20), tokenizer=tokenizer,
                                  preserve_system=p.get("preserve_system", True),
                                  preserve_first_user_group=p.get("preserve_first_user_group", False))
    return {"messages": _run_maf(case, strategy), "error": None}


def maf_selective_tool_calls(case: Case) -> dict[str, Any]:
    from agent_framework._compaction import SelectiveToolCallCompactionStrategy

    strategy = SelectiveToolCallCompactionStrategy(
        keep_last_tool_call_groups=case.params.get("keep_last_tool_call_groups", 1)
    )
    return {"messages": _run_maf(case, strategy), "error": None}


def maf_tool_result_compaction(case: Case) -> dict[str, Any]:
    from agent_framework._compaction import ToolResultCompactionStrategy

    strategy = ToolResultCompactionStrategy(keep_last_tool_call_groups=case.params.get("keep_last_tool_call_groups", 1))
    return {"messages": _run_maf(case, strategy), "error": None}


def maf_summarization(case: Case) -> dict[str, Any]:
    from agent_framework import ChatResponse
    from agent_framework import Message as MafMessage
    from agent_framework._compaction import SummarizationStrategy

    asked: list[Any] = []

    class Client:  # the summarizing model, recorded
        async def get_response(self, messages: Any, stream: bool = False, **kwargs: Any) -> Any:
            asked.extend(messages)
            return ChatResponse(messages=[MafMessage(role="assistant", contents=[SUMMARY_MARK])])

    p = case.params
    strategy = SummarizationStrategy(client=Client(), target_count=p.get("target_count", 4),
                                     threshold=p.get("threshold", 2),
                                     max_summary_input_tokens=p.get("max_summary_input_tokens", 8000))
    answer: dict[str, Any] = {"messages": _run_maf(case, strategy, before=asked.clear), "error": None}
    if asked:
        answer["prompt"] = [{"role": m.role, "content": m.text} for m in asked]
    return answer


# --- Google ADK ----------------------------------------------------------------------------------------------


def adk_compaction(case: Case) -> dict[str, Any]:
    """Replays ADK's sliding-window compaction: the session grows invocation by invocation, ADK's
    _run_compaction_for_sliding_window runs after each, and the request is assembled by
    _process_compaction_events. The summarizer writes memoryviz's placeholder (ADK compares sizes)."""
    import asyncio

    from google.adk.agents import LlmAgent
    from google.adk.apps._configs import EventsCompactionConfig
    from google.adk.apps.app import App
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.apps.compaction import _run_compaction_for_sliding_window
    from google.adk.events import Event, EventActions
    from google.adk.events.event_actions import EventCompaction
    from google.adk.flows.llm_flows.context._compaction import _process_compaction_events
    from google.adk.sessions import Session
    from google.genai import types

    messages = case.messages
    names = {tc.id: tc.function.name for m in messages for tc in m.tool_calls}
    members: dict[int, list[int]] = {}  # id of an event -> the view indices it stands for

    def build() -> list[Any]:
        events: list[Any] = []
        invocation = 0
        i = 0
        while i < len(messages):
            m = messages[i]
            if m.role == "user" and i > 0:
                invocation += 1
            if m.role == "tool":
                j = i
                parts = []
                while j < len(messages) and messages[j].role == "tool":
                    r = messages[j]
                    parts.append(types.Part(function_response=types.FunctionResponse(
                        id=r.tool_call_id, name=names.get(r.tool_call_id), response={"result": r.text})))
                    j += 1
                content = types.Content(role="user", parts=parts)
                span = list(range(i, j))
                author = "agent"
                i = j
            else:
                if m.role == "assistant":
                    parts = [types.Part(text=m.text)] if m.text else []
                    parts += [types.Part(function_call=types.FunctionCall(id=tc.id, name=tc.function.name,
                                                                          args=_args(tc.function.arguments)))
                              for tc in m.tool_calls]
                    content, author = types.Content(role="model", parts=parts), "agent"
                else:
                    content, author = types.Content(role="user", parts=[types.Part(text=m.text)]), "user"
                span = [i]
                i += 1
            event = Event(author=author, invocation_id=f"inv{invocation}", content=content,
                          timestamp=float(len(events) + 1))
            members[id(event)] = span
            events.append(event)
        return events

    covered: dict[tuple[float, float], int] = {}
    prompts: list[str] = []
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer

    formatter = LlmEventSummarizer.__new__(LlmEventSummarizer)  # its prompt formatting, without a model
    formatter._prompt_template = LlmEventSummarizer._DEFAULT_PROMPT_TEMPLATE

    class Placeholder(BaseEventsSummarizer):
        async def maybe_summarize_events(self, *, events: list[Any]) -> Any:
            prompts.append(formatter._prompt_template.format(
                conversation_history=formatter._format_events_for_prompt(events)))
            n = sum(len(members[id(e)]) for e in events)
            text = f"[summary of {n} message]" if n == 1 else f"[summary of {n} messages]"
            covered[(events[0].timestamp, events[-1].timestamp)] = n
            return Event(author="user", invocation_id=Event.new_id(), actions=EventActions(compaction=EventCompaction(
                start_timestamp=events[0].timestamp, end_timestamp=events[-1].timestamp,
                compacted_content=types.Content(role="model", parts=[types.Part(text=text)]))))

    p = case.params
    config = EventsCompactionConfig(summarizer=Placeholder(), compaction_interval=p.get("compaction_interval", 3),
                                    overlap_size=p.get("overlap_size", 1))
    app = App(name="memoryviz", root_agent=LlmAgent(name="agent", model="gemini-2.5-flash"),
              events_compaction_config=config)

    def prepare() -> tuple[list[Any], Any]:
        members.clear()
        covered.clear()
        prompts.clear()
        return build(), Session(id="s", app_name="memoryviz", user_id="u", events=[])

    async def replay(events: list[Any], session: Any) -> list[Any]:
        for k, event in enumerate(events):
            session.events.append(event)
            if k + 1 < len(events) and events[k + 1].invocation_id == event.invocation_id:
                continue  # the invocation is still running
            async for compaction in _run_compaction_for_sliding_window(app, session, None):
                session.events.append(compaction)
        return _process_compaction_events(session.events, "agent")

    loop = asyncio.new_event_loop()
    try:
        _, request = case.timed(prepare, lambda inputs: loop.run_until_complete(replay(*inputs)))
    finally:
        loop.close()
    out = []
    for event in request:
        span = members.get(id(event))
        if span is None:
            out.append({"source": None, "message": {"role": "assistant", "content": event.content.parts[0].text}})
            continue
        for k in span:
            out.append({"source": k, "message": messages[k].to_openai()})
    return {"messages": out, "error": None, "prompts": prompts}


# --- the frameworks' own summary prompts ---------------------------------------------------------------------


def prompts(case: Case) -> dict[str, Any]:
    from agent_framework._compaction import DEFAULT_SUMMARIZATION_PROMPT as MAF_PROMPT
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
    from strands.agent.conversation_manager.compression.context_compression import DEFAULT_SUMMARIZATION_PROMPT

    return {"messages": [], "error": None, "prompts": {
        "langchain": DEFAULT_SUMMARY_PROMPT, "strands": DEFAULT_SUMMARIZATION_PROMPT, "maf": MAF_PROMPT,
        "adk": LlmEventSummarizer._DEFAULT_PROMPT_TEMPLATE, "adk_tool_cap": LlmEventSummarizer._MAX_TOOL_CONTENT_CHARS}}


ORACLES: dict[str, Callable[[Case], dict[str, Any]]] = {
    "prompts": prompts,
    "maf_sliding_window": maf_sliding_window,
    "maf_truncation": maf_truncation,
    "maf_selective_tool_calls": maf_selective_tool_calls,
    "maf_tool_result_compaction": maf_tool_result_compaction,
    "maf_summarization": maf_summarization,
    "adk_compaction": adk_compaction,
    "strands_sliding_window": strands_sliding_window,
    "strands_summarizing": strands_summarizing,
    "openai_session_limit": openai_session_limit,
    "openai_tool_output_trimmer": openai_tool_output_trimmer,
    "langchain_summarization": langchain_summarization,
    "langchain_clear_tool_uses": langchain_clear_tool_uses,
}


def main() -> None:
    cases = json.load(sys.stdin)
    answers = []
    for data in cases:
        try:
            case = Case(data)
            answer = ORACLES[data["strategy"]](case)
            if case.repeat:
                answer["seconds"] = case.seconds
            answers.append(answer)
        except Exception:  # one case's crash is that case's answer, not the batch's
            answers.append({"messages": None, "error": None, "crash": traceback.format_exc()})
    json.dump(answers, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
