"""Sets of characters as sorted, disjoint, inclusive code-point ranges: union, difference,
complement, case closure, the classes ``\\d``, ``\\s`` and ``\\w``, and the
:class:`~.ir.CharClass` that spells a set most briefly.

Sets never hold the surrogates (U+D800–U+DFFF): no UTF-8 text holds them, and a grammar
that names one cannot be sent as JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Final, TypeAlias

from .ir import CharClass

Ranges: TypeAlias = tuple[tuple[int, int], ...]
"""Sorted, disjoint, non-adjacent inclusive ranges of code points."""

MAX_CODE: Final = 0x10FFFF
SURROGATES: Final = (0xD800, 0xDFFF)
EVERYTHING: Final[Ranges] = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE))
"""Every character."""
CLASS_LIMIT: Final = 32
"""The most ranges a class keeps (see :func:`trimmed`)."""


def normalized(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """``ranges`` sorted and merged, the surrogates left out."""
    out: list[list[int]] = []
    for low, high in sorted(ranges):
        if low > high:
            continue
        if out and low <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], high)
        else:
            out.append([low, high])
    return difference(tuple((low, high) for low, high in out), (SURROGATES,))


def union(*sets: Ranges) -> Ranges:
    """Every character of any of ``sets``."""
    return normalized(pair for ranges in sets for pair in ranges)


def difference(ranges: Ranges, removed: Ranges) -> Ranges:
    """The characters of ``ranges`` not in ``removed`` (both sorted)."""
    out: list[tuple[int, int]] = []
    for low, high in ranges:
        start = low
        for cut_low, cut_high in removed:
            if cut_high < start or cut_low > high:
                continue
            if cut_low > start:
                out.append((start, cut_low - 1))
            start = max(start, cut_high + 1)
            if start > high:
                break
        if start <= high:
            out.append((start, high))
    return tuple(out)


def complement(ranges: Ranges) -> Ranges:
    """Every character not in ``ranges``."""
    return difference(EVERYTHING, ranges)


def of_class(node: CharClass) -> Ranges:
    """The characters ``node`` matches."""
    ranges = normalized(node.ranges)
    return complement(ranges) if node.negated else ranges


def contains(ranges: Ranges, char: str) -> bool:
    """Whether ``char`` is in ``ranges``."""
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


def as_class(ranges: Ranges) -> CharClass:
    """The class of ``ranges``, negated where that takes fewer ranges; every character is
    every one but NUL (``[^\\x00]``: no class is empty, and no token's text holds NUL).
    Raises ``ValueError`` for the empty set (no class matches nothing)."""
    if not ranges:
        raise ValueError("the set of characters is empty")
    other = complement(ranges) or ((0, 0),)
    return CharClass(other, negated=True) if len(other) < len(ranges) else CharClass(ranges)


def case_closed(ranges: Ranges, *, ascii_only: bool = False) -> Ranges:
    """``ranges`` with the other cases of their letters (simple case mappings; ASCII letters
    only with ``ascii_only``). Ranges wider than a few thousand characters add the cases of
    their ASCII and Latin letters only."""
    added: list[tuple[int, int]] = []
    for low, high in ranges:
        top = min(high, 0x7F if ascii_only else (high if high - low < 4096 else 0x24F))
        for code in range(low, top + 1):
            char = chr(code)
            for other in {char.lower(), char.upper(), char.swapcase()}:
                if len(other) == 1 and other != char and (not ascii_only or other.isascii()):
                    added.append((ord(other), ord(other)))
    return union(ranges, tuple(added))


@functools.cache
def category(name: str, *, ascii_only: bool = False) -> Ranges:
    """The characters of the regular-expression class ``name`` (``"d"``, ``"s"`` or
    ``"w"``) as Python's ``re`` reads it: Unicode, or ASCII only."""
    tests: dict[str, Callable[[str], bool]] = {
        "d": str.isdecimal,
        "s": str.isspace,
        "w": lambda char: char.isalnum() or char == "_",
    }
    test = tests[name]
    top = 0x7F if ascii_only else MAX_CODE
    found: list[tuple[int, int]] = []
    start: int | None = None
    for code in range(top + 2):
        inside = code <= top and not SURROGATES[0] <= code <= SURROGATES[1] and test(chr(code))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            found.append((start, code - 1))
            start = None
    return normalized(found)


def trimmed(ranges: Ranges, limit: int = CLASS_LIMIT) -> Ranges:
    """At most ``limit`` of ``ranges``: all the ASCII ones, then the widest others (a
    subset: a sampler testing a character against each range of a class pays for every
    range, for every token it weighs)."""
    if len(ranges) <= limit:
        return ranges
    ascii_part = [pair for pair in ranges if pair[1] <= 0x7F]
    others = sorted((pair for pair in ranges if pair[1] > 0x7F), key=lambda pair: pair[0] - pair[1])
    return normalized(ascii_part + others[: max(limit - len(ascii_part), 0)])
