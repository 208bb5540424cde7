"""Value spellings: Python literals and object notation, structural text inside a JSON
string."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from openchatml.templates.grammar.ir import LiteralText
from openchatml.templates.grammar.value_dialect import (
    JSON,
    JSON_IN_STRING,
    object_notation_literal,
    python_literal,
    python_string,
)


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("it's\n", "'it\\'s\\n'"),
        ("a\\b", "'a\\\\b'"),
        (True, "True"),
        (None, "None"),
        (1.5, "1.5"),
        (["a", False, {"k": None}], "['a', False, {'k': None}]"),
    ],
)
def test_python_literal(value: Any, literal: str) -> None:
    assert python_literal(value) == literal
    assert ast.literal_eval(literal) == value  # Python reads it back


def test_python_string() -> None:
    assert python_string("say 'hi'") == "'say \\'hi\\''"


def test_object_notation_literal() -> None:
    quote = '<|"|>'
    value = {"city": "Oslo", "days": [1, None, True]}
    assert object_notation_literal(value, quote) == '{city:<|"|>Oslo<|"|>,days:[1,null,true]}'


def test_structural_text_inside_a_json_string() -> None:
    assert JSON.structural('"k"') == LiteralText('"k"')
    assert JSON_IN_STRING.structural('"k"') == LiteralText('\\"k\\"')
