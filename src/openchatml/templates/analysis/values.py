"""JSON values and Python calls inside rendered text: where a JSON value starts and
ends, the JSON object that holds a needle, the bracket that closes another.

A tool call is JSON when a JSON value around the tool's name contains it: that is the one
heuristic of the analysis (:func:`json_containing`)."""

from __future__ import annotations

import ast
import json
from typing import Any

_DECODER = json.JSONDecoder()


def contains(value: Any, needle: str, depth: int = 0) -> bool:
    """Whether ``needle`` is a string value or key somewhere in JSON ``value`` (at most
    five levels deep)."""
    if depth > 4:
        return False
    if value == needle:
        return True
    if isinstance(value, dict):
        return any(k == needle or contains(v, needle, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(contains(v, needle, depth + 1) for v in value)
    return False


def json_at(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value starting at ``text[start]`` and where it ends, or ``None``."""
    try:
        return _DECODER.raw_decode(text, start)
    except ValueError:
        return None


def json_containing(text: str, needle: str) -> tuple[Any, int, int] | None:
    """The outermost JSON object or array that starts before ``needle`` and contains it:
    ``(value, start, end)``, or ``None``."""
    limit = text.find(needle)
    for i in range(max(limit, 0)):
        if text[i] in "{[":
            found = json_at(text, i)
            if found is not None and found[1] > limit and contains(found[0], needle):
                return found[0], i, found[1]
    return None


def matching_close(text: str, start: int, opening: str, closing: str) -> int:
    """Index after the bracket that closes ``text[start]`` (quotes respected), or -1."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def python_call(text: str) -> bool:
    """Whether ``text`` is one Python call expression (``f(a='x')``)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Call)
