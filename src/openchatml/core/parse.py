"""The sans-IO stream parser, and ``parse_tokens`` / ``parse_text`` on top of it.

Theory of operation. :class:`StreamParser` is a state machine fed either token ids
(:meth:`~StreamParser.process` one at a time, :meth:`~StreamParser.feed_tokens` for
many) or text chunks split anywhere (:meth:`~StreamParser.feed_text`); it never reads,
sleeps or logs. It reports :mod:`events`; consecutive body text is coalesced into one
``ContentDelta`` per call.

States (``_State``), and what moves between them::

    EXPECT_START --<|start|>--> HEADER --<|message|>--> CONTENT
    CONTENT --<|end|> <|return|> <|call|>--> EXPECT_START
    CONTENT --<|literal|>--> LITERAL --<|endliteral|>--> CONTENT        (text only)

The two inputs differ only in how control tokens are seen:

* token ids: a control token is its special id; every ordinary id is body text, decoded
  incrementally (a UTF-8 sequence may span ids). Text can never become control here.
* text: a control token is its ASCII spelling, recognised even when a chunk boundary
  cuts it (OCM §3 portability); in a body, ``<<|x|>`` is the escaped text ``<|x|>`` and
  ``<|literal|>…<|endliteral|>`` is opaque. Text before the first message is the
  transcript's YAML header (OCM §2).

``strict=True`` raises a typed :class:`~openchatml.core.errors.ParseError` at the first
malformation; ``strict=False`` repairs it, reports a ``Repaired`` event, and goes on.
Buffers are bounded: a header, a partial control token and the YAML header have limits.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from .content import TextContent
from .encoding import Encoding, load_encoding
from .errors import (
    BodyConstraintError,
    ChannelMissingError,
    HeaderError,
    ParseError,
    Position,
    StreamTruncatedError,
    UnexpectedTokenError,
)
from .events import (
    ContentDelta,
    DocumentHeader,
    Event,
    Header,
    MessageDone,
    MessageStarted,
    Repaired,
    RepairKind,
)
from .headers import CHANNEL_MARK, MAX_HEADER, UNKNOWN_TOOL, HeaderNotes, parse_header
from .messages import Author, Conversation, Message, Role, TranscriptHeader
from .tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    LAST_SPECIAL_ID,
    MAX_TOKEN_LEN,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    TOKEN_RE,
    ControlToken,
    sanitize_header_value,
    special_token_text,
)
from .transcript import parse_transcript_header

MAX_PRELUDE: Final = 65536
"""Most characters the YAML transcript header may hold."""

_TERMINATOR_OF_ID: Final = {
    END_ID: ControlToken.END,
    RETURN_ID: ControlToken.RETURN,
    CALL_ID: ControlToken.CALL,
}
_TERMINATORS: Final = frozenset({ControlToken.END, ControlToken.RETURN, ControlToken.CALL})
_PREFIXES: Final = frozenset(
    t[:n] for tok in ControlToken for t in (tok.value, "<" + tok.value) for n in range(1, len(t))
)
_ENDLITERAL: Final = ControlToken.ENDLITERAL.value
_ENDLITERAL_PREFIXES: Final = tuple(_ENDLITERAL[:n] for n in range(len(_ENDLITERAL) - 1, 0, -1))


ROLE_WORDS: Final = frozenset(r.value for r in Role)
_YAML_OPENING: Final = re.compile(r"(---|%YAML|```|version[ \t]*:)")
_YAML_LINE: Final = re.compile(r"[ \t]*(- |[^\s:][^:]*:[ \t])")
"""A YAML line that can hold a value: a list item or a ``key: value``."""


class _State(Enum):
    EXPECT_START = "ExpectStart"
    HEADER = "Header"
    CONTENT = "Content"
    LITERAL = "Literal"


_EXPECT_START: Final = _State.EXPECT_START
_HEADER: Final = _State.HEADER
_CONTENT: Final = _State.CONTENT
_LITERAL: Final = _State.LITERAL


class StreamParser:
    """Incremental, sans-IO parser of Harmony / OpenChatML 2.2 tokens or text.

    ``role``: the role of a message whose ``<|start|>role`` was part of the prompt (a
    completion starts mid-header); ``None`` expects ``<|start|>`` first. ``strict``:
    raise on malformed input instead of repairing it. ``check_constraints``: a
    ``<|constrain|>json`` body must be JSON (``E-BODY-CONSTRAINT-VIOLATION``).
    ``require_channels``: an assistant message without a channel is
    ``E-PARSE-CHANNEL-MISSING``. ``allow_truncated``: input that ends inside a body
    yields the message as it stands rather than ``E-STREAM-TRUNCATED`` (the
    openai-harmony behaviour). ``record_tokens``: keep every id fed in :attr:`tokens`.
    ``replace_invalid_utf8``: body bytes that are not UTF-8 become U+FFFD instead of an
    error (the default when not strict; openai-harmony always replaces).
    """

    def __init__(
        self,
        role: Role | None = None,
        *,
        strict: bool = True,
        check_constraints: bool = True,
        require_channels: bool = False,
        allow_truncated: bool = False,
        record_tokens: bool = False,
        replace_invalid_utf8: bool | None = None,
        encoding: Encoding | None = None,
    ) -> None:
        self.strict = strict
        self.replace_invalid_utf8 = (not strict) if replace_invalid_utf8 is None else replace_invalid_utf8
        self.check_constraints = check_constraints
        self.require_channels = require_channels
        self.allow_truncated = allow_truncated
        self._record = record_tokens
        self._encoding = encoding
        self._token_str: Sequence[str | None] = ()
        self.messages: list[Message] = []
        """Every complete message so far."""
        self.tokens: list[int] = []
        """Every token id fed (only with ``record_tokens``)."""
        self.repairs: list[Repaired] = []
        """Everything the lenient parser fixed."""
        self.transcript_header: TranscriptHeader | None = None
        """The YAML header of a text transcript, once read."""
        self.last_content_delta: str | None = None
        """The body text the last token or chunk added (``None`` if it added none)."""
        self._events: list[Event] = []
        self._delta: list[str] = []
        self._content: list[str] = []
        self._header: Header | None = None
        self._next_role = role
        self._state = _HEADER if role is not None else _EXPECT_START
        self._header_ids: list[int] = []
        self._header_text: list[str] = []
        self._header_len = 0
        self._utf8: codecs.IncrementalDecoder | None = None
        self._n_tokens = 0
        self._buf = ""
        self._offset = 0  # characters consumed before _buf
        self._lines = 0  # newlines consumed before _buf
        self._line_start = 0  # offset where the current line starts
        self._prelude: list[str] = []
        self._prelude_len = 0
        self._prelude_dropped = False
        self._stray = ""
        self._stray_at: Position | None = None
        self._seen_start = role is not None
        self._closed = False

    # --- public state, as openai-harmony's StreamableParser shows it ----------------

    @property
    def state(self) -> str:
        """``ExpectStart``, ``Header`` or ``Content`` (``Literal`` inside a literal block)."""
        return self._state.value

    @property
    def current_header(self) -> Header | None:
        """The header of the message being read, once its ``<|message|>`` was seen."""
        return self._header if self._state in (_CONTENT, _LITERAL) else None

    @property
    def current_role(self) -> Role | None:
        """The role of the message being read (or about to be)."""
        if self._header is not None and self._state in (_CONTENT, _LITERAL):
            return self._header.author.role
        return self._next_role

    @property
    def current_channel(self) -> str | None:
        """The channel of the message being read."""
        header = self.current_header
        return header.channel if header is not None else None

    @property
    def current_recipient(self) -> str | None:
        """The recipient of the message being read."""
        header = self.current_header
        return header.recipient if header is not None else None

    @property
    def current_content_type(self) -> str | None:
        """The content type of the message being read."""
        header = self.current_header
        return header.content_type if header is not None else None

    @property
    def current_content(self) -> str:
        """The body text of the message being read, so far."""
        if self._state in (_CONTENT, _LITERAL):
            return "".join(self._content)
        return ""

    # --- events ---------------------------------------------------------------------

    def events(self) -> list[Event]:
        """The events since the last call, in order (body text coalesced per message)."""
        if self._delta:
            self._flush_delta()
        out = self._events
        self._events = []
        return out

    def _flush_delta(self) -> None:
        header = self._header
        self._events.append(
            ContentDelta(len(self.messages), header.channel if header else None, "".join(self._delta))
        )
        self._delta = []

    def _emit(self, event: Event) -> None:
        if self._delta:
            self._flush_delta()
        self._events.append(event)

    def _repair(self, kind: RepairKind, code: str, detail: str, pos: Position | None) -> None:
        event = Repaired(kind, code, detail, pos)
        self.repairs.append(event)
        self._emit(event)

    def _problem(
        self,
        error: type[ParseError],
        kind: RepairKind,
        detail: str,
        pos: Position | None,
    ) -> None:
        """Raise ``error`` when strict; else record the repair and let the caller go on."""
        if self.strict:
            raise error(detail, position=pos)
        self._repair(kind, error.code, detail, pos)

    # --- token ids ------------------------------------------------------------------

    def _load(self) -> Encoding:
        if self._encoding is None:
            self._encoding = load_encoding()
        if not self._token_str:
            self._token_str = self._encoding.token_str
        return self._encoding

    def feed_tokens(self, tokens: Iterable[int]) -> list[Event]:
        """Feed token ids; returns the events they caused."""
        self._feed_ids(tokens if isinstance(tokens, list | tuple) else list(tokens))
        return self.events()

    def _feed_ids(self, tokens: Sequence[int]) -> None:
        """Feed many ids: runs of body tokens are decoded in one piece.

        Gives the same messages and events as :meth:`process` on each id; a run whose
        bytes are not valid UTF-8 on their own, or that holds something other than an
        int, goes through :meth:`process` id by id.
        """
        process = self.process
        try:
            marks = [i for i, t in enumerate(tokens) if not 0 <= t < FIRST_SPECIAL_ID]
        except TypeError:  # not all ints: let process() report each one
            for token in tokens:
                process(token)
            return
        marks.append(len(tokens))
        table = self._load().token_bytes
        start = 0
        for mark in marks:
            if mark > start:
                if self._state is _CONTENT and self._utf8 is None:
                    run = tokens[start:mark]
                    try:
                        text = b"".join(map(table.__getitem__, run)).decode("utf-8")
                    except (UnicodeDecodeError, TypeError):  # not UTF-8 alone, or an id not an int
                        for token in run:
                            process(token)
                    else:
                        self._n_tokens += len(run)
                        if self._record:
                            self.tokens.extend(run)
                        self._body_text(text)
                else:
                    for token in tokens[start:mark]:
                        process(token)
            if mark < len(tokens):
                process(tokens[mark])
            start = mark + 1

    def process(self, token: int) -> None:
        """Feed one token id. Events accumulate until :meth:`events` is called."""
        self._n_tokens += 1
        if self._record:
            self.tokens.append(token)
        if self._state is _CONTENT and self._utf8 is None:
            try:
                text = self._token_str[token] if 0 <= token < FIRST_SPECIAL_ID else None
            except (TypeError, IndexError):  # not an int, or the table is not loaded yet
                text = None
            if text is not None:
                self._content.append(text)
                self._delta.append(text)
                self.last_content_delta = text
                return
        self._process_slow(token)

    def _tpos(self) -> Position:
        return Position(self._n_tokens - 1, unit="token")

    def _process_slow(self, token: int) -> None:
        enc = self._load()
        state = self._state
        if not isinstance(token, int) or not 0 <= token <= LAST_SPECIAL_ID:
            self._problem(
                UnexpectedTokenError,
                RepairKind.STRAY_TEXT,
                f"token id {token!r} is outside o200k_harmony",
                self._tpos(),
            )
            if state is _CONTENT:
                self._body_text("\ufffd")
            return
        if state is _CONTENT:
            if token < FIRST_SPECIAL_ID:
                self._body_bytes(enc.token_bytes[token])
                return
            if self._utf8 is not None:
                self._flush_utf8()
            terminator = _TERMINATOR_OF_ID.get(token)
            if terminator is not None:
                self._finish(terminator, self._tpos())
            elif token == START_ID:
                self._cut_by_start(self._tpos())
                self._begin_header()
            else:
                self._problem(
                    UnexpectedTokenError,
                    RepairKind.STRAY_CONTROL,
                    f"control token {special_token_text(token)} inside a message body",
                    self._tpos(),
                )
                self._body_text(special_token_text(token))
            return
        if state is _HEADER:
            if token == MESSAGE_ID:
                text = self._decode_header(enc)
                self._start_body(text, self._tpos())
            elif token == START_ID:
                self._problem(
                    HeaderError,
                    RepairKind.BROKEN_HEADER,
                    "<|start|> inside a message header",
                    self._tpos(),
                )
                self._begin_header()
            elif token in _TERMINATOR_OF_ID:
                text = self._decode_header(enc)
                self._header_without_body(text, _TERMINATOR_OF_ID[token], self._tpos())
            elif len(self._header_ids) < MAX_HEADER:
                self._header_ids.append(token)
            else:  # the header is dropped; this id is read as if between messages
                self._problem(
                    HeaderError,
                    RepairKind.BROKEN_HEADER,
                    f"message header longer than {MAX_HEADER} tokens",
                    self._tpos(),
                )
                self._header_ids.clear()
                self._state = _EXPECT_START
                self._next_role = None
                self._expect_start(token, enc)
            return
        self._expect_start(token, enc)

    def _expect_start(self, token: int, enc: Encoding) -> None:
        """Token id ``token`` (in o200k_harmony) between messages."""
        if token == START_ID:
            self._take_stray()
            self._begin_header()
        elif token in (CHANNEL_ID, MESSAGE_ID):
            stray = self._take_stray(as_role=True)
            self._problem(
                UnexpectedTokenError,
                RepairKind.MISSING_START,
                f"{special_token_text(token)} without <|start|>",
                self._tpos(),
            )
            self._begin_header(self._implicit_role(stray))
            if token == MESSAGE_ID:
                self._start_body("", self._tpos())
            else:
                self._header_ids.append(token)
        elif token < FIRST_SPECIAL_ID:
            if self._stray_at is not None or not enc.token_bytes[token].isspace():
                self._add_stray(enc.decode([token]), self._stray_at or self._tpos())
        else:
            self._take_stray()
            self._problem(
                UnexpectedTokenError,
                RepairKind.STRAY_CONTROL,
                f"{special_token_text(token)} where <|start|> was expected",
                self._tpos(),
            )

    def _implicit_role(self, text: str) -> Role:
        words = text.split()
        return Role(words[-1]) if words and words[-1] in ROLE_WORDS else Role.ASSISTANT

    def _decode_header(self, enc: Encoding) -> str:
        """The header's ids as header text: ``<|channel|>`` and ``<|constrain|>`` ids become
        their markers, and ordinary text that spells a control token is refused (strict)
        or loses its ``|`` (lenient), so that text never becomes a marker."""
        parts: list[str] = []
        run: list[int] = []
        for token in [*self._header_ids, CHANNEL_ID]:
            if token != CHANNEL_ID and token != CONSTRAIN_ID:
                run.append(token)
                continue
            raw = enc.decode_bytes(run)
            run.clear()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._problem(
                    HeaderError, RepairKind.BROKEN_HEADER, "header is not valid UTF-8", self._tpos()
                )
                text = raw.decode("utf-8", "replace")
            if "<|" in text:
                self._problem(
                    HeaderError,
                    RepairKind.BROKEN_HEADER,
                    "text spelling a control token inside a header",
                    self._tpos(),
                )
                text = sanitize_header_value(text) if text.strip() else text
            parts.append(text)
            parts.append(special_token_text(token))
        self._header_ids.clear()
        return "".join(parts[:-1])

    def _body_bytes(self, data: bytes) -> None:
        if self._utf8 is None:
            self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        text = self._utf8.decode(data)
        if not self._utf8.getstate()[0]:
            self._utf8 = None
        if "\ufffd" in text and "\ufffd".encode() not in data:
            self._note_invalid_utf8()
        if text:
            self._body_text(text)
        else:
            self.last_content_delta = None

    def _flush_utf8(self) -> None:
        decoder = self._utf8
        self._utf8 = None
        if decoder is not None:
            text = decoder.decode(b"", final=True)
            if text:
                self._note_invalid_utf8()
                self._body_text(text)

    def _note_invalid_utf8(self) -> None:
        if self.replace_invalid_utf8:
            if not self.strict:
                self._repair(
                    RepairKind.INVALID_UTF8,
                    UnexpectedTokenError.code,
                    "bytes that are not UTF-8 were replaced by U+FFFD",
                    self._tpos(),
                )
            return
        self._problem(
            UnexpectedTokenError,
            RepairKind.INVALID_UTF8,
            "token ids whose bytes are not UTF-8 (replaced by U+FFFD)",
            self._tpos(),
        )

    # --- text -----------------------------------------------------------------------

    def feed_text(self, chunk: str) -> list[Event]:
        """Feed a chunk of text, split anywhere; returns the events it caused."""
        if chunk:
            self._buf += chunk
            self._scan(final=False)
        return self.events()

    def _cpos(self, index: int) -> Position:
        """The position of ``self._buf[index]``."""
        buf = self._buf
        nl = buf.count("\n", 0, index)
        line_start = self._line_start if nl == 0 else self._offset + buf.rfind("\n", 0, index) + 1
        offset = self._offset + index
        return Position(offset, self._lines + nl + 1, offset - line_start + 1, "char")

    def _consume(self, upto: int) -> None:
        consumed = self._buf[:upto]
        nl = consumed.count("\n")
        if nl:
            self._lines += nl
            self._line_start = self._offset + consumed.rfind("\n") + 1
        self._offset += upto
        self._buf = self._buf[upto:]

    def _scan(self, *, final: bool) -> None:
        buf = self._buf
        pos = 0
        n = len(buf)
        while pos < n:
            state = self._state
            if state is _CONTENT:
                pos = self._scan_content(buf, pos, final)
            elif state is _LITERAL:
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
            token = ControlToken(m.group())
            end = m.end()
            if token in _TERMINATORS:
                self._finish(token, self._cpos(i))
                return end
            if token is ControlToken.LITERAL:
                self._state = _LITERAL
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
            self._state = _CONTENT
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
        in_header = self._state is _HEADER
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
            token = ControlToken(m.group())
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
        self._state = _EXPECT_START
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

    def _add_stray(self, text: str, at: Position) -> None:
        """Text between messages (``at``: where it is, if it starts a run)."""
        if self._stray_at is None:
            self._stray_at = at
            if self.strict:
                raise UnexpectedTokenError("text between messages", position=at)
        # keep only the tail: a header that lost its <|start|> may follow
        self._stray = (self._stray + text)[-MAX_HEADER:]

    def _take_stray(self, *, as_role: bool = False) -> str:
        """The stray text since the last message, reported where it began.

        ``as_role``: a header without ``<|start|>`` follows, and a role word just before it
        is read as its role rather than dropped.
        """
        stray, at = self._stray, self._stray_at
        self._stray, self._stray_at = "", None
        if at is None:
            return ""
        text = stray.strip()
        if as_role and text.split()[-1:] and text.split()[-1] in ROLE_WORDS:
            detail = f"read {text[-40:]!r} as the role of a header without <|start|>"
        else:
            detail = f"dropped {text[:40]!r} between messages"
        self._repair(RepairKind.STRAY_TEXT, UnexpectedTokenError.code, detail, at)
        return stray

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
        if self._seen_start or self._prelude_dropped or not text.strip():
            return
        try:
            header = parse_transcript_header(text)
        except ParseError as exc:
            if self.strict:
                raise
            self._repair(RepairKind.STRAY_TEXT, exc.code, exc.message, exc.position or where)
            return
        self.transcript_header = header
        self._emit(DocumentHeader(header))

    # --- transitions shared by both inputs -------------------------------------------

    def _begin_header(self, role: Role | None = None) -> None:
        self._seen_start = True
        self._state = _HEADER
        self._next_role = role
        self._header_ids.clear()
        self._header_text.clear()
        self._header_len = 0

    def _start_body(self, header_text: str, where: Position) -> None:
        notes = HeaderNotes()
        try:
            header = parse_header(header_text, self._next_role, strict=self.strict, notes=notes)
        except HeaderError as exc:
            raise HeaderError(exc.message, position=where) from None
        for kind, detail in notes.items:
            self._repair(kind, HeaderError.code, detail, where)
        if self.require_channels and header.channel is None and header.author.role is Role.ASSISTANT:
            self._problem(
                ChannelMissingError,
                RepairKind.CHANNEL_MISSING,
                "assistant message without a channel",
                where,
            )
            header = Header(
                header.author,
                "final",
                header.recipient,
                header.content_type,
                header.constrained,
                header.call_id,
                header.intent,
            )
        self._next_role = None
        self._header = header
        self._content = []
        self._state = _CONTENT
        self._emit(MessageStarted(len(self.messages), header))

    def _header_without_body(self, text: str, token: ControlToken, where: Position) -> None:
        """A terminator came before ``<|message|>``: keep the role and channel, and read
        the other words as the body (as openai-harmony's lenient mode does)."""
        self._problem(
            HeaderError,
            RepairKind.HEADER_WITHOUT_BODY,
            f"{token.value} before <|message|>",
            where,
        )
        head, mark, rest = text.partition(CHANNEL_MARK)
        before = head.split()
        role = self._next_role
        if role is None:
            first = before.pop(0) if before else ""
            header = parse_header(first, None, strict=False)
        else:
            if before and before[0] == role.value:
                before.pop(0)
            header = Header(Author(role, UNKNOWN_TOOL if role is Role.TOOL else None))
        after = rest.split()
        if mark and after:
            header = Header(header.author, channel=after.pop(0))
        self._next_role = None
        self._header = header
        self._content = []
        self._state = _CONTENT
        self._emit(MessageStarted(len(self.messages), header))
        body = " ".join(before + after)
        if body:
            self._body_text(body)
        self._finish(token, where)

    def _body_text(self, text: str) -> None:
        self._content.append(text)
        self._delta.append(text)
        self.last_content_delta = text

    def _cut_by_start(self, where: Position) -> None:
        self._problem(
            UnexpectedTokenError,
            RepairKind.MISSING_END,
            "<|start|> inside a message body: the message was not ended",
            where,
        )
        self._finish(None, where)

    def _finish(self, terminator: ControlToken | None, where: Position | None) -> None:
        header = self._header
        assert header is not None
        text = "".join(self._content)
        if self.check_constraints and header.constrained and (header.content_type or "").lower() == "json":
            try:
                json.loads(text)
            except ValueError as exc:
                detail = f"body is not the JSON its <|constrain|>json declares: {exc}"
                if self.strict:
                    raise BodyConstraintError(detail, position=where) from None
                self._repair(RepairKind.CONSTRAINT_VIOLATION, BodyConstraintError.code, detail, where)
        message = Message(
            header.author,
            (TextContent(text),),
            header.channel,
            header.recipient,
            header.content_type,
            header.constrained,
            header.call_id,
            header.intent,
        )
        self._emit(MessageDone(len(self.messages), message, terminator))
        self.messages.append(message)
        self._content = []
        self._header = None
        self._state = _EXPECT_START
        self.last_content_delta = None

    # --- end of input ----------------------------------------------------------------

    def close(self) -> list[Event]:
        """Signal the end of input; returns the last events.

        Raises :class:`StreamTruncatedError` when strict and the input stopped inside a
        message (unless ``allow_truncated``).
        """
        if self._closed:
            return self.events()
        self._closed = True
        if self._buf:
            self._scan(final=True)
        if self._utf8 is not None:
            self._flush_utf8()
        state = self._state
        where: Position = self._cpos(len(self._buf)) if self._offset or self._buf else self._tpos()
        if state is _EXPECT_START:
            self._take_stray()
            if not self._seen_start:
                self._end_prelude(where)
        elif state is _HEADER:
            if self._header_ids or self._header_text or self._next_role is None:
                self._problem(
                    StreamTruncatedError,
                    RepairKind.TRUNCATED,
                    "input ended inside a message header",
                    where,
                )
        else:
            if not self.allow_truncated:
                what = "a literal block" if state is _LITERAL else "a message body"
                self._problem(
                    StreamTruncatedError,
                    RepairKind.TRUNCATED,
                    f"input ended inside {what}",
                    where,
                )
            self._finish(None, where)
        return self.events()


@dataclass(frozen=True, slots=True)
class ParsedTranscript:
    """A parsed text transcript: the conversation and what the lenient parser repaired."""

    conversation: Conversation
    repairs: tuple[Repaired, ...] = ()


def parse_tokens(
    tokens: Iterable[int],
    role: Role | None = None,
    *,
    strict: bool = True,
    check_constraints: bool = True,
    require_channels: bool = False,
    allow_truncated: bool = False,
) -> list[Message]:
    """The messages ``tokens`` spell (ids of o200k_harmony).

    ``role`` is the role of a completion whose ``<|start|>role`` was in the prompt.
    Raises a :class:`~openchatml.core.errors.ParseError` when ``strict`` and the tokens are
    malformed; otherwise repairs them.
    """
    parser = StreamParser(
        role,
        strict=strict,
        check_constraints=check_constraints,
        require_channels=require_channels,
        allow_truncated=allow_truncated,
    )
    parser.feed_tokens(tokens)
    parser.close()
    return parser.messages


def parse_text(
    text: str,
    role: Role | None = None,
    *,
    strict: bool = True,
    check_constraints: bool = True,
    require_channels: bool = False,
    allow_truncated: bool = False,
) -> list[Message]:
    """The messages ``text`` spells (Harmony or OpenChatML 2.2 text)."""
    transcript = parse_transcript(
        text,
        role,
        strict=strict,
        check_constraints=check_constraints,
        require_channels=require_channels,
        allow_truncated=allow_truncated,
    )
    return list(transcript.conversation.messages)


def parse_transcript(
    text: str,
    role: Role | None = None,
    *,
    strict: bool = True,
    check_constraints: bool = True,
    require_channels: bool = False,
    allow_truncated: bool = False,
) -> ParsedTranscript:
    """The :class:`Conversation` ``text`` spells, with its YAML header, and the repairs made."""
    parser = StreamParser(
        role,
        strict=strict,
        check_constraints=check_constraints,
        require_channels=require_channels,
        allow_truncated=allow_truncated,
    )
    parser.feed_text(text)
    parser.close()
    return ParsedTranscript(
        Conversation(tuple(parser.messages), parser.transcript_header), tuple(parser.repairs)
    )


__all__ = [
    "MAX_HEADER",
    "MAX_PRELUDE",
    "ParsedTranscript",
    "StreamParser",
    "parse_text",
    "parse_tokens",
    "parse_transcript",
]
