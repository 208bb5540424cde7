"""Query-string parameters, checked: what is out of range or malformed is a 400 that
names the parameter, never a validation error of another shape."""

from __future__ import annotations

from typing import Final

from starlette.requests import Request

from ..responses.errors import RequestError

MAX_QUERY_INT: Final = 2**53
"""Integers in query strings stay within what every JSON client and SQL integer holds."""


def int_param(
    request: Request, name: str, default: int | None, *, low: int = 0, high: int = MAX_QUERY_INT
) -> int | None:
    """The integer query parameter ``name`` (``default`` when absent), between ``low``
    and ``high``; :class:`RequestError` otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw) if len(raw) <= 20 else None
    except ValueError:
        value = None
    if value is None:
        raise RequestError(f"'{name}' must be an integer, got {raw[:40]!r}.", param=name)
    if not low <= value <= high:
        raise RequestError(f"'{name}' must be between {low} and {high}, got {value}.", param=name)
    return value


def bool_param(request: Request, name: str) -> bool:
    """The boolean query parameter ``name`` (``true``/``false``, ``1``/``0``; absent: false)."""
    raw = request.query_params.get(name)
    if raw is None:
        return False
    value = {"true": True, "1": True, "false": False, "0": False}.get(raw.lower())
    if value is None:
        raise RequestError(f"'{name}' must be 'true' or 'false', got {raw[:40]!r}.", param=name)
    return value


def choice_param(request: Request, name: str, default: str, choices: tuple[str, ...]) -> str:
    """The query parameter ``name`` (``default`` when absent), one of ``choices``;
    :class:`RequestError` otherwise."""
    value = request.query_params.get(name, default)
    if value not in choices:
        listed = " or ".join(f"'{choice}'" for choice in choices)
        raise RequestError(f"'{name}' must be {listed}.", param=name)
    return value


def id_param(request: Request, name: str, max_length: int) -> str | None:
    """The query parameter ``name`` holding an id (``None`` when absent), at most
    ``max_length`` characters; :class:`RequestError` otherwise."""
    value = request.query_params.get(name)
    if value is not None and len(value) > max_length:
        raise RequestError(f"'{name}' is longer than {max_length} characters.", param=name)
    return value
