"""Sampled token ids of a chat-template model → the core's parser events.

:class:`TemplateTokenParser` offers what the Harmony :class:`~openchatml.core.parse.StreamParser`
offers a consumer of token ids (``process``, ``events``, ``messages``, ``close``), so the
Open Responses layer treats every model alike. Inside, an :class:`IncrementalDecoder`
turns ids into text (a character cut between ids waits for its last byte), an
:class:`~.output.OutputParser` turns text into :class:`~.parser.Delta` s, and each run of
deltas becomes one OpenChatML message: reasoning on ``analysis``, the answer on
``final``, each tool call on ``commentary`` addressed ``to=functions.NAME``
(``<|constrain|>json``). Whitespace at the start and end of reasoning and answers is
dropped (trailing whitespace is held until more text follows). A message closed because
the output ended after an end-of-turn id is complete (``<|end|>``); one the output left
open (``max_output_tokens``, cancellation) is not (terminator ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from ..core.content import TextContent
from ..core.events import ContentDelta, Event, Header, MessageDone, MessageStarted
from ..core.messages import Author, Message, Role
from ..core.tokens import ControlToken
from .format import TemplateFormat
from .output import OutputParser, open_parser
from .parser import CONTENT, REASONING, TOOL_ARGUMENTS, TOOL_CALL, Delta, ParseOptions

_REPLACEMENT: Final = "\ufffd"
_WINDOW: Final = 6
"""Ids decoded before the new ones, so that a tokenizer's spacing rules see context."""


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


class TemplateTokenParser:
    """Ids sampled by a model written in ``fmt`` → core parser events (see the module
    docstring). ``decode`` is the tokenizer's ``decode``; ``stop_ids`` the ids that end a
    turn; ``options`` those of the output parser (tools, prefix …)."""

    headers_are_text = False
    """A message begins at a marker (a control token) or at its own text: the text
    tokens read before its start event are its body's (Harmony's header names are text
    tokens that are not)."""

    def __init__(
        self,
        fmt: TemplateFormat,
        decode: Callable[[Sequence[int]], str],
        *,
        stop_ids: Sequence[int] = (),
        options: ParseOptions | None = None,
    ) -> None:
        self._output: OutputParser = open_parser(fmt, options)
        self._decoder = IncrementalDecoder(decode)
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
            self._take(self._output.feed(self._decoder.flush()))
            return
        text = self._decoder.feed((token,))
        if text:
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
                self._take(self._output.feed(self._decoder.flush()))
            self._take(self._output.finish())
            self._end(complete=self._stopped)
        return self.events()

    # --- deltas → messages ------------------------------------------------------------

    def _take(self, deltas: list[Delta]) -> None:
        for delta in deltas:
            kind = delta.kind
            if kind == TOOL_CALL:
                self._end(complete=True)
                self._open(
                    Header(
                        Author(Role.ASSISTANT),
                        channel="commentary",
                        recipient=f"functions.{delta.name}",
                        content_type="json",
                        constrained=True,
                        call_id=delta.id or None,
                    ),
                    TOOL_ARGUMENTS,
                )
                self._call = delta.index
            elif kind == TOOL_ARGUMENTS:
                if self._kind == TOOL_ARGUMENTS and delta.index == self._call:
                    self._say(delta.text, strip=False)
            elif kind in (CONTENT, REASONING):
                if self._kind != kind:
                    self._end(complete=True)
                    channel = "analysis" if kind == REASONING else "final"
                    self._open(Header(Author(Role.ASSISTANT), channel=channel), kind)
                self._say(delta.text, strip=True)

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
