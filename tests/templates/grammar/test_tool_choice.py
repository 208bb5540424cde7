"""What ``tool_choice`` allows: the names, the mode, the errors."""

from __future__ import annotations

from typing import Any

import pytest
from grammar_checks import TOOLS, check
from hand_formats import FORMATS

from openchatml.templates.errors import UnsupportedTemplateError
from openchatml.templates.format import TemplateFormat
from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.grammar.tool_choice import (
    FreeformTool,
    ToolSelection,
    function_tools,
    offered_tools,
    select_tools,
)


def test_allowed_tools_restrict_the_names() -> None:
    fmt = FORMATS["hermes"]
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_time"}],
    }
    grammar = tool_call_grammar(fmt, TOOLS, tool_choice=choice)
    assert grammar.tools == ("get_time",) and not grammar.lazy
    check(
        grammar, fmt, '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>', True
    )
    check(
        grammar,
        fmt,
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        False,
    )
    chat = tool_call_grammar(fmt, TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert chat.tools == ("get_time",)


def test_choice_errors() -> None:
    fmt = FORMATS["hermes"]
    with pytest.raises(ValueError, match="not an offered"):
        tool_call_grammar(fmt, TOOLS, tool_choice={"type": "function", "name": "nope"})
    with pytest.raises(ValueError, match="no tool to call"):
        tool_call_grammar(fmt, [{"type": "web_search"}])
    with pytest.raises(UnsupportedTemplateError):
        tool_call_grammar(TemplateFormat(name="plain"), TOOLS)


OFFERED = {"a": {}, "b": {}, "c": {}}


@pytest.mark.parametrize(
    ("choice", "selection"),
    [
        ("auto", ToolSelection("auto", ("a", "b", "c"))),
        ("required", ToolSelection("required", ("a", "b", "c"))),
        ({"type": "function", "name": "b"}, ToolSelection("required", ("b",))),
        ({"type": "function", "function": {"name": "c"}}, ToolSelection("required", ("c",))),
        (
            {
                "type": "allowed_tools",
                "tools": [{"type": "function", "name": "c"}, {"name": "x"}, "a", {"function": {"name": "a"}}],
            },
            ToolSelection("auto", ("c", "a")),
        ),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"name": "b"}, {"name": "b"}]},
            ToolSelection("required", ("b",)),
        ),
    ],
)
def test_select_tools(choice: Any, selection: ToolSelection) -> None:
    assert select_tools(choice, OFFERED) == selection


def test_none_selects_no_tool() -> None:
    assert select_tools("none", OFFERED) == ToolSelection("none", ())
    assert select_tools("none", {}) == ToolSelection("none", ())


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("any", "unknown tool_choice 'any'"),
        ({"type": "custom"}, "None, which is not an offered tool"),
        ({"type": "mystery", "name": "a"}, "unknown tool_choice"),
        (3, "unknown tool_choice 3"),
        ({"type": "allowed_tools", "mode": "none", "tools": []}, "unknown allowed_tools mode"),
        ({"type": "allowed_tools", "tools": [{"name": "x"}]}, "no tool to call"),
        ({"type": "function", "name": "x"}, "'x', which is not an offered tool"),
    ],
)
def test_select_tools_errors(choice: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select_tools(choice, OFFERED)


def test_function_tools() -> None:
    params = {"type": "object", "properties": {"x": {"type": "integer"}}}
    tools = [
        {"type": "function", "function": {"name": "chat", "parameters": params}},
        {"name": "bare"},
        {"type": "function", "name": "responses", "parameters": {"type": "object"}},
        {"type": "web_search"},
        {"name": "chat", "parameters": {"type": "string"}},  # a second tool of one name is ignored
    ]
    assert function_tools(tools) == {
        "chat": {**params, "additionalProperties": False},
        "bare": {"type": "object", "properties": {}, "additionalProperties": False},
        "responses": {"type": "object"},
    }
    with pytest.raises(ValueError, match="without a name"):
        function_tools([{"type": "function", "function": {"parameters": {}}}])


def test_tools_that_are_not_strict_take_any_object() -> None:
    params = {"type": "object", "properties": {"x": {"type": "integer"}}}
    tools = [
        {"type": "function", "name": "loose", "parameters": params, "strict": False},
        {"type": "function", "function": {"name": "chat", "parameters": params, "strict": False}},
        {"type": "function", "name": "tight", "parameters": params, "strict": True},
    ]
    assert function_tools(tools) == {
        "loose": {"type": "object"},
        "chat": {"type": "object"},
        "tight": {**params, "additionalProperties": False},
    }


def test_offered_tools_hold_both_kinds() -> None:
    note = FreeformTool("note")
    no_arguments = {"type": "object", "properties": {}, "additionalProperties": False}
    assert offered_tools([{"name": "a"}], [note]) == {"a": no_arguments, "note": note}
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        offered_tools([{"name": "a"}], [FreeformTool("a")])
