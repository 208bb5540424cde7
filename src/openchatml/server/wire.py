"""The wire dialect of an answer, and events as the store holds them.

Every answer that carries the typed wire (a response, its events, items) is spelled in
the dialect :func:`request_dialect` picks from the request's headers (a WebSocket's
from its handshake): the ``OpenChatML-Wire`` header when it names one, else the
server's ``wire`` setting (see :func:`~..responses.wire.choose_dialect`).

The store keeps events in the Open Responses spelling; a :class:`StoredEvent` is one of
them read back, written out as it is in that dialect and respelled in the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..responses.errors import RequestError
from ..responses.wire import DEFAULT_DIALECT, WIRE_HEADER, WireDialect, choose_dialect, respell
from ..responses.wire.dialects import AUTO, parse_dialect
from ..responses.wire.event_base import StreamEvent

WIRE_HEADER_NAME: Final = "OpenChatML-Wire"
"""The header as the documentation and error messages spell it."""


def request_dialect(headers: Mapping[str, str], default: str) -> WireDialect:
    """The dialect to answer a request with ``headers`` (lower-case names) in, the server's
    setting being ``default``. Raises :class:`RequestError` (400, ``invalid_header``) when
    the ``OpenChatML-Wire`` header names no dialect (``auto`` is the server's setting)."""
    asked = headers.get(WIRE_HEADER)
    if asked is not None and asked.strip().lower() != AUTO and parse_dialect(asked) is None:
        raise RequestError(
            f"Invalid value for header '{WIRE_HEADER_NAME}': {asked[:64]!r}. "
            "Expected 'openai', 'openresponses' or 'auto'.",
            param=WIRE_HEADER_NAME,
            code="invalid_header",
        )
    return choose_dialect(headers, default)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A streaming event's JSON as the store holds it (Open Responses names)."""

    data: dict[str, Any]

    @property
    def sequence_number(self) -> int:
        """The event's number in its stream."""
        return int(self.data["sequence_number"])

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON in ``dialect``: as stored, or respelled."""
        return self.data if dialect is DEFAULT_DIALECT else respell(self.data, dialect)


ServedEvent = StreamEvent | StoredEvent
"""An event a client is sent: one of a run on this server, or one read from the store."""
