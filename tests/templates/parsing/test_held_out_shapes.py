"""Shapes no template was tuned for, over every real template, parsed whole, in two
pieces at every split point, and one character at a time (the same message each way, the
deltas adding up to it):

* an output that begins with the reasoning's end marker, because the generation prompt
  already opened the reasoning (or, thinking off, already closed it): the marker never
  reaches the content or the reasoning, with the prompt's prefix and without it;
* an output cut off inside a tool call's arguments, parsed as partial: the arguments as
  far as the model wrote them (``{"arg``), not dropped back to ``{``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from analysed_templates import TEMPLATE_NAMES, compiled, fmt_of

from openchatml.templates.errors import TemplateError
from openchatml.templates.format import ReasoningMode, TemplateFormat, ToolSyntax
from openchatml.templates.parsing import (
    ParsedMessage,
    ParseOptions,
    ToolArgumentsText,
    ToolCallStarted,
    open_parser,
)
from openchatml.templates.parsing.json_writer import JsonWriter
from openchatml.templates.parsing.lexer import Lexer
from openchatml.templates.prompt import output_prefix

USER = {"role": "user", "content": "Go ahead."}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object",
    "properties": {"argument": {"type": "string"}, "count": {"type": "integer"}},
}}}  # fmt: skip


def _format(name: str) -> TemplateFormat | None:
    try:
        fmt = fmt_of(name)
    except TemplateError:
        return None
    return None if fmt.harmony else fmt


THINKING = [
    n for n in TEMPLATE_NAMES if (f := _format(n)) is not None and f.reasoning.mode is not ReasoningMode.NONE
]
CALLING = [
    n for n in TEMPLATE_NAMES if (f := _format(n)) is not None and f.tools.syntax is not ToolSyntax.NONE
]


def parse_every_way(fmt: TemplateFormat, options: ParseOptions, text: str) -> ParsedMessage:
    """The message ``text`` holds, checked to be the same whole, split in two anywhere,
    and fed a character at a time, with argument deltas that add up to each call's."""
    whole = open_parser(fmt, options)
    whole.feed(text)
    whole.finish()
    for cut in range(len(text) + 1):
        split = open_parser(fmt, options)
        split.feed(text[:cut])
        split.feed(text[cut:])
        split.finish()
        assert split.message == whole.message, f"split at {cut}"
    streamed = open_parser(fmt, options)
    deltas = [d for c in text for d in streamed.feed(c)] + streamed.finish()
    assert streamed.message == whole.message
    for index, call in enumerate(whole.message.tool_calls):
        if any(isinstance(d, ToolCallStarted) and d.index == index for d in deltas):
            written = "".join(d.text for d in deltas if isinstance(d, ToolArgumentsText) and d.index == index)
            assert written == call.arguments
    return whole.message


def thinking_switches(fmt: TemplateFormat) -> list[dict[str, Any]]:
    """Thinking left alone, switched on, switched off (where the template can)."""
    switch = fmt.reasoning
    found: list[dict[str, Any]] = [{}]
    if switch.switch:
        found.append({switch.switch: switch.on})
        if switch.off is not None:
            found.append({switch.switch: switch.off})
    return found


@pytest.mark.parametrize("name", THINKING)
def test_an_output_that_begins_with_the_reasoning_end_marker(name: str) -> None:
    fmt = fmt_of(name)
    end = fmt.reasoning.end
    template = compiled(name)
    for variables in thinking_switches(fmt):
        prefix = output_prefix(template, [USER], reasoning_markers=(fmt.reasoning.start, end), **variables)
        for given in (prefix, ""):
            for output in (f"{end}\n\nThe answer.", f"{end}The answer.", f"\n{end}\n\nThe answer."):
                message = parse_every_way(fmt, ParseOptions(prefix=given), output)
                shown = (variables, given, output)
                assert message.content.strip() == "The answer.", shown
                assert end.strip() not in message.content and end.strip() not in message.reasoning, shown


def call_text(name: str, fmt: TemplateFormat) -> str | None:
    """The text of a call of ``get_weather(argument="Paris is big", count=3)`` as the
    template renders it, from the first tool-call marker on (``None`` if it renders none)."""
    arguments = {"argument": "Paris is big", "count": 3}
    function = {"name": "get_weather", "arguments": arguments}
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c0", "type": "function", "function": function}],
    }
    try:
        rendered = compiled(name).render([USER, call], tools=[TOOL])
    except TemplateError:
        return None
    tail = rendered[rendered.rfind("Go ahead.") + len("Go ahead.") :]
    tools = fmt.tools
    opener = next(
        (m.strip() for m in (tools.section_start, tools.call_start, tools.name_prefix) if m.strip()), ""
    )
    if opener and opener in tail:
        start = tail.find(opener)
    elif tools.syntax is ToolSyntax.JSON:
        start = tail.rfind("{", 0, tail.find('"get_weather"'))
    else:
        return None
    body = tail[start:]
    if re.search(r"\bargument\b", body) is None:
        return None
    lead = fmt.reasoning.end if fmt.reasoning.mode is ReasoningMode.DELIMITER else ""
    return lead + body


@pytest.mark.parametrize("name", CALLING)
def test_a_call_cut_off_inside_its_arguments_reports_them_as_written(name: str) -> None:
    fmt = fmt_of(name)
    text = call_text(name, fmt)
    if text is None:
        pytest.skip("the template renders no call of a tool with these arguments")
    options = ParseOptions(tools=(TOOL,), partial=True)
    first = re.search(r"\bargument\b", text)
    assert first is not None
    cut = first.start() + len("arg")
    message = parse_every_way(fmt, options, text[:cut])
    assert [c.arguments for c in message.tool_calls] == ['{"arg'], text[:cut]
    cut = text.find("Paris") + len("Par")
    message = parse_every_way(fmt, options, text[:cut])
    assert [c.arguments for c in message.tool_calls] == ['{"argument": "Par'], text[:cut]
    finished = parse_every_way(fmt, ParseOptions(tools=(TOOL,)), text[: first.start() + len("arg")])
    assert all(isinstance(json.loads(c.arguments), dict) for c in finished.tool_calls)


def test_the_templates_cover_both_shapes() -> None:
    assert len(THINKING) >= 30
    assert len(CALLING) >= 40


@pytest.mark.parametrize(
    ("text", "pending"),
    [
        ('{"arg', '{"arg'),
        ('{"a": 1, "ar', '{"a": 1, "ar'),
        ('{"arg"', '{"arg"'),
        ('{"n": 12', '{"n": 12'),
        ('{"ok": tru', '{"ok": tru'),
        ('{"ok": Tru', '{"ok": tru'),
        ('{"x": [1, -', '{"x": [1, -'),
        ("{city", '{"city'),
        ("(arg", '{"arg'),
        ('{"s": "ab', '{"s": "ab'),
        ('{"s": "ab\\', '{"s": "ab'),
        ('{"x": Pa', '{"x": '),
    ],
)
def test_a_writer_says_what_it_read_and_did_not_write(text: str, pending: str) -> None:
    lexer = Lexer()
    writer = JsonWriter()
    read = lexer.run(text, 0)
    written = writer.write(lexer.tokens)
    rest = text[read:].strip()
    tail = rest if rest and not lexer.in_string and rest.isprintable() and "\\" not in rest else ""
    assert written + writer.pending(tail) == pending
