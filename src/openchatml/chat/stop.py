"""Stop sequences: an answer cut at the first of them, as it streams (sans-IO).

Theory of operation. A :class:`StopCutter` is fed the answer's text piece by piece, each
piece with what came with it (its tokens' log probabilities). It gives back at once the
text that can no longer be the start of a stop sequence, and holds back the rest: the
longest end of the text so far that begins some stop sequence. When a stop sequence
appears, and no longer one that began before it may still come, the text before it is
given and the cutter is :attr:`~StopCutter.stopped`: it takes nothing more. At the end,
:meth:`~StopCutter.flush` gives what it held back (cut at a stop sequence it holds).

What came with a piece goes out with the first of the piece's text that goes out; the
pieces that wrote only the stop sequence (or what followed it) are dropped with theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class _Piece(Generic[T]):
    """Text held back, and what came with it."""

    text: str
    extras: tuple[T, ...]


@dataclass(slots=True)
class StopCutter(Generic[T]):
    """Cuts text at the first of ``stops`` (see the module docstring); with no stops, every
    piece goes through as it came."""

    stops: Sequence[str]
    stopped: bool = False
    _held: list[_Piece[T]] = field(default_factory=list)

    def feed(self, text: str, extras: tuple[T, ...] = ()) -> list[tuple[str, tuple[T, ...]]]:
        """The pieces ``(text, extras)`` that may go out now that ``text`` (with ``extras``)
        came: none once :attr:`stopped`."""
        if self.stopped:
            return []
        if not self.stops:
            return [(text, extras)]
        self._held.append(_Piece(text, extras))
        pending = "".join(piece.text for piece in self._held)
        cut = self._first_stop(pending)
        unfinished = len(pending) - self._possible_start(pending)
        if cut >= 0 and cut <= unfinished:  # no longer stop could still begin before it
            self.stopped = True
            return self._release(cut, keep_cut=True)
        return self._release(unfinished, keep_cut=False)

    def flush(self) -> list[tuple[str, tuple[T, ...]]]:
        """What was held back: cut at a stop sequence it holds (a longer one that began
        earlier never came), else all of it (the answer ended without a stop sequence)."""
        if self.stopped:
            return []
        pending = "".join(piece.text for piece in self._held)
        cut = self._first_stop(pending)
        if cut >= 0:
            self.stopped = True
            return self._release(cut, keep_cut=True)
        return self._release(len(pending), keep_cut=False)

    def _first_stop(self, text: str) -> int:
        """Where the first stop sequence in ``text`` begins (``-1``: none does)."""
        return min((at for at in (text.find(stop) for stop in self.stops) if at >= 0), default=-1)

    def _possible_start(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins a stop sequence."""
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest

    def _release(self, count: int, *, keep_cut: bool) -> list[tuple[str, tuple[T, ...]]]:
        """The first ``count`` characters held, as pieces (a piece cut at ``count`` gives its
        extras with the part given); ``keep_cut``: the stop sequence was found, and what is
        left (the stop sequence and anything after it) is dropped."""
        out: list[tuple[str, tuple[T, ...]]] = []
        while count > 0 and self._held:
            piece = self._held[0]
            if len(piece.text) <= count:
                out.append((piece.text, piece.extras))
                count -= len(piece.text)
                del self._held[0]
                continue
            out.append((piece.text[:count], piece.extras))
            self._held[0] = _Piece(piece.text[count:], ())
            count = 0
        if keep_cut:
            self._held.clear()
        return out
