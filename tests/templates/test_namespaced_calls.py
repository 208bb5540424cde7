"""Qualified tool names (``multi_agent_v1.spawn``, a tool of a namespace as a chat-template
model is offered it) through every real template with tool calls: the template renders the
tool and a call of it, and the parser derived from the template reads the same name and
arguments back (beside a plain name, where the template writes several calls); a template
that declares its tools declares the qualified name."""

from __future__ import annotations

import json
from typing import Any

import pytest
from analysed_templates import compiled, fmt_of, render_calls, tool_templates
from test_round_trip import assistant_part

from openchatml.templates.parsing import ParseOptions, open_parser


def tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
    return {"type": "function", "function": {"name": name, "description": "Start.", "parameters": parameters}}


SPAWN = tool("multi_agent_v1.spawn")
PLAIN = tool("spawn")
CALLS = [("multi_agent_v1.spawn", {"task": "lint"}, "a1b2c3d4e"), ("spawn", {"task": "test"}, "f5g6h7i8j")]


def render(name: str, calls: list[tuple[str, dict[str, Any], str]]) -> str | None:
    """What follows the user message of a conversation whose assistant makes ``calls``."""
    return render_calls(name, calls, tools=[SPAWN, PLAIN])


TEMPLATES = [n for n in tool_templates() if render(n, CALLS[:1]) is not None]
CASES = [(n, 1) for n in TEMPLATES] + [(n, 2) for n in TEMPLATES if fmt_of(n).tools.parallel]


def test_nearly_every_template_renders_a_qualified_name() -> None:
    assert len(TEMPLATES) >= len(tool_templates()) - 1, sorted(set(tool_templates()) - set(TEMPLATES))


@pytest.mark.parametrize(("name", "count"), CASES)
def test_qualified_names_parse_back(name: str, count: int) -> None:
    calls = CALLS[:count]
    text = render(name, calls)
    assert text is not None
    user = [{"role": "user", "content": "x"}]
    if "spawn" in compiled(name).render(user, tools=[PLAIN]):  # the template declares its tools
        assert "multi_agent_v1.spawn" in compiled(name).render(user, tools=[SPAWN])
    parser = open_parser(fmt_of(name), ParseOptions(tools=(SPAWN, PLAIN)))
    parser.feed(assistant_part(name, text))
    parser.finish()
    got = [(c.name, json.loads(c.arguments)) for c in parser.message.tool_calls]
    assert got == [(n, a) for n, a, _ in calls], (text, parser.message)
