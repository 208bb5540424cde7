"""Fuzzing the template parsers: random text made of each format's own markers and of JSON
and Python shards, and random damage to known-good outputs. Whatever the text and however
it is cut, the parser never raises nor fails on its own (``W-INTERNAL``), streaming gives
the message a whole parse gives, the deltas add up to it, and a finished parse's tool-call
arguments are valid JSON."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from data_paths import CASES as CASES_FILE
from hand_formats import BY_TEMPLATE, FORMATS
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml.templates.format import TemplateFormat
from openchatml.templates.parser import (
    CONTENT,
    REASONING,
    TOOL_ARGUMENTS,
    TOOL_CALL,
    Delta,
    ParseOptions,
    TemplateParser,
    parse_output,
)

FAMILIES = sorted(name for name, fmt in FORMATS.items() if not fmt.harmony)
TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "o": {"type": "object"},
                },
            },
        },
    },
)
SHARDS = [
    "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", "=", "\\", '\\"', "\\u00e9", "\\ud83d", "\\ude00",
    " ", "\n", "get_weather", "city", "days", "Paris", "1", "-2.5e3", "true", "None", "<", ">", "</",
    "é", "😀", '{"name": "get_weather", "arguments": {"city": "Paris"}}', '<|"|>', "call:", "```",
    "```json\n", "<![CDATA[", "]]>",
]  # fmt: skip


def markers(fmt: TemplateFormat) -> list[str]:
    """Every marker a format names."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, str) and value and len(value) < 60:
            found.add(value)
        elif isinstance(value, tuple):
            for item in value:
                walk(item)

    walk((fmt.reasoning, fmt.content, fmt.tools, fmt.end_markers))
    return sorted(found - {"name", "arguments", "parameters", "function"})


def check(fmt: TemplateFormat, text: str, cuts: list[int], options: ParseOptions) -> None:
    whole = parse_output(fmt, text, options)
    parser = TemplateParser(fmt, options)
    start = parser.message
    deltas: list[Delta] = []
    points = sorted(set(cuts))
    for a, b in zip([0, *points], [*points, len(text)], strict=True):
        deltas += parser.feed(text[a:b])
    deltas += parser.finish()
    message = parser.message
    assert message == whole
    assert not [w for w in message.warnings if w.code == "W-INTERNAL"], message.warnings
    assert start.content + "".join(d.text for d in deltas if d.kind == CONTENT) == message.content
    assert start.reasoning + "".join(d.text for d in deltas if d.kind == REASONING) == message.reasoning
    arguments: dict[int, str] = {}
    for d in deltas:
        if d.kind == TOOL_CALL:
            arguments[d.index] = ""
        elif d.kind == TOOL_ARGUMENTS:
            arguments[d.index] += d.text
    for index, call in enumerate(message.tool_calls):
        if index >= len(start.tool_calls):
            assert arguments[index] == call.arguments
        if not options.partial:
            json.loads(call.arguments)


@st.composite
def options(draw: st.DrawFn, fmt: TemplateFormat) -> ParseOptions:
    return ParseOptions(
        tools=TOOLS if draw(st.booleans()) else (),
        extract_reasoning=draw(st.booleans()),
        partial=draw(st.booleans()),
        prefix=draw(st.sampled_from(["", fmt.reasoning.start])),
        json_schema={"type": "object"} if draw(st.booleans()) else None,
    )


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_random_marker_soup(data: st.DataObject) -> None:
    fmt = FORMATS[data.draw(st.sampled_from(FAMILIES))]
    alphabet = st.sampled_from(markers(fmt)) | st.sampled_from(SHARDS)
    text = "".join(data.draw(st.lists(alphabet, max_size=30)))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
    check(fmt, text, cuts, data.draw(options(fmt)))


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_random_text(data: st.DataObject) -> None:
    fmt = FORMATS[data.draw(st.sampled_from(FAMILIES))]
    text = data.draw(st.text(max_size=80))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
    check(fmt, text, cuts, data.draw(options(fmt)))


GOOD: list[tuple[str, str]] = (
    [
        (BY_TEMPLATE[c["template"]], c["input"])
        for c in json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]
        if not FORMATS[BY_TEMPLATE[c["template"]]].harmony
    ]
    if CASES_FILE.is_file()
    else [("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')]
)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_damaged_good_outputs(data: st.DataObject) -> None:
    family, text = data.draw(st.sampled_from(GOOD))
    fmt = FORMATS[family]
    for _ in range(data.draw(st.integers(1, 3))):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, len(text)))
        damage = data.draw(st.sampled_from(["cut", "drop", "repeat", "insert", "truncate"]))
        if damage == "drop":
            text = text[:a] + text[b:]
        elif damage == "repeat":
            text = text[:b] + text[a:b] + text[b:]
        elif damage == "insert":
            text = text[:a] + data.draw(st.sampled_from(markers(fmt) + SHARDS)) + text[a:]
        elif damage == "truncate":
            text = text[:a]
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
    check(fmt, text, cuts, data.draw(options(fmt)))
