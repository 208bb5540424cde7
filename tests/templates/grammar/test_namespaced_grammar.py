"""Grammars over tools of a namespace (``NAMESPACE.NAME``): gpt-oss calls them
``to=NAMESPACE.NAME`` in a Harmony namespace of their own; a chat template's calls name
them by that qualified name, in every format's own syntax."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from grammar_checks import check
from test_harmony import THINK, accepts, text_ids, turn
from test_tool_calls import CASES, REJECTED_CASES, _case_grammar

from openchatml import Message
from openchatml.templates.grammar import Trigger, harmony_tool_call_grammar
from openchatml.templates.grammar.tool_choice import FreeformTool, function_tools, select_tools

SPAWN = {
    "type": "function",
    "name": "spawn",
    "parameters": {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]},
}
AGENTS = {"type": "namespace", "name": "multi_agent_v1", "tools": [SPAWN]}
PLAIN = {"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}
NOTE = FreeformTool("multi_agent_v1.note")


def spawn(task: Any, recipient: str = "multi_agent_v1.spawn") -> Message:
    return Message.tool_call(recipient, '{"task":' + ("3" if task == 3 else f'"{task}"') + "}")


def test_namespace_entries_offer_qualified_names() -> None:
    offered = function_tools([PLAIN, AGENTS])
    assert list(offered) == ["spawn", "multi_agent_v1.spawn"]
    assert offered["multi_agent_v1.spawn"]["required"] == ["task"]
    choice = {"type": "function", "name": "spawn", "namespace": "multi_agent_v1"}
    assert select_tools(choice, offered).names == ("multi_agent_v1.spawn",)
    allowed = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "namespace", "name": "multi_agent_v1"}],
    }
    assert select_tools(allowed, offered).names == ("multi_agent_v1.spawn",)
    with pytest.raises(ValueError, match="not an offered tool"):
        select_tools({"type": "function", "name": "spawn", "namespace": "other"}, offered)


@pytest.mark.parametrize(
    ("choice", "ids", "expected"),
    [
        ("auto", turn(THINK, spawn("lint")), True),
        ("required", turn(spawn("lint")), True),
        ("required", turn(spawn(3)), False),  # not a string
        ("required", turn(spawn("lint", "functions.multi_agent_v1.spawn")), False),  # not its recipient
        ("required", turn(spawn("lint", "other.spawn")), False),
        ({"type": "function", "name": "multi_agent_v1.spawn"}, turn(spawn("lint")), True),
        ({"type": "function", "name": "spawn"}, turn(spawn("lint")), False),
        ({"type": "function", "name": "spawn"}, turn(Message.tool_call("functions.spawn", "{}")), True),
        (
            {"type": "custom", "name": "multi_agent_v1.note"},
            turn(Message.tool_call("multi_agent_v1.note", "free text", content_type=None)),
            True,
        ),
    ],
)
def test_gpt_oss_calls_a_namespace_by_its_own_recipient(choice: Any, ids: list[int], expected: bool) -> None:
    grammar = harmony_tool_call_grammar([PLAIN, AGENTS], tool_choice=choice, freeform=[NOTE])
    assert accepts(grammar.lark, ids) is expected


def test_the_lazy_grammar_starts_at_either_namespace() -> None:
    grammar = harmony_tool_call_grammar([PLAIN, AGENTS], freeform=[NOTE])
    assert grammar.lazy and grammar.tools == ("spawn", "multi_agent_v1.spawn", "multi_agent_v1.note")
    assert grammar.triggers == (Trigger(" to=functions."), Trigger(" to=multi_agent_v1."))
    only = harmony_tool_call_grammar([AGENTS])
    assert only.triggers == (Trigger(" to=functions."), Trigger(" to=multi_agent_v1."))
    assert harmony_tool_call_grammar([PLAIN]).triggers == (Trigger(" to=functions."),)
    for head in (
        "<|channel|>commentary to=multi_agent_v1.spawn <|constrain|>json<|message|>",
        " to=multi_agent_v1.spawn<|channel|>commentary<|message|>",
    ):
        assert accepts(grammar.lark, text_ids(head + '{"task":"lint"}<|call|>')), head


def _renamed(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` with every tool put in the namespace ``ns_1``: its tools renamed, and their
    names in the model's output qualified."""
    renamed = copy.deepcopy(case)
    for tool in renamed["options"]["tools"]:
        spec = tool.get("function", tool)
        text = renamed["input"]
        renamed["input"] = re.sub(rf"\b{re.escape(spec['name'])}\b", "ns_1." + spec["name"], text)
        spec["name"] = "ns_1." + spec["name"]
    return renamed


ACCEPTED = [c for c in CASES if c["id"] not in REJECTED_CASES]


@pytest.mark.parametrize("case", ACCEPTED, ids=[f"{c['id']}-{c['template'][:-6]}" for c in ACCEPTED])
def test_every_format_calls_qualified_names(case: dict[str, Any]) -> None:
    renamed = _renamed(case)
    assert "ns_1." in renamed["input"]
    fmt, grammar = _case_grammar(renamed)
    assert all(name.startswith("ns_1.") for name in grammar.tools)
    check(grammar, fmt, renamed["input"], True)
