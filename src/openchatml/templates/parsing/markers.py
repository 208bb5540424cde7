"""Finding a format's markers in a growing buffer of output.

A marker is looked for by its text without surrounding whitespace; whitespace the format
puts after it (its ``trail``) is consumed when present. Text that may be the beginning of
a marker is held back until it is known not to be one, so that no piece of a marker is
ever shown as text. :class:`Scanner` finds the first of a set of markers in free text;
:func:`match_at` tells which of a few candidates stands at one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final, TypeVar

_WORD: Final = re.compile(r"\w")
_ALL_WORD: Final = re.compile(r"\w+")

Tag = TypeVar("Tag")


class MarkerAction(Enum):
    """What a marker found in free text means."""

    REASONING_START = 1
    REASONING_END = 2
    CONTENT_START = 3
    CONTENT_END = 4
    SECTION_START = 5
    """The tool-call section begins."""
    CALL_START = 6
    NAME_PREFIX = 7
    """A call's name begins (formats whose calls have no start marker)."""
    END_OF_TURN = 8
    REPEAT = 9
    """A marker with a piece of itself repeated before it (``<|channel><|channel>thought``)."""
    FENCE = 11
    """A code fence around a JSON answer."""
    VALUE_END = 12
    """A tagged argument's name or value ends."""
    STOP = 13
    """What ends a tagged argument's name or value that was not closed."""


@dataclass(frozen=True, slots=True)
class Marker:
    """One marker to look for, and what finding it means."""

    text: str
    """The text looked for."""
    trail: str
    """Whitespace consumed after it when present."""
    action: MarkerAction
    drop: int = 0
    """For a repeat: how many leading characters are the repeated piece."""


def split_whitespace(text: str) -> tuple[str, str, str]:
    """``text`` as (leading whitespace, the rest stripped, trailing whitespace); all
    whitespace is the leading part."""
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]


def marker_for(text: str, action: MarkerAction, drop: int = 0) -> Marker | None:
    """The marker for a format's ``text`` (``None`` when it is empty or only whitespace).
    A marker ending in a word character keeps its trailing whitespace as a required part
    (``>>>all\\n`` must not match ``>>>allocate``)."""
    _, core, trail = split_whitespace(text)
    if not core:
        return None
    if _WORD.match(core[-1]) and trail:
        core, trail = core + trail, ""
    return Marker(core, trail, action, drop)


class Scanner:
    """Finds the first of a set of markers in a buffer, and where text that may begin
    one starts. A marker that begins with a word character needs a non-word character
    before it (``Action:`` is not found in ``Reaction:``); a marker that is only a word
    needs one after it too. ``exact`` looks for the texts as they are."""

    __slots__ = (
        "_by_text",
        "_first",
        "_first_chars",
        "_inside",
        "_longest",
        "_pattern",
        "_prefixes",
        "_sequels",
        "markers",
    )

    def __init__(self, markers: Sequence[Marker | None], exact: bool = False) -> None:
        unique: dict[str, Marker] = {}
        for marker in markers:
            if marker is not None and marker.text and marker.text not in unique:
                unique[marker.text] = marker
        self.markers = tuple(unique.values())
        self._by_text = unique
        texts = sorted(unique, key=len, reverse=True)
        self._pattern = _alternatives(texts, exact)
        self._prefixes = frozenset(t[:k] for t in texts for k in range(1, len(t)))
        """Every proper prefix of a marker: what may be one when the buffer ends."""
        firsts = sorted({t[0] for t in texts})
        self._first_chars = "".join(firsts)
        self._first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]") if firsts else None
        self._longest = max((len(t) for t in texts), default=0)
        self._sequels = {t: tuple(o for o in texts if len(o) > len(t) and o.startswith(t)) for t in texts}
        """Marker → the longer markers that begin with it."""
        self._inside = {
            t: tuple(
                (o, k)
                for o in texts
                if len(o) > len(t)
                for k in range(1, len(o) - len(t) + 1)
                if o.startswith(t, k)
            )
            for t in texts
        }
        """Marker → the longer markers that hold it at an offset, with that offset."""

    @property
    def first(self) -> re.Pattern[str] | None:
        """The characters a marker can begin with, as a character class."""
        return self._first

    @property
    def first_chars(self) -> str:
        """The characters a marker can begin with (``""`` when there is no marker)."""
        return self._first_chars

    def find(self, buf: str, i: int, final: bool) -> tuple[int, int, Marker | None]:
        """``(start, end, marker)`` of the first marker in ``buf[i:]``, ``end`` past the
        whitespace it consumes. With no marker: ``(hold, hold, None)``, ``hold`` where
        text that may begin a marker starts (``len(buf)`` if none, always with ``final``)."""
        n = len(buf)
        if self._pattern is None:
            return n, n, None
        m = self._pattern.search(buf, i)
        if m is not None:
            p, q = m.start(), m.end()
            text = m.group()
            marker = self._by_text[text]
            if not final:
                longer_start = self._earlier_partial(buf, i, p, text)
                if longer_start >= 0:
                    return longer_start, longer_start, None
                if q == n and _ALL_WORD.fullmatch(text):
                    return p, p, None
                for longer in self._sequels[text]:
                    if n - p < len(longer) and longer.startswith(buf[p:]):
                        return p, p, None
                if marker.trail and n - q < len(marker.trail) and marker.trail.startswith(buf[q:]):
                    return p, p, None
            if marker.trail:
                q = consume_trail(buf, q, marker.trail)
            return p, q, marker
        if final:
            return n, n, None
        hold = self._hold(buf, i, n)
        return hold, hold, None

    def _earlier_partial(self, buf: str, i: int, p: int, text: str) -> int:
        """Where a longer marker that holds ``text`` (found at ``p``) may begin before it,
        the buffer ending inside that longer marker; ``-1`` if none may."""
        n = len(buf)
        for longer, k in self._inside[text]:
            start = p - k
            if start >= i and n - start < len(longer) and longer.startswith(buf[start:]):
                return start
        return -1

    def _hold(self, buf: str, i: int, n: int) -> int:
        first = self._first
        if first is None:
            return n
        j = max(i, n - self._longest + 1)
        prefixes = self._prefixes
        while True:
            m = first.search(buf, j)
            if m is None:
                return n
            j = m.start()
            if buf[j:] in prefixes:
                return j
            j += 1


def _alternatives(texts: Sequence[str], exact: bool) -> re.Pattern[str] | None:
    """One regex finding any of ``texts`` (longest first), with the word-boundary rules
    of :class:`Scanner` unless ``exact``."""
    parts = []
    for text in texts:
        pattern = re.escape(text)
        if not exact:
            if _WORD.match(text[0]):
                pattern = r"(?<!\w)" + pattern
            if _ALL_WORD.fullmatch(text):
                pattern += r"(?!\w)"
        parts.append(pattern)
    return re.compile("|".join(parts)) if parts else None


def match_at(
    buf: str, j: int, candidates: Sequence[tuple[str, Tag]], final: bool
) -> tuple[str, Tag] | bool | None:
    """The first candidate ``(text, tag)`` that ``buf`` has at ``j`` (the candidates
    longest first); ``False`` when the text there is too short to tell (it is a proper
    prefix of one, longer than any found); ``None`` when none is there."""
    rest = len(buf) - j
    wait = False
    for candidate in candidates:
        text = candidate[0]
        if buf.startswith(text, j):
            return False if wait else candidate
        if not final and rest < len(text) and text.startswith(buf[j:]):
            wait = True
    return False if wait else None


def skip_whitespace(buf: str, j: int) -> int:
    """The index of the first character at or after ``j`` that is not JSON whitespace."""
    n = len(buf)
    while j < n and buf[j] in " \t\r\n":
        j += 1
    return j


def consume_trail(buf: str, q: int, trail: str) -> int:
    """The index past as much of ``trail`` as ``buf`` has at ``q``."""
    k = 0
    while k < len(trail) and q + k < len(buf) and buf[q + k] == trail[k]:
        k += 1
    return q + k
