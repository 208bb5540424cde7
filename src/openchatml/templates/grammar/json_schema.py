"""JSON Schema → the intermediate form, in one :class:`~.dialect.ValueDialect`.

Supported: ``type`` (one or a list), ``properties``/``required``/``additionalProperties``,
``items``/``prefixItems``/``minItems``/``maxItems`` (and the draft 4-7 tuple form of
``items`` with ``additionalItems``), ``enum``, ``const``, ``anyOf``/``oneOf`` (as
``anyOf``), ``allOf`` (objects merged), local ``$ref`` (``#/$defs/…``, ``#/definitions/…``),
``nullable``, string ``minLength``/``maxLength`` (in every dialect).

Python strings with bounds are written as JSON strings (which Python reads alike).
Integers with both ``minimum`` and ``maximum``: exactly that range where it is small, else at
most as many digits as the bounds have. Nothing is refused. Ignored: ``pattern``,
``format``, other number bounds, ``not``,
``patternProperties`` and the like (llguidance's ``%json``, which the Lark grammar uses for
JSON arguments, enforces them); a ``$ref`` that does not resolve inside the schema, an
unknown ``type`` and an empty schema accept any JSON value.

:func:`close_schema` makes an object that declares ``properties`` and says nothing of
``additionalProperties`` closed (a model must not invent arguments); one that declares
none takes any keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .builder import RuleSet, members_in_any_order, members_in_order
from .ir import (
    EMPTY,
    LAYOUT,
    WHITESPACE_MAX,
    FreeText,
    JsonValue,
    LiteralText,
    Node,
    Repeat,
    char_class,
    choice,
    concat,
    optional,
    zero_or_more,
)
from .value_dialect import (
    IDENTIFIER,
    JSON_INTEGER,
    JSON_NUMBER,
    JSON_STRING_CHAR,
    ValueDialect,
    object_notation_literal,
    python_literal,
    python_string,
)

NON_STRING_TYPES: Final = ("number", "boolean", "null", "array", "object")
EXACT_RANGE: Final = 256
"""Integer ranges up to this many values are written value by value."""


class SchemaConverter:
    """Builds the nodes of values conforming to JSON Schemas, spelled in ``dialect``, into
    ``rule_set``; ``root`` is the schema that local ``$ref`` pointers resolve in."""

    def __init__(self, rule_set: RuleSet, dialect: ValueDialect, root: Any) -> None:
        self.rule_set = rule_set
        self.dialect = dialect
        self.root = root

    # -- pieces of the dialect
    def layout(self) -> Node:
        """Whitespace between tokens (escaped inside a JSON string)."""
        if self.dialect.kind == "json_in_string":
            return Repeat(choice(LiteralText(" "), LiteralText("\\n"), LiteralText("\\t")), 0, WHITESPACE_MAX)
        return LAYOUT

    def separator(self) -> Node:
        """The comma between members or items."""
        return concat(self.layout(), self.dialect.structural(","), self.layout())

    def key_separator(self) -> Node:
        """The colon between a key and its value."""
        return concat(self.layout(), self.dialect.structural(":"), self.layout())

    def string(self, least: int = 0, most: int | None = None) -> Node:
        """A string of ``least`` to ``most`` characters (in a JSON string, in Python a
        double-quoted string with JSON's escapes where it has bounds, in object notation
        without the quote's first character)."""
        kind = self.dialect.kind
        bounded = least > 0 or most is not None
        if kind == "object_notation":
            quote = self.dialect.quote
            limits = FreeText(quote, least=least, most=most, forbid=(quote,))
            return concat(LiteralText(quote), limits if bounded else FreeText(quote))
        if kind == "python" and not bounded:
            return self._python_string()
        if kind == "json_in_string":
            return self._json_in_string_string(least, most)
        if least == 0 and most is None:
            body = concat(LiteralText('"'), zero_or_more(JSON_STRING_CHAR), LiteralText('"'))
            return self.rule_set.add("str", body, terminal=True, key=("str",))
        char = self.rule_set.add("char", JSON_STRING_CHAR, terminal=True, key=("char",))
        body = concat(LiteralText('"'), Repeat(char, least, most), LiteralText('"'))
        return self.rule_set.add("strn", body, terminal=True, key=("strn", least, most))

    def _python_string(self) -> Node:
        double = choice(
            char_class('"\\', negated=True), concat(LiteralText("\\"), char_class("\x00", negated=True))
        )
        single = choice(
            char_class("'\\", negated=True), concat(LiteralText("\\"), char_class("\x00", negated=True))
        )
        body = choice(
            concat(LiteralText('"'), zero_or_more(double), LiteralText('"')),
            concat(LiteralText("'"), zero_or_more(single), LiteralText("'")),
        )
        return self.rule_set.add("pystr", body, terminal=True, key=("pystr",))

    def _json_in_string_string(self, least: int, most: int | None) -> Node:
        """A JSON string of ``least`` to ``most`` characters inside a JSON string: its quotes
        and backslashes escaped once more."""
        plain = char_class('"\\\x00-\x1f', negated=True)
        unicode_escape = concat(LiteralText("u"), Repeat(char_class("0-9a-fA-F"), 4, 4))
        inner_escape = concat(
            LiteralText("\\\\"),
            choice(LiteralText('\\"'), LiteralText("\\\\"), char_class("/bfnrt"), unicode_escape),
        )
        outer_escape = concat(LiteralText("\\"), choice(char_class("nrtbf/"), unicode_escape))
        char = choice(plain, inner_escape, outer_escape)
        body = concat(LiteralText('\\"'), Repeat(char, least, most), LiteralText('\\"'))
        return self.rule_set.add("jstrstr", body, terminal=True, key=("jstrstr", least, most))

    def number(self, integer: bool) -> Node:
        """An integer, or any JSON number."""
        name = "int" if integer else "num"
        return self.rule_set.add(name, JSON_INTEGER if integer else JSON_NUMBER, terminal=True, key=(name,))

    def bounded_integer(self, least: int, most: int) -> Node:
        """An integer from ``least`` to ``most``: exactly, for a range of at most
        :data:`EXACT_RANGE` values; else of no more digits than the bounds have, negative
        only where ``least`` is (the validator checks the rest; the digits keep a sampler
        from writing a number without end)."""
        if 0 <= most - least < EXACT_RANGE:
            values = choice(*(LiteralText(str(value)) for value in range(least, most + 1)))
            return self.rule_set.add("int", values, terminal=True, key=("int", least, most))
        digits = len(str(max(abs(least), abs(most))))
        magnitude = choice(
            LiteralText("0"), concat(char_class("1-9"), Repeat(char_class("0-9"), 0, digits - 1))
        )
        body = concat(optional(LiteralText("-")), magnitude) if least < 0 else magnitude
        return self.rule_set.add("int", body, terminal=True, key=("int", digits, least < 0))

    def boolean(self) -> Node:
        if self.dialect.kind == "python":
            return choice(
                LiteralText("True"), LiteralText("False"), LiteralText("true"), LiteralText("false")
            )
        return choice(self.dialect.structural("true"), self.dialect.structural("false"))

    def null(self) -> Node:
        if self.dialect.kind in ("python", "object_notation"):
            return choice(LiteralText("None"), LiteralText("null"))
        return self.dialect.structural("null")

    def key(self, name: str) -> Node:
        """The key ``name`` as the dialect writes it."""
        kind = self.dialect.kind
        if kind == "object_notation":
            return choice(LiteralText(name), LiteralText(self.dialect.quote + name + self.dialect.quote))
        if kind == "python":
            return choice(LiteralText(python_string(name)), LiteralText(json.dumps(name, ensure_ascii=False)))
        return self.dialect.structural(json.dumps(name, ensure_ascii=False))

    def any_key(self) -> Node:
        """Any key (an identifier or a string in object notation, a string elsewhere)."""
        if self.dialect.kind == "object_notation":
            identifier = self.rule_set.add("ident", IDENTIFIER, terminal=True, key=("ident",))
            return choice(identifier, self.string())
        return self.string()

    def const(self, value: Any) -> Node:
        """Exactly the JSON value ``value``."""
        kind = self.dialect.kind
        if kind == "python":
            return choice(
                LiteralText(python_literal(value)), LiteralText(json.dumps(value, ensure_ascii=False))
            )
        if kind == "object_notation":
            return LiteralText(object_notation_literal(value, self.dialect.quote))
        return self.dialect.structural(json.dumps(value, ensure_ascii=False))

    def pair(self, name: str, value: Node) -> Node:
        """A member: the key ``name``, the key separator, ``value``."""
        return concat(self.key(name), self.key_separator(), value)

    # -- values
    def value(self, schema: Any) -> Node:
        """A value conforming to ``schema``: one rule per schema, shared."""
        if not isinstance(schema, Mapping) or not schema:
            return self.any()
        key = (self.dialect, "v", json.dumps(schema, sort_keys=True, default=str))
        ref, new = self.rule_set.forward("val", key)
        if new:
            self.rule_set.define(ref.name, self._value(schema))
        return ref

    def _value(self, schema: Mapping[str, Any]) -> Node:
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs", "definitions")}
            if target is None:
                return self.any()
            if not rest or not isinstance(target, Mapping):
                return self.value(target)
            return self.value({**target, **rest})
        if "const" in schema:
            return self.const(schema["const"])
        if isinstance(schema.get("enum"), list):
            return choice(*(self.const(v) for v in schema["enum"]))
        for word in ("anyOf", "oneOf"):
            if isinstance(schema.get(word), list) and schema[word]:
                siblings = {k: v for k, v in schema.items() if k not in (word, "$defs", "definitions")}
                return choice(*(self.value(merge_schemas(siblings, sub)) for sub in schema[word]))
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for sub in schema["allOf"]:
                if isinstance(sub, Mapping) and "$ref" in sub:
                    sub = self._resolve(sub["$ref"]) or {}
                merged = merge_schemas(merged, sub)
            return self.value(merged)
        types = schema_types(schema)
        if not types:
            return self.any()
        return choice(*(self._typed(kind, schema) for kind in types))

    def _typed(self, kind: str, schema: Mapping[str, Any]) -> Node:
        if kind == "string":
            least = int(schema.get("minLength", 0) or 0)
            most = schema.get("maxLength")
            return self.string(least, int(most) if isinstance(most, int) else None)
        if kind == "integer" and _is_int(schema.get("minimum")) and _is_int(schema.get("maximum")):
            return self.bounded_integer(int(schema["minimum"]), int(schema["maximum"]))
        if kind in ("number", "integer"):
            return self.number(kind == "integer")
        if kind == "boolean":
            return self.boolean()
        if kind == "null":
            return self.null()
        if kind == "array":
            return self.array(schema)
        if kind == "object":
            return self.object(schema)
        return self.any()

    def object(self, schema: Mapping[str, Any]) -> Node:
        """An object: declared members in schema order (JSON) or any order (Python, object
        notation), then other members where ``additionalProperties`` allows them."""
        members, extra = declared_members(schema)
        extra_pair = None
        if extra is not None and extra is not False:
            extra_schema = extra if isinstance(extra, Mapping) else {}
            extra_pair = concat(self.any_key(), self.key_separator(), self.value(extra_schema))
        pairs = [(self.pair(name, self.value(sub)), required) for name, sub, required in members]
        arrange = (
            members_in_order if self.dialect.kind in ("json", "json_in_string") else members_in_any_order
        )
        body = arrange(self.rule_set, pairs, self.separator(), extra_pair)
        return concat(
            self.dialect.structural("{"), self.layout(), body, self.layout(), self.dialect.structural("}")
        )

    def array(self, schema: Mapping[str, Any]) -> Node:
        """An array: ``prefixItems`` first, then ``items``, within ``minItems``/``maxItems``
        (the bounds apply where there are no ``prefixItems``, ``minItems`` to those)."""
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        least = int(schema.get("minItems", 0) or 0)
        most_raw = schema.get("maxItems")
        most = int(most_raw) if isinstance(most_raw, int) else None
        item = None if items is False else self.value(items if isinstance(items, Mapping) else {})
        separator = self.separator()
        if isinstance(prefix, list) and prefix:
            body = self._tuple([self.value(p) for p in prefix], item, least, separator)
        elif item is None or most == 0:
            body = EMPTY
        else:
            rest_most = None if most is None else max(most - 1, 0)
            body = concat(item, Repeat(concat(separator, item), max(least - 1, 0), rest_most))
            body = body if least > 0 else optional(body)
        return concat(
            self.dialect.structural("["), self.layout(), body, self.layout(), self.dialect.structural("]")
        )

    @staticmethod
    def _tuple(head: list[Node], item: Node | None, least: int, separator: Node) -> Node:
        """The items of an array with ``prefixItems`` (``head``), then ``item`` any number of
        times (``None``: no more)."""
        if item is not None:
            more = zero_or_more(concat(separator, item))
            items = concat(head[0], *[concat(separator, node) for node in head[1:]], more)
            return items if least > 0 else optional(items)
        body: Node = EMPTY
        for i in reversed(range(len(head))):
            rest = body if i == len(head) - 1 else concat(separator, body) if body != EMPTY else EMPTY
            tail = concat(head[i], rest)
            body = tail if i < least else optional(tail)
        return body

    def any(self) -> Node:
        """Any value."""
        key = (self.dialect, "any")
        ref, new = self.rule_set.forward("any", key)
        if new:
            separator = self.separator()
            open_brace, close_brace = self.dialect.structural("{"), self.dialect.structural("}")
            open_bracket, close_bracket = self.dialect.structural("["), self.dialect.structural("]")
            pair = concat(self.any_key(), self.key_separator(), ref)
            members = optional(concat(pair, zero_or_more(concat(separator, pair))))
            obj = concat(open_brace, self.layout(), members, self.layout(), close_brace)
            items = optional(concat(ref, zero_or_more(concat(separator, ref))))
            arr = concat(open_bracket, self.layout(), items, self.layout(), close_bracket)
            self.rule_set.define(
                ref.name, choice(self.string(), self.number(False), obj, arr, self.boolean(), self.null())
            )
        return ref

    def _resolve(self, pointer: Any) -> Any:
        """The part of the root schema a local ``$ref`` points to (``None``: none)."""
        if not isinstance(pointer, str) or not pointer.startswith("#"):
            return None
        node = self.root
        for part in [p for p in pointer[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def declared_members(schema: Any) -> tuple[list[tuple[str, Any, bool]], Any]:
    """The declared members of an object schema (name, schema, required; required names
    without a schema take any value) and what other members may be
    (``additionalProperties``: by default none where some are declared, any otherwise)."""
    s = schema if isinstance(schema, Mapping) else {}
    properties = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    required = [r for r in s.get("required") or () if isinstance(r, str)]
    members = [(name, sub, name in required) for name, sub in properties.items() if sub is not False]
    members += [(name, {}, True) for name in required if name not in properties]
    extra = s.get("additionalProperties", None if members else True)
    return members, extra


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types ``schema`` names, or implies by its keywords (``properties``: an
    object, ``items``: an array), with ``"null"`` where it is ``nullable``."""
    raw = schema.get("type")
    types = (
        [raw]
        if isinstance(raw, str)
        else [t for t in raw if isinstance(t, str)]
        if isinstance(raw, list)
        else []
    )
    if not types:
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            types = ["object"]
        elif "items" in schema or "prefixItems" in schema:
            types = ["array"]
    if types and schema.get("nullable") is True and "null" not in types:
        types.append("null")
    return types


def merge_schemas(first: Any, second: Any) -> dict[str, Any]:
    """A shallow merge of two schemas (``properties`` and ``required`` joined)."""
    out = dict(first) if isinstance(first, Mapping) else {}
    if not isinstance(second, Mapping):
        return out
    for key, value in second.items():
        if key == "properties" and isinstance(out.get(key), Mapping) and isinstance(value, Mapping):
            out[key] = {**out[key], **value}
        elif key == "required" and isinstance(out.get(key), list) and isinstance(value, list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            out[key] = value
    return out


def allows_type(schema: Any, wanted: str) -> bool:
    """Whether ``schema`` admits some value of JSON type ``wanted``."""
    if not isinstance(schema, Mapping) or not schema:
        return True
    if "const" in schema:
        return _json_type(schema["const"]) == wanted
    if isinstance(schema.get("enum"), list):
        return any(_json_type(v) == wanted for v in schema["enum"])
    for word in ("anyOf", "oneOf"):
        if isinstance(schema.get(word), list):
            return any(allows_type(sub, wanted) for sub in schema[word])
    if "$ref" in schema or "allOf" in schema:
        return True
    types = schema_types(schema)
    return not types or wanted in types or (wanted == "integer" and "number" in types)


def allows_non_string(schema: Any) -> bool:
    """Whether ``schema`` admits some value that is not a string."""
    return any(allows_type(schema, kind) for kind in NON_STRING_TYPES)


def _json_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


FORMAT_PATTERNS: Final = {
    "date": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    "time": r"^[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$",
    "date-time": (
        r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"
    ),
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
"""The string formats a raw string value is held to, as anchored patterns."""


def string_limits(schema: Any) -> tuple[int, int | None, str]:
    """A string schema's ``minLength``, ``maxLength`` (``None``: none) and ``pattern`` (a
    known ``format``'s where it has none; ``""``: none)."""
    s = schema if isinstance(schema, Mapping) else {}
    least, most, pattern = s.get("minLength"), s.get("maxLength"), s.get("pattern")
    if not isinstance(pattern, str):
        pattern = FORMAT_PATTERNS.get(str(s.get("format")), "")
    least = least if isinstance(least, int) and not isinstance(least, bool) and least > 0 else 0
    most = most if isinstance(most, int) and not isinstance(most, bool) and most >= 0 else None
    return least, most, pattern


def string_enum(schema: Any) -> list[str] | None:
    """The allowed strings when ``schema`` is only an ``enum``/``const`` of strings."""
    if not isinstance(schema, Mapping):
        return None
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return [str(v) for v in values]
    return None


def without_strings(schema: Any) -> Any:
    """``schema`` less its string values (``None`` if nothing is left)."""
    if not isinstance(schema, Mapping) or not schema:
        return {"anyOf": [{"type": kind} for kind in NON_STRING_TYPES]}
    if isinstance(schema.get("anyOf"), list):
        rest = [sub for sub in schema["anyOf"] if allows_non_string(sub)]
        return {**schema, "anyOf": rest} if rest else None
    types = schema_types(schema)
    if types:
        rest_types = [kind for kind in types if kind != "string"]
        return {**schema, "type": rest_types} if rest_types else None
    return schema if allows_non_string(schema) else None


def json_value(schema: Any, root: Any) -> JsonValue:
    """A :class:`~.ir.JsonValue` for ``schema``, carrying the ``$defs`` of ``root`` it may
    refer to."""
    s = dict(schema) if isinstance(schema, Mapping) else {}
    if isinstance(root, Mapping) and root is not schema:
        for key in ("$defs", "definitions"):
            if key in root and key not in s and "$ref" in json.dumps(s):
                s[key] = root[key]
    return JsonValue(json.dumps(s, ensure_ascii=False))


def close_schema(schema: Any, *, in_all_of: bool = False) -> Any:
    """``schema`` with ``additionalProperties: false`` on objects that declare their
    properties (``"properties": {}`` included: none) and say nothing of others (not inside
    ``allOf``, whose parts are merged), and OpenAPI's ``nullable: true`` as a ``"null"``
    type."""
    if isinstance(schema, list):
        return [close_schema(s, in_all_of=in_all_of) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, Mapping):
            out[key] = {k: close_schema(v) for k, v in value.items()}
        elif key in ("items", "prefixItems", "additionalProperties", "anyOf", "oneOf", "not", "contains"):
            out[key] = close_schema(value)
        elif key == "allOf":
            out[key] = close_schema(value, in_all_of=True)
        else:
            out[key] = value
    if out.get("nullable") is True:
        del out["nullable"]
        kind = out.get("type")
        if isinstance(kind, str) and kind != "null":
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
    if (
        not in_all_of
        and "allOf" not in out
        and isinstance(out.get("properties"), Mapping)
        and "additionalProperties" not in out
    ):
        out["additionalProperties"] = False
    return out
