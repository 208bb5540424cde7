"""JSON Schema → the TypeScript-like signatures Harmony puts in tool namespaces.

``schema_to_typescript(schema)`` gives the text that follows ``type name = (_: `` for a
function tool; :func:`json_value` writes a JSON value the way the reference renderer
does (compact, key order kept, floats in shortest round-trip form with ``1e20``-style
exponents). The output is token-exact with openai-harmony for the schemas it accepts:
objects, arrays, enums, defaults, ``nullable``, ``oneOf``, type unions, titles,
descriptions and examples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def _float_text(value: float) -> str:
    """A finite float as serde_json/ryu writes it (``1.0``, ``1e20``, ``0.00001``, ``1e-6``).

    Python's ``repr`` gives the same shortest digits; the two differ only in where the
    exponent form starts (ryu keeps ``0.0000d…`` one decade lower) and in spelling
    ``e+20`` / ``e-07`` as ``e20`` / ``e-7``.
    """
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    exp = int(exponent)
    if exp == -5:
        sign = "-" if mantissa.startswith("-") else ""
        digits = mantissa.lstrip("-").replace(".", "")
        return f"{sign}0.0000{digits}"
    return f"{mantissa}e{exp}"


def json_value(value: Any) -> str:
    """Compact JSON for ``value`` (keys in insertion order, no spaces)."""
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ",".join(f"{json_value(str(k))}:{json_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _is_enum(schema: Mapping[str, Any]) -> bool:
    values = schema.get("enum")
    return isinstance(values, list) and len(values) > 0


def _default_comment(schema: Mapping[str, Any], default: Any) -> str:
    """``default: …`` — quoted for a string default unless the schema is an enum."""
    if isinstance(default, str):
        return f'default: "{default}"' if not _is_enum(schema) else f"default: {default}"
    return f"default: {json_value(default)}"


def _is_true(value: Any) -> bool:
    return value is True


def _variant_text(variant: Any, indent: str) -> str:
    text = schema_to_typescript(variant, indent + "   ")
    if isinstance(variant, Mapping) and _is_true(variant.get("nullable")) and "null" not in text:
        text += " | null"
    return text


def _one_of_top(variants: list[Any], indent: str) -> str:
    out: list[str] = []
    for variant in variants:
        out.append(f"\n{indent} | ")
        out.append(_variant_text(variant, indent))
        comments: list[str] = []
        if isinstance(variant, Mapping):
            desc = variant.get("description")
            if isinstance(desc, str):
                comments.append(desc)
            if "default" in variant:
                default = variant["default"]
                # nested unions quote a string default even for an enum (the reference does)
                shown = (
                    f'default: "{default}"'
                    if isinstance(default, str)
                    else _default_comment(variant, default)
                )
                comments.append(shown)
        if comments:
            out.append(" // " + " ".join(comments))
    return "".join(out)


def _object_text(schema: Mapping[str, Any], indent: str) -> str:
    out: list[str] = []
    desc = schema.get("description")
    if isinstance(desc, str):
        out.append(f"{indent}// {desc}\n")
    out.append("{\n")
    props = schema.get("properties")
    if isinstance(props, Mapping):
        req = schema.get("required")
        required = {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
        for key, val in props.items():
            _property_text(out, str(key), val, key in required, indent)
    out.append(f"{indent}}}")
    return "".join(out)


def _property_text(out: list[str], key: str, val: Any, required: bool, indent: str) -> None:
    mark = "" if required else "?"
    val_map: Mapping[str, Any] = val if isinstance(val, Mapping) else {}
    title = val_map.get("title")
    if isinstance(title, str):
        out.append(f"{indent}// {title}\n{indent}//\n")
    one_of = val_map.get("oneOf")
    desc = val_map.get("description")
    if one_of is None and isinstance(desc, str):
        out.append(f"{indent}// {desc}\n")
    examples = val_map.get("examples")
    if isinstance(examples, list) and examples:
        out.append(f"{indent}// Examples:\n")
        for example in examples:
            if isinstance(example, str):
                out.append(f'{indent}// - "{example}"\n')
    if isinstance(one_of, list):
        prop_desc = desc if isinstance(desc, str) else None
        first = one_of[0] if one_of else None
        first_desc = first.get("description") if isinstance(first, Mapping) else None
        skip = prop_desc is not None and first_desc == prop_desc
        above = False
        if not skip and prop_desc is not None:
            out.append(f"{indent}// {prop_desc}\n")
            above = True
        if "default" in val_map:
            default = val_map["default"]
            if isinstance(default, str):
                shown = f'"{default}"' if not _is_enum(val_map) else default
                out.append(f"{indent}// default: {shown}\n")
            else:
                out.append(f"{indent}// default: {json_value(default)}\n")
        out.append(f"{indent}{key}{mark}:\n")
        for i, variant in enumerate(one_of):
            out.append(f"{indent} | ")
            out.append(_variant_text(variant, indent))
            comments: list[str] = []
            if isinstance(variant, Mapping):
                vdesc = variant.get("description")
                if not (i == 0 and above) and isinstance(vdesc, str) and vdesc != prop_desc:
                    comments.append(vdesc)
                if "default" in variant:
                    comments.append(_default_comment(variant, variant["default"]))
            if comments:
                out.append(" // " + " ".join(comments))
            out.append("\n")
        out.append(f"{indent},\n")
        return
    out.append(f"{indent}{key}{mark}: ")
    text = schema_to_typescript(val, indent + "    ")
    if _is_true(val_map.get("nullable")) and "null" not in text:
        text += " | null"
    out.append(text)
    out.append(",")
    if one_of is None and "default" in val_map:
        out.append(" // " + _default_comment(val_map, val_map["default"]))
    out.append("\n")


def schema_to_typescript(schema: Any, indent: str = "") -> str:
    """The TypeScript-like type of JSON Schema ``schema``, nested at ``indent``.

    Unknown or unsupported shapes become ``any``; this never raises.
    """
    if not isinstance(schema, Mapping):
        return "any"
    one_of = schema.get("oneOf")
    if isinstance(one_of, list):
        return _one_of_top(one_of, indent)
    types = schema.get("type")
    if isinstance(types, list):
        names = ["number" if t == "integer" else t for t in types if isinstance(t, str)]
        if names:
            return " | ".join(names)
    if isinstance(types, str):
        if types == "object":
            return _object_text(schema, indent)
        if types == "string":
            values = schema.get("enum")
            if isinstance(values, list):
                quoted = [f'"{v}"' for v in values if isinstance(v, str)]
                if quoted:
                    return " | ".join(quoted)
            return "string"
        if types in ("number", "integer"):
            return "number"
        if types == "boolean":
            return "boolean"
        if types == "array":
            if "items" in schema:
                return schema_to_typescript(schema["items"], indent) + "[]"
            return "Array<any>"
        return "any"
    return "any"
