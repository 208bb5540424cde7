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
from typing import Any, Final

import orjson
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import Response, StreamingResponse

from ..interchange import message_to_json
from ..render import CoTPolicy, select_messages
from ..responses import ids
from ..responses.errors import APIError, NotFoundError, PayloadTooLargeError, RateLimitError, RequestError
from ..responses.input import COMPACTION_KIND, build_conversation, item_messages
from ..responses.request import ResponseRequest, parse_request
from ..responses.resource import Usage
from .auth import KeyChecker, RateLimiter
from .metrics import CONTENT_TYPE
from .service import ResponseService, Run, owner_of

log = logging.getLogger("openchatml.server")

DONE: Final = b"data: [DONE]\n\n"
_WS_FORBIDDEN: Final = ("stream", "stream_options", "background")
WS_CACHED_RESPONSES: Final = 8
"""How many ``store: false`` responses a WebSocket connection keeps to chain from (the
most recent ones; each holds its whole conversation)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits: body size in bytes, and requests per minute per key (``None``: none)."""

    max_body_bytes: int = 32 * 1024 * 1024
    requests_per_minute: int | None = None


def sse_chunk(event: dict[str, Any]) -> bytes:
    """One SSE event: ``event: TYPE``, ``data: JSON``, blank line."""
    kind: str = event["type"]
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def error_response(error: APIError) -> Response:
    """The JSON error envelope with the error's status (and ``Retry-After`` for 429)."""
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, RateLimitError) else None
    return _json(error.body(), error.status, headers)


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

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> Response:
        return error_response(exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(APIError("The server had an error while processing your request."))

    @app.middleware("http")
    async def _count(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.requests.labels(path, str(response.status_code)).inc()
        return response

    def caller(request: Request | WebSocket) -> str:
        key = keys.check(request.headers.get("authorization"))
        owner = owner_of(key)
        limiter.check(owner)
        return owner

    async def read_json(request: Request) -> Any:
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
        try:
            return orjson.loads(b"".join(chunks))
        except orjson.JSONDecodeError as exc:
            raise RequestError(
                f"We could not parse the JSON body of your request ({exc}).", code="invalid_json"
            ) from None

    def follow_sse(events: AsyncIterator[dict[str, Any]], cancel: Run | None = None) -> StreamingResponse:
        """Stream ``events``; a client that leaves early cancels ``cancel`` (if given)."""

        async def body() -> AsyncIterator[bytes]:
            finished = False
            try:
                async for event in events:
                    yield sse_chunk(event)
                finished = True
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
        parsed = parse_request(await read_json(request))
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
            return _json(await service.wait(run))
        except asyncio.CancelledError:
            if run.task is not None:
                run.task.cancel()
            raise

    @app.get("/v1/responses/{response_id}")
    @app.get("/responses/{response_id}", include_in_schema=False)
    async def get_response(request: Request, response_id: str) -> Response:
        owner = caller(request)
        if request.query_params.get("stream", "").lower() == "true":
            after = _int_param(request, "starting_after", None)
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
        limit = _int_param(request, "limit", 20)
        if limit is None or not 1 <= limit <= 100:
            raise RequestError("'limit' must be between 1 and 100.", param="limit")
        order = request.query_params.get("order", "desc")
        if order not in ("asc", "desc"):
            raise RequestError("'order' must be 'asc' or 'desc'.", param="order")
        after = request.query_params.get("after")
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
        body = await read_json(request)
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k not in ("stream", "background", "store")}
        parsed = parse_request(body)
        service.check_model(parsed.model)
        items = await _items_for(service, parsed, owner)
        conversation = build_conversation(
            parsed, items, settings=service.settings.prompt, sealer=service.sealer
        )
        prepared = service.dialect.prepare(parsed, conversation, context_length=None)
        return _json({"object": "response.input_tokens", "input_tokens": len(prepared.prompt)})

    @app.post("/v1/responses/compact")
    @app.post("/responses/compact", include_in_schema=False)
    async def compact(request: Request) -> Response:
        owner = caller(request)
        body = await read_json(request)
        if not isinstance(body, dict):
            raise RequestError("The body must be a JSON object.")
        allowed = {"model", "input", "previous_response_id", "instructions", "prompt_cache_key"}
        for key in body:
            if key not in allowed:
                raise RequestError(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
        if not isinstance(body.get("model"), str):
            raise RequestError("'model' is required.", param="model", code="missing_required_parameter")
        parsed = parse_request(body)
        service.check_model(parsed.model)
        if service.sealer is None:
            raise RequestError("Compaction needs a server key.", code="unsupported")
        items = await _items_for(service, parsed, owner)
        messages = select_messages(item_messages(items, sealer=service.sealer), CoTPolicy.DROP_FINISHED)
        conversation = build_conversation(
            parsed, items, settings=service.settings.prompt, sealer=service.sealer
        )
        prompt = service.dialect.prepare(parsed, conversation, context_length=None).prompt
        sealed = service.sealer.seal(COMPACTION_KIND, {"messages": [message_to_json(m) for m in messages]})
        return _json(
            {
                "id": ids.response_id(),
                "object": "response.compaction",
                "created_at": int(time.time()),
                "output": [{"id": ids.compaction_id(), "type": "compaction", "encrypted_content": sealed}],
                "usage": Usage(input_tokens=len(prompt)).to_json(),
            }
        )

    @app.websocket("/v1/responses")
    @app.websocket("/responses")
    async def websocket_mode(socket: WebSocket) -> None:
        await _websocket_session(service, socket, caller)

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
        return _json({"status": "ok", "model": info.id, "engine": info.engine, "running": len(service.runs)})

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return app


def _int_param(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise RequestError(f"'{name}' must be an integer.", param=name) from None


async def _items_for(service: ResponseService, request: ResponseRequest, owner: str) -> list[dict[str, Any]]:
    history, new_input = await service.items(request, owner)
    return history + new_input


async def _websocket_session(
    service: ResponseService, socket: WebSocket, caller: Callable[[Request | WebSocket], str]
) -> None:
    """One WebSocket connection: ``response.create`` messages in, streaming events out,
    one response in flight at a time; ``store: false`` responses chain through a cache
    of this connection (its :data:`WS_CACHED_RESPONSES` most recent responses)."""
    try:
        owner = caller(socket)
    except APIError as exc:
        await socket.close(code=1008, reason=exc.message[:120])
        return
    await socket.accept()
    local: dict[str, list[dict[str, Any]]] = {}
    mine: list[Run] = []
    current: asyncio.Task[None] | None = None

    async def send_error(error: APIError) -> None:
        await socket.send_bytes(
            orjson.dumps({"type": "error", "status": error.status, "error": error.payload()})
        )

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
                message = orjson.loads(raw)
            except orjson.JSONDecodeError:
                await send_error(RequestError("The message is not valid JSON.", code="invalid_json"))
                continue
            if not isinstance(message, dict) or message.get("type") != "response.create":
                await send_error(RequestError("Expected a 'response.create' message.", param="type"))
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
                parsed = parse_request(body)
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
