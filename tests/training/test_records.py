"""Training records in each format become the conversation the server would build from
them (tools included, as the model sees them); malformed records raise a RecordError
naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openchatml.core.encoding import load_encoding
from openchatml.core.messages import Role
from openchatml.responses.input import PromptSettings
from openchatml.training.masks import harmony_sample
from openchatml.training.records import RecordError, RecordFormat, record_format
from openchatml.training_inputs import record_conversation

SETTINGS = PromptSettings(current_date="2025-01-01")
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CHAT = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "reasoning_content": "Call the tool.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "20C"},
        {"role": "assistant", "content": "It is 20 degrees."},
    ],
    "tools": [{"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}],
}
RESPONSES = {
    "instructions": "Be brief.",
    "input": [{"type": "message", "role": "user", "content": "Weather in Paris?"}],
    "output": [
        {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "Call the tool."}],
        },
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "20C"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is 20 degrees."}],
        },
    ],
    "tools": [WEATHER],
}
CONVERSATION = {
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "channel": "analysis", "content": "Call the tool."},
        {
            "role": "assistant",
            "channel": "commentary",
            "tool_call": {"id": "c1", "recipient": "functions.get_weather", "arguments": '{"city": "Paris"}'},
        },
        {"role": "tool", "name": "functions.get_weather", "call_id": "c1", "content": "20C"},
        {"role": "assistant", "channel": "final", "content": "It is 20 degrees."},
    ]
}


@pytest.mark.parametrize(
    ("record", "fmt"),
    [
        (CHAT, RecordFormat.CHAT),
        (RESPONSES, RecordFormat.RESPONSES),
        (RESPONSES["input"] + RESPONSES["output"], RecordFormat.RESPONSES),
        (CONVERSATION, RecordFormat.CONVERSATION),
        (CONVERSATION["messages"], RecordFormat.CONVERSATION),
        ({"messages": [{"role": "user", "content": "hi"}]}, RecordFormat.CHAT),
    ],
)
def test_formats_are_told_apart(record: Any, fmt: RecordFormat) -> None:
    assert record_format(record) is fmt


@pytest.mark.parametrize("record", [CHAT, RESPONSES, CONVERSATION], ids=["chat", "responses", "conversation"])
def test_each_format_gives_the_same_turn(record: Any) -> None:
    conversation = record_conversation(record, settings=SETTINGS)
    assistant = [(m.channel, m.recipient, m.text) for m in conversation if m.role is Role.ASSISTANT]
    assert assistant == [
        ("analysis", None, "Call the tool."),
        ("commentary", "functions.get_weather", '{"city": "Paris"}'),
        ("final", None, "It is 20 degrees."),
    ]
    tool = next(m for m in conversation if m.role is Role.TOOL)
    assert (tool.call_id, tool.text) == ("c1", "20C")
    text = load_encoding().decode(list(harmony_sample(conversation).ids))
    if record is not CONVERSATION:  # API records: the tools and date as the server gives them
        assert "## functions" in text and "type get_weather = (_: {" in text
        assert "Current date: 2025-01-01" in text and "Be brief." in text


def test_a_plain_input_string_is_a_user_message() -> None:
    conversation = record_conversation({"input": "hi", "output": []}, settings=SETTINGS)
    assert [m.role for m in conversation][-1] is Role.USER


@pytest.mark.parametrize(
    ("record", "fmt", "field", "words"),
    [
        (7, RecordFormat.AUTO, None, "JSON object or array"),
        ({"prompt": "x"}, RecordFormat.AUTO, None, "'messages'"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, RecordFormat.AUTO, "messages[0].role", "wizard"),
        ({**CHAT, "id": "a", "extra": 1}, RecordFormat.CHAT, "extra", "unknown key"),
        ({"input": [], "metadata": {}, "extra": 1}, RecordFormat.AUTO, "extra", "unknown key"),
        ({"input": {"a": 1}}, RecordFormat.RESPONSES, "input", "array"),
        ({**RESPONSES, "output": RESPONSES["output"][2:]}, RecordFormat.AUTO, "output[0].call_id", "c1"),
        ({"input": [{"type": "bogus"}]}, RecordFormat.AUTO, "input[0].type", "bogus"),
        (
            {"messages": [{"role": "user", "chanel": "x"}]},
            RecordFormat.CONVERSATION,
            "messages[0].chanel",
            "unknown key",
        ),
        (
            {"messages": [{"role": "assistant", "channel": 7}]},
            RecordFormat.AUTO,
            "messages[0].channel",
            "string",
        ),
    ],
)
def test_malformed_records_name_the_field(
    record: Any, fmt: RecordFormat, field: str | None, words: str
) -> None:
    with pytest.raises(RecordError) as caught:
        record_conversation(json.loads(json.dumps(record)), fmt, settings=SETTINGS)
    error = caught.value.at(12)
    assert error.line == 12 and error.field == field
    assert str(error).startswith(f"line 12: {field}: " if field else "line 12: ")
    assert words in str(error)


@pytest.mark.parametrize("record", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_a_datasets_own_id_and_metadata_are_ignored(record: Any) -> None:
    tagged = {**record, "id": "row-17", "metadata": {"source": "traces"}}
    assert record_conversation(tagged, settings=SETTINGS) == record_conversation(record, settings=SETTINGS)
