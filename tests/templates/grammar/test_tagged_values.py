"""Tagged argument values (``<parameter=city>\\nParis\\n</parameter>``) held to their JSON
Schema: what the grammar takes, the format's parser reads back as a value the schema
accepts, exactly as written (no whitespace added to a string, no bound passed)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from grammar_checks import check, ebnf_accepts, lark_accepts, tool
from hand_formats import FORMATS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openchatml.templates import ParseOptions, parse_output, tool_call_grammar
from openchatml.templates.format import TemplateFormat

PROPERTIES: dict[str, Any] = {
    "city": {"type": "string", "maxLength": 6},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "code": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[A-Z]+$"},
    "zone": {"type": "string", "pattern": "[0-9]"},
    "when": {"type": "string", "format": "date"},
    "kind": {"const": "trip"},
    "route": {
        "type": "object",
        "properties": {
            "to": {"type": "string", "maxLength": 3},
            "hours": {"type": "integer", "minimum": 0, "maximum": 9},
        },
        "required": ["to"],
        "additionalProperties": False,
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": PROPERTIES,
    "required": ["city"],
    "additionalProperties": False,
}
BOOK = tool("book", PROPERTIES, ["city"], additionalProperties=False)
QWEN = FORMATS["qwen3-coder"]
GRAMMAR = tool_call_grammar(QWEN, [BOOK], tool_choice="required")
ECMA_SCHEMA: dict[str, Any] = {
    **SCHEMA,
    "properties": {**PROPERTIES, "code": {**PROPERTIES["code"], "pattern": r"^[A-Z]+\Z"}},
}
"""The schema as ECMA-262 reads its patterns (Python's ``$`` also matches before a final
line break)."""
ALPHABET = "ab Z9<>/=\n\r\t-é"
"""Characters that make values: letters, digits, whitespace and the markers' own."""


def qwen_call(*arguments: tuple[str, str]) -> str:
    """A call of ``book`` as Qwen3-Coder's template writes it."""
    params = "".join(f"<parameter={name}>\n{value}\n</parameter>\n" for name, value in arguments)
    return f"<tool_call>\n<function=book>\n{params}</function>\n</tool_call>"


def read_back(fmt: TemplateFormat, text: str) -> dict[str, Any]:
    """The arguments the format's parser reads from ``text`` (one call)."""
    message = parse_output(fmt, text, ParseOptions(tools=(BOOK,)))
    assert len(message.tool_calls) == 1, message
    arguments = json.loads(message.tool_calls[0].arguments)
    assert isinstance(arguments, dict)
    return arguments


def test_string_bounds_hold() -> None:
    check(GRAMMAR, QWEN, qwen_call(("city", "Paris")), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Parisx")), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Parisxy")), False)  # over maxLength
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("code", "AB")), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("code", "A")), False)  # under minLength
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("route", '{"to": "Rome"}')), False)


def test_string_pattern_and_format_hold() -> None:
    """``pattern`` and ``format`` bind where the engine takes a pattern (Lark)."""
    accepts = GRAMMAR.lark
    assert lark_accepts(accepts, qwen_call(("city", "Oslo"), ("code", "ABC")))
    assert not lark_accepts(accepts, qwen_call(("city", "Oslo"), ("code", "AbC")))
    assert lark_accepts(accepts, qwen_call(("city", "Oslo"), ("zone", "UTC+1 zone")))  # a search
    assert not lark_accepts(accepts, qwen_call(("city", "Oslo"), ("zone", "UTC")))
    assert lark_accepts(accepts, qwen_call(("city", "Oslo"), ("when", "2026-11-24")))
    assert not lark_accepts(accepts, qwen_call(("city", "Oslo"), ("when", "24.11.2026")))


def test_enum_values_carry_no_whitespace() -> None:
    """Whitespace between an enum value and its end marker would be read back as part of
    the value: the grammar writes the value and the marker exactly."""
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("unit", "celsius")), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("unit", "celsius\n\n\r \r")), False)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("unit", " celsius")), False)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("kind", "trip")), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("kind", "trip ")), False)


def test_strings_hold_no_marker_the_parser_stops_at() -> None:
    assert lark_accepts(GRAMMAR.lark, qwen_call(("city", "Oslo"), ("zone", "1 <b/>")))
    for marker in ("</function>", "<parameter=", "</tool_call>", "</parameter>"):
        assert not lark_accepts(GRAMMAR.lark, qwen_call(("city", "Oslo"), ("zone", "1" + marker)))


def test_nested_strings_hold_their_bounds() -> None:
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("route", '{"to": "Rom", "hours": 3}')), True)
    check(GRAMMAR, QWEN, qwen_call(("city", "Oslo"), ("route", "{'to': 'Rome'}")), False)


@pytest.mark.parametrize("value", ["Paris", "", " x", "x\n", "\n\n", "a<b>", "é/é"])
def test_what_the_grammar_takes_reads_back_as_written(value: str) -> None:
    text = qwen_call(("city", value))
    assert lark_accepts(GRAMMAR.lark, text)
    assert read_back(QWEN, text) == {"city": value}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    city=st.text(ALPHABET, max_size=9),
    unit=st.sampled_from(["celsius", "fahrenheit", "celsius ", "\ncelsius", "kelvin"]),
    code=st.text("ABc \n", max_size=5),
)
def test_every_value_the_grammar_takes_is_schema_valid(city: str, unit: str, code: str) -> None:
    """A call the grammar takes reads back as arguments the schema accepts, each string
    exactly as written; a valid value free of markers is taken."""
    text = qwen_call(("city", city), ("unit", unit), ("code", code))
    arguments = {"city": city, "unit": unit, "code": code}
    valid = jsonschema.Draft202012Validator(ECMA_SCHEMA).is_valid(arguments)
    markers = ("</parameter>", "</function>", "</tool_call>", "<parameter=")
    taken = lark_accepts(GRAMMAR.lark, text)
    if taken:
        assert read_back(QWEN, text) == arguments
        assert valid, arguments
    elif valid and not any(marker in value for marker in markers for value in arguments.values()):
        pytest.fail(f"a valid call was refused: {arguments!r}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(city=st.text(ALPHABET, max_size=8), unit=st.sampled_from(["celsius", "celsius\n ", "x"]))
def test_gbnf_takes_only_schema_valid_values(city: str, unit: str) -> None:
    """The GBNF text (no patterns: a subset of the characters) takes nothing invalid."""
    text = qwen_call(("city", city), ("unit", unit))
    try:
        taken = ebnf_accepts(GRAMMAR.ebnf, text)
    except pytest.skip.Exception:
        return
    if taken:
        arguments = read_back(QWEN, text)
        assert arguments == {"city": city, "unit": unit}
        jsonschema.validate(arguments, SCHEMA)


def test_json_prefixed_formats_read_strings_back_exactly() -> None:
    """DeepSeek V3.2's ``string="true">`` values: bounded, no stray whitespace."""
    fmt = FORMATS["deepseek-v3.2"]
    grammar = tool_call_grammar(fmt, [BOOK], tool_choice="required", prefix="<think></think>")

    def call(*args: tuple[str, str, str]) -> str:
        params = "".join(
            f'<｜DSML｜parameter name="{k}" string="{s}">{v}</｜DSML｜parameter>\n' for k, s, v in args
        )
        return (
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="book">\n'
            f"{params}</｜DSML｜invoke>\n</｜DSML｜function_calls>"
        )

    good = call(("city", "true", "Oslo"), ("unit", "true", "celsius"))
    assert lark_accepts(grammar.lark, good)
    assert read_back(fmt, "<think></think>" + good) == {"city": "Oslo", "unit": "celsius"}
    assert not lark_accepts(grammar.lark, call(("city", "true", "Oslo--x")))
    assert not lark_accepts(grammar.lark, call(("city", "true", "Oslo"), ("unit", "true", "celsius ")))
    hours = call(("city", "true", "Oslo"), ("route", "false", ' {"to": "Rom", "hours": 3} '))
    assert lark_accepts(grammar.lark, hours)
    assert read_back(fmt, "<think></think>" + hours)["route"] == {"to": "Rom", "hours": 3}


def test_unbounded_strings_stay_free() -> None:
    fmt = FORMATS["qwen3-coder"]
    grammar = tool_call_grammar(
        fmt, [tool("note", {"text": {"type": "string"}}, ["text"])], tool_choice="required"
    )
    long = "x" * 300 + "\n <b> & more\n"
    text = f"<tool_call>\n<function=note>\n<parameter=text>\n{long}\n</parameter>\n</function>\n</tool_call>"
    check(grammar, fmt, text, True)
    message = parse_output(fmt, text)
    assert json.loads(message.tool_calls[0].arguments) == {"text": long}
    assert re.search(r"TEXT_\d+: /\(\?s:\.\*\)", grammar.lark)
