"""How a token budget is split between the free reasoning and the constrained part (the
calls, a structured answer).

A budget of ``max_tokens`` leaves the reasoning all but :data:`RESERVE` tokens (half of a
smaller budget; the server's ``reasoning_bound``), so the constrained part gets at least
``min(RESERVE, bound)`` tokens after a reasoning bound of ``bound``. Where the calls have a
longest compact spelling (:mod:`.extent`: bounded strings, arrays and numbers), the split
moves on to them: the reasoning gives up what the first call lacks, down to a quarter of
its bound, and further calls come only while their room lasts (a random or rambling model
that keeps calling runs out of tokens otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RESERVE: Final = 256
"""Tokens kept for the constrained part (a call, a structured answer) out of a budget."""


@dataclass(frozen=True, slots=True)
class CallBudget:
    """The reasoning's bound in tokens (``None``: unbounded) and the most calls of one
    message (``None``: any number)."""

    reasoning_tokens: int | None
    max_calls: int | None = None


def call_budget(reasoning_tokens: int | None, longest_call: int | None) -> CallBudget:
    """The split for a reasoning bound of ``reasoning_tokens`` (``None`` or ``0``: left as
    it is) and calls of at most ``longest_call`` characters, about as many tokens
    (``None``: no bound, nothing moves)."""
    if not reasoning_tokens or not longest_call:
        return CallBudget(reasoning_tokens)
    room = min(RESERVE, reasoning_tokens)
    given = min(max(longest_call - room, 0), reasoning_tokens - reasoning_tokens // 4)
    return CallBudget(reasoning_tokens - given, max(1, (room + given) // longest_call))
