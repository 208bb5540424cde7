"""The calls a response may make, checked after parsing: allowed names, strict arguments,
custom tools' grammars, ``none`` and forced calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openchatml.responses.call_rules import CallRules
from openchatml.responses.request import parse_request

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
LOOSE = {"type": "function", "name": "search", "strict": False, "parameters": {"type": "object"}}
PIN = {
    "type": "custom",
    "name": "pin",
    "format": {"type": "grammar", "syntax": "regex", "definition": "[0-9]{4}"},
}
PATCH = {
    "type": "custom",
    "name": "patch",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "+" /[a-z]+/'},
}
NOTE = {"type": "custom", "name": "note"}
TOOLS = [WEATHER, LOOSE, PIN, PATCH, NOTE]


def rules(**body: Any) -> CallRules:
    found = CallRules.of(parse_request({"model": "m", "input": "x", "tools": TOOLS, **body}))
    assert found is not None
    return found


def test_no_tools_no_rules() -> None:
    assert CallRules.of(parse_request({"model": "m", "input": "x"})) is None
    assert CallRules.of(parse_request({"model": "m", "input": "x", "tool_choice": "none"})) is None


def args(**values: Any) -> str:
    return json.dumps(values)


@pytest.mark.parametrize(
    ("name", "payload", "why"),
    [
        ("get_weather", args(city="Paris"), ""),
        ("get_weather", args(city="Paris", days=3), ""),
        ("get_weather", args(days=3), "do not match its schema"),
        ("get_weather", args(city="Paris", when="now"), "do not match its schema"),  # strict: closed
        ("get_weather", args(city="Parisienne"), "do not match its schema"),  # maxLength
        ("get_weather", "{", "not JSON"),
        ("get_weather", "[1]", "not a JSON object"),
        ("search", args(anything=[1, 2]), ""),  # not strict: any object
        ("search", "3", "not a JSON object"),
        ("pin", "1234", ""),
        ("pin", "12345", "regex grammar"),
        ("patch", "+abc", ""),
        ("patch", "abc", "lark grammar"),
        ("note", "any text {", ""),
        ("send_mail", args(), "which tool_choice does not allow"),
    ],
)
def test_each_call_is_checked(name: str, payload: str, why: str) -> None:
    refusal = rules().refusal(name, payload)
    assert (why in refusal) if why else refusal == ""


def test_choices_restrict_the_names() -> None:
    named = rules(tool_choice={"type": "function", "name": "search"})
    assert named.mode == "required" and named.allowed == {"search"}
    assert "does not allow" in named.refusal("get_weather", args(city="Oslo"))
    custom = rules(tool_choice={"type": "custom", "name": "pin"})
    assert custom.allowed == {"pin"} and custom.refusal("pin", "0000") == ""
    allowed = rules(
        tool_choice={
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "search"}],
        }
    )
    assert allowed.mode == "auto" and allowed.allowed == {"search"}
    assert allowed.unmet(0) == ""
    none = rules(tool_choice="none")
    assert "'none'" in none.refusal("search", "{}")
    required = rules(tool_choice="required")
    assert "requires a call" in required.unmet(0) and required.unmet(1) == ""
    assert rules().unmet(0) == ""
