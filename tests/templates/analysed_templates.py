"""The real templates the template tests analyse, compiled and analysed once per run, and
tool calls rendered through them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from data_paths import TEMPLATES

from openchatml.templates.analysis import analyze
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.errors import TemplateRenderError
from openchatml.templates.format import TemplateFormat, ToolSyntax

TEMPLATE_NAMES = sorted(p.name for p in TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


@cache
def compiled(name: str) -> ChatTemplate:
    """The real template ``name`` (``Qwen-Qwen3-0.6B.jinja`` …), compiled."""
    return ChatTemplate((TEMPLATES / name).read_text(encoding="utf-8"), name=name)


@cache
def fmt_of(name: str) -> TemplateFormat:
    """The analysed format of the real template ``name``."""
    return analyze(compiled(name))


WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "A city."}},
    "required": ["city"],
}}}  # fmt: skip
LOOKUP = {"type": "function", "function": {"name": "lookup", "description": "Search.", "parameters": {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Words."}},
    "required": ["query"],
}}}  # fmt: skip
ROUND_TRIP_CALLS = [
    ("get_weather", {"city": "Paris"}, "a1b2c3d4e"),
    ("lookup", {"query": "rust"}, "f5g6h7i8j"),
]


def render_calls(
    name: str,
    calls: Sequence[tuple[str, dict[str, Any], str]],
    tools: Sequence[dict[str, Any]] = (),
) -> str | None:
    """The text after the user message of a conversation whose assistant calls ``calls``
    (the first message shape the template takes), ``tools`` offered (default: weather and
    lookup)."""
    template = compiled(name)
    for content in (None, ""):
        for as_string in (False, True):
            message = {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a) if as_string else a},
                    }
                    for n, a, i in calls
                ],
            }
            try:
                user = {"role": "user", "content": "Go ahead."}
                text = template.render([user, message], tools=list(tools or (WEATHER, LOOKUP)))
            except TemplateRenderError:
                continue
            tail = text[text.rfind("Go ahead.") + len("Go ahead.") :]
            if all(n in tail for n, _, _ in calls) and "{'" not in tail and "None" not in tail:
                return tail
    return None


def tool_templates() -> list[str]:
    """The real templates with tool calls found by rendering (no patch)."""
    return [
        n for n in TEMPLATE_NAMES if fmt_of(n).tools.syntax is not ToolSyntax.NONE and not fmt_of(n).patches
    ]
