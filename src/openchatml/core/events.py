"""What the stream parser reports: one frozen, slotted dataclass per thing that happens.

A message yields ``MessageStarted`` (its header is complete), then any number of
``ContentDelta`` (text of its body, in order), then ``MessageDone`` (the whole message
and the token that ended it). ``DocumentHeader`` reports the OCM §2 YAML header of a
transcript; ``Repaired`` reports what the lenient parser fixed in malformed input.
Parser-built events are trusted and skip validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .errors import Position
from .messages import Author, Message, TranscriptHeader
from .tokens import ControlToken


@dataclass(frozen=True, slots=True)
class Header:
    """A parsed message header: everything about a message but its body."""

    author: Author
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    constrained: bool = False
    call_id: str | None = None
    intent: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentHeader:
    """The transcript's YAML header was read."""

    header: TranscriptHeader


@dataclass(frozen=True, slots=True)
class MessageStarted:
    """Message ``index`` has a complete header; its body follows."""

    index: int
    header: Header


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """More body text of message ``index`` on ``channel`` (``None``: no channel given)."""

    index: int
    channel: str | None
    text: str


@dataclass(frozen=True, slots=True)
class MessageDone:
    """Message ``index`` is complete.

    ``terminator`` is the token that ended it: ``<|end|>``, ``<|return|>`` or
    ``<|call|>``; ``None`` when the input stopped without one (lenient mode, or a
    completion cut short) — the message is then incomplete (OCM §9).
    """

    index: int
    message: Message
    terminator: ControlToken | None


class RepairKind(StrEnum):
    """What the lenient parser had to fix."""

    STRAY_TEXT = "stray_text"
    """Text or tokens between messages were dropped."""
    MISSING_START = "missing_start"
    """A header began without ``<|start|>``."""
    MISSING_END = "missing_end"
    """A message was cut by the next ``<|start|>`` without a terminator."""
    BROKEN_HEADER = "broken_header"
    """A header could not be read; what could be kept was kept."""
    HEADER_WITHOUT_BODY = "header_without_body"
    """A terminator came before ``<|message|>``."""
    UNKNOWN_ATTRIBUTE = "unknown_attribute"
    """A header attribute this version does not know was ignored."""
    STRAY_CONTROL = "stray_control"
    """A control token inside a body was kept as text."""
    CHANNEL_MISSING = "channel_missing"
    """A required channel was absent; ``final`` was assumed."""
    CONSTRAINT_VIOLATION = "constraint_violation"
    """A body does not parse as its ``<|constrain|>`` type."""
    TRUNCATED = "truncated"
    """Input ended inside a message or a literal block."""
    INVALID_UTF8 = "invalid_utf8"
    """Bytes that are not UTF-8 were replaced by U+FFFD."""
    CALL_ID = "call_id"
    """A tool call's ``call_id`` was missing or repeated, or a reply's named no call (OCM §8.2)."""
    MISROUTED_CALL = "misrouted_call"
    """A tool call on a channel its tool may not use was moved to ``commentary`` (OCM §8.3)."""
    UNKNOWN_CHANNEL = "unknown_channel"
    """A channel outside the valid channels was read as a valid one (OCM §5)."""
    UNKNOWN_INTENT = "unknown_intent"
    """An ``intent=`` value OCM §6 does not define was dropped."""
    MISSING_STOP = "missing_stop"
    """A completion ended without ``<|return|>`` or ``<|call|>``: it is incomplete (OCM §9)."""
    MISSING_DOCUMENT_HEADER = "missing_document_header"
    """A transcript without the YAML header of OCM §2 was read as ``version: 2.2``."""


@dataclass(frozen=True, slots=True)
class Repaired:
    """The lenient parser fixed something: what, why (an OCM code), and where."""

    kind: RepairKind
    code: str
    detail: str
    position: Position | None = None


Event = DocumentHeader | MessageStarted | ContentDelta | MessageDone | Repaired
"""Anything :class:`~openchatml.core.parse.StreamParser` reports."""

_new = object.__new__
_set_delta_index = ContentDelta.__dict__["index"].__set__
_set_delta_channel = ContentDelta.__dict__["channel"].__set__
_set_delta_text = ContentDelta.__dict__["text"].__set__


def content_delta(index: int, channel: str | None, text: str) -> ContentDelta:
    """A :class:`ContentDelta` as the parser builds it: without ``__init__`` (a hot path)."""
    delta: ContentDelta = _new(ContentDelta)
    _set_delta_index(delta, index)
    _set_delta_channel(delta, channel)
    _set_delta_text(delta, text)
    return delta
