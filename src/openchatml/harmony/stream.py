"""openai-harmony's ``StreamableParser``: completion tokens one at a time.

Strict, it reads them as openai-harmony does (:class:`._strict_parser.StrictParser`);
not strict, the core :class:`~openchatml.core.parse.StreamParser` repairs what it can."""

from __future__ import annotations

import codecs
from enum import Enum
from typing import Any, Final

from ..core import messages as core_messages
from ..core.errors import OCMError
from ..core.parse import StreamParser
from ..core.tokens import MESSAGE_ID, START_ID
from ._conversion import ROLE_OF_CORE, from_core_message, to_core_role
from ._strict_parser import StrictParser
from .encoding import HarmonyEncoding, end_of_input
from .errors import as_harmony
from .messages import CONSTRAIN_MARKER, Message, Role


class StreamState(Enum):
    """Where a :class:`StreamableParser` is: before a message, in its header, in its body."""

    EXPECT_START = "ExpectStart"
    HEADER = "Header"
    CONTENT = "Content"


_STATES: Final[dict[str, StreamState]] = {
    "ExpectStart": StreamState.EXPECT_START,
    "Header": StreamState.HEADER,
    "Content": StreamState.CONTENT,
    "Literal": StreamState.CONTENT,
}


class StreamableParser:
    """Parses completion tokens one at a time, exposing the message being read.

    ``role`` is the role the prompt opened (``<|start|>assistant``), or ``None`` to
    expect ``<|start|>`` first. When ``strict``, tokens are read as openai-harmony reads
    them, and :meth:`process` raises :class:`HarmonyError` (a typed
    :class:`~openchatml.core.errors.ParseError`) with openai-harmony's words where it
    raises; otherwise the parser repairs malformed tokens.
    """

    __slots__ = ("_cache", "_encoding", "_inner", "_process", "_retired", "_retired_tokens", "_strict")

    def __init__(self, encoding: HarmonyEncoding, role: Role | None = None, *, strict: bool = True) -> None:
        self._encoding = encoding
        self._strict = strict
        self._inner = self._new_inner(None if role is None else to_core_role(role))
        self._process = self._inner.process
        self._retired: list[core_messages.Message] = []
        self._retired_tokens: list[int] = []
        self._cache: list[Message] = []

    def _new_inner(self, role: core_messages.Role | None) -> StreamParser | StrictParser:
        if self._strict:
            return StrictParser(role, self._encoding._encoding)
        return StreamParser(
            role,
            strict=self._strict,
            check_constraints=False,
            allow_truncated=True,
            record_tokens=True,
            replace_invalid_utf8=True,
            encoding=self._encoding._encoding,
        )

    def process(self, token: int) -> StreamableParser:
        """Feed one token id; returns the parser."""
        try:
            self._process(token)
        except OCMError as exc:
            raise as_harmony(exc) from None
        return self

    def process_eos(self) -> StreamableParser:
        """Signal the end of input: a message cut short is completed as it stands.

        Raises :class:`HarmonyError` (``E-STREAM-TRUNCATED``) when ``strict`` and the
        input ended inside a header. Tokens fed afterwards start a new stream, expecting
        ``<|start|>``.
        """
        inner = self._inner
        try:
            if isinstance(inner, StrictParser):
                inner.close()
            else:
                end_of_input(inner, self._strict)
        except OCMError as exc:
            raise as_harmony(exc) from None
        self._retired += inner.messages
        self._retired_tokens += inner.tokens
        self._inner = self._new_inner(None)
        self._process = self._inner.process
        return self

    @property
    def current_content(self) -> str:
        """The body text of the message being read, so far."""
        return self._inner.current_content

    @property
    def current_role(self) -> Role | None:
        """The role of the message being read, or the role the prompt opened."""
        role = self._inner.current_role
        return None if role is None else ROLE_OF_CORE[role]

    @property
    def current_content_type(self) -> str | None:
        """The content type of the message being read (``<|constrain|>json`` if constrained)."""
        header = self._inner.current_header
        if header is None:
            return None
        if header.constrained:
            return CONSTRAIN_MARKER + (header.content_type or "")
        return header.content_type

    @property
    def current_recipient(self) -> str | None:
        """The recipient of the message being read."""
        return self._inner.current_recipient

    @property
    def current_channel(self) -> str | None:
        """The channel of the message being read."""
        return self._inner.current_channel

    @property
    def last_content_delta(self) -> str | None:
        """The body text the last token added (``None`` if it added none)."""
        return self._inner.last_content_delta

    @property
    def messages(self) -> list[Message]:
        """Every complete message so far (the objects are shared between reads)."""
        done = self._inner.messages
        if self._retired:
            done = self._retired + done
        cache = self._cache
        if len(cache) < len(done):
            cache.extend(map(from_core_message, done[len(cache) :]))
        return list(cache)

    @property
    def tokens(self) -> list[int]:
        """Every token id fed so far."""
        return self._retired_tokens + self._inner.tokens

    @property
    def state(self) -> StreamState:
        """``EXPECT_START``, ``HEADER`` or ``CONTENT``."""
        return _STATES[self._inner.state]

    @property
    def state_data(self) -> dict[str, Any]:
        """The state as openai-harmony reports it.

        ``{"state": "ExpectStart"}``; ``{"state": "Header", "header_tokens": [...]}``;
        or ``{"state": "Content", "header": {...}, "content_tokens": [...]}``, where the
        content tokens are the body text so far, encoded again one delta at a time.
        """
        inner = self._inner
        state = self.state
        tokens = inner.tokens
        if state is StreamState.EXPECT_START:
            return {"state": state.value}
        if state is StreamState.HEADER:
            if isinstance(inner, StrictParser):
                return {"state": state.value, "header_tokens": inner.header_tokens}
            return {"state": state.value, "header_tokens": tokens[_after_last(tokens, START_ID) :]}
        header = inner.current_header
        assert header is not None
        author: dict[str, Any] = {"role": header.author.role.value}
        if header.author.name is not None:
            author["name"] = header.author.name
        return {
            "state": state.value,
            "header": {
                "author": author,
                "recipient": header.recipient,
                "channel": header.channel,
                "content_type": self.current_content_type,
            },
            "content_tokens": self._content_tokens(
                inner.body_tokens
                if isinstance(inner, StrictParser)
                else tokens[_after_last(tokens, MESSAGE_ID) :]
            ),
        }

    def _content_tokens(self, body: list[int]) -> list[int]:
        encoding = self._encoding._encoding
        table = encoding.token_bytes
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        out: list[int] = []
        for token in body:
            piece = decoder.decode(table[token]) if 0 <= token < len(table) else "\ufffd"
            if piece:
                out += encoding.encode_ordinary(piece)
        return out


def _after_last(tokens: list[int], token: int) -> int:
    """The index just after the last ``token`` in ``tokens`` (0 if there is none)."""
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] == token:
            return i + 1
    return 0
