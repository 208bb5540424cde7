"""The MUSTs of OpenChatML 2.2 that a message header can break, beyond its grammar.

Theory of operation. A :class:`ConformanceChecker` follows one conversation message by
message (the stream parser, or a JSON conversation, feeds it) and holds each header to
the OCM profile:

* §8.2 — every tool call carries a ``call_id``, unique in the conversation; every tool
  reply echoes one, and it names a call made before it;
* §8.3 — a function tool is called on ``commentary``; the built-ins ``browser`` and
  ``python`` on ``analysis`` or ``commentary``;
* §5 — a channel is one of the declared valid channels (the document header's
  ``capabilities.channels``, else a system message's ``Valid channels:`` line, else
  ``analysis``, ``commentary``, ``final``); §6 — ``intent`` is ``preamble``, ``status``
  or ``debug``.

:meth:`ConformanceChecker.check` returns the header as repaired and one
:class:`Violation` per broken rule; the caller raises the first (strict) or reports each
as a repair (lenient). Repairs are conservative: a missing or repeated ``call_id`` gets a
fresh one; a reply without one answers the oldest open call to its tool; an unknown
channel becomes the standard channel it spells (``––commentary``), else a hidden one; an
unknown intent is dropped; a misrouted call moves to ``commentary``. A reply that
answers no call is kept as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from .content import SystemContent, TextContent
from .errors import CallSchemaError, HeaderError, OCMError
from .events import Header, RepairKind
from .messages import Channel, Conversation, Intent, Message, Role, TranscriptHeader

STANDARD_CHANNELS: Final = tuple(c.value for c in Channel)
"""The channels valid unless a transcript declares others."""
BUILTIN_TOOLS: Final = frozenset({"browser", "python"})
"""The namespaces of the built-in tools (OCM §8.3), callable on ``analysis`` or ``commentary``."""
BUILTIN_CHANNELS: Final = frozenset({Channel.ANALYSIS.value, Channel.COMMENTARY.value})
INTENTS: Final = frozenset(i.value for i in Intent)

_VALID_CHANNELS_LINE: Final = re.compile(r"^#?[ \t]*Valid channels:[ \t]*([^\n]*)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule a header breaks: the error to raise (strict) with what is wrong, and the
    repair kind and what the repair did (lenient)."""

    error: type[OCMError]
    kind: RepairKind
    detail: str
    repair: str


def channels_declared_in(text: str) -> tuple[str, ...] | None:
    """The channels a system prompt's ``# Valid channels: a, b, c.`` line lists, if any."""
    match = _VALID_CHANNELS_LINE.search(text)
    if match is None:
        return None
    listed = match.group(1).split(".", 1)[0]  # the sentence ends the list
    names = tuple(n.strip() for n in listed.split(","))
    return tuple(n for n in names if n) or None


def header_of(message: Message) -> Header:
    """The :class:`Header` of ``message`` (everything but its body)."""
    return Header(
        message.author,
        message.channel,
        message.recipient,
        message.content_type,
        message.constrained,
        message.call_id,
        message.intent,
    )


class ConformanceChecker:
    """Holds the headers of one conversation to the OCM profile, in order.

    ``channels``: the valid channels, when known up front (else the standard three,
    until a document header or a system message declares others).
    """

    __slots__ = ("_answered", "_calls", "_channels", "_declared", "_open", "_renamed")

    def __init__(self, channels: Iterable[str] | None = None) -> None:
        self._channels: tuple[str, ...] = tuple(channels) if channels is not None else STANDARD_CHANNELS
        self._declared = channels is not None
        self._calls: dict[str, str] = {}
        """Every call_id seen, with its recipient."""
        self._open: dict[str, str] = {}
        """The calls not answered yet, oldest first."""
        self._answered: set[str] = set()
        self._renamed: dict[str, list[str]] = {}
        """A repeated call_id → the fresh ids its repeats got, oldest first."""

    @property
    def channels(self) -> tuple[str, ...]:
        """The valid channels in force."""
        return self._channels

    def declare(self, document: TranscriptHeader) -> None:
        """Take the valid channels from a document header's ``capabilities.channels``."""
        channels = document.capabilities.get("channels")
        if isinstance(channels, list | tuple) and channels and all(isinstance(c, str) for c in channels):
            self._channels = tuple(channels)
            self._declared = True

    def observe(self, message: Message) -> None:
        """Learn from a complete message: a system message may declare the valid channels."""
        if self._declared or message.author.role is not Role.SYSTEM:
            return
        for part in message.content:
            found: tuple[str, ...] | None = None
            if isinstance(part, SystemContent) and part.channel_config is not None:
                found = tuple(part.channel_config.valid_channels) or None
            elif isinstance(part, TextContent):
                found = channels_declared_in(part.text)
            if found is not None:
                self._channels = found
                return

    def check(self, header: Header) -> tuple[Header, list[Violation]]:
        """``header`` as repaired, and every rule it breaks (empty when it breaks none)."""
        found: list[Violation] = []
        header = self._check_channel(header, found)
        header = self._check_intent(header, found)
        if header.author.role is Role.ASSISTANT and header.recipient is not None:
            header = self._check_routing(header, found)
            header = self._check_call(header, found)
        elif header.author.role is Role.TOOL:
            header = self._check_reply(header, found)
        return header, found

    # --- §5, §6 ---------------------------------------------------------------------

    def _check_channel(self, header: Header, found: list[Violation]) -> Header:
        channel = header.channel
        if channel is None or channel in self._channels:
            return header
        spelled = re.sub(r"[^a-z]", "", channel.lower())
        if spelled in self._channels:
            repaired = spelled
        elif header.recipient is not None or header.author.role is Role.TOOL:
            repaired = Channel.COMMENTARY.value
        else:
            repaired = Channel.ANALYSIS.value
        valid = ", ".join(self._channels)
        found.append(
            Violation(
                HeaderError,
                RepairKind.UNKNOWN_CHANNEL,
                f"channel {channel!r} is not a valid channel ({valid})",
                f"read as {repaired!r}",
            )
        )
        return replace(header, channel=repaired)

    def _check_intent(self, header: Header, found: list[Violation]) -> Header:
        if header.intent is None or header.intent in INTENTS:
            return header
        values = ", ".join(sorted(INTENTS))
        found.append(
            Violation(
                HeaderError,
                RepairKind.UNKNOWN_INTENT,
                f"intent {header.intent!r} is not defined ({values})",
                "dropped",
            )
        )
        return replace(header, intent=None)

    # --- §8.3 -----------------------------------------------------------------------

    def _check_routing(self, header: Header, found: list[Violation]) -> Header:
        recipient = header.recipient or ""
        channel = header.channel or Channel.FINAL.value
        if recipient.partition(".")[0] in BUILTIN_TOOLS:
            if channel in BUILTIN_CHANNELS:
                return header
            rule = "a built-in tool is called on analysis or commentary"
        else:
            if channel == Channel.COMMENTARY.value:
                return header
            rule = "a function tool is called on commentary"
        found.append(
            Violation(
                HeaderError,
                RepairKind.MISROUTED_CALL,
                f"call to {recipient} on {channel!r}: {rule} (OCM §8.3)",
                "moved to 'commentary'",
            )
        )
        return replace(header, channel=Channel.COMMENTARY.value)

    # --- §8.2 -----------------------------------------------------------------------

    def _fresh_id(self, base: str) -> str:
        n = len(self._calls) + 1
        while f"{base}-{n}" in self._calls:
            n += 1
        return f"{base}-{n}"

    def _check_call(self, header: Header, found: list[Violation]) -> Header:
        call_id = header.call_id
        if call_id is None:
            call_id = self._fresh_id("call")
            detail = f"tool call to {header.recipient} without call_id (OCM §8.2)"
            found.append(Violation(HeaderError, RepairKind.CALL_ID, detail, f"given call_id={call_id}"))
        elif call_id in self._calls:
            fresh = self._fresh_id(call_id)
            self._renamed.setdefault(call_id, []).append(fresh)
            detail = f"call_id={call_id} is used by an earlier call (OCM §8.2)"
            found.append(Violation(HeaderError, RepairKind.CALL_ID, detail, f"renamed {fresh}"))
            call_id = fresh
        self._calls[call_id] = header.recipient or ""
        self._open[call_id] = header.recipient or ""
        return header if call_id == header.call_id else replace(header, call_id=call_id)

    def _check_reply(self, header: Header, found: list[Violation]) -> Header:
        call_id = header.call_id
        tool = header.author.name
        if call_id is None:
            match = next((c for c, r in self._open.items() if r == tool), None)
            if match is None:
                match = next(iter(self._open), None)
            answer = (
                f"read as the reply to call_id={match}" if match is not None else "no open call to answer"
            )
            detail = f"tool reply from {tool} without call_id (OCM §8.2)"
            found.append(Violation(HeaderError, RepairKind.CALL_ID, detail, answer))
            if match is None:
                return header
            call_id = match
            header = replace(header, call_id=match)
        elif call_id not in self._calls:
            detail = f"tool reply with call_id={call_id} answers no call (OCM §8.2)"
            found.append(Violation(CallSchemaError, RepairKind.CALL_ID, detail, "kept as it is"))
            return header
        elif call_id in self._answered and self._renamed.get(call_id):
            fresh = self._renamed[call_id].pop(0)
            detail = f"call_id={call_id} was answered already, and a repeated call took it"
            found.append(Violation(HeaderError, RepairKind.CALL_ID, detail, f"read as the reply to {fresh}"))
            call_id = fresh
            header = replace(header, call_id=fresh)
        self._open.pop(call_id, None)
        self._answered.add(call_id)
        return header


def conversation_violations(
    conversation: Conversation | Iterable[Message],
    document: TranscriptHeader | None = None,
) -> list[tuple[int, Violation]]:
    """Every OCM-profile rule the messages of ``conversation`` break, with the message index.

    ``document``: the transcript's YAML header (taken from ``conversation`` when it is a
    :class:`Conversation` and none is given).
    """
    if document is None and isinstance(conversation, Conversation):
        document = conversation.header
    checker = ConformanceChecker()
    if document is not None:
        checker.declare(document)
    out: list[tuple[int, Violation]] = []
    for index, message in enumerate(conversation):
        _, found = checker.check(header_of(message))
        out.extend((index, violation) for violation in found)
        checker.observe(message)
    return out


__all__ = [
    "BUILTIN_TOOLS",
    "STANDARD_CHANNELS",
    "ConformanceChecker",
    "Violation",
    "channels_declared_in",
    "conversation_violations",
    "header_of",
]
