"""Round trip through real templates: an assistant message with one (and, where the
template allows, two) tool calls is rendered by its template, and the parser derived
from the template reads the same calls back from the rendered text."""

from __future__ import annotations

import json

import pytest
from analysed_templates import LOOKUP, ROUND_TRIP_CALLS, WEATHER, fmt_of, render_calls, tool_templates

from openchatml.templates.parsing import ParseOptions, open_parser


def assistant_part(name: str, text: str) -> str:
    """``text`` (what follows the user message) from the assistant's role header on."""
    header = fmt_of(name).generation_prompt.header.strip()
    if header and header in text:
        return text[text.index(header) + len(header) :]
    return text


CASES = [(n, 1) for n in tool_templates()] + [(n, 2) for n in tool_templates() if fmt_of(n).tools.parallel]


@pytest.mark.parametrize(("name", "count"), CASES)
def test_rendered_calls_parse_back(name: str, count: int) -> None:
    fmt = fmt_of(name)
    calls = ROUND_TRIP_CALLS[:count]
    text = render_calls(name, calls)
    assert text is not None
    parser = open_parser(fmt, ParseOptions(tools=(WEATHER, LOOKUP)))
    parser.feed(assistant_part(name, text))
    parser.finish()
    got = [(c.name, json.loads(c.arguments)) for c in parser.message.tool_calls]
    assert got == [(n, a) for n, a, _ in calls], (text, parser.message)
