"""The token-id input of the stream parser.

A control token is its special id; every ordinary id is body text, decoded
incrementally (a UTF-8 sequence may span ids). Text can never become control here:
ordinary ids that spell a control token inside a header are refused (strict) or lose
their ``|`` (lenient).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Sequence
from typing import Final

from ._message_machine import CONTENT, EXPECT_START, HEADER, MessageMachine
from .encoding import Encoding, load_encoding
from .errors import HeaderError, Position, UnexpectedTokenError
from .events import Event, RepairKind
from .headers import MAX_HEADER
from .tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    LAST_SPECIAL_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    ControlToken,
    sanitize_header_value,
    special_token_text,
)

_UTF8_DECODER: Final = codecs.getincrementaldecoder("utf-8")
_TERMINATOR_OF_ID: Final = {
    END_ID: ControlToken.END,
    RETURN_ID: ControlToken.RETURN,
    CALL_ID: ControlToken.CALL,
}


class TokenReader(MessageMachine):
    """Feeds token ids (o200k_harmony) to the message machine.

    A base of :class:`~openchatml.core.parse.StreamParser`, whose ``__init__`` sets
    every attribute declared here.
    """

    replace_invalid_utf8: bool
    """Body bytes that are not UTF-8 become U+FFFD instead of an error."""
    tokens: list[int]
    """Every token id fed (only with ``record_tokens``)."""
    _record: bool
    _encoding: Encoding | None
    _token_str: Sequence[str | None]
    _utf8: codecs.IncrementalDecoder | None
    _n_tokens: int

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
                if self._state is CONTENT and self._utf8 is None:
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
        if self._state is CONTENT and self._utf8 is None:
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
            if state is CONTENT:
                self._body_text("\ufffd")
            return
        if state is CONTENT:
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
        if state is HEADER:
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
                self._state = EXPECT_START
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
            self._utf8 = _UTF8_DECODER("replace")
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
