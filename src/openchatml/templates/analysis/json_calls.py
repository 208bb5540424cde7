"""Tool calls written as JSON: a JSON object (or an array of them) around the tool's name
(``{"name": …, "arguments": …}``, OpenAI's ``{"id": …, "function": {…}}``, a name as the
key), between the markers that surround it."""

from __future__ import annotations

import json
from typing import Any

from ..errors import UnsupportedTemplateError
from ..format import ReasoningFormat, ToolCallFormat, ToolSyntax
from .call_layout import DerivedToolCalls, ToolCallBodies, layout_calls, split_sections, strip_reasoning
from .closers import find_closer
from .diff import markers
from .probes import ARG1, ID1, NAME1, NAME2, VAL1
from .values import contains, json_at, json_containing


def json_calls(
    bodies: ToolCallBodies, found: tuple[Any, int, int], reasoning: ReasoningFormat, template_name: str
) -> DerivedToolCalls:
    """The format of JSON calls, ``found`` (the JSON value around the name, its start and
    end) in the one-call body; raises :class:`UnsupportedTemplateError` when the call is
    JSON but not an object."""
    value, start, end = found
    array = isinstance(value, list)
    element = value[0] if array and value else value
    if not isinstance(element, dict):
        raise UnsupportedTemplateError(f"{template_name}: a tool call is JSON but not an object: {element!r}")
    keys = json_keys(element)
    one, two = bodies.one, bodies.two
    if array:
        return _json_array_calls(one, two, start, end, keys, reasoning)
    parallel = two is not None
    body, cores = one, [(start, end)]
    if two is not None:
        c1, c2 = json_containing(two, NAME1), json_containing(two, NAME2)
        if c1 is not None and c2 is not None and c1[2] <= c2[1]:
            body, cores = two, [(c1[1], c1[2]), (c2[1], c2[2])]
        else:
            parallel = False
    layout = layout_calls(body, cores)
    section, head = split_sections(layout, len(cores) == 1, reasoning)
    tail, rest = layout.tail, layout.rest
    if len(cores) == 1:
        closer = find_closer(markers(head), rest)
        if closer is not None:
            tail, rest = rest[: closer.end()], rest[closer.end() :]
    fmt = ToolCallFormat(
        syntax=ToolSyntax.JSON,
        section_start=section,
        call_start=head,
        call_end=tail,
        separator=layout.separator,
        parallel=parallel,
        **keys,
    )
    return DerivedToolCalls(fmt, section, rest)


def _json_array_calls(
    one: str, two: str | None, start: int, end: int, keys: dict[str, Any], reasoning: ReasoningFormat
) -> DerivedToolCalls:
    """The format of calls written as one JSON array (``[{…}, {…}]``) at ``one[start:end]``."""
    parallel = two is not None
    separator = ""
    found2 = json_containing(two, NAME1) if two is not None else None
    if found2 is not None and isinstance(found2[0], list) and len(found2[0]) == 2:
        first_open = two.find("{", found2[1]) if two is not None else -1
        first = json_at(two, first_open) if two is not None and first_open != -1 else None
        if two is not None and first is not None:
            separator = two[first[1] : two.find("{", first[1])]
    else:
        parallel = False
    section, rest = strip_reasoning(one[:start], reasoning).lstrip(), one[end:]
    fmt = ToolCallFormat(
        syntax=ToolSyntax.JSON,
        section_start=section,
        separator=separator,
        parallel=parallel,
        array=True,
        **keys,
    )
    return DerivedToolCalls(fmt, section, rest)


def json_keys(element: dict[str, Any]) -> dict[str, Any]:
    """The keys of a JSON call, as :class:`ToolCallFormat` fields: name, arguments (maybe
    a JSON string), id (ours, or numbered by the template), a wrapper object, the name as
    the key."""
    as_string = False

    def is_args(v: Any) -> bool:
        nonlocal as_string
        if v == {ARG1: VAL1}:
            return True
        if isinstance(v, str) and v.lstrip().startswith("{"):
            try:
                as_string = bool(json.loads(v) == {ARG1: VAL1})
            except ValueError:
                return False
            return as_string
        return False

    name_key, args_key, id_key, wrapper, id_pattern = "name", "arguments", "", "", ""
    if NAME1 in element and is_args(element[NAME1]):
        return {"name_is_key": True}
    inner = element
    for k, v in element.items():
        if isinstance(v, dict) and contains(v, NAME1) and not is_args(v):
            wrapper, inner = k, v
            break
    for k, v in inner.items():
        if v == NAME1:
            name_key = k
        elif is_args(v):
            args_key = k
    for obj in (element, inner):
        for k, v in obj.items():
            if v == ID1:
                id_key = k
            elif v in ("0", 0) and k not in (name_key, args_key) and not id_key:
                id_key, id_pattern = k, "{index}"
    return {
        "name_key": name_key,
        "arguments_key": args_key,
        "id_key": id_key,
        "id_pattern": id_pattern,
        "wrapper_key": wrapper,
        "arguments_as_string": as_string,
        "key_order": tuple(element),
    }
