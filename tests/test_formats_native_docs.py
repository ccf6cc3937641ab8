"""Documents in each framework's own shape, generated with the optional parts those formats allow (signatures,
cache_control, null thoughts, missing is_error, invalid tool calls, raw_input, reasoning items, unknown items,
wrappers, extra request keys): reading one and writing it back in the same format gives the same document."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.memory.formats import detect_format, dumps, read_data

PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ids = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=10)
json_objects = st.dictionaries(st.text("abcxyz", min_size=1, max_size=3),
                               st.one_of(st.integers(-5, 5), text, st.booleans(), st.none()), max_size=3)
maybe = st.booleans()


def unique_ids(draw: st.DrawFn, n: int) -> list[str]:
    return [f"{draw(ids)}_{i}" for i in range(n)]


# --- Anthropic ---------------------------------------------------------------------------------------------------

@st.composite
def anthropic_docs(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if draw(maybe):
        doc["model"] = "claude-x"
        doc["max_tokens"] = draw(st.integers(1, 4096))
    if draw(maybe):
        doc["system"] = draw(
            st.one_of(text, st.lists(st.builds(lambda t: {"type": "text", "text": t}, text), min_size=1, max_size=2))
        )
    messages: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": draw(st.one_of(
            text, st.lists(st.builds(lambda t: {"type": "text", "text": t}, text), min_size=1, max_size=2)))})
        blocks: list[dict[str, Any]] = []
        if draw(maybe):
            blocks.append({"type": "thinking", "thinking": draw(text), "signature": draw(ids)})
        if draw(st.integers(0, 3)) == 0:
            blocks.append({"type": "redacted_thinking", "data": draw(ids)})
        if draw(maybe):
            blocks.append({"type": "text", "text": draw(text)})
        calls = unique_ids(draw, draw(st.integers(0, 3)))
        for call in calls:
            block = {"type": "tool_use", "id": f"t{turn}{call}", "name": draw(ids), "input": draw(json_objects)}
            if draw(st.integers(0, 4)) == 0:
                block["cache_control"] = {"type": "ephemeral"}
            blocks.append(block)
        if draw(st.integers(0, 5)) == 0 and blocks:
            blocks = draw(st.permutations(blocks))
        messages.append({"role": "assistant", "content": blocks or draw(text)})
        if calls:
            results = []
            for call in calls:
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{turn}{call}"}
                kind = draw(st.integers(0, 3))
                if kind == 1:
                    result["content"] = draw(text)
                elif kind == 2:
                    result["content"] = [{"type": "text", "text": draw(text)}]
                error = draw(st.sampled_from([None, True, False]))
                if error is not None:
                    result["is_error"] = error
                results.append(result)
            if draw(maybe):  # one user message per result, as AgentScope's formatter writes them
                messages.extend({"role": "user", "content": [r]} for r in results)
            else:
                if draw(maybe):
                    results.append({"type": "text", "text": draw(text)})
                messages.append({"role": "user", "content": results})
            messages.append({"role": "assistant", "content": [{"type": "text", "text": draw(text)}]})
    doc["messages"] = messages
    if draw(maybe):
        doc["tools"] = [{"name": draw(ids), "description": draw(text), "input_schema": {"type": "object"}}]
    return doc


@PROFILE
@given(anthropic_docs())
def test_it_writes_back_what_it_read_from_anthropic(doc: dict[str, Any]) -> None:
    assert json.loads(dumps(read_data(doc, "anthropic"), "anthropic")[0]) == doc


# --- LangChain ---------------------------------------------------------------------------------------------------

def lc(kind: str, **data: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "data": {
            "content": data.pop("content", ""),
            "additional_kwargs": data.pop("additional_kwargs", {}),
            "response_metadata": data.pop("response_metadata", {}),
            "type": kind,
            "name": data.pop("name", None),
            "id": data.pop("id", None),
            **data,
        },
    }


@st.composite
def langchain_docs(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    if draw(maybe):
        out.append(lc("system", content=draw(text), id=draw(st.none() | ids)))
    for turn in range(draw(st.integers(1, 3))):
        out.append(lc("human", content=draw(st.one_of(text, st.just([{"type": "text", "text": "hi"}]))),
                      name=draw(st.none() | ids), id=draw(st.none() | ids)))
        calls = unique_ids(draw, draw(st.integers(0, 2)))
        kwargs = {"reasoning_content": draw(text)} if draw(maybe) else {}
        tool_calls = [
            {"name": draw(ids), "args": draw(json_objects), "id": f"c{turn}{c}", "type": "tool_call"} for c in calls
        ]
        invalid = ([{"name": draw(ids), "args": "{oops", "id": f"bad{turn}", "error": draw(st.none() | text),
                     "type": "invalid_tool_call"}] if draw(st.integers(0, 4)) == 0 else [])
        out.append(
            lc(
                "ai",
                content="" if calls else draw(text),
                additional_kwargs=kwargs,
                response_metadata={"model_name": "m"} if draw(maybe) else {},
                id=draw(st.none() | ids),
                tool_calls=tool_calls,
                invalid_tool_calls=invalid,
                usage_metadata=draw(st.none() | st.just({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})),
            )
        )
        for call in tool_calls:
            out.append(
                lc(
                    "tool",
                    content=draw(text),
                    name=draw(st.none() | st.just(call["name"])),
                    id=draw(st.none() | ids),
                    tool_call_id=call["id"],
                    artifact=draw(st.none() | json_objects),
                    status=draw(st.sampled_from(["success", "error"])),
                )
            )
    return out


@PROFILE
@given(langchain_docs())
def test_it_writes_back_what_it_read_from_langchain(doc: list[dict[str, Any]]) -> None:
    assert detect_format(doc) == "langchain"
    assert json.loads(dumps(read_data(doc), "langchain")[0]) == doc


# --- AutoGen -----------------------------------------------------------------------------------------------------

@st.composite
def autogen_docs(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(maybe):
        messages.append({"content": draw(text), "type": "SystemMessage"})
    for turn in range(draw(st.integers(1, 3))):
        messages.append(
            {"content": draw(text), "source": draw(st.sampled_from(["user", "alice"])), "type": "UserMessage"}
        )
        calls = unique_ids(draw, draw(st.integers(0, 3)))
        if calls:
            fcs = [{"id": f"c{turn}{c}", "arguments": json.dumps(draw(json_objects)), "name": draw(ids)} for c in calls]
            messages.append(
                {"content": fcs, "thought": draw(st.none() | text), "source": "agent", "type": "AssistantMessage"}
            )
            results = [{"content": draw(text), "name": fc["name"], "call_id": fc["id"],
                        "is_error": draw(st.sampled_from([None, True, False]))} for fc in fcs]
            if draw(maybe) and len(results) > 1:  # results split over two messages
                messages.append({"content": results[:1], "type": "FunctionExecutionResultMessage"})
                messages.append({"content": results[1:], "type": "FunctionExecutionResultMessage"})
            else:
                messages.append({"content": results, "type": "FunctionExecutionResultMessage"})
        messages.append({"content": draw(text), "thought": draw(st.none() | text), "source": "agent",
                         "type": "AssistantMessage"})
    context = {"messages": messages}
    if draw(maybe):
        return {"type": "AssistantAgentState", "version": "1.0.0", "llm_context": context}
    return context


@PROFILE
@given(autogen_docs())
def test_it_writes_back_what_it_read_from_autogen(doc: dict[str, Any]) -> None:
    assert detect_format(doc) == "autogen"
    assert json.loads(dumps(read_data(doc), "autogen")[0]) == doc


# --- AgentScope --------------------------------------------------------------------------------------------------

stamps = st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])


@st.composite
def agentscope_docs(draw: st.DrawFn) -> dict[str, Any]:
    def msg(name: str, role: str, content: Any) -> list[Any]:
        return [{"id": draw(ids), "name": name, "role": role, "content": content,
                 "metadata": draw(st.just({}) | json_objects), "timestamp": draw(stamps)},
                draw(st.lists(st.sampled_from(["hint", "compressed"]), max_size=2, unique=True))]

    content = []
    if draw(maybe):
        content.append(msg("system", "system", draw(text)))
    for turn in range(draw(st.integers(1, 3))):
        content.append(msg("user", "user", draw(text)))
        calls = unique_ids(draw, draw(st.integers(0, 2)))
        blocks: list[dict[str, Any]] = []
        if draw(maybe):
            blocks.append({"type": "thinking", "thinking": draw(text)})
        if draw(maybe):
            blocks.append({"type": "text", "text": draw(text)})
        uses = []
        for c in calls:
            args = draw(json_objects)
            use = {"type": "tool_use", "id": f"c{turn}{c}", "name": draw(ids), "input": args}
            if draw(maybe):
                use["raw_input"] = json.dumps(args)
            uses.append(use)
        content.append(msg("Friday", "assistant", blocks + uses if blocks or uses else draw(text)))
        for use in uses:
            output = draw(st.one_of(text, st.just([{"type": "text", "text": "ok"}])))
            content.append(msg("system", "system", [{"type": "tool_result", "id": use["id"], "name": use["name"],
                                                     "output": output}]))
    return {"_compressed_summary": draw(text), "content": content}


@PROFILE
@given(agentscope_docs())
def test_it_writes_back_what_it_read_from_agentscope(doc: dict[str, Any]) -> None:
    assert detect_format(doc) == "agentscope"
    assert json.loads(dumps(read_data(doc), "agentscope")[0]) == doc


# --- OpenAI Responses --------------------------------------------------------------------------------------------

@st.composite
def responses_docs(draw: st.DrawFn) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 3))):
        items.append(
            draw(
                st.sampled_from(
                    [
                        {"type": "message", "role": "user", "content": "question"},
                        {"role": "user", "content": "untyped question"},
                        {
                            "type": "message",
                            "role": "user",
                            "content": [
                                {"type": "input_text", "text": "q"},
                                {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
                            ],
                        },
                    ]
                )
            )
        )
        if draw(maybe):
            reasoning: dict[str, Any] = {"type": "reasoning", "id": f"rs_{turn}",
                                         "summary": [{"type": "summary_text", "text": draw(text)}]}
            if draw(maybe):
                reasoning["encrypted_content"] = draw(ids)
            items.append(reasoning)
        if draw(maybe):
            items.append({"type": "message", "role": "assistant", "id": f"msg_{turn}", "status": "completed",
                          "content": [{"type": "output_text", "text": draw(text), "annotations": []}]})
        calls = unique_ids(draw, draw(st.integers(0, 2)))
        for c in calls:
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{turn}{c}",
                    "call_id": f"call_{turn}{c}",
                    "name": draw(ids),
                    "arguments": json.dumps(draw(json_objects)),
                    "status": "completed",
                }
            )
        if draw(st.integers(0, 4)) == 0:
            items.append({"type": "web_search_call", "id": f"ws_{turn}", "status": "completed"})
        for c in calls:
            items.append({"type": "function_call_output", "call_id": f"call_{turn}{c}",
                          "output": draw(st.one_of(text, st.just([{"type": "input_text", "text": "r"}])))})
        items.append({"type": "message", "role": "assistant", "id": f"msg_end{turn}", "status": "completed",
                      "content": [{"type": "output_text", "text": draw(text), "annotations": []}]})
    doc: dict[str, Any] = {"input": items}
    if draw(maybe):
        doc["instructions"] = draw(text)
    if draw(maybe):
        doc["model"] = "gpt-5"
        doc["tools"] = [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}]
    return doc


@PROFILE
@given(responses_docs())
def test_it_writes_back_what_it_read_from_openai_responses(doc: dict[str, Any]) -> None:
    assert detect_format(doc) == "openai_responses"
    assert json.loads(dumps(read_data(doc), "openai_responses")[0]) == doc


# --- OpenAI Chat Completions and OpenManus ------------------------------------------------------------------------

@st.composite
def openai_docs(draw: st.DrawFn) -> Any:
    messages: list[dict[str, Any]] = []
    if draw(maybe):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(text)})
    for turn in range(draw(st.integers(1, 3))):
        user: dict[str, Any] = {"role": "user", "content": draw(st.one_of(
            text, st.just([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}])))}
        if draw(maybe):
            user["name"] = draw(ids)
        messages.append(user)
        calls = unique_ids(draw, draw(st.integers(0, 2)))
        assistant: dict[str, Any] = {"role": "assistant"}
        if calls:
            if draw(maybe):
                assistant["content"] = None
            assistant["tool_calls"] = [
                {
                    "id": f"call_{turn}{c}",
                    "type": "function",
                    "function": {"name": draw(ids), "arguments": draw(st.sampled_from(["{}", '{"a": 1}', "{oops"]))},
                }
                for c in calls
            ]
        else:
            assistant["content"] = draw(text)
        if draw(st.integers(0, 3)) == 0:
            assistant["reasoning_content"] = draw(text)
        if draw(st.integers(0, 4)) == 0:
            assistant["refusal"] = None
        messages.append(assistant)
        for call in assistant.get("tool_calls", []):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(text)})
        if calls:
            messages.append({"role": "assistant", "content": draw(text)})
    if draw(maybe):
        return {"model": "gpt-4o", "messages": messages,
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
    return messages


@PROFILE
@given(openai_docs())
def test_it_writes_back_what_it_read_from_openai(doc: Any) -> None:
    assert detect_format(doc) == "openai"
    assert json.loads(dumps(read_data(doc), "openai")[0]) == doc
    rows = [doc] if isinstance(doc, dict) else [{"messages": doc}]
    [conv] = read_data(rows, "openai_jsonl")
    # openai_jsonl writes only protocol-valid conversations; these are, but for bad arguments and empty answers
    text, report = dumps([conv], "openai_jsonl")
    if report.skipped:
        assert report.skipped[0].reason.split(" ")[0] in {"invalid_tool_arguments", "empty_assistant"}
    else:
        assert json.loads(text) == {**rows[0], "messages": rows[0]["messages"]}


@st.composite
def openmanus_docs(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 3))):
        user: dict[str, Any] = {"role": "user", "content": draw(text)}
        if draw(st.integers(0, 3)) == 0:
            user["base64_image"] = "iVBORw0KGgo="
        out.append(user)
        calls = unique_ids(draw, draw(st.integers(1, 2)))
        fcs = [{"id": f"call_{turn}{c}", "type": "function", "function": {"name": draw(ids), "arguments": "{}"}}
               for c in calls]
        out.append({"role": "assistant", "content": draw(st.just("") | text), "tool_calls": fcs})
        out.extend({"role": "tool", "content": draw(text), "name": fc["function"]["name"], "tool_call_id": fc["id"]}
                   for fc in fcs)
        out.append({"role": "assistant", "content": draw(text)})
    return out


@PROFILE
@given(openmanus_docs())
def test_it_writes_back_what_it_read_from_openmanus(doc: list[dict[str, Any]]) -> None:
    assert detect_format(doc) == "openmanus"
    assert json.loads(dumps(read_data(doc), "openmanus")[0]) == doc
