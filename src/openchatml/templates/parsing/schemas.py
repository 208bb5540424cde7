"""Tool schemas and the values raw tagged arguments stand for.

* :func:`tool_schemas`, :func:`property_schema`, :func:`property_names` — a tool's
  parameters' JSON schema, and what it says of one property.
* :func:`value_kinds`, :func:`typed_value`, :func:`typed_json` — the JSON types a
  parameter's schema allows, and the value raw tagged text stands for
  (``<parameter=n>5</parameter>``).
* :func:`loads_lenient` — one JSON-like text to a Python value, in one go.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .json_writer import JsonWriter
from .lexer import Lexer

__all__ = [
    "loads_lenient",
    "property_names",
    "property_schema",
    "tool_schemas",
    "typed_json",
    "typed_value",
    "value_kinds",
]

_ALL_KINDS: Final = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})


def tool_schemas(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool name → its parameters' JSON schema, from OpenAI-style tools
    (``{"type": "function", "function": {"name", "parameters"}}``) or bare function
    objects (``{"name", "parameters"}``). Entries without a name are ignored."""
    out: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping):
            continue
        name = fn.get("name")
        if isinstance(name, str) and name:
            params = fn.get("parameters")
            out[name] = params if isinstance(params, Mapping) else {}
    return out


def property_schema(parameters: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The schema of property ``name`` of an object schema, ``None`` if it says nothing."""
    props = parameters.get("properties")
    if isinstance(props, Mapping):
        sub = props.get(name)
        if isinstance(sub, Mapping):
            return _resolve(sub, parameters)
    extra = parameters.get("additionalProperties")
    if isinstance(extra, Mapping):
        return _resolve(extra, parameters)
    return None


def property_names(parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The declared properties of an object schema, in order."""
    props = parameters.get("properties")
    return tuple(k for k in props if isinstance(k, str)) if isinstance(props, Mapping) else ()


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/") or depth > 8:
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return schema
        node = node[part]
    return _resolve(node, root, depth + 1) if isinstance(node, Mapping) else schema


def value_kinds(schema: Mapping[str, Any] | None, root: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The JSON types ``schema`` allows (``string``, ``integer``, ``number``, ``boolean``,
    ``null``, ``object``, ``array``); empty when it does not say."""
    if not isinstance(schema, Mapping):
        return frozenset()
    if root is not None:
        schema = _resolve(schema, root)
    kinds: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        kinds.add(t)
    elif isinstance(t, list):
        kinds.update(x for x in t if isinstance(x, str))
    for key in ("enum", "const"):
        if key in schema:
            values = schema[key] if key == "enum" and isinstance(schema[key], list) else [schema[key]]
            kinds.update(_kind_of(v) for v in values)
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            for sub in subs:
                kinds |= value_kinds(sub, root)
    if not kinds:
        if "properties" in schema:
            kinds.add("object")
        elif "items" in schema:
            kinds.add("array")
    return frozenset(kinds & _ALL_KINDS)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_INT_RE: Final = re.compile(r"[+-]?\d+")
_NUM_RE: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MISSING: Final = object()


def loads_lenient(text: str) -> Any:
    """The value of one JSON-like text (JSON, Python literals, bare keys); raises
    ``ValueError`` when it is not one whole value."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    lexer = Lexer()
    end = lexer.run(text, 0, final=True)
    writer = JsonWriter()
    out = writer.write(lexer.tokens)
    if end != len(text) or not writer.done or writer.skipped:
        raise ValueError("not one JSON-like value")
    return json.loads(out)


def typed_value(raw: str, kinds: frozenset[str]) -> Any:
    """The value raw tagged text stands for, given the types its schema allows.

    A parameter that may only be a string keeps its text as is (``"007"`` stays
    ``"007"``); otherwise the first type the text reads as wins, in the order null,
    boolean, integer, number, object/array, string. With no schema, JSON (or a Python
    literal) is tried and the text kept as a string if it is not one.
    """
    if kinds == {"string"}:
        return raw
    text = raw.strip()
    if not kinds:
        try:
            return loads_lenient(text)
        except ValueError:
            return raw
    if "null" in kinds and text in ("null", "None", "NULL"):
        return None
    if "boolean" in kinds:
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
    if ("integer" in kinds or "number" in kinds) and _INT_RE.fullmatch(text):
        return int(text)
    if ("number" in kinds or "integer" in kinds) and _NUM_RE.fullmatch(text):
        number = float(text)
        if "integer" in kinds and number.is_integer() and "number" not in kinds:
            return int(number)
        return number
    if "object" in kinds or "array" in kinds or "string" not in kinds:
        try:
            value = loads_lenient(text)
        except ValueError:
            value = _MISSING
        if value is not _MISSING and ("string" not in kinds or not isinstance(value, str)):
            return value
    return raw


def typed_json(raw: str, kinds: frozenset[str]) -> str:
    """:func:`typed_value` as JSON text."""
    return json.dumps(typed_value(raw, kinds), ensure_ascii=False)
