"""The sans-IO stream parser, and ``parse_tokens`` / ``parse_text`` on top of it.

Theory of operation. :class:`StreamParser` is a state machine fed either token ids
(:meth:`~StreamParser.process` one at a time, :meth:`~StreamParser.feed_tokens` for
many) or text chunks split anywhere (:meth:`~StreamParser.feed_text`); it never reads,
sleeps or logs. It reports :mod:`events`; consecutive body text is coalesced into one
``ContentDelta`` per call.

States (:class:`~._message_machine.ParserState`), and what moves between them::

    EXPECT_START --<|start|>--> HEADER --<|message|>--> CONTENT
    CONTENT --<|end|> <|return|> <|call|>--> EXPECT_START
    CONTENT --<|literal|>--> LITERAL --<|endliteral|>--> CONTENT        (text only)

The two inputs differ only in how control tokens are seen:

* token ids (:mod:`._token_reader`): a control token is its special id; every ordinary
  id is body text, decoded incrementally (a UTF-8 sequence may span ids). Text can
  never become control here.
* text (:mod:`._text_scanner`): a control token is its ASCII spelling, recognised even
  when a chunk boundary cuts it (OCM §3 portability); in a body, ``<<|x|>`` is the
  escaped text ``<|x|>`` and ``<|literal|>…<|endliteral|>`` is opaque. Text before the
  first message is the transcript's YAML header (OCM §2).

Both drive the same transitions (:mod:`._message_machine`): a header begins, a body
starts, a message ends.

``strict=True`` raises a typed :class:`~openchatml.core.errors.ParseError` at the first
malformation; ``strict=False`` repairs it, reports a ``Repaired`` event, and goes on.
Buffers are bounded: a header, a partial control token and the YAML header have limits.

A profile adds its rules to the grammar. ``Profile.OCM`` holds the input to the MUSTs of
OpenChatML 2.2 (:mod:`.conformance`): call ids (§8.2), routing (§8.3), channels and
intents (§5, §6); a text transcript begins with its YAML header (§2); a completion ends
in ``<|return|>`` or ``<|call|>`` (§9). ``Profile.HARMONY`` requires a channel on every
assistant message (HIP-1). Without a profile the parser reads what openai-harmony reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ._message_machine import CONTENT, EXPECT_START, HEADER, LITERAL
from ._text_scanner import MAX_PRELUDE, TextScanner
from ._token_reader import TokenReader
from .conformance import ConformanceChecker
from .encoding import Encoding
from .errors import Position, StreamTruncatedError
from .events import Event, Header, Repaired, RepairKind
from .headers import MAX_HEADER
from .messages import Conversation, Message, Role
from .render import Profile
from .tokens import ControlToken

_STOP_TOKENS = (ControlToken.RETURN, ControlToken.CALL)


class StreamParser(TokenReader, TextScanner):
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
    ``profile``: the rules of ``Profile.OCM`` or ``Profile.HARMONY`` beyond the grammar
    (see the module's docstring); a completion (``role`` given) needs no YAML header.
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
        profile: Profile | None = None,
    ) -> None:
        self.strict = strict
        self.replace_invalid_utf8 = (not strict) if replace_invalid_utf8 is None else replace_invalid_utf8
        self.check_constraints = check_constraints
        self.require_channels = require_channels or profile is Profile.HARMONY
        self.profile = profile
        ocm = profile is Profile.OCM
        self.require_document_header = ocm and role is None
        self._require_stop = ocm and role is not None
        self._conformance = ConformanceChecker() if ocm else None
        self._last_terminator = None
        self._text_fed = False
        self.allow_truncated = allow_truncated
        self._record = record_tokens
        self._encoding = encoding
        self._token_str = ()
        self.messages = []
        self.tokens = []
        self.repairs = []
        self.transcript_header = None
        self.last_content_delta = None
        self._events = []
        self._delta = []
        self._content = []
        self._header = None
        self._next_role = role
        self._state = HEADER if role is not None else EXPECT_START
        self._header_ids = []
        self._header_text = []
        self._header_len = 0
        self._utf8 = None
        self._n_tokens = 0
        self._buf = ""
        self._offset = 0
        self._lines = 0
        self._line_start = 0
        self._prelude = []
        self._prelude_len = 0
        self._prelude_dropped = False
        self._stray = ""
        self._stray_at = None
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
        return self._header if self._state in (CONTENT, LITERAL) else None

    @property
    def current_role(self) -> Role | None:
        """The role of the message being read (or about to be)."""
        if self._header is not None and self._state in (CONTENT, LITERAL):
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
        if self._state in (CONTENT, LITERAL):
            return "".join(self._content)
        return ""

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
        if self._text_fed or self._offset or self._buf:
            where: Position = self._cpos(len(self._buf))
        else:
            where = Position(max(self._n_tokens - 1, 0), unit="token")
        if state is EXPECT_START:
            self._take_stray()
            if not self._seen_start:
                self._end_prelude(where)
            self._check_stop(where)
        elif state is HEADER:
            if self._header_ids or self._header_text or self._next_role is None:
                self._problem(
                    StreamTruncatedError,
                    RepairKind.TRUNCATED,
                    "input ended inside a message header",
                    where,
                )
            else:
                self._check_stop(where)
        else:
            if not self.allow_truncated:
                what = "a literal block" if state is LITERAL else "a message body"
                self._problem(
                    StreamTruncatedError,
                    RepairKind.TRUNCATED,
                    f"input ended inside {what}",
                    where,
                )
            self._finish(None, where)
        return self.events()

    def _check_stop(self, where: Position) -> None:
        """OCM §9: a completion whose messages are all ended must end in a stop token."""
        if not self._require_stop or self._last_terminator in _STOP_TOKENS:
            return
        last = self._last_terminator
        after = f"after {last.value}" if last is not None else "with no message"
        self._problem(
            StreamTruncatedError,
            RepairKind.MISSING_STOP,
            f"the completion ended {after}, without <|return|> or <|call|>: it is incomplete (OCM §9)",
            where,
        )


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
    profile: Profile | None = None,
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
        profile=profile,
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
    profile: Profile | None = None,
) -> list[Message]:
    """The messages ``text`` spells (Harmony or OpenChatML 2.2 text)."""
    transcript = parse_transcript(
        text,
        role,
        strict=strict,
        check_constraints=check_constraints,
        require_channels=require_channels,
        allow_truncated=allow_truncated,
        profile=profile,
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
    profile: Profile | None = None,
) -> ParsedTranscript:
    """The :class:`Conversation` ``text`` spells, with its YAML header, and the repairs made."""
    parser = StreamParser(
        role,
        strict=strict,
        check_constraints=check_constraints,
        require_channels=require_channels,
        allow_truncated=allow_truncated,
        profile=profile,
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
