"""Tool calls checked against declared tools: ``E-CALL-SCHEMA``."""

from __future__ import annotations

import pytest

from openchatml import (
    CallSchemaError,
    Conversation,
    DeveloperContent,
    Message,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from openchatml.core.calls import check_tool_call, declared_namespaces, find_tool

WEATHER = ToolDescription(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1},
        },
        "required": ["location"],
        "additionalProperties": False,
    },
)
NOW = ToolDescription("now", "The time.")
CONV = Conversation.from_messages(
    [
        Message.system(SystemContent(tools={"python": ToolNamespaceConfig.python()})),
        Message.developer(
            DeveloperContent(tools={"functions": ToolNamespaceConfig("functions", None, (WEATHER, NOW))})
        ),
    ]
)


def test_valid_call_returns_arguments() -> None:
    call = Message.tool_call("functions.get_weather", '{"location": "Tokyo", "days": 2}')
    assert check_tool_call(call, CONV) == {"location": "Tokyo", "days": 2}


def test_namespaces_are_collected_from_system_and_developer() -> None:
    assert set(declared_namespaces(CONV)) == {"python", "functions"}
    assert find_tool("functions.now", declared_namespaces(CONV)) == NOW
    assert find_tool("functions.nope", declared_namespaces(CONV)) is None
    assert find_tool("python", declared_namespaces(CONV)) is not None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ('{"unit": "c"}', "'location' is a required property"),
        ('{"location": "Tokyo", "unit": "k"}', "['unit']"),
        ('{"location": "Tokyo", "days": 0}', "['days']"),
        ('{"location": 3}', "['location']"),
        ('{"location": "x", "extra": 1}', "Additional properties"),
        ('{"location": ', "not JSON"),
    ],
)
def test_invalid_arguments_are_call_schema_errors(args: str, fragment: str) -> None:
    with pytest.raises(CallSchemaError) as info:
        check_tool_call(Message.tool_call("functions.get_weather", args), CONV)
    assert info.value.code == "E-CALL-SCHEMA"
    assert fragment in info.value.message


def test_undeclared_tool() -> None:
    with pytest.raises(CallSchemaError, match=r"undeclared tool 'functions\.launch'"):
        check_tool_call(Message.tool_call("functions.launch", "{}"), CONV)


def test_tool_without_parameters_takes_no_arguments() -> None:
    assert check_tool_call(Message.tool_call("functions.now", ""), CONV) == {}
    with pytest.raises(CallSchemaError, match="takes no arguments"):
        check_tool_call(Message.tool_call("functions.now", '{"tz": "UTC"}'), CONV)


def test_free_text_tool_gets_its_text() -> None:
    code = Message.tool_call("python", "print(1)", channel="analysis", content_type=None)
    assert check_tool_call(code, CONV) == "print(1)"


def test_not_a_call() -> None:
    with pytest.raises(CallSchemaError, match="not a tool call"):
        check_tool_call(Message.user("hi"), CONV)


def test_invalid_schema_is_reported() -> None:
    bad = ToolDescription("bad", "", {"type": "object", "properties": {"a": {"type": "nonsense"}}})
    ns = {"functions": ToolNamespaceConfig("functions", None, (bad,))}
    with pytest.raises(CallSchemaError, match="not valid JSON Schema"):
        check_tool_call(Message.tool_call("functions.bad", '{"a": 1}'), ns)
