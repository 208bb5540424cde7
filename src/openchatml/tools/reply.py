"""A tool's result as the body of its reply message, in either profile.

Under the OCM profile a reply body is the §8.2 envelope
``{"ok": …, "content": …, "error": …, "provenance": …}`` (:func:`reply_envelope`, read
back by :func:`read_reply_envelope`); under Harmony it is the plain text gpt-oss was
trained on, with the error's code and message after any content (:func:`plain_reply`).
:func:`reply_message` builds the whole reply: a ``tool`` message named after the call's
recipient, echoing its ``call_id``, on the channel the call was made on.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import BodyConstraintError
from ..core.messages import Message
from ..core.render import Profile
from .base import HostedCall, Provenance, ToolFailure, ToolResult
from .errors import ToolFailedError

_PROVENANCE_FIELDS = ("source", "timestamp", "checksum")


def reply_envelope(result: ToolResult) -> str:
    """The OCM §8.2 reply envelope of ``result`` as compact JSON.

    ``error`` is ``null`` or ``{"code", "message"}``; ``provenance`` is ``null`` or holds
    the fields it has (``source``, ``timestamp``, ``checksum``).
    """
    error = None if result.error is None else {"code": result.error.code, "message": result.error.message}
    provenance = None
    if result.provenance is not None:
        provenance = {
            name: value
            for name in _PROVENANCE_FIELDS
            if (value := getattr(result.provenance, name)) is not None
        }
    envelope = {"ok": result.ok, "content": result.content, "error": error, "provenance": provenance}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def read_reply_envelope(text: str) -> ToolResult:
    """The result an OCM §8.2 reply envelope describes.

    Content that is not text (the spec's example holds an object) comes back as compact
    JSON text; a failure without an error object gets ``E-TOOL-FAILED``. Raises
    :class:`BodyConstraintError` when ``text`` is not an envelope.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BodyConstraintError(f"a reply envelope must be JSON: {exc}") from None
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise BodyConstraintError('a reply envelope is a JSON object with a boolean "ok"')
    content = value.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    error = None if value["ok"] else _failure(value.get("error"))
    return ToolResult(content=content, error=error, provenance=_provenance(value.get("provenance")))


def _failure(error: Any) -> ToolFailure:
    """The failure an envelope's ``error`` field names (an object, a text, or nothing)."""
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        return ToolFailure(
            code if isinstance(code, str) and code else ToolFailedError.code,
            message if isinstance(message, str) else "",
        )
    return ToolFailure(ToolFailedError.code, error if isinstance(error, str) else "")


def _provenance(value: Any) -> Provenance | None:
    """The provenance an envelope's ``provenance`` object holds (text fields only)."""
    if not isinstance(value, dict):
        return None
    fields = {name: value.get(name) for name in _PROVENANCE_FIELDS}
    return Provenance(**{name: item for name, item in fields.items() if isinstance(item, str)})


def plain_reply(result: ToolResult) -> str:
    """The Harmony reply body: the content, then ``CODE: message`` if the call failed."""
    if result.error is None:
        return result.content
    line = f"{result.error.code}: {result.error.message}"
    return f"{result.content}\n{line}" if result.content else line


def reply_text(result: ToolResult, profile: Profile) -> str:
    """The reply body for ``profile``: the envelope under OCM, plain text under Harmony."""
    return reply_envelope(result) if profile is Profile.OCM else plain_reply(result)


def reply_message(call: HostedCall, result: ToolResult, profile: Profile = Profile.HARMONY) -> Message:
    """The ``tool`` message answering ``call`` with ``result``: named after the recipient,
    echoing the ``call_id``, addressed to the assistant on the call's channel."""
    return Message.tool_result(
        call.recipient,
        reply_text(result, profile),
        call_id=call.call_id,
        channel=call.channel or "commentary",
    )
