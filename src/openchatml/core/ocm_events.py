"""The OCM 2.2 §9 streaming events, and :class:`OcmEventStream`, which derives them from the
parser's events (sans-IO).

Theory of operation. The §9 events are what a user-facing stream shows:

* ``response.delta`` — a slice of ``final`` text, in order (``{"type", "delta"}``);
* ``response.delta.flush`` — a paragraph or segment boundary: display it;
* ``response.cancel`` — stop rendering (optionally with a ``reason``);
* ``tool.cancel`` — ``{call_id, reason}``, for internal routing.

:class:`OcmEventStream` is fed the :class:`~openchatml.core.parse.StreamParser` 's events in
order. A ``MessageStarted`` decides whether the message's body is shown: an assistant message
on ``final`` (or on no channel, 1.x back-compat) addressed to no tool and not
``intent=debug`` — the renderer policy of §4, §5, §11 (:mod:`.visibility`); with
``preambles=True`` also ``commentary`` flagged ``intent=preamble``. Hidden channels
(``analysis``, other ``commentary``, tool calls and replies, system, developer and user
messages) never become a delta. The body of a shown message becomes ``response.delta`` s;
a ``response.delta.flush`` follows each paragraph break (where a run of newlines reaches two,
``"\\n\\n"``) and the end of each shown message (a segment), never two in a row. Since a
flush goes right after text already sent, nothing is held back, and the events do not depend
on how the input was split (deltas joined).

Interleaving: §9 forbids interleaving unrelated streams unless each is tagged by a
``message_id``. One parser's messages never interleave, so the events are untagged by
default; give ``message_id_prefix`` to tag every delta and flush with
``f"{prefix}{index}"`` (``index``: the parser's message index), so that several streams can
be merged and told apart. After :meth:`OcmEventStream.cancel` nothing more is shown.

No I/O, no logging. ``to_dict()`` gives each event's JSON object;
:func:`ocm_event_from_dict` reads one back (checked: input from a peer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .events import ContentDelta, Event, Header, MessageDone, MessageStarted
from .interchange.errors import path_error
from .messages import Channel, Intent, Role
from .visibility import header_is_visible

__all__ = [
    "OcmEvent",
    "OcmEventStream",
    "OcmResponseCancel",
    "OcmResponseDelta",
    "OcmResponseDeltaFlush",
    "OcmToolCancel",
    "ocm_event_from_dict",
    "ocm_events",
]

_PARAGRAPH = "\n\n"


@dataclass(frozen=True, slots=True)
class OcmResponseDelta:
    """``response.delta``: the next slice ``delta`` of ``final`` text (of ``message_id``)."""

    type: ClassVar[str] = "response.delta"

    delta: str
    message_id: str | None = None

    def to_dict(self) -> dict[str, str]:
        """``{"type": "response.delta", "delta": …}`` (with ``message_id`` when tagged)."""
        out = {"type": self.type, "delta": self.delta}
        if self.message_id is not None:
            out["message_id"] = self.message_id
        return out


@dataclass(frozen=True, slots=True)
class OcmResponseDeltaFlush:
    """``response.delta.flush``: a paragraph or segment boundary (of ``message_id``)."""

    type: ClassVar[str] = "response.delta.flush"

    message_id: str | None = None

    def to_dict(self) -> dict[str, str]:
        """``{"type": "response.delta.flush"}`` (with ``message_id`` when tagged)."""
        out = {"type": self.type}
        if self.message_id is not None:
            out["message_id"] = self.message_id
        return out


@dataclass(frozen=True, slots=True)
class OcmResponseCancel:
    """``response.cancel``: the response was cancelled; stop rendering.

    ``reason`` and ``message_id`` are optional. Raises ``TypeError`` for a non-string field.
    """

    type: ClassVar[str] = "response.cancel"

    reason: str | None = None
    message_id: str | None = None

    def __post_init__(self) -> None:
        _check_optional_str("reason", self.reason)
        _check_optional_str("message_id", self.message_id)

    def to_dict(self) -> dict[str, str]:
        """``{"type": "response.cancel"}`` with ``reason`` and ``message_id`` when set."""
        out = {"type": self.type}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.message_id is not None:
            out["message_id"] = self.message_id
        return out


@dataclass(frozen=True, slots=True)
class OcmToolCancel:
    """``tool.cancel {call_id, reason}``: the runtime cancelled call ``call_id``.

    Raises ``TypeError`` for a non-string field, ``ValueError`` for an empty ``call_id``.
    """

    type: ClassVar[str] = "tool.cancel"

    call_id: str
    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.call_id, str) or not isinstance(self.reason, str):
            raise TypeError("tool.cancel: call_id and reason must be strings")
        if not self.call_id:
            raise ValueError("tool.cancel: call_id must not be empty")

    def to_dict(self) -> dict[str, str]:
        """``{"type": "tool.cancel", "call_id": …, "reason": …}``."""
        return {"type": self.type, "call_id": self.call_id, "reason": self.reason}


OcmEvent = OcmResponseDelta | OcmResponseDeltaFlush | OcmResponseCancel | OcmToolCancel
"""Any OCM §9 event."""


def _check_optional_str(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a string or None, not {type(value).__name__}")


def _shown(header: Header, preambles: bool) -> bool:
    """Whether the body of a message with ``header`` goes into ``response.delta`` s."""
    if header.author.role is not Role.ASSISTANT or not header_is_visible(header):
        return False
    if header.channel is None or header.channel == Channel.FINAL:
        return True
    return preambles and header.channel == Channel.COMMENTARY and header.intent == Intent.PREAMBLE


class OcmEventStream:
    """Turns a :class:`~openchatml.core.parse.StreamParser` 's events into OCM §9 events.

    ``message_id_prefix``: tag every delta and flush with ``message_id`` =
    ``f"{prefix}{index}"`` (``None``: untagged). ``preambles``: show ``commentary`` flagged
    ``intent=preamble`` as well as ``final``. See the module docstring for the rules.
    """

    __slots__ = (
        "_message_id",
        "_newlines",
        "_open",
        "_pending_flush",
        "cancelled",
        "message_id_prefix",
        "preambles",
    )

    def __init__(self, *, message_id_prefix: str | None = None, preambles: bool = False) -> None:
        self.message_id_prefix = message_id_prefix
        self.preambles = preambles
        self.cancelled = False
        self._open: int | None = None
        self._message_id: str | None = None
        self._newlines = 0
        self._pending_flush = False

    def feed(self, event: Event) -> list[OcmEvent]:
        """The §9 events ``event`` gives (often none)."""
        if self.cancelled:
            return []
        if isinstance(event, ContentDelta):
            if event.index != self._open or not event.text:
                return []
            return self._slices(event.text)
        if isinstance(event, MessageStarted):
            shown = _shown(event.header, self.preambles)
            self._open = event.index if shown else None
            prefix = self.message_id_prefix
            self._message_id = None if prefix is None else f"{prefix}{event.index}"
            self._newlines = 0
            self._pending_flush = False
        elif isinstance(event, MessageDone) and event.index == self._open:
            self._open = None
            if self._pending_flush:
                self._pending_flush = False
                return [OcmResponseDeltaFlush(self._message_id)]
        return []

    def feed_all(self, events: Iterable[Event]) -> list[OcmEvent]:
        """The §9 events of ``events``, in order."""
        out: list[OcmEvent] = []
        for event in events:
            out += self.feed(event)
        return out

    def cancel(self, reason: str | None = None) -> OcmResponseCancel:
        """Stop the stream: the ``response.cancel`` to send; later input gives no events."""
        self.cancelled = True
        message_id = self._message_id if self._open is not None else None
        self._open = None
        return OcmResponseCancel(reason, message_id)

    def _slices(self, text: str) -> list[OcmEvent]:
        """``text`` as deltas, each paragraph break followed by a flush."""
        out: list[OcmEvent] = []
        message_id = self._message_id
        start = 0
        newlines = self._newlines
        for i, char in enumerate(text):
            if char != "\n":
                newlines = 0
                continue
            newlines += 1
            if newlines == 2:
                out.append(OcmResponseDelta(text[start : i + 1], message_id))
                out.append(OcmResponseDeltaFlush(message_id))
                start = i + 1
        self._newlines = newlines
        if start < len(text):
            out.append(OcmResponseDelta(text[start:], message_id))
            self._pending_flush = True
        else:
            self._pending_flush = False
        return out


def ocm_events(
    events: Iterable[Event], *, message_id_prefix: str | None = None, preambles: bool = False
) -> list[OcmEvent]:
    """The §9 events of a whole stream of parser ``events`` (see :class:`OcmEventStream`)."""
    return OcmEventStream(message_id_prefix=message_id_prefix, preambles=preambles).feed_all(events)


_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    OcmResponseDelta.type: (frozenset({"delta"}), frozenset({"message_id"})),
    OcmResponseDeltaFlush.type: (frozenset(), frozenset({"message_id"})),
    OcmResponseCancel.type: (frozenset(), frozenset({"reason", "message_id"})),
    OcmToolCancel.type: (frozenset({"call_id", "reason"}), frozenset()),
}


def ocm_event_from_dict(value: Mapping[str, Any]) -> OcmEvent:
    """The §9 event a JSON object spells (what ``to_dict()`` gives).

    Raises :class:`~openchatml.core.interchange.errors.InterchangeError` for an unknown
    ``type``, a missing or unknown field, or a field that is not a string.
    """
    if not isinstance(value, Mapping):
        raise path_error("$", "an OCM event must be a JSON object")
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise path_error("$.type", f"unknown OCM event type {kind!r}")
    required, optional = _FIELDS[kind]
    for name, field in value.items():
        if name == "type":
            continue
        if name not in required and name not in optional:
            raise path_error(f"$.{name}", f"unknown field of {kind}")
        if not isinstance(field, str):
            raise path_error(f"$.{name}", "must be a string")
    for name in sorted(required):
        if name not in value:
            raise path_error(f"$.{name}", f"missing from {kind}")
    message_id = value.get("message_id")
    if kind == OcmResponseDelta.type:
        return OcmResponseDelta(value["delta"], message_id)
    if kind == OcmResponseDeltaFlush.type:
        return OcmResponseDeltaFlush(message_id)
    if kind == OcmResponseCancel.type:
        return OcmResponseCancel(value.get("reason"), message_id)
    if not value["call_id"]:
        raise path_error("$.call_id", "must not be empty")
    return OcmToolCancel(value["call_id"], value["reason"])
