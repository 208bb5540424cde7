"""What every hosted tool speaks: the :class:`Tool` protocol, a :class:`HostedCall` in and a
:class:`ToolResult` out.

A tool serves one namespace of recipients (OCM §8): ``python`` (the namespace is the
tool), ``browser`` (``browser.search``, ``browser.open``, ``browser.find``), or an MCP
server registered under its label (``label.tool``). Its :attr:`Tool.namespace` is the
:class:`~openchatml.core.content.ToolNamespaceConfig` the prompt shows; the built-ins
reuse the ones gpt-oss was trained with (``ToolNamespaceConfig.python()``,
``ToolNamespaceConfig.browser()``).

A call carries the body of the model's call message only — never the reasoning around it
(OCM §8.3) — with its ``call_id``, the channel it came from and its ``deadline_ms``. A
result carries the text the model reads back, an OCM error code when it failed, its
provenance (OCM §11) and structured outputs a caller turns into API items (logs, images,
files, browsing actions).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from ..core.content import ToolNamespaceConfig
from ..core.errors import CallSchemaError, OCMError
from ..core.messages import Message

DEADLINE_KEY = "deadline_ms"
"""The key of a call's JSON body that sets its deadline (OCM §8.2)."""


def deadline_from_body(body: str) -> int | None:
    """The ``deadline_ms`` a JSON object body sets: a positive integer, else ``None``."""
    if DEADLINE_KEY not in body:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    deadline = value.get(DEADLINE_KEY)
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
        return deadline
    return None


def new_call_id() -> str:
    """A fresh ``call_id`` for a call whose message carries none (Harmony's never do)."""
    return f"call_{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class HostedCall:
    """One call of a hosted tool.

    ``recipient`` is the ``to=`` destination (``python``, ``browser.search``,
    ``label.tool``); ``body`` the call message's body text only; ``channel`` the channel
    it was made on (the reply goes back on it); ``content_type`` the body's declared type
    (``json``, ``code`` …); ``deadline_ms`` the call's own deadline, ``None`` for the
    router's default.
    """

    recipient: str
    call_id: str
    body: str = ""
    channel: str | None = "commentary"
    content_type: str | None = None
    deadline_ms: int | None = None

    @classmethod
    def from_message(cls, message: Message, *, call_id: str | None = None) -> HostedCall:
        """The call an assistant message addressed to a tool makes.

        The ``call_id`` is the message's, else ``call_id``, else a fresh one; the deadline
        is the body's ``deadline_ms``. Raises :class:`CallSchemaError` when ``message`` is
        not a tool call.
        """
        if not message.is_tool_call or message.recipient is None:
            raise CallSchemaError("not a tool call: an assistant message with a recipient is needed")
        body = message.text
        return cls(
            recipient=message.recipient,
            call_id=message.call_id or call_id or new_call_id(),
            body=body,
            channel=message.channel,
            content_type=message.content_type,
            deadline_ms=deadline_from_body(body),
        )

    @property
    def namespace(self) -> str:
        """The namespace the recipient names: ``browser`` for ``browser.search``."""
        return self.recipient.partition(".")[0]

    @property
    def tool_name(self) -> str:
        """The tool within the namespace: ``search`` for ``browser.search``, ``""`` for ``python``."""
        return self.recipient.partition(".")[2]

    def arguments(self) -> dict[str, Any]:
        """The body as a JSON object (``{}`` when empty). Raises :class:`CallSchemaError`."""
        if not self.body.strip():
            return {}
        try:
            value = json.loads(self.body)
        except ValueError as exc:
            raise CallSchemaError(f"arguments to {self.recipient} are not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise CallSchemaError(f"arguments to {self.recipient} must be a JSON object")
        return value


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """Why a call failed: an OCM code (``E-TOOL-TIMEOUT`` …) and a message for the model."""

    code: str
    message: str

    @classmethod
    def from_error(cls, error: OCMError) -> ToolFailure:
        """The failure an OCM error describes."""
        return cls(error.code, error.message)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a result came from (OCM §11): a source (URL, file, server), when, a checksum."""

    source: str | None = None
    timestamp: str | None = None
    checksum: str | None = None

    @classmethod
    def now(cls, source: str | None = None, *, checksum: str | None = None) -> Provenance:
        """A provenance stamped with the current UTC time (ISO 8601)."""
        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return cls(source, stamp, checksum)


@dataclass(frozen=True, slots=True)
class LogOutput:
    """Text a tool printed (a code interpreter's ``logs`` output)."""

    logs: str


@dataclass(frozen=True, slots=True)
class ImageOutput:
    """An image a tool made, by URL (``data:`` URLs included)."""

    url: str


@dataclass(frozen=True, slots=True)
class FileOutput:
    """A file a tool wrote: its path in the tool's file space, type and size if known."""

    path: str
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class SearchAction:
    """A web search the tool ran, and the sources it found (URLs)."""

    query: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OpenPageAction:
    """A page the tool opened."""

    url: str


@dataclass(frozen=True, slots=True)
class FindInPageAction:
    """A pattern the tool searched for in an open page."""

    url: str
    pattern: str


ToolOutput = LogOutput | ImageOutput | FileOutput | SearchAction | OpenPageAction | FindInPageAction
"""A structured output of a call, besides its text."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call gives back.

    ``content`` is the text the model reads; ``error`` is set when the call failed (then
    ``content`` may still hold partial output); ``provenance`` says where the content
    came from; ``outputs`` are structured outputs for the API items.
    """

    content: str = ""
    error: ToolFailure | None = None
    provenance: Provenance | None = None
    outputs: tuple[ToolOutput, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.error is None

    @classmethod
    def failed(cls, error: OCMError, *, content: str = "", **fields: Any) -> ToolResult:
        """A failed result for ``error`` (its code and message), with any other fields."""
        return cls(content=content, error=ToolFailure.from_error(error), **fields)


@runtime_checkable
class Tool(Protocol):
    """A hosted tool: one namespace of recipients, called asynchronously.

    :meth:`call` answers a call; expected failures (bad arguments, a page not found) come
    back as a failed :class:`ToolResult`, not as exceptions. When a call is cancelled or
    runs past its deadline, the router cancels the task running :meth:`call` and then
    calls :meth:`cancel` with the same ``call_id``, so the tool can release what lives
    outside that task (a kernel to interrupt, a request to abort); both may happen after
    the call finished, and :meth:`cancel` must be idempotent.
    """

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The namespace the tool serves, as the prompt shows it (its name is the recipient's)."""
        ...

    async def call(self, request: HostedCall) -> ToolResult:
        """The result of ``request``."""
        ...

    async def cancel(self, call_id: str, reason: str) -> None:
        """Stop the work of call ``call_id`` still running outside its task (OCM ``tool.cancel``)."""
        ...
