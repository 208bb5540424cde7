"""Request checking and items → Harmony conversation."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from openapi import validate

from openchatml import Renderer
from openchatml.responses.crypto import Sealer
from openchatml.responses.errors import RequestError
from openchatml.responses.input import COMPACTION_KIND, REASONING_KIND, PromptSettings, build_conversation
from openchatml.responses.limits import MAX_JSON_DEPTH, RequestLimits
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.wire.items import (
    AssistantMessage,
    FunctionCall,
    FunctionCallOutput,
    ItemReference,
    ReasoningItem,
    UserMessage,
    load_item,
)

SEALER = Sealer(bytes(range(32)))
SETTINGS = PromptSettings(current_date="2026-01-02")


def prompt(body: dict[str, Any], sealer: Sealer | None = SEALER) -> str:
    """The prompt of ``body``, which is the same from the typed items and from their JSON."""
    request = parse_request({"model": "m", **body})
    typed = build_conversation(request, request.items, settings=SETTINGS, sealer=sealer)
    stored = [load_item(item.to_json()) for item in request.items]  # as read back from a store
    assert build_conversation(request, stored, settings=SETTINGS, sealer=sealer) == typed
    return Renderer().completion_text(typed)


def test_string_input_and_system_settings() -> None:
    text = prompt({"input": "Hi <|start|>", "reasoning": {"effort": "high"}, "instructions": "Be kind."})
    assert text.startswith("<|start|>system<|message|>You are ChatGPT")
    assert "Current date: 2026-01-02" in text and "Reasoning: high" in text
    assert "<|start|>developer<|message|># Instructions\n\nBe kind.<|end|>" in text
    # user text never becomes a control token
    assert "<|start|>user<|message|>Hi <<|start|><|end|><|start|>assistant" in text


def test_minimal_effort_is_read_as_low_and_echoed_valid() -> None:
    request = parse_request({"model": "m", "input": "x", "reasoning": {"effort": "minimal"}})
    assert request.reasoning_effort == "low"
    snapshot = ResponseState("resp_1", request, "m").to_json()
    validate(snapshot, "ResponseResource")  # the schema's efforts have no "minimal"
    assert snapshot["reasoning"]["effort"] == "low"
    assert "Reasoning: low" in prompt({"input": "x", "reasoning": {"effort": "minimal"}})


def test_items_become_messages() -> None:
    text = prompt(
        {
            "input": [
                {"role": "system", "content": "Policy."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": "Use the tool."}],
                },
                {"type": "message", "role": "assistant", "phase": "commentary", "content": "Let me check."},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ],
            "tools": [{"type": "function", "name": "get_weather"}],
        }
    )
    assert "<|start|>developer<|message|># Instructions\n\nPolicy.<|end|>" in text
    assert "<|start|>assistant<|channel|>analysis<|message|>Use the tool.<|end|>" in text
    assert "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>" in text
    assert (
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        "<|message|>{}<|call|>" in text
    )
    assert "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>sunny<|end|>" in text


def test_finished_turns_drop_their_analysis() -> None:
    text = prompt(
        {
            "input": [
                {"role": "user", "content": "a"},
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": "old thought"}],
                },
                {"role": "assistant", "content": "answer"},
                {"role": "user", "content": "b"},
            ]
        }
    )
    assert "old thought" not in text and "answer" in text


def test_reasoning_from_sealed_content_and_summary() -> None:
    sealed = SEALER.seal(REASONING_KIND, {"text": "secret thought"})
    item = {"type": "reasoning", "summary": [], "encrypted_content": sealed}
    assert "secret thought" in prompt({"input": [{"role": "user", "content": "q"}, item]})
    summary = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "a summary"}]}
    assert "analysis<|message|>a summary<|end|>" in prompt(
        {"input": [{"role": "user", "content": "q"}, summary]}
    )
    empty = {"type": "reasoning", "summary": []}
    assert "<|channel|>analysis" not in prompt({"input": [{"role": "user", "content": "q"}, empty]})
    other = Sealer(bytes(32)).seal(REASONING_KIND, {"text": "x"})
    with pytest.raises(RequestError) as caught:
        prompt({"input": [{"role": "user", "content": "q"}, {**item, "encrypted_content": other}]})
    assert caught.value.code == "invalid_encrypted_content"
    compaction = SEALER.seal(COMPACTION_KIND, {"messages": []})
    with pytest.raises(RequestError):  # a compaction payload is not reasoning
        prompt({"input": [{"role": "user", "content": "q"}, {**item, "encrypted_content": compaction}]})


def test_text_files_are_read_images_refused() -> None:
    data = base64.b64encode(b"col1,col2\n1,2").decode()
    part = {"type": "input_file", "filename": "t.csv", "file_data": data}
    text = prompt({"input": [{"role": "user", "content": [{"type": "input_text", "text": "Sum:"}, part]}]})
    assert "Sum:\n[file: t.csv]\ncol1,col2\n1,2" in text
    for bad in (
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_file", "file_data": base64.b64encode(b"\xff\xfe\x00binary").decode()},
    ):
        with pytest.raises(RequestError) as caught:
            prompt({"input": [{"role": "user", "content": [bad]}]})
        assert caught.value.code == "unsupported_content"
        assert caught.value.param == "input[0].content[0]"


def test_tools_schema_and_formats_in_developer_message() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    text = prompt(
        {
            "input": "x",
            "tools": [{"type": "function", "name": "count", "description": "Count.", "parameters": schema}],
            "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema}},
        }
    )
    assert "// Count.\ntype count = (_: {\nn?: number,\n}) => any;" in text
    assert "# Response Formats\n\n## answer\n\n" in text
    assert "type count" not in prompt(
        {"input": "x", "tool_choice": "none", "tools": [{"type": "function", "name": "count"}]}
    )


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"input": 3}, "input", "invalid_type"),
        ({"input": [{"type": "wat"}]}, "input[0].type", "invalid_value"),
        ({"input": "x", "tools": [{"type": "file_search"}]}, "tools[0].type", "unsupported_tool_type"),
        ({"input": "x", "tools": [{"type": "function", "name": "a b"}]}, "tools[0].name", "invalid_value"),
        (
            {"input": "x", "tool_choice": {"type": "function", "name": "f"}},
            "tool_choice.name",
            "invalid_value",
        ),
        ({"input": "x", "tool_choice": "required"}, "tool_choice", "invalid_value"),
        ({"input": "x", "reasoning": {"effort": "maximal"}}, "reasoning.effort", "invalid_value"),
        ({"input": "x", "include": ["everything"]}, "include[0]", "invalid_value"),
        ({"input": "x", "metadata": {str(i): "v" for i in range(17)}}, "metadata", "invalid_value"),
        ({"input": "x", "background": True, "store": False}, "background", "invalid_value"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens", "invalid_value"),
        ({"input": "x", "top_p": "1"}, "top_p", "invalid_type"),
    ],
)
def test_bad_requests_name_their_param(body: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"model": "m", **body})
    assert (caught.value.param, caught.value.code, caught.value.status) == (param, code, 400)
    validate(caught.value.payload(), "ErrorPayload")


def test_input_items_come_out_as_item_fields() -> None:
    request = parse_request(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello", "phase": "final_answer"},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "ok"},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}]},
            ],
        }
    )
    for item in (i.to_json() for i in request.items):
        validate(item, "ItemField")
        assert item["id"]


def test_typed_items_and_their_json() -> None:
    request = parse_request(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}]},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "id": ""},
                {"type": "function_call_output", "call_id": "c", "output": [{"type": "text", "text": "ok"}]},
                {
                    "type": "reasoning",
                    "summary": None,
                    "content": [{"type": "text", "text": "t"}],
                    "status": "x",
                },
                {"id": "msg_1"},
                {"type": None, "role": "user", "content": "easy", "status": "bogus"},
            ],
        }
    )
    kinds = [type(item) for item in request.items]
    assert kinds == [
        UserMessage,
        AssistantMessage,
        FunctionCall,
        FunctionCallOutput,
        ReasoningItem,
        ItemReference,
        UserMessage,
    ]
    data = [item.to_json() for item in request.items]
    assert data[6]["status"] == "completed"
    assert [load_item(d) for d in data] == list(request.items)  # the JSON reads back to the items
    assert data[1]["content"] == [{"type": "output_text", "text": "x", "annotations": []}]
    assert data[2]["id"].startswith("fc_") and data[2]["status"] == "completed"
    assert data[3]["output"] == [{"type": "input_text", "text": "ok"}]
    assert data[4] == {
        "type": "reasoning",
        "id": data[4]["id"],
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "t"}],
    }
    assert data[5] == {"type": "item_reference", "id": "msg_1"}


@pytest.mark.parametrize(
    ("body", "param", "code", "message"),
    [
        ("x", "body", "invalid_type", "Invalid type for 'body': expected an object, but got a string."),
        (
            {"input": "x", "bogus": 1, "prompt_cache_retention": "forever"},
            "prompt_cache_retention",
            "invalid_value",
            "Invalid value for 'prompt_cache_retention': 'forever'. Supported values are: "
            "'in_memory', '24h'.",
        ),
        (
            {"input": [{"type": "message"}]},
            "input[0].role",
            "invalid_value",
            "Invalid value for 'input[0].role': None. Supported values are: "
            "'user', 'assistant', 'system', 'developer'.",
        ),
        (
            {"input": [{"type": "wat"}]},
            "input[0].type",
            "invalid_value",
            "Invalid input item type 'wat' at 'input[0]'. Supported types are: 'message', "
            "'function_call', 'function_call_output', 'openai:custom_tool_call', "
            "'openai:custom_tool_call_output', 'openai:local_shell_call', 'openai:local_shell_call_output', "
            "'openai:shell_call', 'openai:shell_call_output', 'openai:apply_patch_call', "
            "'openai:apply_patch_call_output', 'openai:code_interpreter_call', 'openai:web_search_call', "
            "'openai:mcp_list_tools', 'openai:mcp_call', 'openai:mcp_approval_request', "
            "'openai:mcp_approval_response', 'reasoning', 'compaction', "
            "'item_reference'.",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
            "input[0].content[0].type",
            "invalid_value",
            "Invalid content type 'output_text' at 'input[0].content[0]': "
            "expected 'input_text', 'input_image' or 'input_file'.",
        ),
        (
            {"input": [{"role": "assistant", "content": [{"type": "input_image", "image_url": "u"}]}]},
            "input[0].content[0].type",
            "invalid_value",
            "Invalid content type 'input_image' at 'input[0].content[0]': "
            "expected 'output_text' or 'refusal'.",
        ),
        (
            {"input": [{"type": "reasoning", "summary": [{"type": "text", "text": "s"}]}]},
            "input[0].summary[0].type",
            "invalid_value",
            "Invalid content type 'text' at 'input[0].summary[0]': expected 'summary_text'.",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image"}]}]},
            "input[0].content[0]",
            "missing_required_parameter",
            "'input[0].content[0]' needs 'image_url' or 'file_id'.",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "filename": "a"}]}]},
            "input[0].content[0]",
            "missing_required_parameter",
            "'input[0].content[0]' needs 'file_data', 'file_url' or 'file_id'.",
        ),
        (
            {"input": [{"type": "function_call", "call_id": "c", "name": "a.b", "arguments": "{}"}]},
            "input[0].name",
            "invalid_value",
            "Invalid 'input[0].name': 'a.b' must match ^[a-zA-Z0-9_-]+$.",
        ),
        (
            {"input": [{"type": "function_call", "call_id": "c" * 65, "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
            "string_above_max_length",
            "'input[0].call_id' is too long: at most 64 characters.",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]},
            "input[0].output",
            "invalid_type",
            "Invalid type for 'input[0].output': expected an array, but got a number.",
        ),
        (
            {"input": [7]},
            "input[0]",
            "invalid_type",
            "Invalid type for 'input[0]': expected an object, but got a number.",
        ),
        (
            {"input": "x", "tools": [{"type": "function", "name": "a"}, {"name": "a"}]},
            "tools[1].name",
            "invalid_value",
            "Duplicate tool name 'a' at 'tools[1]'.",
        ),
        (
            {"input": "x", "tools": [{"type": "file_search"}]},
            "tools[0].type",
            "unsupported_tool_type",
            "Unsupported tool type 'file_search' at 'tools[0]': this server takes 'function', 'custom', "
            "'namespace', 'local_shell', 'shell', 'apply_patch', 'code_interpreter', 'mcp', 'web_search', "
            "'web_search_2025_08_26', 'web_search_preview', 'web_search_preview_2025_03_11'.",
        ),
        (
            {"input": "x", "tool_choice": {"type": "file_search"}},
            "tool_choice.type",
            "invalid_value",
            "Invalid tool_choice type 'file_search' at 'tool_choice': expected one of 'function', "
            "'custom', 'allowed_tools', 'mcp', 'local_shell', 'shell', 'apply_patch', 'web_search', "
            "'web_search_2025_08_26', 'web_search_preview', 'web_search_preview_2025_03_11', "
            "'code_interpreter'.",
        ),
        (
            {
                "input": "x",
                "tools": [{"name": "a"}],
                "tool_choice": {"type": "allowed_tools", "tools": [{"type": "function", "name": "b"}]},
            },
            "tool_choice.tools[0]",
            "invalid_value",
            "Allowed tool 'b' is not a function in 'tools'.",
        ),
        (
            {"input": "x", "text": {"format": {"type": "yaml"}}},
            "text.format.type",
            "invalid_value",
            "Invalid value for 'text.format.type': 'yaml'. Supported values are: 'text', 'json_object', "
            "'json_schema'.",
        ),
        (
            {"input": "x", "text": {"format": {"type": "json_schema", "name": "f"}}},
            "text.format.schema",
            "invalid_type",
            "Invalid type for 'text.format.schema': expected an object, but got null.",
        ),
        (
            {"input": "x", "metadata": {"k" * 70: "v"}},
            "metadata",
            "invalid_value",
            "metadata key 'kkkkkkkkkkkkkkkkkkkk'… is longer than 64 characters.",
        ),
        (
            {"input": "x", "metadata": {"k": "v" * 513}},
            "metadata.k",
            "string_above_max_length",
            "'metadata.k' is too long: at most 512 characters.",
        ),
        (
            {"input": "x", "temperature": 9},
            "temperature",
            "invalid_value",
            "'temperature' must be between 0 and 2, got 9.",
        ),
        (
            {"input": "x", "top_logprobs": 21},
            "top_logprobs",
            "invalid_value",
            "'top_logprobs' must be between 0 and 20, got 21.",
        ),
        (
            {"input": "x", "seed": True},
            "seed",
            "invalid_type",
            "Invalid type for 'seed': expected an integer, but got a boolean.",
        ),
        (
            {"input": "x", "stream": 1},
            "stream",
            "invalid_type",
            "Invalid type for 'stream': expected a boolean, but got a number.",
        ),
        (
            {
                "input": "x",
                "tools": [{"name": "a"}],
                "tool_choice": {"type": "allowed_tools", "tools": [{"type": None, "name": "a"}]},
            },
            "tool_choice.tools[0]",
            "invalid_value",
            "Allowed tool 'a' is not a function in 'tools'.",
        ),
        (
            {"input": "x", "tools": [{"name": "\ud800"}]},
            "tools[0].name",
            "invalid_value",
            "'tools[0].name' is not valid Unicode text (it holds a lone surrogate).",
        ),
        (
            {"input": "x", "truncation": "middle"},
            "truncation",
            "invalid_value",
            "Invalid value for 'truncation': 'middle'. Supported values are: 'auto', 'disabled'.",
        ),
    ],
)
def test_errors_say_what_was_expected(body: Any, param: str, code: str, message: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"model": "m", **body} if isinstance(body, dict) else body)
    assert (caught.value.param, caught.value.code, caught.value.message) == (param, code, message)
    validate(caught.value.payload(), "ErrorPayload")


def test_limits_are_checked_before_the_items_are_read() -> None:
    small = RequestLimits(max_input_items=2, max_content_parts=2, max_tools=1, max_item_references=1)
    cases = [
        ({"input": [{"role": "user", "content": "x"}, 5, 6]}, "input", "too_many_input_items"),
        ({"input": [{"role": "user", "content": [1, 2, 3]}]}, "input[0].content", "too_many_content_parts"),
        ({"input": "x", "tools": [1, 2]}, "tools", "too_many_tools"),
        ({"input": [{"id": "a"}, {"id": "b"}]}, "input", "too_many_item_references"),
        ({"input": "x", "include": ["x"] * 33}, "include", "too_many_includes"),
        (
            {"input": "x", "tools": [{"name": "f", "parameters": _deep(MAX_JSON_DEPTH)}]},
            "body",
            "json_too_deep",
        ),
    ]
    for body, param, code in cases:
        with pytest.raises(RequestError) as caught:
            parse_request({"model": "m", **body}, small)
        assert (caught.value.param, caught.value.code) == (param, code)


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def test_stored_items_are_read_without_the_request_bounds() -> None:
    """A function name the model wrote (``browser.search``) is read back as it was."""
    request = parse_request({"model": "m", "input": "x"})
    stored = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c",
        "name": "browser.search",
        "arguments": "{}",
    }
    text = Renderer().completion_text(build_conversation(request, [load_item(stored)], settings=SETTINGS))
    assert "to=functions.browser.search" in text
