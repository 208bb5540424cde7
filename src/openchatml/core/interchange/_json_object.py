"""JSON input read at its path: typed getters that raise :class:`.errors.InterchangeError`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .._json import frozen
from .errors import path_error

MISSING: Final = object()
"""What :meth:`dict.get` returns for a key that is absent (``None`` may be a value)."""


def key_path(path: str, key: str) -> str:
    """The path of ``key`` inside the object at ``path`` (``a.b``, or ``a["not an identifier"]``)."""
    if not key.isidentifier():
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}.{key}" if path else key


def index_path(path: str, index: int) -> str:
    """The path of item ``index`` of the array at ``path``."""
    return f"{path}[{index}]"


def kind_of(value: Any) -> str:
    """What ``value`` is, as an error message names it (``a string``, ``null`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


class JSONObject:
    """A JSON object being read at ``path``: typed getters and a check for unknown keys."""

    __slots__ = ("data", "path")

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise path_error(path, f"expected an object, not {kind_of(value)}")
        self.data: Mapping[Any, Any] = value
        self.path = path

    def at(self, key: str) -> str:
        return key_path(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.data

    def only(self, allowed: frozenset[str]) -> None:
        """Raise for a key not in ``allowed``."""
        for key in self.data:
            if key not in allowed:
                expected = ", ".join(sorted(allowed))
                raise path_error(self.at(str(key)), f"unknown key (expected one of: {expected})")

    def string(self, key: str) -> str:
        """A required string."""
        value = self.data.get(key, MISSING)
        if value is MISSING:
            raise path_error(self.at(key), "missing (expected a string)")
        if not isinstance(value, str):
            raise path_error(self.at(key), f"expected a string, not {kind_of(value)}")
        return value

    def opt_string(self, key: str) -> str | None:
        """A string, or ``None`` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise path_error(self.at(key), f"expected a string, not {kind_of(value)}")
        return value

    def flag(self, key: str) -> bool:
        """A boolean, ``False`` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise path_error(self.at(key), f"expected true or false, not {kind_of(value)}")
        return value

    def array(self, key: str) -> list[Any]:
        """A list, empty when absent or null."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise path_error(self.at(key), f"expected an array, not {kind_of(value)}")
        return list(value)

    def mapping(self, key: str, *, required: bool = False) -> Mapping[str, Any] | None:
        """A JSON object (frozen), ``None`` when absent or null and not ``required``."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise path_error(self.at(key), "missing (expected an object)")
            return None
        if not isinstance(value, Mapping):
            raise path_error(self.at(key), f"expected an object, not {kind_of(value)}")
        result: Mapping[str, Any] = frozen(value)
        return result
