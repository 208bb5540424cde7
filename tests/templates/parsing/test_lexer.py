"""Tool-call arguments through the lexer and the JSON writer: JSON-like text of every
dialect becomes JSON text, the same fed whole or in pieces; raw tagged values are typed
by their schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml.templates.parsing.json_writer import JsonWriter, atom_json
from openchatml.templates.parsing.lexer import Lexer
from openchatml.templates.parsing.schemas import (
    loads_lenient,
    property_names,
    property_schema,
    tool_schemas,
    typed_json,
    typed_value,
    value_kinds,
)


def normalize(
    text: str, *, custom_quote: str = "", positional: tuple[str, ...] = ()
) -> tuple[str, JsonWriter]:
    """``text`` through a lexer and a writer in one go, closed at the end."""
    lexer = Lexer(custom_quote=custom_quote)
    writer = JsonWriter(positional)
    lexer.run(text, 0, final=True)
    out = writer.write(lexer.tokens) + writer.close()
    return out, writer


def normalize_in_pieces(text: str, cuts: list[int], *, custom_quote: str = "") -> str:
    """``text`` fed to the lexer as a growing buffer, cut at ``cuts``."""
    lexer = Lexer(custom_quote=custom_quote)
    writer = JsonWriter()
    out = []
    buf = ""
    i = 0
    start = 0
    for cut in [*sorted(cuts), len(text)]:
        buf += text[start:cut]
        start = cut
        i = lexer.run(buf, i)
        out.append(writer.write(lexer.tokens))
        lexer.tokens.clear()
    lexer.run(buf, i, final=True)
    out.append(writer.write(lexer.tokens))
    out.append(writer.close())
    return "".join(out)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1,2,{"c":null}]}', {"a": 1, "b": [1, 2, {"c": None}]}),
        ("{'a': True, 'b': None, 'c': (1, 2)}", {"a": True, "b": None, "c": [1, 2]}),
        ('{"s": "x\\ny\\u00e9\\ud83d\\ude00"}', {"s": "x\nyé😀"}),
        ("{'k': 'it\\'s'}", {"k": "it's"}),
        ('{"a": 0x1F, "b": +1, "c": NaN, "d": 1_000}', {"a": 31, "b": 1, "c": None, "d": 1000}),
        ('{"a": 1,}', {"a": 1}),
        ('{"a" 1 "b": 2}', {"a": 1, "b": 2}),
        ("{city:London, n:-7}", {"city": "London", "n": -7}),
        ('"just a string"', "just a string"),
        ("42", 42),
        ("[1, [2, [3]]]", [1, [2, [3]]]),
    ],
)
def test_dialects_become_json(text: str, expected: Any) -> None:
    out, writer = normalize(text)
    assert json.loads(out) == expected
    assert writer.done


def test_the_writer_spells_json_one_way() -> None:
    out, _ = normalize('{"a":1,"b":[true,null],"c":{"d":"e"}}')
    assert out == '{"a": 1, "b": [true, null], "c": {"d": "e"}}'


def test_keyword_arguments_are_an_object_and_positional_ones_take_the_schema_names() -> None:
    out, _ = normalize('(code="print(1)", n=3, flags=[True, None])')
    assert json.loads(out) == {"code": "print(1)", "n": 3, "flags": [True, None]}
    out, _ = normalize("(\"Paris\", 3, unit='C')", positional=("city", "days"))
    assert json.loads(out) == {"city": "Paris", "days": 3, "unit": "C"}
    out, _ = normalize("(x)")
    assert json.loads(out) == {"_0": "x"}


def test_a_custom_string_quote_holds_raw_text() -> None:
    text = '{city:<|"|>San "Fran" {cisco}<|"|>,l:[<|"|>a<|"|>,<|"|>b<|"|>],o:{x:1.5e10}}'
    out, _ = normalize(text, custom_quote='<|"|>')
    assert json.loads(out) == {"city": 'San "Fran" {cisco}', "l": ["a", "b"], "o": {"x": 1.5e10}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1', {"a": 1}),
        ('{"a": "unterminated', {"a": "unterminated"}),
        ('{"arg1": ', {"arg1": None}),
        ('{"a": {"x": [1, {"y"', {"a": {"x": [1, {}]}}),
        ("[1, 2", [1, 2]),
        ('{"a":, "b"}', {"a": None}),
    ],
)
def test_closing_early_leaves_valid_json(text: str, expected: Any) -> None:
    out, _ = normalize(text)
    assert json.loads(out) == expected


def test_the_lexer_reads_one_value_and_stops_after_it() -> None:
    lexer = Lexer()
    end = lexer.run('{"a": [1, 2]}</tool_call>', 0)
    assert lexer.ended
    assert end == len('{"a": [1, 2]}')


def test_a_stop_marker_outside_strings_ends_the_value() -> None:
    lexer = Lexer(stops=("<|tool_call_end|>",))
    text = '{"code": "<|tool_call_end|> in a string", "n": 1<|tool_call_end|>'
    end = lexer.run(text, 0)
    assert lexer.stopped
    assert text[end:] == "<|tool_call_end|>"
    writer = JsonWriter()
    out = writer.write(lexer.tokens) + writer.close()
    assert json.loads(out) == {"code": "<|tool_call_end|> in a string", "n": 1}


def test_the_lexer_waits_for_what_may_go_on() -> None:
    lexer = Lexer()
    assert lexer.run('{"n": 12', 0) == len('{"n": ')  # the number may go on
    lexer = Lexer()
    text = '{"s": "a\\u00'
    i = lexer.run(text, 0)
    assert text[i:] == "\\u00"  # a partial escape is kept for later
    lexer = Lexer(custom_quote='<|"|>')
    text = '{s:<|"|>abc<|"'
    i = lexer.run(text, 0)
    assert text[i:] == '<|"'


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=JSONISH, data=st.data())
def test_any_json_survives_any_cutting(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    out = normalize_in_pieces(text, cuts)
    assert json.loads(out) == value
    assert out == normalize(text)[0]


@settings(max_examples=150, deadline=None)
@given(value=JSONISH, data=st.data())
def test_python_literals_survive_any_cutting(value: Any, data: st.DataObject) -> None:
    text = repr(value)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    out = normalize_in_pieces(text, cuts)
    assert json.loads(out) == value


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("{}[]()\":,='\\ab1.-_ \n<|TrueNone")), max_size=40))
def test_garbage_never_raises_and_closes_to_json(text: str) -> None:
    out, _ = normalize(text)
    if out:
        json.loads(out)


# --- schemas ------------------------------------------------------------------------------

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "x": {"type": "number"},
                    "s": {"type": "string"},
                    "b": {"type": "boolean"},
                    "z": {"type": "null"},
                    "o": {"type": "object"},
                    "a": {"type": "array", "items": {"type": "string"}},
                    "e": {"enum": ["celsius", "fahrenheit"]},
                    "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "ns": {"type": ["string", "null"]},
                    "r": {"$ref": "#/$defs/count"},
                },
                "$defs": {"count": {"type": "integer"}},
            },
        },
    },
    {"name": "bare", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"type": "function", "function": {"description": "no name"}},
)


def kinds(name: str) -> frozenset[str]:
    params = tool_schemas(TOOLS)["f"]
    return value_kinds(property_schema(params, name), params)


def test_tool_schemas_take_both_shapes() -> None:
    schemas = tool_schemas(TOOLS)
    assert set(schemas) == {"f", "bare"}
    assert property_names(schemas["bare"]) == ("q",)


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("n", "5", 5),
        ("n", " -14\n", -14),
        ("n", "5.0", 5),
        ("x", "3.14", 3.14),
        ("x", "1.5e10", 1.5e10),
        ("x", "2", 2),
        ("s", "007", "007"),
        ("s", "true", "true"),
        ("s", "  spaced  ", "  spaced  "),
        ("b", "true", True),
        ("b", "False", False),
        ("z", "null", None),
        ("z", "None", None),
        ("o", '{"a": [1, 2]}', {"a": [1, 2]}),
        ("o", "{'a': True}", {"a": True}),
        ("a", '["x", "y"]', ["x", "y"]),
        ("e", "celsius", "celsius"),
        ("u", "42", 42),
        ("u", "forty-two", "forty-two"),
        ("ns", "hello world", "hello world"),
        ("ns", "null", None),
        ("r", "7", 7),
        ("n", "not a number", "not a number"),
    ],
)
def test_raw_values_are_typed_by_their_schema(name: str, raw: str, expected: Any) -> None:
    value = typed_value(raw, kinds(name))
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("5", 5), ("[1, 2]", [1, 2]), ("True", True), ("hello", "hello"), ('{"a": 1}', {"a": 1}), ("", "")],
)
def test_without_a_schema_json_is_tried_then_text(raw: str, expected: Any) -> None:
    assert typed_value(raw, frozenset()) == expected


def test_typed_json_is_json_text() -> None:
    assert typed_json("5", frozenset({"integer"})) == "5"
    assert typed_json('say "hi"', frozenset({"string"})) == '"say \\"hi\\""'


def test_value_kinds_read_what_a_schema_says() -> None:
    assert value_kinds({"type": "object", "properties": {}}) == {"object"}
    assert value_kinds({"properties": {"a": {}}}) == {"object"}
    assert value_kinds({"items": {}}) == {"array"}
    assert value_kinds({"const": 3}) == {"integer"}
    assert value_kinds({}) == frozenset()
    assert value_kinds(None) == frozenset()


def test_loads_lenient_wants_one_whole_value() -> None:
    assert loads_lenient("{'a': None}") == {"a": None}
    with pytest.raises(ValueError):
        loads_lenient("{'a': 1} trailing")
    with pytest.raises(ValueError):
        loads_lenient("just words")


def test_atoms() -> None:
    assert atom_json("True") == "true"
    assert atom_json("1e3") == "1e3"
    assert atom_json("inf") == "null"
    assert atom_json("London") == '"London"'
