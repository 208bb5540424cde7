"""The split of a token budget between the reasoning and the calls: how long a call can
be (:mod:`~openchatml.templates.grammar.extent`), and what the reasoning gives up for it
(:mod:`~openchatml.templates.grammar.budget`)."""

from __future__ import annotations

import re

from grammar_checks import TOOLS, lark_accepts, tool
from hand_formats import FORMATS

from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.grammar.budget import RESERVE, CallBudget, call_budget
from openchatml.templates.grammar.extent import json_longest, pattern_longest
from openchatml.templates.grammar.tool_choice import FreeformTool

QWEN = FORMATS["qwen3.5"]
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
IDS = {marker: 257 + i for i, marker in enumerate(MARKERS)}
ROUTE = tool(
    "route",
    {
        "to": {"type": "string", "maxLength": 40},
        "legs": {
            "type": "array",
            "maxItems": 3,
            "items": {"type": "object", "properties": {"mode": {"enum": ["bus", "train"]}}},
        },
    },
    ["to"],
)
ZONE = tool("zone", {"name": {"type": "string", "maxLength": 3}}, ["name"])


def qwen_call(name: str, argument: str, value: str) -> str:
    return (
        f"<tool_call>\n<function={name}>\n<parameter={argument}>\n{value}\n</parameter>\n"
        "</function>\n</tool_call>"
    )


def test_the_longest_value_of_a_schema() -> None:
    assert pattern_longest("^(?:[0-9]{4}-[a-z]{2,6})$") == 11
    assert pattern_longest("[0-9]{4}") is None  # a search: any text around it
    assert pattern_longest("^[0-9]+$") is None
    assert json_longest({"enum": ["a", "bb"]}) == 4
    assert json_longest({"type": "string", "maxLength": 3}) == 2 + 3 * 6  # \uXXXX escapes
    assert json_longest({"type": "string", "pattern": "^[a-z]{2}$"}) == 2 + 2 * 6
    assert json_longest({"type": "string"}) is None
    assert json_longest({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}}) is None
    bounded = {"type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 99}}
    assert json_longest(bounded) == len("[ 99 , 99 ]")


def test_the_reasoning_gives_up_what_the_first_call_lacks() -> None:
    assert call_budget(None, 100) == CallBudget(None)
    assert call_budget(0, 100) == CallBudget(0)
    assert call_budget(160, None) == CallBudget(160)  # no bound on the calls: nothing moves
    assert call_budget(160, 70) == CallBudget(160, 2)  # room for two calls of 70
    assert call_budget(160, 200) == CallBudget(120, 1)  # 40 more for one call
    assert call_budget(160, 900) == CallBudget(40, 1)  # the reasoning keeps a quarter
    assert call_budget(4000, 100) == CallBudget(4000, RESERVE // 100)


def test_bounded_calls_bound_the_reasoning_and_their_number() -> None:
    free = tool_call_grammar(QWEN, TOOLS, tool_choice="required", special_tokens=IDS, reasoning_tokens=160)
    assert "max_tokens=160" in free.lark  # unbounded strings: no longest call
    route = tool_call_grammar(
        QWEN, [ROUTE, ZONE], tool_choice="required", special_tokens=IDS, reasoning_tokens=160
    )
    found = re.search(r"max_tokens=(\d+)", route.lark)
    assert found is not None and 40 <= int(found.group(1)) < 160
    short = tool_call_grammar(QWEN, [ZONE], tool_choice="required", special_tokens=IDS, reasoning_tokens=160)
    assert "max_tokens=160" in short.lark
    one = "<think>\nhm\n</think>\n" + qwen_call("zone", "name", "UTC")
    assert lark_accepts(short.lark, one, MARKERS)
    many = one + "\n" + "\n".join([qwen_call("zone", "name", "CET")] * 8)
    assert not lark_accepts(short.lark, many, MARKERS)  # no room for nine calls
    unbudgeted = tool_call_grammar(QWEN, [ZONE], tool_choice="required", special_tokens=IDS)
    assert lark_accepts(unbudgeted.lark, many, MARKERS)


def test_a_regular_custom_tool_has_a_longest_call() -> None:
    pin = FreeformTool("pin", "regex", "[0-9]{4}-[a-z]{2,6}")
    grammar = tool_call_grammar(
        QWEN, [], tool_choice="required", freeform=[pin], special_tokens=IDS, reasoning_tokens=160
    )
    text = "<think>\nhm\n</think>\n" + qwen_call("pin", "input", "1234-abc")
    assert lark_accepts(grammar.lark, text, MARKERS)
    assert "max_tokens=160" in grammar.lark  # a short call: the reasoning keeps its bound
    assert not lark_accepts(grammar.lark, text.replace("1234-abc", "1234-abcdefg"), MARKERS)
