"""The strict parser of the openai-harmony API: completion tokens read as openai-harmony
0.0.8 reads them when ``strict``.

Theory of operation. Three states, and what moves between them::

    ExpectStart --<|start|>--> Header --<|message|>--> Content
    Content --<|end|> <|return|> <|call|> (or the end of input)--> ExpectStart

Between messages anything but ``<|start|>`` is an error. In a header every id but
``<|message|>`` is kept, terminators and ``<|start|>`` included; at ``<|message|>`` the
header's text is read (:mod:`._header_reading`). In a body every id but a terminator is
text: another special token is its spelling (``"<|start|>"``). The end of input inside
a header is an error. Errors carry openai-harmony's words in a typed
:class:`~openchatml.core.errors.ParseError`.

Where this parser parts from openai-harmony, on its own account: an id outside
o200k_harmony, or not an int, raises :class:`~openchatml.core.errors.UnexpectedTokenError`
at once; ordinary text in a header that spells ``<|channel|>`` or ``<|constrain|>`` raises
:class:`~openchatml.core.errors.HeaderError` (text never becomes a marker); a header longer
than :data:`~openchatml.core.headers.MAX_HEADER` ids raises
:class:`~openchatml.core.errors.HeaderError`; body text after invalid UTF-8 is reported in
``last_content_delta`` at once.
"""

from __future__ import annotations

from codecs import utf_8_decode
from collections.abc import Sequence
from typing import Final

from ..core.content import TextContent
from ..core.encoding import STOP_TOKENS, Encoding
from ..core.errors import HeaderError, Position, StreamTruncatedError, UnexpectedTokenError
from ..core.events import Header
from ..core.headers import CHANNEL_MARK, CONSTRAIN_MARK, MAX_HEADER
from ..core.messages import Message, Role
from ..core.tokens import CHANNEL_ID, CONSTRAIN_ID, FIRST_SPECIAL_ID, LAST_SPECIAL_ID, MESSAGE_ID, START_ID
from ._header_reading import read_header

EXPECT_START: Final = "ExpectStart"
HEADER: Final = "Header"
CONTENT: Final = "Content"
_MARKER_IDS: Final = frozenset({CHANNEL_ID, CONSTRAIN_ID})
_NOT_IN_BODY: Final[Sequence[str | None]] = (None,) * FIRST_SPECIAL_ID


class StrictParser:
    """openai-harmony's strict reading of completion tokens, fed one id or many at a time.

    ``role``: the role the prompt opened (``<|start|>assistant``), or ``None`` to expect
    ``<|start|>`` first. :meth:`process` and :meth:`close` raise a typed
    :class:`~openchatml.core.errors.ParseError` with openai-harmony's words.
    """

    __slots__ = (
        "_body_at",
        "_body_str",
        "_content",
        "_header_at",
        "_next_role",
        "_ordinary_str",
        "_pending",
        "_state",
        "_table",
        "current_header",
        "encoding",
        "last_content_delta",
        "messages",
        "tokens",
    )

    def __init__(self, role: Role | None, encoding: Encoding) -> None:
        self.encoding = encoding
        self.messages: list[Message] = []
        """Every complete message."""
        self.tokens: list[int] = []
        """Every id fed."""
        self.last_content_delta: str | None = None
        """The body text the last id added (``None``: none)."""
        self.current_header: Header | None = None
        """The header of the message being read, once its ``<|message|>`` was seen."""
        self._next_role = role
        self._state = HEADER if role is not None else EXPECT_START
        self._header_at = 0
        self._body_at = 0
        self._content: list[str] = []
        self._pending = b""
        """The bytes of a UTF-8 sequence in a body that the next ids go on."""
        self._table = encoding.token_bytes
        self._ordinary_str = encoding.ordinary_str
        self._body_str: Sequence[str | None] = _NOT_IN_BODY
        """The text of each ordinary id while one is taken as is (in a body, no bytes
        pending); :data:`_NOT_IN_BODY` otherwise."""

    # --- what a streaming client reads ---------------------------------------------

    @property
    def state(self) -> str:
        """``ExpectStart``, ``Header`` or ``Content``."""
        return self._state

    @property
    def current_role(self) -> Role | None:
        """The role of the message being read, or the role the prompt opened."""
        header = self.current_header
        return self._next_role if header is None else header.author.role

    @property
    def current_channel(self) -> str | None:
        """The channel of the message being read."""
        header = self.current_header
        return None if header is None else header.channel

    @property
    def current_recipient(self) -> str | None:
        """The recipient of the message being read."""
        header = self.current_header
        return None if header is None else header.recipient

    @property
    def current_content(self) -> str:
        """The body text of the message being read, so far."""
        return "".join(self._content)

    @property
    def header_tokens(self) -> list[int]:
        """The ids of the header being read (empty outside a header)."""
        return self.tokens[self._header_at :] if self._state == HEADER else []

    @property
    def body_tokens(self) -> list[int]:
        """The ids of the body being read (empty outside a body)."""
        return self.tokens[self._body_at :] if self._state == CONTENT else []

    # --- input ---------------------------------------------------------------------

    def _where(self) -> Position:
        return Position(len(self.tokens) - 1, unit="token")

    def process(self, token: int) -> None:
        """Feed one id."""
        self.tokens.append(token)
        try:  # the hot path: an ordinary id in a body
            text = self._body_str[token] if token >= 0 else None
        except (TypeError, IndexError):  # not an int, a special id, or not in a body
            text = None
        if text is not None:
            self._content.append(text)
            self.last_content_delta = text
            return
        if not isinstance(token, int) or not 0 <= token <= LAST_SPECIAL_ID:
            raise UnexpectedTokenError(f"token id {token!r} is outside o200k_harmony", position=self._where())
        if self._state == CONTENT:
            self._body_token(token)
        elif self._state == HEADER:
            self._header_token(token)
        elif token == START_ID:
            self._state = HEADER
            self._header_at = len(self.tokens)
        else:
            raise UnexpectedTokenError(
                f"Unexpected token {token} while expecting start token {START_ID}", position=self._where()
            )

    def feed_tokens(self, tokens: Sequence[int]) -> None:
        """Feed many ids: runs of ordinary ids in a body are decoded in one piece.

        Gives the same messages as :meth:`process` on each id.
        """
        process = self.process
        try:
            marks = [i for i, t in enumerate(tokens) if not 0 <= t < FIRST_SPECIAL_ID]
        except TypeError:  # not all ints: let process() report each one
            for token in tokens:
                process(token)
            return
        marks.append(len(tokens))
        table = self._table
        start = 0
        for mark in marks:
            if mark > start:
                run = tokens[start:mark]
                if self._state == CONTENT and not self._pending:
                    try:
                        text = b"".join(map(table.__getitem__, run)).decode("utf-8")
                    except UnicodeDecodeError:
                        for token in run:
                            process(token)
                    else:
                        self.tokens.extend(run)
                        self._content.append(text)
                        self.last_content_delta = text
                else:
                    for token in run:
                        process(token)
            if mark < len(tokens):
                process(tokens[mark])
            start = mark + 1

    def _body_token(self, token: int) -> None:
        if token in STOP_TOKENS:
            self._finish()
            return
        data = self._pending + self._table[token]
        text, used = utf_8_decode(data, "replace", False)
        self._pending = data[used:]
        self._body_str = _NOT_IN_BODY if self._pending else self._ordinary_str
        if text:
            self._content.append(text)
        self.last_content_delta = text or None

    def _header_token(self, token: int) -> None:
        if token != MESSAGE_ID:
            if len(self.tokens) - self._header_at > MAX_HEADER:
                raise HeaderError(f"message header longer than {MAX_HEADER} tokens", position=self._where())
            return
        header_ids = self.tokens[self._header_at : -1]
        self._state = EXPECT_START  # as openai-harmony: an unreadable header leaves it here
        role = self._next_role
        self.current_header = read_header(
            self._header_text(header_ids),
            role,
            rendered=all(t < FIRST_SPECIAL_ID or t in _MARKER_IDS for t in header_ids),
            where=self._where(),
        )
        self._next_role = None
        self._state = CONTENT
        self._body_str = self._ordinary_str
        self._body_at = len(self.tokens)
        self._content = []

    def _header_text(self, header_ids: list[int]) -> str:
        """The header's text, special ids spelled out; ordinary text spelling a marker
        or that is not UTF-8 raises :class:`HeaderError`."""
        table = self._table
        parts: list[str] = []
        run: list[bytes] = []
        for token in [*header_ids, START_ID]:
            if token < FIRST_SPECIAL_ID:
                run.append(table[token])
                continue
            try:
                text = b"".join(run).decode("utf-8")
            except UnicodeDecodeError:
                raise HeaderError("could not decode header", position=self._where()) from None
            if CHANNEL_MARK in text or CONSTRAIN_MARK in text:
                raise HeaderError("text spelling a control token inside a header", position=self._where())
            parts.append(text)
            parts.append(table[token].decode("utf-8"))
            run.clear()
        return "".join(parts[:-1])

    def _finish(self) -> None:
        """The body ends: its message joins :attr:`messages`."""
        if self._pending:
            self._content.append(utf_8_decode(self._pending, "replace", True)[0])
            self._pending = b""
        header = self.current_header
        assert header is not None
        self.messages.append(
            Message(
                header.author,
                (TextContent("".join(self._content)),),
                header.channel,
                header.recipient,
                header.content_type,
                header.constrained,
            )
        )
        self._state = EXPECT_START
        self._body_str = _NOT_IN_BODY
        self.current_header = None
        self.last_content_delta = None
        self._content = []

    def close(self) -> None:
        """The end of input: a body cut short is a message; a header cut short raises
        :class:`~openchatml.core.errors.StreamTruncatedError`."""
        if self._state == HEADER:
            where = Position(max(len(self.tokens) - 1, 0), unit="token") if self.tokens else None
            raise StreamTruncatedError(
                "Unexpected EOS while waiting for message header to complete", position=where
            )
        if self._state == CONTENT:
            self._finish()
