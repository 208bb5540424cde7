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
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState

SEALER = Sealer(bytes(range(32)))
SETTINGS = PromptSettings(current_date="2026-01-02")


def prompt(body: dict[str, Any], sealer: Sealer | None = SEALER) -> str:
    request = parse_request({"model": "m", **body})
    return Renderer().completion_text(
        build_conversation(request, list(request.input), settings=SETTINGS, sealer=sealer)
    )


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
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type", "unsupported_tool_type"),
        ({"input": "x", "tools": [{"type": "function", "name": "a b"}]}, "tools[0].name", "invalid_value"),
        (
            {"input": "x", "tool_choice": {"type": "function", "name": "f"}},
            "tool_choice.name",
            "invalid_value",
        ),
        ({"input": "x", "tool_choice": "required"}, "tool_choice", "invalid_value"),
        ({"input": "x", "reasoning": {"effort": "max"}}, "reasoning.effort", "invalid_value"),
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
    for item in request.input:
        validate(item, "ItemField")
        assert item["id"]
