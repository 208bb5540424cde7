"""A fuzz target: a name, how many inputs it must reach, and ``one(rng)``, which builds one
random input from ``rng`` and checks the invariants on it (raising on a violation)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

REPR_LIMIT = 400
"""How much of a failing input's ``repr`` a failure keeps."""


class FuzzFailure(AssertionError):
    """An invariant broken by one input: ``input_repr`` is the input (truncated)."""

    def __init__(self, input_repr: str, cause: BaseException) -> None:
        self.input_repr = input_repr
        self.cause = cause
        super().__init__(f"{type(cause).__name__}: {cause} on input {input_repr}")


def short_repr(value: object, limit: int = REPR_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 20] + f"... ({len(text)} chars)"


@dataclass(frozen=True, slots=True)
class Target:
    """One fuzz target. ``one(rng)`` builds one input from ``rng`` and checks it; any
    exception is a failure. ``minimum``: how many inputs a full run must try."""

    name: str
    minimum: int
    one: Callable[[random.Random], None]


def target(name: str, minimum: int, make: Callable[[random.Random], T], check: Callable[[T], None]) -> Target:
    """A :class:`Target` from an input builder and a checker; a failure raises
    :class:`FuzzFailure` naming the input."""

    def one(rng: random.Random) -> None:
        value = make(rng)
        try:
            check(value)
        except Exception as exc:
            raise FuzzFailure(short_repr(value), exc) from exc

    return Target(name, minimum, one)
