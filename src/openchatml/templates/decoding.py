"""Sampled token ids of a chat-template model → the core's parser events.

:class:`TemplateTokenParser` offers what the Harmony :class:`~openchatml.core.parse.StreamParser`
offers a consumer of token ids (``process``, ``events``, ``messages``, ``close``), so the
Open Responses layer treats every model alike. Inside, an :class:`IncrementalDecoder`
turns ids into text through the model's tokenizer (a character cut between ids waits for
its last byte), an :class:`~.parsing.OutputParser` turns text into :mod:`~.parsing.deltas`,
and each run of deltas becomes one OpenChatML message: reasoning on ``analysis``, the
answer on ``final``, each tool call on ``commentary`` addressed ``to=functions.NAME``
(``<|constrain|>json``). Whitespace at the start and end of reasoning and answers is
dropped (trailing whitespace is held until more text follows). A message closed because
the output ended after an end-of-turn id is complete (``<|end|>``); one the output left
open (``max_output_tokens``, cancellation) is not (terminator ``None``).

Only marker ids are markers: a model may spell ``<tool_call>`` or ``<|im_end|>`` in
ordinary ids (repeating a user's text), and that text stays text. :class:`SpelledMarkers`
swaps the first character of each such spelling for a private-use stand-in before the
output parser reads it (holding back a text's end that may begin one until the next
text), and the stand-ins are turned back in what the parser reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from ..core.content import TextContent
from ..core.events import ContentDelta, Event, Header, MessageDone, MessageStarted
from ..core.messages import Author, Message, Role
from ..core.tokens import ControlToken
from .format import TemplateFormat
from .model_tokenizer import ModelTokenizer
from .parsing import (
    ContentText,
    Delta,
    OutputParser,
    ParseOptions,
    ReasoningText,
    ToolArgumentsText,
    ToolCallStarted,
    open_parser,
)

_REPLACEMENT: Final = "\ufffd"
_WINDOW: Final = 6
"""Ids decoded before the new ones, so that a tokenizer's spacing rules see context."""
_STAND_INS: Final = 0xF0000
"""The first of the private-use characters (plane 15) that stand in for a spelled
marker's first character."""


class IncrementalDecoder:
    """Token ids → text, a piece at a time, through ``decode`` (a tokenizer's
    ``decode(ids) -> str``, special tokens kept). Text ending in a cut character (U+FFFD)
    is held until the ids that finish it arrive."""

    def __init__(self, decode: Callable[[Sequence[int]], str]) -> None:
        self._decode = decode
        self._ids: list[int] = []
        self._prefix = 0  # ids before the window's start
        self._read = 0  # ids whose text is out

    def feed(self, ids: Sequence[int]) -> str:
        """The text that ``ids`` (appended to those before) make certain."""
        self._ids.extend(ids)
        before = self._decode(self._ids[self._prefix : self._read])
        now = self._decode(self._ids[self._prefix :])
        if len(now) <= len(before) or now.endswith(_REPLACEMENT) or not now.startswith(before):
            if not now.startswith(before) and not now.endswith(_REPLACEMENT):
                return self._resync(now, before)
            return ""
        text = now[len(before) :]
        self._advance()
        return text

    def flush(self) -> str:
        """What is still held at the end (a cut character as U+FFFD)."""
        before = self._decode(self._ids[self._prefix : self._read])
        now = self._decode(self._ids[self._prefix :])
        self._read = len(self._ids)
        return now[len(before) :] if now.startswith(before) else ""

    def _resync(self, now: str, before: str) -> str:
        common = 0
        while common < min(len(now), len(before)) and now[common] == before[common]:
            common += 1
        self._advance()
        return now[common:]

    def _advance(self) -> None:
        self._read = len(self._ids)
        self._prefix = max(0, self._read - _WINDOW)


@dataclass(frozen=True, slots=True)
class _Spellings:
    """The markers a tokenizer has, compiled for :class:`SpelledMarkers`."""

    pattern: re.Pattern[str] | None
    """Any marker (leftmost-longest)."""
    notable: re.Pattern[str] | None
    """A character that begins a marker, or a stand-in: text without one passes as it is."""
    heads: frozenset[str]
    """Every proper prefix of a marker."""
    longest: int
    swap: dict[str, str]
    """A marker's first character → its stand-in."""
    back: dict[int, str]
    """A stand-in's code point → its character (for ``str.translate``)."""
    own: dict[int, str]
    """A stand-in's code point → U+FFFD, for stand-ins in the model's own text."""


@lru_cache(maxsize=16)
def _spellings(markers: tuple[str, ...]) -> _Spellings:
    texts = sorted({m for m in markers if m.strip()}, key=len, reverse=True)
    swap = {c: chr(_STAND_INS + k) for k, c in enumerate(sorted({m[0] for m in texts}))}
    notable = "".join(re.escape(c) for c in [*swap, *swap.values()])
    return _Spellings(
        pattern=re.compile("|".join(re.escape(m) for m in texts)) if texts else None,
        notable=re.compile(f"[{notable}]") if notable else None,
        heads=frozenset(m[:k] for m in texts for k in range(1, len(m))),
        longest=max((len(m) for m in texts), default=0),
        swap=swap,
        back={ord(s): c for c, s in swap.items()},
        own={ord(s): _REPLACEMENT for s in swap.values()},
    )


class SpelledMarkers:
    """Markers spelled in ordinary text, made text (see the module docstring).

    ``text(piece)`` gives the text of ``piece`` (appended to the pieces before) that can
    no longer become part of a spelling, each whole spelling's first character swapped
    for its stand-in; ``flush()`` what is held back; ``back(text)`` turns stand-ins back
    into their characters. A stand-in the model itself wrote is read as U+FFFD."""

    def __init__(self, markers: Iterable[str]) -> None:
        self._table = _spellings(tuple(markers))
        self._held = ""

    def text(self, piece: str) -> str:
        """What of ``piece`` is certain, spellings of markers made text."""
        table = self._table
        if table.pattern is None or table.notable is None:
            return piece
        if not self._held and table.notable.search(piece) is None:
            return piece
        swap = table.swap
        held = table.pattern.sub(
            lambda m: swap[m.group()[0]] + m.group()[1:], self._held + piece.translate(table.own)
        )
        keep = 0
        for size in range(min(table.longest - 1, len(held)), 0, -1):
            if held[-size:] in table.heads:
                keep = size
                break
        self._held = held[len(held) - keep :]
        return held[: len(held) - keep]

    def flush(self) -> str:
        """The text held back (it begins no marker that can still be completed)."""
        held, self._held = self._held, ""
        return held

    def back(self, text: str) -> str:
        """``text`` with the stand-ins turned back into their characters."""
        return text.translate(self._table.back) if self._table.back else text


class TemplateTokenParser:
    """Ids sampled by a model written in ``fmt`` → core parser events (see the module
    docstring). ``tokenizer`` is the model's; ``stop_ids`` the ids that end a turn;
    ``options`` those of the output parser (tools, prefix …)."""

    headers_are_text = False
    """A message begins at a marker (a control token) or at its own text: the text
    tokens read before its start event are its body's (Harmony's header names are text
    tokens that are not)."""

    def __init__(
        self,
        fmt: TemplateFormat,
        tokenizer: ModelTokenizer,
        *,
        stop_ids: Sequence[int] = (),
        options: ParseOptions | None = None,
    ) -> None:
        self._output: OutputParser = open_parser(fmt, options)
        self._tokenizer = tokenizer
        self._decoder = IncrementalDecoder(tokenizer.decode)
        self._spelled = SpelledMarkers(tokenizer.markers)
        self._stops = frozenset(stop_ids)
        self._stopped = False
        self._closed = False
        self._events: list[Event] = []
        self.messages: list[Message] = []
        """Every complete message so far."""
        self._kind: str | None = None
        self._call = -1
        self._header: Header | None = None
        self._text: list[str] = []
        self._space = ""  # trailing whitespace held back
        self._started = False  # the open message has shown text

    # --- input ------------------------------------------------------------------------

    def process(self, token: int) -> None:
        """Take one sampled id."""
        if self._closed or self._stopped:
            return
        if token in self._stops:
            self._stopped = True
            self._read(self._decoder.flush(), end=True)
            return
        text = self._decoder.feed((token,))
        if not self._tokenizer.is_marker(token):
            self._read(text)
            return
        marker = self._tokenizer.decode((token,))
        if text.endswith(marker):  # the ordinary ids' text, then the marker's own
            self._read(text[: len(text) - len(marker)], end=True)
            self._take(self._output.feed(marker))
        else:
            self._read("", end=True)
            self._take(self._output.feed(text))

    def feed_tokens(self, tokens: Sequence[int]) -> list[Event]:
        """Take several ids; the events they caused."""
        for token in tokens:
            self.process(token)
        return self.events()

    def events(self) -> list[Event]:
        """The events since the last call."""
        out, self._events = self._events, []
        return out

    def close(self) -> list[Event]:
        """The output ended: flush, close the open message; the last events."""
        if not self._closed:
            self._closed = True
            if not self._stopped:
                self._read(self._decoder.flush(), end=True)
            self._take(self._output.finish())
            self._end(complete=self._stopped)
        return self.events()

    def _read(self, text: str, *, end: bool = False) -> None:
        """Give the output parser ``text`` decoded from ordinary ids (``end``: and what
        was held back, as a marker id or the end follows)."""
        text = self._spelled.text(text)
        if end:
            text += self._spelled.flush()
        if text:
            self._take(self._output.feed(text))

    # --- deltas → messages ------------------------------------------------------------

    def _take(self, deltas: list[Delta]) -> None:
        back = self._spelled.back
        for delta in deltas:
            match delta:
                case ToolCallStarted():
                    self._end(complete=True)
                    self._open(
                        Header(
                            Author(Role.ASSISTANT),
                            channel="commentary",
                            recipient=f"functions.{back(delta.name)}",
                            content_type="json",
                            constrained=True,
                            call_id=back(delta.id) or None,
                        ),
                        "commentary",
                    )
                    self._call = delta.index
                case ToolArgumentsText():
                    if self._kind == "commentary" and delta.index == self._call:
                        self._say(back(delta.text), strip=False)
                case ContentText() | ReasoningText():
                    channel = "analysis" if isinstance(delta, ReasoningText) else "final"
                    if self._kind != channel:
                        self._end(complete=True)
                        self._open(Header(Author(Role.ASSISTANT), channel=channel), channel)
                    self._say(back(delta.text), strip=True)

    def _open(self, header: Header, kind: str) -> None:
        self._header, self._kind = header, kind
        self._text, self._space, self._started = [], "", False

    def _say(self, text: str, *, strip: bool) -> None:
        assert self._header is not None
        if strip:
            if not self._started:
                text = text.lstrip()
                if not text:
                    return
            held = self._space + text
            text = held.rstrip()
            self._space = held[len(text) :]
            if not text:
                return
        if not self._started:
            self._started = True
            self._events.append(MessageStarted(len(self.messages), self._header))
        self._text.append(text)
        self._events.append(ContentDelta(len(self.messages), self._header.channel, text))

    def _end(self, *, complete: bool) -> None:
        header, self._header, self._kind = self._header, None, None
        if header is None or not self._started:
            return
        text = "".join(self._text)
        message = Message(
            author=header.author,
            content=(TextContent(text),),
            channel=header.channel,
            recipient=header.recipient,
            content_type=header.content_type,
            constrained=header.constrained,
            call_id=header.call_id,
        )
        terminator = (ControlToken.CALL if header.recipient else ControlToken.END) if complete else None
        self.messages.append(message)
        self._events.append(MessageDone(len(self.messages) - 1, message, terminator))
