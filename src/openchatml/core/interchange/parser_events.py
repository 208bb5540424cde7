"""The stream parser's events (and error positions) as JSON objects."""

from __future__ import annotations

from typing import Any, assert_never

from ..errors import Position
from ..events import ContentDelta, DocumentHeader, Event, Header, MessageDone, MessageStarted, Repaired
from ..messages import Message
from .conversations import header_to_json
from .messages import message_to_json


def position_to_json(position: Position) -> dict[str, Any]:
    """``{"offset", "unit", "line"?, "column"?}``."""
    out: dict[str, Any] = {"offset": position.offset, "unit": position.unit}
    if position.line is not None:
        out["line"] = position.line
        out["column"] = position.column
    return out


def _header_to_json(header: Header) -> dict[str, Any]:
    shell = Message(
        header.author,
        (),
        header.channel,
        header.recipient,
        header.content_type,
        header.constrained,
        header.call_id,
        header.intent,
    )
    return message_to_json(shell)


def event_to_json(event: Event) -> dict[str, Any]:
    """One parser event as a JSON object with a ``type``: ``document_header``,
    ``message_started``, ``content_delta``, ``message_done`` or ``repaired``."""
    if isinstance(event, ContentDelta):
        return {"type": "content_delta", "index": event.index, "channel": event.channel, "text": event.text}
    if isinstance(event, MessageStarted):
        return {"type": "message_started", "index": event.index, "header": _header_to_json(event.header)}
    if isinstance(event, MessageDone):
        terminator = None if event.terminator is None else event.terminator.value
        return {
            "type": "message_done",
            "index": event.index,
            "message": message_to_json(event.message),
            "terminator": terminator,
        }
    if isinstance(event, DocumentHeader):
        return {"type": "document_header", "header": header_to_json(event.header)}
    if not isinstance(event, Repaired):
        assert_never(event)
    out: dict[str, Any] = {
        "type": "repaired",
        "kind": event.kind.value,
        "code": event.code,
        "detail": event.detail,
    }
    if event.position is not None:
        out["position"] = position_to_json(event.position)
    return out
