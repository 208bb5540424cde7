"""The states of the template parser's machine (see :mod:`.machine`): what the text at the
read position is."""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class State(IntEnum):
    """What the text at the read position is."""

    CONTENT = 0
    """The answer."""
    REASONING = 1
    """Reasoning, until its end marker."""
    HELD_REASONING = 2
    """Reasoning in which a tool-call opener appeared, held until it is known which it was."""
    HELD_CONTENT = 3
    """A reasoning start inside the answer, held until its end marker or the output's end."""
    PROBE = 4
    """A ``{`` or ``[`` that may open a call written with no marker: a call, or content?"""
    SECTION = 5
    """The tool-call region between calls."""
    HEADER = 6
    """A call's name (and id), up to where its arguments begin."""
    VALUE = 7
    """Arguments written as one JSON-like value."""
    JSON_CALL = 8
    """A whole call written as a JSON object."""
    TAGGED = 9
    """Between tagged arguments."""
    ARG_NAME = 10
    """A tagged argument's name."""
    ARG_PREFIX = 11
    """The marker between a tagged argument's name and its value."""
    ARG_VALUE = 12
    """A tagged argument's value."""
    CALL_END = 13
    """After a call's arguments: their end marker, an id, the call's end marker."""
    DONE = 14
    """After an end-of-turn marker."""


CALL_STATES: Final = frozenset(
    {
        State.HEADER,
        State.VALUE,
        State.JSON_CALL,
        State.TAGGED,
        State.ARG_NAME,
        State.ARG_PREFIX,
        State.ARG_VALUE,
    }
)
"""The states inside one call, before its end."""
