"""What is wrong with JSON input to the interchange format, and where it is."""

from __future__ import annotations

from typing import Any, Final

from .._json import deeper_than
from ..errors import OCMError, Position

MAX_DEPTH: Final = 128
"""How deeply JSON input may nest (objects and arrays); deeper input is refused."""


class InterchangeError(OCMError):
    """A JSON conversation or message that does not follow the interchange format.

    ``path`` is the JSON path of the offending value (``messages[3].tool_call``); the
    message starts with it. ``position`` is set for JSON that does not parse at all.
    """

    code = "E-INTERCHANGE"
    fault = "input"

    def __init__(self, message: str, *, position: Position | None = None, path: str = "$") -> None:
        super().__init__(message, position=position)
        self.path = path


def path_error(path: str, problem: str) -> InterchangeError:
    """The error for the value at ``path`` (``$`` when empty): ``"<path>: <problem>"``."""
    shown = path or "$"
    return InterchangeError(f"{shown}: {problem}", path=shown)


def check_depth(value: Any, path: str) -> None:
    """Raise when ``value`` nests more than :data:`MAX_DEPTH` levels (checked without recursion)."""
    if deeper_than(value, MAX_DEPTH):
        raise path_error(path, f"nested more than {MAX_DEPTH} levels deep")
