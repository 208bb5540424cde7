"""Fuzzing the template parsers: random text made of each format's own markers and of JSON
and Python shards, and random damage to known-good outputs. Whatever the text and however
it is cut, the parser never raises nor fails on its own (``W-INTERNAL``), streaming gives
the message a whole parse gives, the deltas add up to it, and a finished parse's tool-call
arguments are valid JSON."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Any

import pytest
from data_paths import CASES as CASES_FILE
from data_paths import TEMPLATES
from fuzz.parsers import check_streamed
from hand_formats import BY_TEMPLATE, FORMATS
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml.core.tokens import ControlToken
from openchatml.templates.analysis import analyze_source
from openchatml.templates.format import TemplateFormat
from openchatml.templates.parsing import ParsedMessage, ParseOptions, open_parser, parse_output

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
    "```json\n", "<![CDATA[", "]]>", "\x1c", "\u00a0", "\u2028",
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
    if fmt.harmony:
        found |= {t.value for t in ControlToken} | {"analysis", "final", " to=functions.get_weather", " json"}
    return sorted(found - {"name", "arguments", "parameters", "function"})


def check(fmt: TemplateFormat, text: str, cuts: list[int], options: ParseOptions) -> None:
    """Streamed at ``cuts`` equals the batch parse (see :func:`fuzz.parsers.check_streamed`)."""
    whole = parse_output(fmt, text, options) if not fmt.harmony else parse_whole(fmt, text, options)
    check_streamed(fmt, text, cuts, options, whole)


def parse_whole(fmt: TemplateFormat, text: str, options: ParseOptions) -> ParsedMessage:
    """The message of ``text`` fed whole to ``fmt``'s output parser (a Harmony one too)."""
    parser = open_parser(fmt, options)
    parser.feed(text)
    parser.finish()
    return parser.message


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


# --- every real template, through the format its analysis derives ----------------------------------

TEMPLATE_NAMES = sorted(p.name for p in TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


@cache
def analysed(name: str) -> TemplateFormat:
    return analyze_source((TEMPLATES / name).read_text(encoding="utf-8"), name=name)


@pytest.mark.skipif(not TEMPLATE_NAMES, reason="the shared templates are not here")
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_every_template_parser_on_marker_soup(data: st.DataObject) -> None:
    """The parser each of the real templates gets (Harmony's too) on random text made of its
    markers, JSON shards and any text."""
    fmt = analysed(data.draw(st.sampled_from(TEMPLATE_NAMES)))
    alphabet = st.sampled_from(markers(fmt) or ["x"]) | st.sampled_from(SHARDS) | st.text(max_size=4)
    text = "".join(data.draw(st.lists(alphabet, max_size=30)))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
    check(fmt, text, cuts, data.draw(options(fmt)))


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": ""}\n</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments":]}\n</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments"}\n</tool_call>',
        '<tool_call>\n{"name": "getN"arguments": ',
    ],
)
def test_json_call_whose_arguments_hold_no_value(text: str) -> None:
    """Arguments with nothing in them become ``{}``, whole and streamed alike."""
    fmt = FORMATS["hermes"]
    for cuts in ([], list(range(len(text)))):
        check(fmt, text, cuts, ParseOptions(tools=TOOLS))
    message = parse_output(fmt, text, ParseOptions(tools=TOOLS))
    assert [(c.name, c.arguments) for c in message.tool_calls] in ([("get_weather", "{}")], [("getN", "{}")])


@pytest.mark.parametrize("space", ["\x1c", "\u00a0", "\u2028", "\x0b"])
def test_unicode_whitespace_in_arguments_reads_the_same_however_cut(space: str) -> None:
    """Whitespace beyond JSON's own, after a space, is skipped whole or cut between the two."""
    text = f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": {space}"Paris"}}}}\n</tool_call>'
    fmt = FORMATS["hermes"]
    for cuts in ([], list(range(len(text)))):
        check(fmt, text, cuts, ParseOptions(tools=TOOLS))
    message = parse_output(fmt, text, ParseOptions(tools=TOOLS))
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", '{"city": "Paris"}')]
