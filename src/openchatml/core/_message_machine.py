"""The message state machine that both inputs of the stream parser drive.

:class:`MessageMachine` holds what a :class:`~openchatml.core.parse.StreamParser` has
read so far (the messages, the message being read, the events not yet handed out, the
repairs) and the transitions both inputs share: a header begins, a body starts, text
goes into the body, a message ends. The inputs (:mod:`._token_reader`,
:mod:`._text_scanner`) recognise control tokens and call these transitions.

States, and what moves between them::

    EXPECT_START --<|start|>--> HEADER --<|message|>--> CONTENT
    CONTENT --<|end|> <|return|> <|call|>--> EXPECT_START
    CONTENT --<|literal|>--> LITERAL --<|endliteral|>--> CONTENT        (text only)
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Final

from .conformance import ConformanceChecker
from .content import TextContent
from .errors import (
    BodyConstraintError,
    ChannelMissingError,
    HeaderError,
    ParseError,
    Position,
    UnexpectedTokenError,
)
from .events import (
    Event,
    Header,
    MessageDone,
    MessageStarted,
    Repaired,
    RepairKind,
    content_delta,
)
from .headers import CHANNEL_MARK, MAX_HEADER, UNKNOWN_TOOL, HeaderNotes, parse_header
from .messages import Author, Message, Role
from .tokens import ControlToken

ROLE_WORDS: Final = frozenset(r.value for r in Role)
"""The words that name a role (``user``, ``assistant`` …)."""


class ParserState(Enum):
    """Where the parser is: between messages, in a header, in a body, in a literal block."""

    EXPECT_START = "ExpectStart"
    HEADER = "Header"
    CONTENT = "Content"
    LITERAL = "Literal"


EXPECT_START: Final = ParserState.EXPECT_START
HEADER: Final = ParserState.HEADER
CONTENT: Final = ParserState.CONTENT
LITERAL: Final = ParserState.LITERAL


class MessageMachine:
    """What the stream parser has read, and the transitions both of its inputs share.

    A base of :class:`~openchatml.core.parse.StreamParser`, whose ``__init__`` sets
    every attribute declared here.
    """

    strict: bool
    """Raise on malformed input instead of repairing it."""
    check_constraints: bool
    """A ``<|constrain|>json`` body must be JSON."""
    require_channels: bool
    """An assistant message without a channel is an error (repaired to ``final``)."""
    messages: list[Message]
    """Every complete message so far."""
    repairs: list[Repaired]
    """Everything the lenient parser fixed."""
    last_content_delta: str | None
    """The body text the last token or chunk added (``None`` if it added none)."""
    _conformance: ConformanceChecker | None
    """The OCM profile's header rules (§5, §8.2, §8.3), when they are checked."""
    _last_terminator: ControlToken | None
    """The token that ended the last message (``None``: none yet, or it was cut)."""
    _events: list[Event]
    _delta: list[str]
    _content: list[str]
    _header: Header | None
    _next_role: Role | None
    _state: ParserState
    _header_ids: list[int]
    _header_text: list[str]
    _header_len: int
    _stray: str
    _stray_at: Position | None
    _seen_start: bool

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
            content_delta(len(self.messages), header.channel if header else None, "".join(self._delta))
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

    # --- text between messages -------------------------------------------------------

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

    def _implicit_role(self, text: str) -> Role:
        words = text.split()
        return Role(words[-1]) if words and words[-1] in ROLE_WORDS else Role.ASSISTANT

    # --- transitions shared by both inputs -------------------------------------------

    def _begin_header(self, role: Role | None = None) -> None:
        self._seen_start = True
        self._state = HEADER
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
        if self._conformance is not None:
            header = self._conform(header, self._conformance, where)
        self._next_role = None
        self._header = header
        self._content = []
        self._state = CONTENT
        self._emit(MessageStarted(len(self.messages), header))

    def _conform(self, header: Header, checker: ConformanceChecker, where: Position) -> Header:
        """``header`` held to the OCM profile: each broken rule raised (strict) or repaired."""
        repaired, violations = checker.check(header)
        for violation in violations:
            if self.strict:
                raise violation.error(violation.detail, position=where)
            self._repair(
                violation.kind, violation.error.code, f"{violation.detail}; {violation.repair}", where
            )
        return repaired

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
        self._state = CONTENT
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
        self._last_terminator = terminator
        if self._conformance is not None:
            self._conformance.observe(message)
        self._content = []
        self._header = None
        self._state = EXPECT_START
        self.last_content_delta = None
