"""WebSocket mode of ``/responses``: ``response.create`` messages in, streaming events out.

One response is in flight at a time on a connection; ``store: false`` responses chain
through a cache of the connection (its :data:`WS_CACHED_RESPONSES` most recent
responses). The handshake is authenticated (counted as one request; refused, it is
answered with the error's HTTP status where the server allows); each ``response.create``
is counted against the key's rate limit (over it: an ``error`` event, the connection
stays open). The connection closing cancels its response in flight. Events are spelled
in the wire dialect the handshake's headers pick (:func:`~..wire.request_dialect`). A
``response.create`` giving parameters that change nothing is answered first with an
``openchatml:ignored_parameters`` event naming them (:mod:`..ignored_parameters`).

A ``response.create`` is the create body of ``POST /responses`` with the mode's own
fields: ``generate: false`` asks for a warm-up (the prompt is built and checked, the
response completes with no output, and later turns chain from its id); the transport
fields of HTTP are accepted only where they ask for what the mode does anyway
(``stream: true``, ``background: false``: :data:`TRANSPORT_FIELDS`), as Codex sends
``stream: true``. Every frame the server sends is a text frame of JSON: each event, and
each error as an ``error`` event with its HTTP ``status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from ...responses.errors import APIError, RequestError
from ...responses.request import parse_request
from ...responses.wire import InputItem, WireDialect
from ...responses.wire.validation import type_name
from ..dependencies import Service, callers_of
from ..errors import error_response
from ..ignored_parameters import ignored_event
from ..request_body import decode_json, off_loop
from ..runs import Run
from ..service import ResponseService
from ..wire import ServedEvent, request_dialect

WS_CACHED_RESPONSES: Final = 8
"""How many ``store: false`` responses a WebSocket connection keeps to chain from (the
most recent ones; each holds its whole conversation)."""
TRANSPORT_FIELDS: Final[Mapping[str, tuple[bool, str]]] = {
    "stream": (True, "WebSocket mode streams every response: 'stream' may only be true."),
    "background": (False, "WebSocket mode has no background responses: 'background' may only be false."),
}
"""The HTTP transport fields a ``response.create`` may give: the one value each may
take (what the mode does anyway), and the error's message for any other."""

router = APIRouter()


@router.websocket("/responses")
async def websocket_mode(socket: WebSocket, service: Service) -> None:
    """A WebSocket connection in WebSocket mode, from handshake to close."""
    callers = callers_of(socket)
    try:
        owner = callers.owner(socket)
        dialect = request_dialect(socket.headers, service.settings.wire)
    except APIError as exc:  # refused as HTTP (400 / 401 / 429 with Retry-After) where the server can
        if "websocket.http.response" in socket.scope.get("extensions", {}):
            await socket.send_denial_response(error_response(exc))
        else:  # 1013: try again later
            await socket.close(code=1013 if exc.retry_after is not None else 1008, reason=exc.message[:120])
        return
    await socket.accept()
    await WebSocketConnection(service, socket, owner, callers.count, dialect).serve()


def mode_fields(body: dict[str, Any]) -> bool:
    """Take the fields of WebSocket mode out of a ``response.create`` body: the transport
    fields of :data:`TRANSPORT_FIELDS` and ``generate``. Gives ``generate`` (``True``
    when absent); raises :class:`RequestError` naming a field given a value it may not take."""
    for key, (allowed, refusal) in TRANSPORT_FIELDS.items():
        value = body.pop(key, None)
        if value is not None and value is not allowed:
            raise RequestError(refusal, param=key)
    generate = body.pop("generate", None)
    if generate is None:
        return True
    if not isinstance(generate, bool):
        raise RequestError(
            f"Invalid type for 'generate': expected a boolean, but got {type_name(generate)}.",
            param="generate",
            code="invalid_type",
        )
    return generate


class EventSender:
    """What a WebSocket connection is sent: every event and error it gets is written here,
    each as a text frame of JSON (an event in ``dialect``; an error as an ``error`` event
    with its HTTP ``status``, and its ``Retry-After`` in ``headers``, as OpenAI's API
    sends them, and in ``error.headers``)."""

    def __init__(self, socket: WebSocket, dialect: WireDialect) -> None:
        self.socket = socket
        self.dialect = dialect

    async def event(self, event: ServedEvent) -> None:
        """Send one streaming event."""
        await self.socket.send_text(orjson.dumps(event.to_json(self.dialect)).decode())

    async def error(self, error: APIError) -> None:
        """Send ``error`` as an ``error`` event."""
        payload = error.payload()
        message: dict[str, Any] = {"type": "error", "status": error.status, "error": payload}
        if error.retry_after is not None:
            message["headers"] = payload["headers"] = {"retry-after": str(error.retry_after)}
        await self.socket.send_text(orjson.dumps(message).decode())


class WebSocketConnection:
    """One accepted connection of ``owner``; ``count(owner)`` counts each
    ``response.create`` against the key's rate limit (raising 429); its events are sent in
    ``dialect``."""

    def __init__(
        self,
        service: ResponseService,
        socket: WebSocket,
        owner: str,
        count: Callable[[str], None],
        dialect: WireDialect,
    ) -> None:
        self.service = service
        self.socket = socket
        self.owner = owner
        self.count = count
        self.send = EventSender(socket, dialect)
        self.cache: dict[str, list[InputItem]] = {}
        """The conversations of the connection's latest responses, by response id."""
        self.runs: list[Run] = []
        self.current: asyncio.Task[None] | None = None
        """What streams the response in flight."""

    async def serve(self) -> None:
        """Answer messages until the client closes; then cancel what still runs. A binary
        frame is answered with an error (messages are JSON text)."""
        try:
            while True:
                frame = await self.socket.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                text = frame.get("text")
                if text is None:
                    error: APIError | None = RequestError(
                        "Send each message as a text frame of JSON, not a binary frame.",
                        code="invalid_frame",
                    )
                else:
                    error = await self.receive(text)
                if error is not None:
                    await self.send.error(error)
        except WebSocketDisconnect:
            pass
        finally:
            await self.close()

    async def receive(self, raw: str) -> APIError | None:
        """Start the response one message asks for; the error to answer it with instead."""
        try:
            message = await off_loop(len(raw), decode_json, raw)
        except APIError:
            return RequestError("The message is not valid JSON.", code="invalid_json")
        if not isinstance(message, dict) or message.get("type") != "response.create":
            return RequestError("Expected a 'response.create' message.", param="type")
        try:
            self.count(self.owner)
        except APIError as exc:
            return exc
        body = {k: v for k, v in message.items() if k != "type"}
        try:
            generate = mode_fields(body)
        except APIError as exc:
            return exc
        if self.current is not None and not self.current.done():
            return RequestError(
                "A response is already in flight on this connection.", code="response_in_flight"
            )
        try:
            parsed = await off_loop(len(raw), parse_request, body, self.service.settings.limits)
            if not generate:
                parsed = dataclasses.replace(parsed, generate=False)
            run = await self.service.start(parsed, self.owner, local_history=self.cache)
        except APIError as exc:
            return exc
        if parsed.ignored:  # no header left to name them in: an event before the response's
            await self.socket.send_text(orjson.dumps(ignored_event(parsed.ignored)).decode())
        self.runs[:] = [r for r in self.runs if not r.done] + [run]
        self.current = asyncio.create_task(self.play(run))
        return None

    async def play(self, run: Run) -> None:
        """Send ``run``'s events; then cache its conversation (what it continued and its
        output)."""
        async for event in run.follow():
            await self.send.event(event)
        if run.builder is not None:
            self.cache[run.response_id] = [*run.items, *run.builder.state.output]
            while len(self.cache) > WS_CACHED_RESPONSES:
                del self.cache[next(iter(self.cache))]

    async def close(self) -> None:
        """Stop streaming, and cancel the connection's responses still running."""
        if self.current is not None and not self.current.done():
            self.current.cancel()
            with contextlib.suppress(BaseException):
                await self.current
        for run in self.runs:
            if not run.done and run.task is not None:
                run.task.cancel()
