"""The text input of the stream parser.

A control token is its ASCII spelling, recognised even when a chunk boundary cuts it
(OCM §3 portability): a possible partial token at the end of a chunk is held until the
next one. In a body, ``<<|x|>`` is the escaped text ``<|x|>`` and
``<|literal|>…<|endliteral|>`` is opaque. Text before the first message is the
transcript's YAML header (OCM §2); text between messages is stray.
"""

from __future__ import annotations

import re
from typing import Final

from ._message_machine import CONTENT, EXPECT_START, HEADER, LITERAL, MessageMachine
from .errors import HeaderError, ParseError, Position, TranscriptHeaderError, UnexpectedTokenError
from .events import DocumentHeader, Event, RepairKind
from .headers import MAX_HEADER
from .messages import TranscriptHeader
from .tokens import MAX_TOKEN_LEN, TOKEN_RE, ControlToken
from .transcript import parse_transcript_header

MAX_PRELUDE: Final = 65536
"""Most characters the YAML transcript header may hold."""

_TERMINATORS: Final = frozenset({ControlToken.END, ControlToken.RETURN, ControlToken.CALL})
_PREFIXES: Final = frozenset(
    t[:n] for tok in ControlToken for t in (tok.value, "<" + tok.value) for n in range(1, len(t))
)
_TOKEN_OF_TEXT: Final[dict[str, ControlToken]] = {token.value: token for token in ControlToken}
_ENDLITERAL: Final = ControlToken.ENDLITERAL.value
_ENDLITERAL_PREFIXES: Final = tuple(_ENDLITERAL[:n] for n in range(len(_ENDLITERAL) - 1, 0, -1))

_YAML_OPENING: Final = re.compile(r"(---|%YAML|```|version[ \t]*:)")
_YAML_LINE: Final = re.compile(r"[ \t]*(- |[^\s:][^:]*:[ \t])")
"""A YAML line that can hold a value: a list item or a ``key: value``."""


class TextScanner(MessageMachine):
    """Feeds text chunks, split anywhere, to the message machine.

    A base of :class:`~openchatml.core.parse.StreamParser`, whose ``__init__`` sets
    every attribute declared here.
    """

    transcript_header: TranscriptHeader | None
    """The YAML header of a text transcript, once read."""
    require_document_header: bool
    """Text that does not begin with the YAML header is ``E-PARSE-DOCUMENT-HEADER`` (OCM §2)."""
    _buf: str
    _offset: int
    """Characters consumed before ``_buf``."""
    _lines: int
    """Newlines consumed before ``_buf``."""
    _line_start: int
    """The offset where the current line starts."""
    _prelude: list[str]
    _prelude_len: int
    _prelude_dropped: bool
    _text_fed: bool

    def feed_text(self, chunk: str) -> list[Event]:
        """Feed a chunk of text, split anywhere; returns the events it caused."""
        self._text_fed = True
        if chunk and not self._take_plain(chunk):
            self._buf += chunk
            self._scan(final=False)
        return self.events()

    def _take_plain(self, chunk: str) -> bool:
        """The hot path: ``chunk``, with nothing held before it and no ``<`` in it, taken
        whole into the body or the header being read; whether it was."""
        if self._buf or "<" in chunk:
            return False
        state = self._state
        if state is CONTENT:
            self._body_text(chunk)
        elif state is HEADER and self._header_len + len(chunk) <= MAX_HEADER:
            self._header_text.append(chunk)
            self._header_len += len(chunk)
        else:
            return False
        self._advance(chunk)
        return True

    def _cpos(self, index: int) -> Position:
        """The position of ``self._buf[index]``."""
        buf = self._buf
        nl = buf.count("\n", 0, index)
        line_start = self._line_start if nl == 0 else self._offset + buf.rfind("\n", 0, index) + 1
        offset = self._offset + index
        return Position(offset, self._lines + nl + 1, offset - line_start + 1, "char")

    def _consume(self, upto: int) -> None:
        self._advance(self._buf[:upto])
        self._buf = self._buf[upto:]

    def _advance(self, consumed: str) -> None:
        """Count ``consumed``, the text just read, into the position."""
        nl = consumed.count("\n")
        if nl:
            self._lines += nl
            self._line_start = self._offset + consumed.rfind("\n") + 1
        self._offset += len(consumed)

    def _scan(self, *, final: bool) -> None:
        buf = self._buf
        pos = 0
        n = len(buf)
        while pos < n:
            state = self._state
            if state is CONTENT:
                pos = self._scan_content(buf, pos, final)
            elif state is LITERAL:
                pos = self._scan_literal(buf, pos, final)
            else:
                pos = self._scan_outside(buf, pos, final)
            if pos < 0:
                pos = -pos - 1
                break
        self._consume(pos)

    def _hold(self, buf: str, index: int, final: bool) -> bool:
        """Whether ``buf[index:]`` may be the start of a control token cut by the chunk end."""
        return not final and len(buf) - index <= MAX_TOKEN_LEN and buf[index:] in _PREFIXES

    def _scan_content(self, buf: str, pos: int, final: bool) -> int:
        while True:
            i = buf.find("<", pos)
            if i < 0:
                if pos < len(buf):
                    self._body_text(buf[pos:])
                return len(buf)
            if i > pos:
                self._body_text(buf[pos:i])
            m = TOKEN_RE.match(buf, i + 1)
            if m is not None:  # <<|x|> is the text <|x|>
                self._body_text(m.group())
                pos = m.end()
                continue
            m = TOKEN_RE.match(buf, i)
            if m is None:
                if self._hold(buf, i, final):
                    return -i - 1
                self._body_text("<")
                pos = i + 1
                continue
            token = _TOKEN_OF_TEXT[m.group()]
            end = m.end()
            if token in _TERMINATORS:
                self._finish(token, self._cpos(i))
                return end
            if token is ControlToken.LITERAL:
                self._state = LITERAL
                return end
            if token is ControlToken.START:
                self._cut_by_start(self._cpos(i))
                self._begin_header()
                return end
            self._problem(
                UnexpectedTokenError,
                RepairKind.STRAY_CONTROL,
                f"control token {token.value} inside a message body",
                self._cpos(i),
            )
            self._body_text(token.value)
            pos = end

    def _scan_literal(self, buf: str, pos: int, final: bool) -> int:
        i = buf.find(_ENDLITERAL, pos)
        if i >= 0:
            if i > pos:
                self._body_text(buf[pos:i])
            self._state = CONTENT
            return i + len(_ENDLITERAL)
        keep = 0
        if not final:
            for prefix in _ENDLITERAL_PREFIXES:
                if buf.endswith(prefix):
                    keep = len(prefix)
                    break
        end = len(buf) - keep
        if end > pos:
            self._body_text(buf[pos:end])
        return -end - 1 if keep else end

    def _scan_outside(self, buf: str, pos: int, final: bool) -> int:
        """Scan in EXPECT_START or HEADER, where no escapes or literals apply.

        Returns where the scan goes on; a header that outgrows its limit ends the
        header there, and the scan goes on from that character in the new state.
        """
        in_header = self._state is HEADER
        while True:
            i = buf.find("<|", pos)
            m = TOKEN_RE.match(buf, i) if i >= 0 else None
            while i >= 0 and m is None:
                if self._hold(buf, i, final):
                    break
                i = buf.find("<|", i + 2)
                m = TOKEN_RE.match(buf, i) if i >= 0 else None
            if m is None:
                # no complete control token: keep a possible partial one for later
                cut = len(buf)
                if not final:
                    tail = buf.rfind("<", max(pos, len(buf) - MAX_TOKEN_LEN))
                    if tail >= 0 and buf[tail:] in _PREFIXES:
                        cut = tail
                if cut > pos:
                    if in_header:
                        taken = self._header_chars(pos, cut)
                        if taken < cut:
                            return taken
                    else:
                        self._outside_text(pos, cut)
                return cut if cut == len(buf) else -cut - 1
            token = _TOKEN_OF_TEXT[m.group()]
            if in_header and token in (ControlToken.CHANNEL, ControlToken.CONSTRAIN):
                taken = self._header_chars(pos, m.end())
                if taken < m.end():
                    return taken
                pos = taken
                continue
            if not in_header and not self._seen_start and self._inside_yaml(buf, pos, i):
                self._outside_text(pos, m.end())  # a control token quoted inside the YAML header
                pos = m.end()
                continue
            if i > pos:
                if in_header:
                    taken = self._header_chars(pos, i)
                    if taken < i:
                        return taken
                else:
                    self._outside_text(pos, i)
            where = self._cpos(i)
            if in_header:
                self._header_control(token, where)
            else:
                self._outside_control(token, where)
            return m.end()

    def _inside_yaml(self, buf: str, pos: int, index: int) -> bool:
        """Whether the control token at ``buf[index]`` is part of a YAML header
        (``buf[pos:index]`` is text not yet taken into the prelude).

        Once the text before the first message has begun as a YAML header (``version:``,
        ``---``, ``%YAML`` or a ``` fence), a control token on a ``key: value`` or
        ``- item`` line is part of a value; only one at the start of a line, or on a line
        that is no YAML, ends the header.
        """
        if self._prelude_dropped:
            return False
        before = buf[pos:index] or (self._prelude[-1] if self._prelude else "")
        if before[-1:] in ("", "\n"):
            return False
        head = "".join(self._prelude) + buf[pos:index]
        line = head[head.rfind("\n") + 1 :]
        return _YAML_LINE.match(line) is not None and _YAML_OPENING.match(head.lstrip()) is not None

    def _header_chars(self, start: int, end: int) -> int:
        """Take ``self._buf[start:end]`` into the header; returns how far it took.

        A header that would outgrow :data:`MAX_HEADER` characters is dropped at the
        first character past the limit (returned; the state is then EXPECT_START), so
        that where it is cut does not depend on how the input was chunked.
        """
        room = MAX_HEADER - self._header_len
        if end - start <= room:
            self._header_text.append(self._buf[start:end])
            self._header_len += end - start
            return end
        cut = start + max(room, 0)
        self._problem(
            HeaderError,
            RepairKind.BROKEN_HEADER,
            f"message header longer than {MAX_HEADER} characters",
            self._cpos(cut),
        )
        self._header_text.clear()
        self._header_len = 0
        self._state = EXPECT_START
        self._next_role = None
        return cut

    def _header_control(self, token: ControlToken, where: Position) -> None:
        text = "".join(self._header_text)
        self._header_text.clear()
        self._header_len = 0
        if token is ControlToken.MESSAGE:
            self._start_body(text, where)
        elif token in _TERMINATORS:
            self._header_without_body(text, token, where)
        elif token is ControlToken.START:
            self._problem(HeaderError, RepairKind.BROKEN_HEADER, "<|start|> inside a message header", where)
            self._begin_header()
        else:
            self._problem(
                HeaderError,
                RepairKind.BROKEN_HEADER,
                f"{token.value} inside a message header",
                where,
            )
            self._header_text.append(text)
            self._header_len = len(text)

    def _outside_text(self, start: int, end: int) -> None:
        """Text ``self._buf[start:end]`` between messages (or before the first one)."""
        if not self._seen_start:
            self._prelude_text(start, end)
            return
        text = self._buf[start:end]
        if self._stray_at is not None:
            self._add_stray(text, self._stray_at)
            return
        lead = len(text) - len(text.lstrip())
        if lead < len(text):
            self._add_stray(text[lead:], self._cpos(start + lead))

    def _prelude_text(self, start: int, end: int) -> None:
        """Text ``self._buf[start:end]`` before the first message: the YAML header.

        Past :data:`MAX_PRELUDE` characters the whole prelude is dropped (reported at the
        first character past the limit) and so is the rest of it.
        """
        if self._prelude_dropped:
            return
        room = MAX_PRELUDE - self._prelude_len
        if end - start <= room:
            self._prelude.append(self._buf[start:end])
            self._prelude_len += end - start
            return
        self._prelude.clear()
        self._prelude_len = 0
        self._prelude_dropped = True
        self._problem(
            UnexpectedTokenError,
            RepairKind.STRAY_TEXT,
            f"more than {MAX_PRELUDE} characters before the first message",
            self._cpos(start + room),
        )

    def _outside_control(self, token: ControlToken, where: Position) -> None:
        if token is ControlToken.START:
            self._take_stray()
            self._end_prelude(where)
            self._begin_header()
            return
        if token in (ControlToken.CHANNEL, ControlToken.MESSAGE):
            stray = self._take_stray(as_role=True)
            self._problem(
                UnexpectedTokenError,
                RepairKind.MISSING_START,
                f"{token.value} without <|start|>",
                where,
            )
            self._end_prelude(where)
            self._begin_header(self._implicit_role(stray))
            if token is ControlToken.MESSAGE:
                self._start_body("", where)
            else:
                self._header_text.append(token.value)
                self._header_len = len(token.value)
            return
        self._take_stray()
        self._problem(
            UnexpectedTokenError,
            RepairKind.STRAY_CONTROL,
            f"{token.value} where <|start|> was expected",
            where,
        )

    def _end_prelude(self, where: Position) -> None:
        text = "".join(self._prelude)
        self._prelude.clear()
        self._prelude_len = 0
        if self._seen_start or self._prelude_dropped:
            return
        if not text.strip():
            if self.require_document_header and self._text_fed:
                self._problem(
                    TranscriptHeaderError,
                    RepairKind.MISSING_DOCUMENT_HEADER,
                    "the transcript does not begin with its YAML header (OCM §2: version: 2.2)",
                    Position(0, 1, 1),
                )
            return
        try:
            header = parse_transcript_header(text)
        except ParseError as exc:
            if self.strict:
                raise
            self._repair(RepairKind.STRAY_TEXT, exc.code, exc.message, exc.position or where)
            return
        self.transcript_header = header
        if self._conformance is not None:
            self._conformance.declare(header)
        self._emit(DocumentHeader(header))
