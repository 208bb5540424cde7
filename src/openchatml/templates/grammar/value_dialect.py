"""How values are spelled in a tool call: JSON; JSON text inside a JSON string (arguments
encoded as a string); Python literals (keyword arguments, tagged values of templates
that write ``value | string``); object notation (bare keys, strings between quote
markers, Gemma's ``{k:<|"|>v<|"|>}``). Also the lexical pieces of JSON as nodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .ir import LiteralText, Repeat, char_class, choice, concat, optional, zero_or_more

DialectKind = Literal["json", "json_in_string", "python", "object_notation"]


@dataclass(frozen=True, slots=True)
class ValueDialect:
    """A spelling of values: ``json``; ``json_in_string`` (JSON text inside a JSON string);
    ``python`` (Python literals, JSON spellings of true/false/null too);
    ``object_notation`` (bare keys, strings between ``quote`` markers)."""

    kind: DialectKind
    quote: str = ""

    def structural(self, text: str) -> LiteralText:
        """Structural text (braces, commas, keywords), escaped as it must appear."""
        if self.kind == "json_in_string":
            return LiteralText(json.dumps(text, ensure_ascii=False)[1:-1])
        return LiteralText(text)


JSON: Final = ValueDialect("json")
JSON_IN_STRING: Final = ValueDialect("json_in_string")
PYTHON: Final = ValueDialect("python")


def object_notation(quote: str) -> ValueDialect:
    """Object notation with strings between ``quote`` markers."""
    return ValueDialect("object_notation", quote)


HEX_DIGIT: Final = char_class("0-9a-fA-F")
JSON_STRING_CHAR: Final = choice(
    char_class('"\\\x00-\x1f', negated=True),
    concat(
        LiteralText("\\"), choice(char_class('"\\/bfnrt'), concat(LiteralText("u"), Repeat(HEX_DIGIT, 4, 4)))
    ),
)
"""One character of a JSON string, escaped where JSON requires it."""
JSON_INTEGER: Final = concat(
    optional(LiteralText("-")),
    choice(LiteralText("0"), concat(char_class("1-9"), zero_or_more(char_class("0-9")))),
)
JSON_NUMBER: Final = concat(
    JSON_INTEGER,
    optional(concat(LiteralText("."), Repeat(char_class("0-9"), 1, None))),
    optional(concat(char_class("eE"), optional(char_class("+-")), Repeat(char_class("0-9"), 1, None))),
)
IDENTIFIER: Final = concat(char_class("A-Za-z_"), zero_or_more(char_class("A-Za-z0-9_")))
"""A bare key: letters, digits and underscores, not starting with a digit."""


def python_string(text: str) -> str:
    """``text`` as a single-quoted Python string."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def python_literal(value: Any) -> str:
    """A JSON value as a Python literal (``True``, ``None``, ``['a']``)."""
    if isinstance(value, str):
        return python_string(value)
    if value is True or value is False or value is None:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{" + ", ".join(f"{python_string(str(k))}: {python_literal(v)}" for k, v in value.items()) + "}"
        )
    return json.dumps(value)


def object_notation_literal(value: Any, quote: str) -> str:
    """A JSON value in object notation, strings between ``quote`` markers."""
    if isinstance(value, str):
        return quote + value + quote
    if isinstance(value, list):
        return "[" + ",".join(object_notation_literal(v, quote) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{object_notation_literal(v, quote)}" for k, v in value.items()) + "}"
    return json.dumps(value)
