"""Custom tools over HTTP, end to end: the official ``openai`` SDK offers a grammar tool,
parses the model's call into ``ResponseCustomToolCall`` (streamed as its input events),
and sends the call's output back in a follow-up the model then reads; Open Responses
clients get the same with ``openai:`` prefixes; a bad grammar is a 400 naming its param."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from live import ScriptedEngine
from openai.types.responses import (
    CustomTool,
    ResponseCustomToolCall,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ToolChoiceCustom,
)
from openapi import known, validate
from sdk import validate_openai_response
from test_responses_api import check_stream, prompt_text, sse_events

from openchatml import load_encoding

PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Hello, "world" \\o/\n*** End Patch\n'
LARK = "start: patch\npatch: /\\*\\*\\* Begin Patch\\n(.|\\n)*\\*\\*\\* End Patch\\n/\n"
APPLY_PATCH: dict[str, Any] = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": LARK},
}
SAID = (
    "<|channel|>analysis<|message|>Write the file.<|end|><|start|>assistant"
    f"<|channel|>commentary to=functions.apply_patch<|message|>{PATCH}<|call|>"
)
CALL_IN_PROMPT = f"<|start|>assistant to=functions.apply_patch<|channel|>commentary<|message|>{PATCH}<|call|>"


def script() -> list[int]:
    return load_encoding().encode(SAID, allowed_special="all")


def test_the_sdk_parses_a_custom_call_and_sends_its_output_back(serve: Any) -> None:
    engine = ScriptedEngine(script(), chunk=2)
    client = serve(engine).client()
    response = client.responses.create(model="scripted-model", input="Add hello.txt.", tools=[APPLY_PATCH])
    call = response.output[1]
    assert type(call) is ResponseCustomToolCall
    assert (call.name, call.input, call.type) == ("apply_patch", PATCH, "custom_tool_call")
    assert type(response.tools[0]) is CustomTool and response.tools[0].format is not None
    assert response.tools[0].format.type == "grammar"
    assert "type apply_patch = (_: string) => any;" in prompt_text(engine)
    assert "// start: patch\n// patch: /\\*\\*\\* Begin Patch\\n" in prompt_text(engine)

    follow = client.responses.create(
        model="scripted-model",
        previous_response_id=response.id,
        tools=[APPLY_PATCH],
        input=[{"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Done."}],
    )
    assert follow.status == "completed"
    text = prompt_text(engine)
    assert CALL_IN_PROMPT in text
    assert "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Done.<|end|>" in text
    items = client.responses.input_items.list(follow.id, order="asc")
    assert [item.type for item in items.data] == ["custom_tool_call_output"]


def test_a_stateless_follow_up_sends_the_call_and_its_output(serve: Any) -> None:
    engine = ScriptedEngine(script(), chunk=5)
    client = serve(engine).client()
    follow = client.responses.create(
        model="scripted-model",
        store=False,
        tools=[APPLY_PATCH],
        tool_choice={"type": "custom", "name": "apply_patch"},
        input=[
            {"role": "user", "content": "Add hello.txt."},
            {"type": "custom_tool_call", "call_id": "call_7", "name": "apply_patch", "input": PATCH},
            {
                "type": "custom_tool_call_output",
                "call_id": "call_7",
                "output": [{"type": "input_text", "text": "Done."}],
            },
        ],
    )
    assert type(follow.tool_choice) is ToolChoiceCustom and follow.tool_choice.name == "apply_patch"
    text = prompt_text(engine)
    assert CALL_IN_PROMPT + "<|start|>functions.apply_patch to=assistant" in text


def test_the_sdk_streams_the_input_events(serve: Any) -> None:
    client = serve(ScriptedEngine(script(), chunk=1, enforces_grammar=True)).client()
    events = list(
        client.responses.create(
            model="scripted-model", input="Add hello.txt.", tools=[APPLY_PATCH], stream=True
        )
    )
    deltas = [e for e in events if e.type == "response.custom_tool_call_input.delta"]
    (done,) = [e for e in events if e.type == "response.custom_tool_call_input.done"]
    assert len(deltas) > 3 and all(type(e) is ResponseCustomToolCallInputDeltaEvent for e in deltas)
    assert type(done) is ResponseCustomToolCallInputDoneEvent
    assert "".join(e.delta for e in deltas) == done.input == PATCH
    added = [e for e in events if e.type == "response.output_item.added"]
    assert type(added[1].item) is ResponseCustomToolCall and added[1].item.input == ""
    final = events[-1]
    assert final.type == "response.completed"
    assert type(final.response.output[1]) is ResponseCustomToolCall
    replayed = list(client.responses.retrieve(final.response.id, stream=True))
    assert [e.input for e in replayed if e.type == "response.custom_tool_call_input.done"] == [PATCH]


def test_open_responses_clients_get_prefixed_names(serve: Any) -> None:
    server = serve(ScriptedEngine(script(), chunk=3))
    body = {"model": "scripted-model", "input": "Add hello.txt.", "tools": [APPLY_PATCH]}
    with server.http() as http:
        events = sse_events(http.post("/v1/responses", json={**body, "stream": True}).text)
        plain = http.post("/v1/responses", json=body).json()
        as_openai = http.post("/v1/responses", json=body, headers={"OpenChatML-Wire": "openai"}).json()
    check_stream(events)
    kinds = {e["type"] for e in events}
    assert {
        "openai:response.custom_tool_call_input.delta",
        "openai:response.custom_tool_call_input.done",
    } <= kinds
    assert plain["output"][1]["type"] == "openai:custom_tool_call" and plain["output"][1]["input"] == PATCH
    assert plain["tools"][0]["type"] == "openai:custom"
    validate(known(plain), "ResponseResource")
    assert as_openai["output"][1]["type"] == "custom_tool_call" and as_openai["tools"][0]["type"] == "custom"
    validate_openai_response(as_openai)


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        (
            {**APPLY_PATCH, "format": {"type": "grammar", "syntax": "regex", "definition": "(unclosed"}},
            "tools[0].format.definition",
        ),
        (
            {**APPLY_PATCH, "format": {"type": "grammar", "syntax": "lark", "definition": ""}},
            "tools[0].format.definition",
        ),
    ],
)
def test_a_bad_grammar_is_a_400_naming_its_param(serve: Any, tool: dict[str, Any], param: str) -> None:
    client = serve(ScriptedEngine(script())).client()
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="scripted-model", input="x", tools=[tool])
    assert caught.value.status_code == 400 and caught.value.param == param
