"""Custom tools on the wire: the tool, its choice, its call and output items and its input
events, read in either dialect's spelling and written in each (``custom_tool_call`` for
OpenAI, ``openai:custom_tool_call`` for Open Responses), and parsed by the official SDK."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import (
    CustomTool as SDKCustomTool,
)
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseCustomToolCallOutput,
    ToolChoiceCustom,
)
from pydantic import TypeAdapter
from sdk import validate_openai_event, validate_openai_response

from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.events import (
    EVENT_TYPES,
    CustomToolCallInputDelta,
    CustomToolCallInputDone,
    OutputItemAdded,
    load_event,
    respell,
)
from openchatml.responses.wire.items import (
    CustomToolCall,
    CustomToolCallOutput,
    InputItem,
    OutputItem,
    load_item,
)
from openchatml.responses.wire.openapi import schemas
from openchatml.responses.wire.tools import (
    AllowedTools,
    CustomChoice,
    CustomTool,
    GrammarFormat,
    PlainText,
    Tool,
    ToolChoice,
)

OPENAI = WireDialect.OPENAI
OPENRESPONSES = WireDialect.OPENRESPONSES
LARK = 'start: "*** Begin Patch" LF hunk+ "*** End Patch"\nhunk: /[^*].*/ LF\n%import common.LF\n'
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"

TOOLS: TypeAdapter[Tool] = TypeAdapter(Tool)
CHOICES: TypeAdapter[ToolChoice] = TypeAdapter(ToolChoice)
INPUT_ITEMS: TypeAdapter[InputItem] = TypeAdapter(InputItem)
OUTPUT_ITEMS: TypeAdapter[OutputItem] = TypeAdapter(OutputItem)


@pytest.mark.parametrize("kind", ["custom", "openai:custom"])
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, PlainText()),
        ({"type": "text"}, PlainText()),
        (
            {"type": "grammar", "syntax": "lark", "definition": LARK},
            GrammarFormat(syntax="lark", definition=LARK),
        ),
        (
            {"type": "grammar", "syntax": "regex", "definition": r"\d+"},
            GrammarFormat(syntax="regex", definition=r"\d+"),
        ),
    ],
)
def test_a_custom_tool_in_either_spelling(kind: str, given: Any, expected: Any) -> None:
    data: dict[str, Any] = {"type": kind, "name": "apply_patch", "description": "Edit files."}
    if given is not None:
        data["format"] = given
    tool = TOOLS.validate_python(data)
    assert isinstance(tool, CustomTool)
    assert (tool.type, tool.name, tool.description, tool.format) == (
        "openai:custom",
        "apply_patch",
        "Edit files.",
        expected,
    )
    assert tool.grammar == (expected if isinstance(expected, GrammarFormat) else None)
    theirs = tool.to_json(OPENAI)
    assert theirs["type"] == "custom" and tool.to_json(OPENRESPONSES)["type"] == "openai:custom"
    assert SDKCustomTool.model_validate(theirs).format is not None
    assert TOOLS.validate_python(theirs) == tool == TOOLS.validate_python(tool.to_json())


@pytest.mark.parametrize("kind", ["custom", "openai:custom"])
def test_the_choice_of_a_custom_tool(kind: str) -> None:
    choice = CHOICES.validate_python({"type": kind, "name": "apply_patch"})
    assert choice == CustomChoice(name="apply_patch")
    assert choice.to_json(OPENAI) == {"type": "custom", "name": "apply_patch"}
    assert choice.to_json() == {"type": "openai:custom", "name": "apply_patch"}
    ToolChoiceCustom.model_validate(choice.to_json(OPENAI))
    allowed = CHOICES.validate_python(
        {
            "type": "allowed_tools",
            "tools": [{"type": kind, "name": "apply_patch"}, {"type": "function", "name": "f"}],
        }
    )
    assert isinstance(allowed, AllowedTools)
    assert [t.type for t in allowed.tools] == ["openai:custom", "function"]
    assert [t["type"] for t in allowed.to_json(OPENAI)["tools"]] == ["custom", "function"]
    assert [t["type"] for t in allowed.to_json()["tools"]] == ["openai:custom", "function"]


@pytest.mark.parametrize("prefix", ["", "openai:"])
def test_the_call_and_its_output_as_input_items(prefix: str) -> None:
    call = INPUT_ITEMS.validate_python(
        {"type": f"{prefix}custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": PATCH}
    )
    assert isinstance(call, CustomToolCall)
    assert (call.call_id, call.name, call.input, call.status) == ("call_1", "apply_patch", PATCH, "completed")
    assert call.id.startswith("ctc_")
    output = INPUT_ITEMS.validate_python(
        {"type": f"{prefix}custom_tool_call_output", "call_id": "call_1", "output": "Done.", "id": "x_1"}
    )
    assert isinstance(output, CustomToolCallOutput)
    assert (output.id, output.output) == ("x_1", "Done.")
    parts = INPUT_ITEMS.validate_python(
        {
            "type": f"{prefix}custom_tool_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_text", "text": "Done."}],
        }
    )
    assert isinstance(parts, CustomToolCallOutput) and parts.id.startswith("ctco_")
    for item in (call, output, parts):
        theirs, ours = item.to_json(OPENAI), item.to_json()
        assert theirs["type"] == ours["type"].removeprefix("openai:") != ours["type"]
        assert load_item(theirs) == item == load_item(ours)
    ResponseCustomToolCall.model_validate(call.to_json(OPENAI))
    ResponseCustomToolCallOutput.model_validate(output.to_json(OPENAI))
    ResponseCustomToolCallOutput.model_validate(parts.to_json(OPENAI))


def test_a_call_is_an_output_item_an_output_is_not() -> None:
    call = CustomToolCall(call_id="call_1", name="apply_patch", input=PATCH, status="in_progress")
    assert OUTPUT_ITEMS.validate_python(call.to_json(OPENAI)) == call
    with pytest.raises(ValueError):
        OUTPUT_ITEMS.validate_python(CustomToolCallOutput(call_id="call_1", output="x").to_json())


@pytest.mark.parametrize("dialect", list(WireDialect))
def test_the_input_events_in_each_dialect(dialect: WireDialect) -> None:
    delta = CustomToolCallInputDelta(5, "ctc_1", 2, "*** Begin")
    done = CustomToolCallInputDone(6, "ctc_1", 2, PATCH)
    prefix = "openai:" if dialect is OPENRESPONSES else ""
    assert delta.to_json(dialect) == {
        "type": f"{prefix}response.custom_tool_call_input.delta",
        "sequence_number": 5,
        "item_id": "ctc_1",
        "output_index": 2,
        "delta": "*** Begin",
    }
    assert done.to_json(dialect) == {
        "type": f"{prefix}response.custom_tool_call_input.done",
        "sequence_number": 6,
        "item_id": "ctc_1",
        "output_index": 2,
        "input": PATCH,
    }
    for event in (delta, done):
        data = event.to_json(dialect)
        assert load_event(data) == event
        assert respell(data, OPENAI) == event.to_json(OPENAI)
        assert respell(data, OPENRESPONSES) == event.to_json(OPENRESPONSES)
    ResponseCustomToolCallInputDeltaEvent.model_validate(delta.to_json(OPENAI))
    ResponseCustomToolCallInputDoneEvent.model_validate(done.to_json(OPENAI))
    added = OutputItemAdded(
        4, 2, CustomToolCall(call_id="c", name="apply_patch", input="", status="in_progress")
    )
    assert added.to_json(dialect)["item"]["type"] == f"{prefix}custom_tool_call"
    assert load_event(added.to_json(dialect)) == added
    validate_openai_event(added.to_json(OPENAI))
    validate_openai_event(delta.to_json(OPENAI))
    validate_openai_event(done.to_json(OPENAI))


def test_a_response_echoes_its_custom_tools_and_choice() -> None:
    request = parse_request(
        {
            "model": "m",
            "input": "x",
            "tools": [
                {
                    "type": "custom",
                    "name": "apply_patch",
                    "format": {"type": "grammar", "syntax": "lark", "definition": LARK},
                },
                {"name": "f"},
                {"type": "custom", "name": "shell"},
            ],
            "tool_choice": {"type": "custom", "name": "shell"},
        }
    )
    state = ResponseState("resp_1", request, "m")
    state.output.append(CustomToolCall(call_id="call_1", name="shell", input="ls"))
    theirs = state.to_json(OPENAI)
    assert [(t["type"], t["name"]) for t in theirs["tools"]] == [
        ("function", "f"),
        ("custom", "apply_patch"),
        ("custom", "shell"),
    ]
    assert theirs["tools"][1]["format"] == {"type": "grammar", "syntax": "lark", "definition": LARK}
    assert theirs["tools"][2]["format"] == {"type": "text"}
    assert theirs["tool_choice"] == {"type": "custom", "name": "shell"}
    assert theirs["output"][0]["type"] == "custom_tool_call"
    validate_openai_response(theirs)
    ours = state.to_json()
    assert (
        ours["tool_choice"]["type"] == "openai:custom"
        and ours["output"][0]["type"] == "openai:custom_tool_call"
    )


def test_the_openapi_document_has_the_custom_types() -> None:
    components = schemas()
    for name in ("CustomTool", "GrammarFormat", "CustomChoice", "CustomToolCall", "CustomToolCallOutput"):
        assert name in components, name
    for cls in (CustomToolCallInputDelta, CustomToolCallInputDone):
        assert components[cls.__name__]["properties"]["type"]["const"] == cls.type
        assert EVENT_TYPES[cls.type] is cls
    assert set(components["CustomToolCall"]["properties"]["type"]["enum"]) == {
        "custom_tool_call",
        "openai:custom_tool_call",
    }
    assert {"call_id", "name", "input"} <= set(components["CustomToolCall"]["required"])
