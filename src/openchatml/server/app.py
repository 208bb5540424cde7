"""The ASGI app: the Open Responses API over a :class:`~.service.ResponseService`.

Routes (each also without the ``/v1`` prefix): ``POST /v1/responses`` (JSON, or SSE
with ``stream: true``) and its WebSocket mode, ``POST /v1/responses/compact``,
``POST /v1/responses/input_tokens``, ``GET|DELETE /v1/responses/{id}`` (``?stream=true``
replays), ``POST /v1/responses/{id}/cancel``, ``GET /v1/responses/{id}/input_items``,
``GET /v1/models``, ``GET /health`` and ``GET /metrics``.

Errors are ``{"error": {message, type, param, code}}`` with the status of their type;
nothing unexpected escapes as anything but a JSON 500. SSE events are written one
chunk each (``event:`` = ``type``, one ``data:`` line), ending in ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import orjson
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..core.interchange import message_to_json
from ..core.render import CoTPolicy, select_messages
from ..responses import ids
from ..responses.errors import APIError, NotFoundError, PayloadTooLargeError, RequestError
from ..responses.input import COMPACTION_KIND, item_messages
from ..responses.limits import RequestLimits
from ..responses.request import ResponseRequest, parse_request
from ..responses.resource import Usage
from .auth import AuthGuard, KeyChecker, RateLimiter, client_address
from .metrics import CONTENT_TYPE, Metrics
from .service import ResponseService, Run, owner_of

log = logging.getLogger("openchatml.server")
T = TypeVar("T")

DONE: Final = b"data: [DONE]\n\n"
_WS_FORBIDDEN: Final = ("stream", "stream_options", "background")
CLIENT_CLOSED_REQUEST: Final = 499
"""The status logged (nginx's) for a JSON request whose client left before its answer."""
WS_CACHED_RESPONSES: Final = 8
"""How many ``store: false`` responses a WebSocket connection keeps to chain from (the
most recent ones; each holds its whole conversation)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits: body size in bytes, and requests per minute per key (``None``: none);
    the URL (path and query) and all header lines together, in bytes."""

    max_body_bytes: int = 32 * 1024 * 1024
    requests_per_minute: int | None = None
    auth_failures_per_minute: int | None = 10
    """Failed authentications a client address may make a minute (then 429 for it)."""
    max_url_bytes: int = 8 * 1024
    max_header_bytes: int = 32 * 1024

    def uvicorn_options(self) -> dict[str, Any]:
        """How uvicorn is to run the app: the h11 parser, which refuses (400) a request line
        and headers that outgrow a bound (the default parser buffers headers of any size),
        and WebSocket messages bounded as bodies are."""
        return {
            "http": "h11",
            "h11_max_incomplete_event_size": 2 * (self.max_url_bytes + self.max_header_bytes),
            "ws_max_size": self.max_body_bytes,
        }


def sse_chunk(event: dict[str, Any]) -> bytes:
    """One SSE event: ``event: TYPE``, ``data: JSON``, blank line."""
    kind: str = event["type"]
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def stream_failure(last: int, snapshot: dict[str, Any] | None, exc: Exception) -> bytes:
    """The end of a stream that failed after event ``last``: an ``error`` event, then
    ``response.failed`` with the response as it stood (``snapshot``) or its bare bones."""
    message = "The server had an error while streaming this response."
    error = {"type": "server_error", "code": "server_error", "message": message, "param": None}
    response: dict[str, Any] = {"object": "response"}
    if snapshot is not None:
        response.update(snapshot)
    response.update(status="failed", error={"code": "server_error", "message": message})
    ending = sse_chunk({"type": "error", "sequence_number": last + 1, "error": error})
    try:
        return ending + sse_chunk(
            {"type": "response.failed", "sequence_number": last + 2, "response": response}
        )
    except (TypeError, orjson.JSONEncodeError):  # the snapshot itself cannot be written
        bare = {k: response.get(k) for k in ("id", "object", "created_at", "model", "status", "error")}
        return ending + sse_chunk({"type": "response.failed", "sequence_number": last + 2, "response": bare})


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def error_response(error: APIError, headers: dict[str, str] | None = None) -> Response:
    """The JSON error envelope with the error's status, and ``Retry-After`` when the error
    says when to try again (429, 503)."""
    if error.retry_after is not None:
        headers = {**(headers or {}), "Retry-After": str(error.retry_after)}
    return _json(error.body(), error.status, headers)


def _routing_error(request: Request, exc: StarletteHTTPException) -> APIError:
    """An HTTP error raised by routing (unknown URL, wrong method …) as an API error."""
    where = f"{request.method} {request.url.path[:200]}"
    if exc.status_code == 404:
        error: APIError = NotFoundError(f"Invalid URL ({where}).", code="unknown_url")
    elif exc.status_code == 405:
        error = RequestError(f"Method not allowed ({where}).", code="method_not_allowed")
    else:
        error = RequestError(str(exc.detail), code="http_error")
    error.status = exc.status_code
    return error


class _Bounded:
    """ASGI middleware refusing a URL longer than ``max_url_bytes`` (414) or headers
    larger than ``max_header_bytes`` (431) before any route runs; a WebSocket handshake
    beyond them is closed (1009)."""

    def __init__(self, app: Any, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        url = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        head = sum(len(k) + len(v) + 4 for k, v in scope.get("headers") or ())
        error: APIError | None = None
        if url > self.limits.max_url_bytes:
            error = RequestError(
                f"The URL is longer than {self.limits.max_url_bytes} bytes.", code="url_too_long"
            )
            error.status = 414
        elif head > self.limits.max_header_bytes:
            error = RequestError(
                f"The request headers are larger than {self.limits.max_header_bytes} bytes.",
                code="headers_too_large",
            )
            error.status = 431
        if error is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1009, "reason": error.code})
        else:
            await error_response(error)(scope, receive, send)


class _Counted:
    """ASGI middleware counting every HTTP answer by route and status. An unexpected
    error is logged and answered 500 in the error shape (counted too); the connection
    stays usable. A write refused because the client has gone (``OSError`` from the
    server, as ASGI allows) is no error of ours: counted 499, logged at debug level."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = gone = False

        async def sending(message: Any) -> None:
            nonlocal status, started, gone
            if message["type"] == "http.response.start":
                status = int(message["status"])
                started = True
            try:
                await send(message)
            except OSError:
                gone = True
                raise

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if gone:
                status = CLIENT_CLOSED_REQUEST
                log.debug("client left %s %s before its answer", scope.get("method"), scope.get("path"))
                return
            log.exception("unexpected error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                status = 500
                answer = error_response(APIError("The server had an error while processing your request."))
                await answer(scope, receive, send)
        finally:
            path = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.requests.labels(path, str(status)).inc()


class EventStream(StreamingResponse):
    """A streamed body that notices a client leaving at once, whatever the ASGI version:
    it listens for ``http.disconnect`` while it writes (servers on ASGI 2.4 may drop
    writes to a closed connection silently), then closes its body iterator, whose cleanup
    cancels what the stream follows."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def client_left() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        writing = asyncio.ensure_future(self.stream_response(send))
        watching = asyncio.ensure_future(client_left())
        try:
            await asyncio.wait({writing, watching}, return_when=asyncio.FIRST_COMPLETED)
            if writing.done() and not writing.cancelled() and not isinstance(writing.exception(), OSError):
                writing.result()  # a failure while writing (other than the client gone) is raised
        finally:
            for task in (writing, watching):
                task.cancel()
            await asyncio.gather(writing, watching, return_exceptions=True)
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()


def create_app(
    service: ResponseService,
    *,
    keys: KeyChecker | None = None,
    limits: Limits | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> FastAPI:
    """The app serving ``service``; ``on_shutdown`` runs when the server stops."""
    keys = keys or KeyChecker()
    limits = limits or Limits()
    limiter = RateLimiter(limits.requests_per_minute)
    guard = AuthGuard(keys, limits.auth_failures_per_minute)
    metrics = service.metrics

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start_maintenance()
        yield
        await service.aclose()
        if on_shutdown is not None:
            await on_shutdown()

    app = FastAPI(title="openchatml", lifespan=lifespan, docs_url="/docs", redoc_url=None)
    app.state.service = service
    app.state.limits = limits

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> Response:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return error_response(_routing_error(request, exc), dict(exc.headers or {}))

    app.add_middleware(_Bounded, limits=limits)
    app.add_middleware(_Counted, metrics=metrics)

    def caller(request: Request | WebSocket) -> str:
        """The owner of the request's key, one request counted against its rate limit.
        Raises 401 for a missing or wrong key, 429 over the key's rate limit or while the
        client's address has failed authentication too often."""
        host = request.client.host if request.client is not None else None
        key = guard.check(request.headers.get("authorization"), client_address(host))
        owner = owner_of(key)
        limiter.check(owner)
        return owner

    request_limits = service.settings.limits

    async def read_body(request: Request) -> bytes:
        """The body, refused (413) past ``max_body_bytes`` before it is all read."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise PayloadTooLargeError(f"The request body is larger than {limits.max_body_bytes} bytes.")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.max_body_bytes:
                raise PayloadTooLargeError(f"The request body is larger than {limits.max_body_bytes} bytes.")
            chunks.append(chunk)
        return b"".join(chunks)

    async def read_request(
        request: Request, *, drop: tuple[str, ...] = (), only: frozenset[str] | None = None
    ) -> ResponseRequest:
        """The checked create-response body (decoded and checked off the event loop when
        large); ``drop``: keys ignored, ``only``: the keys allowed."""
        raw = await read_body(request)
        return await off_loop(len(raw), request_of, raw, request_limits, drop, only)

    def follow_sse(events: AsyncIterator[dict[str, Any]], cancel: Run | None = None) -> StreamingResponse:
        """Stream ``events``; a client that leaves early cancels ``cancel`` (if given)."""

        async def body() -> AsyncIterator[bytes]:
            finished = False
            last = -1
            try:
                async for event in events:
                    chunk = sse_chunk(event)
                    last = int(event.get("sequence_number", last))
                    yield chunk
                finished = True
                yield DONE
            except Exception as exc:  # never a cut body: the stream ends as a failed response does
                log.exception("stream failed after event %d", last)
                metrics.stream_failures.inc()
                yield stream_failure(last, cancel.snapshot if cancel is not None else None, exc)
                yield DONE
            finally:
                if not finished and cancel is not None and cancel.task is not None and not cancel.done:
                    cancel.task.cancel()

        return EventStream(
            body(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # --- responses --------------------------------------------------------------------

    @app.post("/v1/responses")
    @app.post("/responses", include_in_schema=False)
    async def create_response(request: Request) -> Response:
        owner = caller(request)
        parsed = await read_request(request)
        run = await service.start(parsed, owner)
        if parsed.stream:
            return follow_sse(run.follow(), None if parsed.background else run)
        if parsed.background:
            snapshot = run.snapshot
            assert snapshot is not None
            return _json(
                {**snapshot, "status": "queued"} if snapshot["status"] == "in_progress" else snapshot
            )
        try:
            snapshot, left = await _wait_unless_client_leaves(request, service, run)
        except asyncio.CancelledError:
            if run.task is not None:
                run.task.cancel()
            raise
        return _json(snapshot, CLIENT_CLOSED_REQUEST if left else 200)

    @app.get("/v1/responses/{response_id}")
    @app.get("/responses/{response_id}", include_in_schema=False)
    async def get_response(request: Request, response_id: str) -> Response:
        owner = caller(request)
        if _bool_param(request, "stream"):
            after = _int_param(request, "starting_after", None, low=-1)
            return follow_sse(await service.replay(response_id, owner, after))
        return _json(await service.retrieve(response_id, owner))

    @app.delete("/v1/responses/{response_id}")
    @app.delete("/responses/{response_id}", include_in_schema=False)
    async def delete_response(request: Request, response_id: str) -> Response:
        return _json(await service.delete(response_id, caller(request)))

    @app.post("/v1/responses/{response_id}/cancel")
    @app.post("/responses/{response_id}/cancel", include_in_schema=False)
    async def cancel_response(request: Request, response_id: str) -> Response:
        return _json(await service.cancel(response_id, caller(request)))

    @app.get("/v1/responses/{response_id}/input_items")
    @app.get("/responses/{response_id}/input_items", include_in_schema=False)
    async def list_input_items(request: Request, response_id: str) -> Response:
        owner = caller(request)
        limit = _int_param(request, "limit", 20, low=1, high=100)
        assert limit is not None
        order = request.query_params.get("order", "desc")
        if order not in ("asc", "desc"):
            raise RequestError("'order' must be 'asc' or 'desc'.", param="order")
        after = request.query_params.get("after")
        if after is not None and len(after) > ids.MAX_ID_LENGTH:
            raise RequestError(f"'after' is longer than {ids.MAX_ID_LENGTH} characters.", param="after")
        page = (
            await service.store.input_items(response_id, owner, after=after, limit=limit, order=order)
            if service.store is not None
            else None
        )
        if page is None:
            raise NotFoundError(f"Response with id {response_id!r} not found.", param="response_id")
        return _json(page.to_json())

    @app.post("/v1/responses/input_tokens")
    @app.post("/responses/input_tokens", include_in_schema=False)
    async def count_input_tokens(request: Request) -> Response:
        owner = caller(request)
        parsed = await read_request(request, drop=("stream", "background", "store"))
        service.check_model(parsed.model)
        items = await _items_for(service, parsed, owner)
        count = await asyncio.to_thread(service.prompt_length, parsed, items)
        return _json({"object": "response.input_tokens", "input_tokens": count})

    @app.post("/v1/responses/compact")
    @app.post("/responses/compact", include_in_schema=False)
    async def compact(request: Request) -> Response:
        owner = caller(request)
        parsed = await read_request(request, only=COMPACT_KEYS)
        if parsed.model is None:
            raise RequestError("'model' is required.", param="model", code="missing_required_parameter")
        service.check_model(parsed.model)
        sealer = service.sealer
        if sealer is None:
            raise RequestError("Compaction needs a server key.", code="unsupported")
        items = await _items_for(service, parsed, owner)

        def compacted() -> tuple[str, int]:
            messages = select_messages(item_messages(items, sealer=sealer), CoTPolicy.DROP_FINISHED)
            sealed = sealer.seal(COMPACTION_KIND, {"messages": [message_to_json(m) for m in messages]})
            return sealed, service.prompt_length(parsed, items)

        sealed, count = await asyncio.to_thread(compacted)
        return _json(
            {
                "id": ids.response_id(),
                "object": "response.compaction",
                "created_at": int(time.time()),
                "output": [{"id": ids.compaction_id(), "type": "compaction", "encrypted_content": sealed}],
                "usage": Usage(input_tokens=count).to_json(),
            }
        )

    @app.websocket("/v1/responses")
    @app.websocket("/responses")
    async def websocket_mode(socket: WebSocket) -> None:
        await _websocket_session(service, socket, caller, limiter.check)

    # --- the rest ---------------------------------------------------------------------

    @app.get("/v1/models")
    @app.get("/models", include_in_schema=False)
    async def list_models(request: Request) -> Response:
        caller(request)
        info = service.engine.info
        model = {"id": info.id, "object": "model", "created": 0, "owned_by": info.owned_by}
        return _json({"object": "list", "data": [model]})

    @app.get("/v1/models/{model_id:path}")
    async def get_model(request: Request, model_id: str) -> Response:
        caller(request)
        served = service.check_model(model_id)
        return _json(
            {"id": served, "object": "model", "created": 0, "owned_by": service.engine.info.owned_by}
        )

    @app.get("/health")
    async def health() -> Response:
        info = service.engine.info
        admission = service.admission
        return _json(
            {
                "status": "ok",
                "model": info.id,
                "engine": info.engine,
                "running": admission.running,
                "queued": admission.queued,
            }
        )

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return app


_INLINE_BYTES: Final = 64 * 1024
"""Bodies up to this size are decoded and checked on the event loop (a thread hop costs
more than the work); larger ones in a worker thread."""
COMPACT_KEYS: Final = frozenset(
    {"model", "input", "previous_response_id", "instructions", "prompt_cache_key"}
)
_MAX_QUERY_INT: Final = 2**53
"""Integers in query strings stay within what every JSON client and SQL integer holds."""


async def off_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``: on the event loop for inputs of ``size`` up to
    :data:`_INLINE_BYTES`, in a worker thread for larger ones."""
    if size <= _INLINE_BYTES:
        return work(*args)
    return await asyncio.to_thread(work, *args)


def request_of(
    raw: bytes, limits: RequestLimits, drop: tuple[str, ...] = (), only: frozenset[str] | None = None
) -> ResponseRequest:
    """A create-response body's bytes → the checked request (``drop``: keys ignored;
    ``only``: the keys allowed). Raises :class:`RequestError` (``invalid_json``,
    ``unknown_parameter``, or any of :func:`parse_request`'s)."""
    body = decode_json(raw)
    if isinstance(body, dict):
        if drop:
            body = {k: v for k, v in body.items() if k not in drop}
        bad = next((k for k in body if only is not None and k not in only), None)
        if bad is not None:
            raise RequestError(f"Unknown parameter: '{bad}'.", param=bad, code="unknown_parameter")
    return parse_request(body, limits)


def decode_json(raw: bytes | str) -> Any:
    """JSON text → data; :class:`RequestError` (``invalid_json``) for anything else
    (including nesting past the decoder's own limit)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestError(
            f"We could not parse the JSON body of your request ({exc}).", code="invalid_json"
        ) from None


def _int_param(
    request: Request, name: str, default: int | None, *, low: int = 0, high: int = _MAX_QUERY_INT
) -> int | None:
    """The integer query parameter ``name`` (``default`` when absent), between ``low``
    and ``high``; :class:`RequestError` otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw) if len(raw) <= 20 else None
    except ValueError:
        value = None
    if value is None:
        raise RequestError(f"'{name}' must be an integer, got {raw[:40]!r}.", param=name)
    if not low <= value <= high:
        raise RequestError(f"'{name}' must be between {low} and {high}, got {value}.", param=name)
    return value


def _bool_param(request: Request, name: str) -> bool:
    """The boolean query parameter ``name`` (``true``/``false``, ``1``/``0``; absent: false)."""
    raw = request.query_params.get(name)
    if raw is None:
        return False
    value = {"true": True, "1": True, "false": False, "0": False}.get(raw.lower())
    if value is None:
        raise RequestError(f"'{name}' must be 'true' or 'false', got {raw[:40]!r}.", param=name)
    return value


async def _items_for(service: ResponseService, request: ResponseRequest, owner: str) -> list[dict[str, Any]]:
    history, new_input = await service.items(request, owner)
    return history + new_input


async def _wait_unless_client_leaves(
    request: Request, service: ResponseService, run: Run
) -> tuple[dict[str, Any], bool]:
    """``run``'s final snapshot, and whether the client left first: then (``http.disconnect``
    on the request's channel, its body already read) the run is cancelled, and its
    cancelled snapshot given once it has ended."""

    async def client_left() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    waiting = asyncio.ensure_future(service.wait(run))
    watching = asyncio.ensure_future(client_left())
    try:
        await asyncio.wait({waiting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not waiting.done():
            waiting.cancel()
        await asyncio.gather(waiting, watching, return_exceptions=True)
    if waiting.done() and not waiting.cancelled():
        return waiting.result(), False
    left = watching.done() and not watching.cancelled() and watching.exception() is None
    if left and run.task is not None and not run.done:  # an ended run is saving: let it
        run.task.cancel()
    return await service.wait(run), left


async def _websocket_session(
    service: ResponseService,
    socket: WebSocket,
    caller: Callable[[Request | WebSocket], str],
    count: Callable[[str], None],
) -> None:
    """One WebSocket connection: ``response.create`` messages in, streaming events out,
    one response in flight at a time; ``store: false`` responses chain through a cache
    of this connection (its :data:`WS_CACHED_RESPONSES` most recent responses).

    ``caller`` authenticates the handshake (counted as one request; refused, the handshake
    is answered with the error's HTTP status where the server allows); ``count(owner)``
    counts each ``response.create`` against the key's rate limit (raising 429, answered
    as an ``error`` event; the connection stays open). The connection closing cancels
    its response in flight."""
    try:
        owner = caller(socket)
    except APIError as exc:  # refused as HTTP (401 / 429 with Retry-After) where the server can
        if "websocket.http.response" in socket.scope.get("extensions", {}):
            await socket.send_denial_response(error_response(exc))
        else:  # 1013: try again later
            await socket.close(code=1013 if exc.retry_after is not None else 1008, reason=exc.message[:120])
        return
    await socket.accept()
    local: dict[str, list[dict[str, Any]]] = {}
    mine: list[Run] = []
    current: asyncio.Task[None] | None = None

    async def send_error(error: APIError) -> None:
        payload = error.payload()
        if error.retry_after is not None:
            payload["headers"] = {"retry-after": str(error.retry_after)}
        await socket.send_bytes(orjson.dumps({"type": "error", "status": error.status, "error": payload}))

    async def play(run: Run, items: list[dict[str, Any]]) -> None:
        async for event in run.follow():
            await socket.send_text(orjson.dumps(event).decode())
        snapshot = run.snapshot
        if snapshot is not None:
            local[run.response_id] = items + list(snapshot.get("output") or [])
            while len(local) > WS_CACHED_RESPONSES:
                del local[next(iter(local))]

    try:
        while True:
            raw = await socket.receive_text()
            try:
                message = await off_loop(len(raw), decode_json, raw)
            except APIError:
                await send_error(RequestError("The message is not valid JSON.", code="invalid_json"))
                continue
            if not isinstance(message, dict) or message.get("type") != "response.create":
                await send_error(RequestError("Expected a 'response.create' message.", param="type"))
                continue
            try:
                count(owner)
            except APIError as exc:
                await send_error(exc)
                continue
            bad = next((k for k in _WS_FORBIDDEN if k in message), None)
            if bad is not None:
                await send_error(RequestError(f"'{bad}' must not be sent in WebSocket mode.", param=bad))
                continue
            if current is not None and not current.done():
                await send_error(
                    RequestError(
                        "A response is already in flight on this connection.", code="response_in_flight"
                    )
                )
                continue
            body = {k: v for k, v in message.items() if k != "type"}
            try:
                parsed = await off_loop(len(raw), parse_request, body, service.settings.limits)
                history = local.get(parsed.previous_response_id or "", [])
                run = await service.start(parsed, owner, local_history=local)
            except APIError as exc:
                await send_error(exc)
                continue
            mine[:] = [r for r in mine if not r.done] + [run]
            current = asyncio.create_task(play(run, history + list(parsed.input)))
    except WebSocketDisconnect:
        pass
    finally:
        if current is not None and not current.done():
            current.cancel()
            with contextlib.suppress(BaseException):
                await current
        for run in mine:
            if not run.done and run.task is not None:
                run.task.cancel()
