"""JSON Schema → TypeScript, and compact JSON values. The object renderings below are
openai-harmony's for the same schemas (``test_differential`` compares the two on
generated schemas; these pin a few exactly)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml.core.typescript import json_value, schema_to_typescript
from strategies import json_schemas, json_values

OBJECTS: list[tuple[dict[str, Any], str]] = [
    (
        {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "days": {"type": "integer", "default": 1},
            },
            "required": ["location"],
        },
        '{\n// City\nlocation: string,\nunit?: "c" | "f", // default: c\ndays?: number, // default: 1\n}',
    ),
    (
        {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "x": {"type": ["number", "null"]},
                "n": {"type": "string", "nullable": True},
            },
        },
        "{\ntags?: string[],\nx?: number | null,\nn?: string | null,\n}",
    ),
    (
        {
            "type": "object",
            "properties": {
                "v": {
                    "oneOf": [{"type": "string", "description": "a name"}, {"type": "number", "default": 3}],
                    "description": "the value",
                }
            },
        },
        "{\n// the value\nv?:\n | string\n | number // default: 3\n,\n}",
    ),
    (
        {
            "type": "object",
            "description": "Top",
            "properties": {
                "o": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}
            },
        },
        "// Top\n{\no?: {\n    a: boolean,\n    },\n}",
    ),
    (
        {"type": "object", "properties": {"q": {"type": "string", "title": "Query", "examples": ["x", "y"]}}},
        '{\n// Query\n//\n// Examples:\n// - "x"\n// - "y"\nq?: string,\n}',
    ),
    (
        {
            "type": "object",
            "properties": {
                "d": {"type": "number", "default": 1e-5},
                "e": {"type": "number", "default": 1e20},
            },
        },
        "{\nd?: number, // default: 0.00001\ne?: number, // default: 1e20\n}",
    ),
    ({"type": "object"}, "{\n}"),
]


@pytest.mark.parametrize(("schema", "text"), OBJECTS)
def test_object_schemas(schema: dict[str, Any], text: str) -> None:
    assert schema_to_typescript(schema) == text


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        ({"type": "string"}, "string"),
        ({"type": "integer"}, "number"),
        ({"type": "number"}, "number"),
        ({"type": "boolean"}, "boolean"),
        ({"type": "string", "enum": ["a", "b"]}, '"a" | "b"'),
        ({"type": "string", "enum": [1, 2]}, "string"),
        ({"type": "array", "items": {"type": "integer"}}, "number[]"),
        ({"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}}, "boolean[][]"),
        ({"type": "array"}, "Array<any>"),
        ({"type": ["integer", "string"]}, "number | string"),
        ({"oneOf": [{"type": "string"}, {"type": "number"}]}, "\n | string\n | number"),
        ({"type": "null"}, "any"),
        ({"type": "weird"}, "any"),
        ({"type": []}, "any"),
        ({}, "any"),
        ("object", "any"),
        (None, "any"),
    ],
)
def test_other_shapes(schema: Any, text: str) -> None:
    assert schema_to_typescript(schema) == text


def test_nested_object_is_indented() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"type": "object", "properties": {"q": {"type": "string"}}}},
    }
    assert schema_to_typescript(schema, "  ") == "{\n  p?: {\n      q?: string,\n      },\n  }"


KEYWORDS = (
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "default",
    "oneOf",
    "nullable",
    "description",
    "title",
    "examples",
)
odd_schemas = st.recursive(
    json_values(max_leaves=4),
    lambda inner: st.dictionaries(st.sampled_from(KEYWORDS), inner | st.lists(inner, max_size=3), max_size=5),
    max_leaves=12,
)


@given(odd_schemas | json_schemas())
def test_any_json_value_gives_text_and_never_raises(schema: Any) -> None:
    assert isinstance(schema_to_typescript(schema), str)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (1, "1"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1e20, "1e20"),
        (1e16, "1e16"),
        (1e-5, "0.00001"),
        (-1.5e-5, "-0.000015"),
        (1e-6, "1e-6"),
        (2.5e-7, "2.5e-7"),
        (math.nan, "null"),
        (math.inf, "null"),
        ("é\n", '"é\\n"'),
        ({"b": [1, True, None], "a": (2, "x")}, '{"b":[1,true,null],"a":[2,"x"]}'),
        ({1: 2}, '{"1":2}'),
    ],
)
def test_json_value(value: Any, text: str) -> None:
    assert json_value(value) == text


def has_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    return isinstance(value, float)


@given(json_values())
def test_json_value_is_compact_json_that_reads_back(value: Any) -> None:
    text = json_value(value)
    assert json.loads(text) == value
    if not has_float(value):  # floats are spelled as serde_json does, the rest as json.dumps
        assert text == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
