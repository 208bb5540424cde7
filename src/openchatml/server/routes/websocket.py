"""WebSocket mode of ``/responses``: ``response.create`` messages in, streaming events out.

One response is in flight at a time on a connection; ``store: false`` responses chain
through a cache of the connection (its :data:`WS_CACHED_RESPONSES` most recent
responses). The handshake is authenticated (counted as one request; refused, it is
answered with the error's HTTP status where the server allows); each ``response.create``
is counted against the key's rate limit (over it: an ``error`` event, the connection
stays open). The connection closing cancels its response in flight. Events are spelled
in the wire dialect the handshake's headers pick (:func:`~..wire.request_dialect`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from ...responses.errors import APIError, RequestError
from ...responses.request import parse_request
from ...responses.wire import InputItem, WireDialect
from ..dependencies import Service, callers_of
from ..errors import error_response
from ..request_body import decode_json, off_loop
from ..runs import Run
from ..service import ResponseService
from ..wire import ServedEvent, request_dialect

WS_CACHED_RESPONSES: Final = 8
"""How many ``store: false`` responses a WebSocket connection keeps to chain from (the
most recent ones; each holds its whole conversation)."""
FORBIDDEN_KEYS: Final = ("stream", "stream_options", "background")
"""The keys of a create body that WebSocket mode refuses."""

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


class EventSender:
    """What a WebSocket connection is sent: every event and error it gets is written here
    (an event as a text frame of its JSON in ``dialect``; an error as a binary frame of an
    ``error`` event with its HTTP status, and its ``Retry-After`` as a header)."""

    def __init__(self, socket: WebSocket, dialect: WireDialect) -> None:
        self.socket = socket
        self.dialect = dialect

    async def event(self, event: ServedEvent) -> None:
        """Send one streaming event."""
        await self.socket.send_text(orjson.dumps(event.to_json(self.dialect)).decode())

    async def error(self, error: APIError) -> None:
        """Send ``error`` as an ``error`` event."""
        payload = error.payload()
        if error.retry_after is not None:
            payload["headers"] = {"retry-after": str(error.retry_after)}
        await self.socket.send_bytes(
            orjson.dumps({"type": "error", "status": error.status, "error": payload})
        )


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
        """Answer messages until the client closes; then cancel what still runs."""
        try:
            while True:
                raw = await self.socket.receive_text()
                error = await self.receive(raw)
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
        bad = next((k for k in FORBIDDEN_KEYS if k in message), None)
        if bad is not None:
            return RequestError(f"'{bad}' must not be sent in WebSocket mode.", param=bad)
        if self.current is not None and not self.current.done():
            return RequestError(
                "A response is already in flight on this connection.", code="response_in_flight"
            )
        body = {k: v for k, v in message.items() if k != "type"}
        try:
            parsed = await off_loop(len(raw), parse_request, body, self.service.settings.limits)
            run = await self.service.start(parsed, self.owner, local_history=self.cache)
        except APIError as exc:
            return exc
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
