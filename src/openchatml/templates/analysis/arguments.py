"""The syntax of a call's arguments after its name: JSON (``{"first": "XXXX"}``), a
Python call (``(first='XXXX')``), object notation (``{first:<|"|>XXXX<|"|>}``), or
tagged arguments (``<parameter=first>XXXX</parameter>``), with the markers of tagged
arguments read off one argument, two, an integer and a value holding markup."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .call_layout import ToolCallBodies
from .diff import MARKER, common_prefix, lcs_marker_safe
from .edges import split_after_first_marker, split_name_prefix, split_name_suffix, split_value_suffix
from .probes import ARG1, ARG2, INT_VALUE, MARKUP_VALUE, NAME1, VAL1
from .values import json_at, matching_close, python_call


@dataclass(frozen=True, slots=True)
class TaggedArgumentMarkers:
    """The markers of tagged arguments (the ``arg_*`` fields of the format)."""

    name_prefix: str = ""
    name_suffix: str = ""
    value_prefix: str = ""
    value_suffix: str = ""
    value_prefix_json: str = ""
    separator: str = ""
    wrap_start: str = ""
    wrap_end: str = ""


def arguments_kind(body: str) -> str:
    """How the arguments follow the name in ``body``: ``json``, ``python``, ``object`` or
    ``tagged``."""
    if arguments_span("json", body, NAME1, VAL1) is not None:
        return "json"
    after = body[body.find(NAME1) + len(NAME1) :]
    if after.startswith("("):
        end = matching_close(after, 0, "(", ")")
        if end != -1 and python_call(NAME1 + after[:end]):
            return "python"
    if re.match(r"\{\s*" + ARG1 + r"\s*:", after):
        return "object"
    return "tagged"


def arguments_span(kind: str, body: str, name: str, value: str) -> tuple[int, int] | None:
    """Where the arguments (``{ARG1: value}``) of the call named ``name`` sit in ``body``
    as ``kind`` writes them (tagged: from the first argument's name to the end of its
    value), or ``None``."""
    at = body.find(name)
    if at == -1:
        return None
    at += len(name)
    v = body.find(value, at)
    if v == -1:
        return None
    if kind == "json":
        for j in range(at, v):
            if body[j] == "{":
                got = json_at(body, j)
                if got is not None and got[0] == {ARG1: value}:
                    return j, got[1]
        return None
    if kind in ("python", "object"):
        j = at if kind == "python" else body.find("{", at)
        end = matching_close(body, j, body[j], ")" if kind == "python" else "}")
        return (j, end) if end != -1 else None
    k = body.find(ARG1, at)
    return (k, v + len(value)) if k != -1 else None


def string_quote(one: str, span: tuple[int, int]) -> str:
    """What object notation writes around strings (``<|"|>``), from the arguments at
    ``span`` in ``one``."""
    text = one[span[0] : span[1]]
    return text[text.find(ARG1) + len(ARG1) : text.find(VAL1)].lstrip(": ")


def tagged_arguments(bodies: ToolCallBodies) -> TaggedArgumentMarkers:
    """The markers of tagged arguments, from one argument, two, and an integer."""
    one = bodies.one
    name_end = one.find(NAME1) + len(NAME1)
    arg_at = one.find(ARG1, name_end)
    value_at = one.find(VAL1, arg_at)
    name_prefix, value_suffix, separator = _around_arguments(
        one[name_end:arg_at], one[value_at + len(VAL1) :], bodies.pair
    )
    before_string = one[arg_at + len(ARG1) : value_at]
    name_suffix, value_prefix, value_prefix_json = _before_values(
        name_prefix, before_string, _before_integer(bodies.typed)
    )
    wrap_start, wrap_end = value_wrap(bodies.markup, name_suffix + value_prefix, value_suffix)
    return TaggedArgumentMarkers(
        name_prefix,
        name_suffix,
        value_prefix,
        value_suffix,
        value_prefix_json,
        separator,
        wrap_start,
        wrap_end,
    )


def _around_arguments(before_arg: str, after_value: str, pair: str | None) -> tuple[str, str, str]:
    """``(name_prefix, value_suffix, separator)`` of tagged arguments, from what precedes
    the first argument's name (``before_arg``), what follows its value and the ``pair``
    body, where a second argument follows the first."""
    between = ""
    if pair is not None:
        first_value = pair.find(VAL1, pair.find(NAME1))
        second_arg = pair.find(ARG2, first_value)
        if first_value != -1 and second_arg != -1:
            between = pair[first_value + len(VAL1) : second_arg]
    if between:
        # the name prefix ends what precedes the first name and the second alike
        shared = lcs_marker_safe([before_arg, between])
        name_prefix = before_arg[len(before_arg) - shared :].lstrip() if shared else ""
        value_suffix, separator = split_value_suffix(between[: len(between) - len(name_prefix)])
        return name_prefix, value_suffix, separator
    name_prefix = split_name_prefix(before_arg)[1]
    m = MARKER.search(after_value)
    return name_prefix, (after_value[: m.end()] if m else ""), ""


def _before_values(name_prefix: str, before_string: str, before_integer: str) -> tuple[str, str, str]:
    """``(name_suffix, value_prefix, value_prefix_json)``: what lies between an argument's
    name and a string value (``before_string``) or an integer (``before_integer``)."""
    if before_integer and before_integer != before_string:
        # non-strings get another value prefix (``string="false">``): the name's suffix
        # is what both share, up to a space
        shared = common_prefix([before_string, before_integer])
        cut = max(
            (i for i in range(min(shared, len(before_string))) if before_string[i].isspace()), default=shared
        )
        return before_string[:cut], before_string[cut:], before_integer[cut:]
    name_suffix, value_prefix = split_name_suffix(name_prefix, before_string)
    if not name_suffix:
        name_suffix, value_prefix = split_after_first_marker(before_string)
    return name_suffix, value_prefix, ""


def _before_integer(typed: str | None) -> str:
    """What the ``typed`` body writes between the argument's name and its integer value
    (``""`` if it is not there)."""
    if typed is not None:
        tk = typed.find(ARG1, typed.find(NAME1))
        tv = typed.find(str(INT_VALUE), tk)
        if tk != -1 and tv != -1:
            return typed[tk + len(ARG1) : tv]
    return ""


def value_wrap(markup: str | None, before_value: str, value_suffix: str) -> tuple[str, str]:
    """What a template puts around a string value holding markup and a line break
    (``<![CDATA[`` … ``]]>``), from the ``markup`` body; ``("", "")`` for nothing."""
    core = value_suffix.strip()
    if markup is None or MARKUP_VALUE not in markup or not core:
        return "", ""
    k = markup.find(ARG1, markup.find(NAME1))
    v = markup.find(MARKUP_VALUE, k)
    before, after = markup[k + len(ARG1) : v], markup[v + len(MARKUP_VALUE) :]
    end = after.find(core)
    if k == -1 or end == -1 or not before.startswith(before_value):
        return "", ""
    start, stop = before[len(before_value) :], after[:end]
    lead = value_suffix[: len(value_suffix) - len(value_suffix.lstrip())]
    if lead and stop.endswith(lead):
        stop = stop[: len(stop) - len(lead)]
    return (start, stop) if start.strip() and stop.strip() else ("", "")
