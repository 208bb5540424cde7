"""Pydantic's validation errors → the API's :class:`~..errors.RequestError`.

:func:`request_error` names the first error's field as the API does (``param``:
``input[2].content[0].type``, union tags left out), with the project's code
(``invalid_type``, ``invalid_value``, ``string_above_max_length``,
``unsupported_tool_type`` …) and a message that says what was expected and what came.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ..errors import RequestError
from .content import INPUT_PARTS, OUTPUT_PARTS
from .items import ITEM_TYPES, ROLES
from .tools import (
    CHOICE_TYPES,
    FORMAT_TYPES,
    HOSTED_TOOL_TYPES,
    OFFERED_TOOL_TYPES,
    REFUSED_TOOL_TYPES,
    UNOFFERED_TOOL_TYPES,
)


def type_name(value: Any) -> str:
    """How a message names the JSON type of ``value`` (``a string``, ``null`` …)."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def param_of(loc: Sequence[str | int], root: str = "") -> str:
    """The ``param`` of an error location: ``("input", 0, "@message.user", "content")``
    → ``input[0].content``; ``root`` goes first."""
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part.startswith("@"):
            out = f"{out}.{part}" if out else part
    return out


def _choices(expected: str) -> str:
    """Pydantic's ``'a', 'b' or 'c'`` as the API writes it: ``'a', 'b', 'c'``."""
    head, _, last = expected.rpartition(" or ")
    return f"{head}, {last}" if head else expected


def _quoted(values: Sequence[str]) -> str:
    return ", ".join(repr(v) for v in values)


Rendered = tuple[str, str, str]
"""An error as the API gives it: ``(param, code, message)``."""


def _wrong_type(param: str, value: Any, expected: str) -> Rendered:
    message = f"Invalid type for '{param}': expected {expected}, but got {type_name(value)}."
    return param, "invalid_type", message


Render = Callable[[str, Any, dict[str, Any]], Rendered]
"""``(param, value, ctx)`` → the error as the API gives it."""


def _tagged(render: Render) -> Render:
    """An error of a union's tag: an object is expected first; its ``type`` then."""

    def tagged(param: str, value: Any, ctx: dict[str, Any]) -> Rendered:
        if not isinstance(value, dict):
            return _wrong_type(param, value, "an object")
        return render(param, value, ctx)

    return tagged


def _item_type(param: str, item: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        role = item.get("role")
        message = f"Invalid value for '{param}.role': {role!r}. Supported values are: {_quoted(ROLES)}."
        return f"{param}.role", "invalid_value", message
    supported = _quoted(ITEM_TYPES)
    message = f"Invalid input item type {kind!r} at '{param}'. Supported types are: {supported}."
    return f"{param}.type", "invalid_value", message


def _tool_type(param: str, tool: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    kind = tool.get("type")
    if isinstance(kind, str) and kind in REFUSED_TOOL_TYPES:
        message = (
            f"Unsupported tool type {kind!r} at '{param}': this model reads and writes text only "
            "and cannot see the screenshots a computer tool works with."
        )
    else:
        offered = _quoted((*OFFERED_TOOL_TYPES, *HOSTED_TOOL_TYPES, *UNOFFERED_TOOL_TYPES))
        message = f"Unsupported tool type {kind!r} at '{param}': this server takes {offered}."
    return f"{param}.type", "unsupported_tool_type", message


def _tool_choice_type(param: str, choice: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    kind = choice.get("type")
    expected = _quoted(CHOICE_TYPES)
    message = f"Invalid tool_choice type {kind!r} at '{param}': expected one of {expected}."
    return f"{param}.type", "invalid_value", message


def _content_type(param: str, part: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    message = f"Invalid content type {part.get('type')!r} at '{param}': expected {ctx['expected']}."
    return f"{param}.type", "invalid_value", message


def _format_type(param: str, value: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    message = (
        f"Invalid value for '{param}.type': {value.get('type')!r}. "
        f"Supported values are: {_quoted(FORMAT_TYPES)}."
    )
    return f"{param}.type", "invalid_value", message


def _input_format_type(param: str, value: dict[str, Any], ctx: dict[str, Any]) -> Rendered:
    message = (
        f"Invalid value for '{param}.type': {value.get('type')!r}. Supported values are: 'text', 'grammar'."
    )
    return f"{param}.type", "invalid_value", message


def _expecting(expected: str) -> Render:
    return _tagged(lambda param, part, ctx: _content_type(param, part, {"expected": expected}))


_MESSAGES: Final[dict[str, Render]] = {
    "too_long": lambda p, v, c: (
        p,
        "string_above_max_length",
        f"'{p}' is too long: at most {c['limit']} characters.",
    ),
    "bad_name": lambda p, v, c: (
        p,
        "invalid_value",
        f"Invalid '{p}': {c['value']!r} must match ^[a-zA-Z0-9_-]+$.",
    ),
    "wrong_type": lambda p, v, c: _wrong_type(p, v, c["expected"]),
    "out_of_range": lambda p, v, c: (p, "invalid_value", f"'{p}' must be {c['bound']}, got {c['value']}."),
    "needs_source": lambda p, v, c: (p, "missing_required_parameter", f"'{p}' needs {c['sources']}."),
    "too_many_keys": lambda p, v, c: (p, "invalid_value", f"'{p}' may hold at most {c['limit']} keys."),
    "long_key": lambda p, v, c: (
        p,
        "invalid_value",
        f"{p} key {c['key'][:20]!r}… is longer than 64 characters.",
    ),
    "content_type": _tagged(_content_type),
    "input_content_type": _expecting(INPUT_PARTS),
    "output_content_type": _expecting(OUTPUT_PARTS),
    "format_type": _tagged(_format_type),
    "input_format_type": _tagged(_input_format_type),
    "item_type": _tagged(_item_type),
    "tool_type": _tagged(_tool_type),
    "tool_choice_type": _tagged(_tool_choice_type),
    "literal_error": lambda p, v, c: (
        p,
        "invalid_value",
        f"Invalid value for '{p}': {v!r}. Supported values are: {_choices(c['expected'])}.",
    ),
    "extra_forbidden": lambda p, v, c: (p, "unknown_parameter", f"Unknown parameter: '{p}'."),
    "missing": lambda p, v, c: (p, "missing_required_parameter", f"Missing required parameter: '{p}'."),
}
_TYPES: Final = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "an array",
    "tuple_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
}


def render(error: ErrorDetails, root: str = "") -> Rendered:
    """``(param, code, message)`` of one pydantic error."""
    param = param_of(error["loc"], root)
    kind = error["type"]
    value = error.get("input")
    if kind in _TYPES:
        return _wrong_type(param, value, _TYPES[kind])
    make = _MESSAGES.get(kind)
    if make is None:
        return param, "invalid_value", f"Invalid value for '{param}': {error['msg']}."
    return make(param, value, dict(error.get("ctx") or {}))


def request_error(error: ValidationError, root: str = "") -> RequestError:
    """The :class:`RequestError` of the first error of ``error`` (locations under ``root``)."""
    param, code, message = render(error.errors(include_url=False)[0], root)
    return RequestError(message, param=param, code=code)
