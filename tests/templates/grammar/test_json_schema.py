"""JSON Schema → grammar: values accepted and rejected by each supported keyword, in
every grammar text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from grammar_checks import check, lark_accepts, tool
from hand_formats import FORMATS

from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.json_schema import (
    SchemaConverter,
    close_schema,
    declared_members,
    schema_types,
    without_strings,
)
from openchatml.templates.grammar.lark import LarkWriter
from openchatml.templates.grammar.value_dialect import (
    JSON,
    JSON_IN_STRING,
    PYTHON,
    ValueDialect,
    object_notation,
)

# --------------------------------------------------------------------------- schemas

JSON_SCHEMA_CASES: list[tuple[dict[str, Any], list[Any], list[Any]]] = [
    ({"type": "string", "enum": ["a", "b"]}, ["a", "b"], ["c", 1]),
    ({"const": "x"}, ["x"], ["y"]),
    ({"type": "integer"}, [0, -12, 7], [1.5, "1", True]),
    ({"type": "number"}, [1.5e3, -0.25, 3], ["1", None]),
    ({"type": "boolean"}, [True, False], ["true", 0]),
    ({"type": "null"}, [None], [0, "null"]),
    ({"type": ["string", "null"]}, ["x", None], [1]),
    ({"type": "string", "nullable": True}, ["x", None], [False]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "abc"], ["a", "abcd"]),
    ({"type": "string"}, ['a"b\\n\u00e9 \U0001f600', ""], [1]),
    (
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
        [[1], [1, 2]],
        [[], [1, 2, 3], ["a"]],
    ),
    (
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
        [["a", 1]],
        [[1, "a"]],
    ),
    ({"type": "array"}, [[], [1, "a", None, {"k": [True]}]], [{}]),
    (
        {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
            "required": ["x"],
        },
        [{"x": 1}, {"x": 1, "y": "z"}],
        [{}, {"y": "z"}, {"x": 1, "z": 2}, {"x": "1"}],
    ),
    ({"type": "object"}, [{}, {"any": [1, {"a": None}]}], [[], "x"]),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, [{"a": 1, "b": 2}], [{"a": "x"}]),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "x"], [True, None]),
    (
        {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "boolean"}}]},
        [True, [False]],
        [[1]],
    ),
    (
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}},
            ]
        },
        [{"a": 1}, {"a": 1, "b": 2}],
        [{"b": 2}],
    ),
]


def _json_format_text(value: Any) -> str:
    args = json.dumps({"v": value}, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "t", "arguments": {args}}}\n</tool_call>'


@pytest.mark.parametrize(
    ("schema", "good", "bad"), JSON_SCHEMA_CASES, ids=[json.dumps(c[0])[:40] for c in JSON_SCHEMA_CASES]
)
def test_json_schema_values(schema: dict[str, Any], good: list[Any], bad: list[Any]) -> None:
    fmt = FORMATS["hermes"]
    grammar = tool_call_grammar(fmt, [tool("t", {"v": schema}, ["v"])], tool_choice="required")
    for value in good:
        check(grammar, fmt, _json_format_text(value), True)
    for value in bad:
        check(grammar, fmt, _json_format_text(value), False)


def test_json_property_order_and_refs() -> None:
    fmt = FORMATS["hermes"]
    params = {
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
        "properties": {"a": {"$ref": "#/$defs/point"}, "b": {"type": "integer"}},
    }
    spec = {"type": "function", "function": {"name": "t", "parameters": params}}
    grammar = tool_call_grammar(fmt, [spec], tool_choice="required")

    def call(args: str) -> str:
        return f'<tool_call>\n{{"name": "t", "arguments": {args}}}\n</tool_call>'

    for args in ("{}", '{"b": 2}', '{"a": {"n": 1}}', '{ "a" : {"n":1} , "b":2 }'):
        check(grammar, fmt, call(args), True)
    for args in ('{"b": 2, "a": {"n": 1}}', '{"a": {"n": "1"}}', '{"a": {}}'):
        check(grammar, fmt, call(args), False)


# --------------------------------------------------------------------------- the converter alone


def _converted(schema: Any, dialect: ValueDialect = JSON) -> str:
    """The Lark grammar of a value of ``schema`` converted into rules (not ``%json``)."""
    rules = RuleSet()
    rules.define(START, SchemaConverter(rules, dialect, schema).value(schema))
    return LarkWriter(rules, {}).write(START)


@pytest.mark.parametrize(
    ("schema", "good", "bad"), JSON_SCHEMA_CASES, ids=[json.dumps(c[0])[:40] for c in JSON_SCHEMA_CASES]
)
def test_converted_values(schema: dict[str, Any], good: list[Any], bad: list[Any]) -> None:
    lark = _converted(close_schema(schema))
    assert "%json" not in lark
    for value in good:
        assert lark_accepts(lark, json.dumps(value, ensure_ascii=False)), value
    for value in bad:
        assert not lark_accepts(lark, json.dumps(value, ensure_ascii=False)), value


def test_unsupported_keywords_are_ignored() -> None:
    """``pattern``, ``format`` and number bounds are not enforced by the conversion; a
    ``$ref`` that does not resolve and an unknown type take any value."""
    assert lark_accepts(_converted({"type": "string", "pattern": "^[0-9]+$"}), '"abc"')
    assert lark_accepts(_converted({"type": "string", "format": "date"}), '"not a date"')
    assert lark_accepts(_converted({"type": "integer", "minimum": 10}), "3")
    for schema in ({"$ref": "https://example.com/schema"}, {"$ref": "#/$defs/missing"}, {"type": "tuple"}):
        lark = _converted(schema)
        assert lark_accepts(lark, '{"any": [1, null]}') and lark_accepts(lark, '"x"'), schema
        assert not lark_accepts(lark, "{x}"), schema


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (
            {"type": "integer", "minimum": 0, "maximum": 99},
            ["0", "7", "99", "42"],
            ["100", "-1", "07", "1.5"],
        ),
        ({"type": "integer", "minimum": -5, "maximum": 120}, ["-5", "0", "120"], ["121", "-6", "1000", "-"]),
        ({"type": "integer", "minimum": -5, "maximum": 1200}, ["-5", "0", "1200", "9999"], ["10000", "--1"]),
        ({"type": "integer", "minimum": 1}, ["123456789012"], ["-"]),  # one bound: unbounded digits
    ],
)
def test_integer_bounds_bound_the_digits(schema: dict[str, Any], good: list[str], bad: list[str]) -> None:
    """A sampler under GBNF cannot write an integer without end where both bounds are given:
    a small range exactly; a large one by its digits (``9999`` has the digits of ``1200``:
    the rest is the validator's to check)."""
    lark = _converted(schema)
    for text in good:
        assert lark_accepts(lark, text), text
    for text in bad:
        assert not lark_accepts(lark, text), text


def test_refs_resolve_in_the_root() -> None:
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    lark = _converted(close_schema(schema))
    assert lark_accepts(lark, '{"next": {"next": {}}}')
    assert not lark_accepts(lark, '{"next": {"other": 1}}')


def test_python_values() -> None:
    schema = close_schema(
        {
            "type": "object",
            "properties": {"flag": {"type": "boolean"}, "none": {"type": "null"}, "tags": {"type": "array"}},
        }
    )
    lark = _converted(schema, PYTHON)
    for text in ("{'flag': True}", "{\"flag\": false, 'none': None}", "{'tags': ['a', \"b\", 1]}", "{}"):
        assert lark_accepts(lark, text), text
    for text in ("{'flag': 'True'}", "{'other': 1}", "{'tags': ('a',)}"):
        assert not lark_accepts(lark, text), text
    assert lark_accepts(_converted({"const": {"a": [True, None]}}, PYTHON), "{'a': [True, None]}")


def test_object_notation_values() -> None:
    quote = '<|"|>'
    schema = close_schema(
        {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}}
    )
    lark = _converted(schema, object_notation(quote))
    for text in (f"{{city:{quote}Oslo, 3{quote},n:2}}", f"{{n:2,{quote}city{quote}:{quote}x{quote}}}"):
        assert lark_accepts(lark, text), text
    assert not lark_accepts(lark, '{city:"Oslo"}')
    assert lark_accepts(_converted({}, object_notation(quote)), f"{{key:[1,{quote}v{quote}]}}")


def test_json_inside_a_json_string() -> None:
    schema = close_schema({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]})
    lark = _converted(schema, JSON_IN_STRING)
    assert lark_accepts(lark, '{\\"s\\": \\"a\\\\\\"b\\"}')
    assert not lark_accepts(lark, '{"s": "a"}')


def test_close_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"inner": {"properties": {"a": {}}}, "n": {"type": "integer", "nullable": True}},
        "allOf": [{"properties": {"b": {}}}],
        "$defs": {"d": {"properties": {"c": {}}}},
    }
    closed = close_schema(schema)
    assert "additionalProperties" not in closed  # its parts are merged by allOf
    assert closed["properties"]["inner"]["additionalProperties"] is False
    assert closed["properties"]["n"] == {"type": ["integer", "null"]}
    assert "additionalProperties" not in closed["allOf"][0]
    assert closed["$defs"]["d"]["additionalProperties"] is False
    assert close_schema({"type": "object"}) == {"type": "object"}  # no properties: any keys
    # declared, and empty: no keys at all (a strict function without arguments takes {})
    assert close_schema({"properties": {}}) == {"properties": {}, "additionalProperties": False}
    assert (
        close_schema({"properties": {"a": {}}, "additionalProperties": True})["additionalProperties"] is True
    )


def test_declared_members_and_types() -> None:
    members, extra = declared_members(
        {"properties": {"a": {"type": "string"}, "gone": False}, "required": ["a", "b"]}
    )
    assert members == [("a", {"type": "string"}, True), ("b", {}, True)] and extra is None
    assert declared_members({}) == ([], True)
    assert schema_types({"required": ["a"]}) == ["object"]
    assert schema_types({"prefixItems": []}) == ["array"]
    assert schema_types({"type": "string", "nullable": True}) == ["string", "null"]
    assert without_strings({"type": ["string", "integer"]}) == {"type": ["integer"]}
    assert without_strings({"type": "string"}) is None
    assert without_strings({"anyOf": [{"type": "string"}, {"enum": [1]}]}) == {"anyOf": [{"enum": [1]}]}
