"""gpt-oss's built-in ``python`` tool under the Harmony grammar: a ``to=python`` call on
``analysis`` or ``commentary`` (the recipient before or after the channel, `` code`` or
not), allowed by ``auto``, forced by a ``builtin`` choice, absent under ``none``."""

from __future__ import annotations

from typing import Any

import pytest
from test_harmony import ANSWER, THINK, TOOLS, accepts, call, text_ids, turn

from openchatml import Message
from openchatml.templates.grammar import Trigger, harmony_tool_call_grammar
from openchatml.templates.grammar.tool_choice import BuiltinTool

PYTHON = (BuiltinTool("python"),)
FORCED = {"type": "builtin", "name": "python"}


def python_call(code: str = "print(6 * 7)", channel: str = "analysis") -> Message:
    return Message.tool_call("python", code, channel=channel, content_type="code", constrained=False)


@pytest.mark.parametrize(
    ("choice", "ids", "expected"),
    [
        ("auto", turn(THINK, python_call()), True),
        ("auto", turn(python_call(channel="commentary")), True),
        ("auto", turn(THINK, ANSWER), True),
        ("auto", turn(THINK, call("get_time", {})), True),
        ("required", turn(python_call()), True),
        ("required", turn(THINK, ANSWER), False),
        (FORCED, turn(THINK, python_call("import os\nos.listdir('/mnt/data')")), True),
        (FORCED, turn(python_call()), True),
        (FORCED, turn(THINK, ANSWER), False),  # a final answer on the forced step
        (FORCED, turn(ANSWER), False),
        (FORCED, turn(THINK, call("get_time", {})), False),  # a function is not the python call
        ("none", turn(THINK, python_call()), False),
        ("none", turn(THINK, ANSWER), True),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"name": "python"}]},
            turn(python_call()),
            True,
        ),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"name": "python"}]},
            turn(call("get_time", {})),
            False,
        ),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"name": "get_time"}]},
            turn(python_call()),
            False,
        ),
    ],
)
def test_python_calls_by_tool_choice(choice: Any, ids: list[int], expected: bool) -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice=choice, builtin=PYTHON)
    assert accepts(grammar.lark, ids) is expected


@pytest.mark.parametrize(
    "head",
    [
        "<|channel|>analysis to=python code<|message|>",
        "<|channel|>analysis to=python<|message|>",
        "<|channel|>analysis to=python <|constrain|>code<|message|>",
        " to=python<|channel|>analysis code<|message|>",
        "<|channel|>commentary to=python<|message|>",
        " to=python<|channel|>commentary<|message|>",
    ],
)
def test_the_python_header_in_either_order(head: str) -> None:
    grammar = harmony_tool_call_grammar([], tool_choice=FORCED, builtin=PYTHON)
    assert accepts(grammar.lark, text_ids(head + "print(1)<|call|>")), head


def test_python_is_no_function_and_only_where_offered() -> None:
    forced = harmony_tool_call_grammar([], tool_choice=FORCED, builtin=PYTHON)
    assert not accepts(
        forced.lark, text_ids("<|channel|>commentary to=functions.python<|message|>{}<|call|>")
    )
    assert not accepts(forced.lark, text_ids("<|channel|>final to=python<|message|>x<|call|>"))
    without = harmony_tool_call_grammar(TOOLS)
    assert not accepts(without.lark, turn(THINK, python_call()))
    with pytest.raises(ValueError, match="not an offered tool"):
        harmony_tool_call_grammar(TOOLS, tool_choice=FORCED)
    with pytest.raises(ValueError, match="as a function tool"):
        harmony_tool_call_grammar([], tool_choice={"type": "function", "name": "python"}, builtin=PYTHON)


def test_the_lazy_grammar_triggers_on_to_python() -> None:
    auto = harmony_tool_call_grammar(TOOLS, builtin=PYTHON)
    assert auto.lazy and Trigger(" to=python") in auto.triggers
    assert Trigger(" to=functions.") in auto.triggers


def browser_call(action: str, arguments: str, header: str = "code") -> Message:
    return Message.tool_call(
        f"browser.{action}", arguments, channel="analysis", content_type=header, constrained=False
    )


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (browser_call("search", '{"query": "lighthouse keeper", "topn": 5}'), True),
        (browser_call("search", '{"query": "lighthouse keeper"}', header="json"), True),
        (browser_call("open", '{"id": 3, "cursor": 0}'), True),
        (browser_call("open", '{"id": "https://example.com/a"}'), True),
        (browser_call("find", '{"pattern": "keeper"}'), True),
        (browser_call("search", '{"query": 7}'), False),  # not the schema's string
        (browser_call("search", '{"topn": 5}'), False),  # the query is required
        (browser_call("search", '{"query": "x", "extra": 1}'), False),  # no other argument
        (browser_call("search", '{"query": "' + "x" * 600 + '"}'), False),  # past the bound
        (browser_call("search", "lighthouse keeper"), False),  # not JSON
    ],
)
def test_browser_calls_carry_json_arguments_of_their_schema(message: Message, expected: bool) -> None:
    """The browser's actions are built-ins with a schema (the trained parameters, bounded):
    a forced search is JSON the browser can run, never free text."""
    from openchatml.responses.hosted_functions import builtin_schema

    names = ("browser.search", "browser.open", "browser.find")
    builtin = tuple(BuiltinTool(name, builtin_schema(name)) for name in names)
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice="required", builtin=builtin)
    assert accepts(grammar.lark, turn(THINK, message)) is expected
