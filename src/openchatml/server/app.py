"""The ASGI app: the Open Responses API over a :class:`~.service.ResponseService`.

Routes (each but ``/health``, ``/metrics`` and ``GET /v1/models/{id}`` also without the
``/v1`` prefix): ``POST /v1/responses`` (JSON, or SSE with ``stream: true``) and its
WebSocket mode, ``POST /v1/responses/compact``, ``POST /v1/responses/input_tokens``,
``GET|DELETE /v1/responses/{id}`` (``?stream=true`` replays),
``POST /v1/responses/{id}/cancel``, ``GET /v1/responses/{id}/input_items``,
``GET /v1/models``, ``GET /health`` and ``GET /metrics`` (see :mod:`.routes`); where
enabled, ``GET /v1/responses/{id}/envelope`` and the playground at ``/``.

Errors are ``{"error": {message, type, param, code}}`` with the status of their type
(:mod:`.errors`); nothing unexpected escapes as anything but a JSON 500
(:mod:`.middleware`). Every answer carries ``x-request-id`` (:mod:`.answer_headers`) and
is written to the access log (:mod:`.access_log`); browsers may call the API from the
origins the app is given (:mod:`.cors`). Bodies are written by :mod:`.json_response`, SSE events by
:mod:`.sse`, WebSocket frames by :class:`.routes.websocket.EventSender`, each in the
wire dialect of the request (:mod:`.wire`).

``/openapi.json`` holds the wire's schemas (the request bodies, the response, every
streaming event, the conversations' answers: :func:`~..responses.wire.add_schemas`; the
chat completion and its chunks: :func:`~..chat.add_chat_schemas`); ``/docs`` shows it
with Swagger UI, served from the app itself (:mod:`.routes.docs`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..chat import add_chat_schemas
from ..responses.errors import APIError
from ..responses.wire import add_schemas
from .access_log import AccessLog
from .answer_headers import AnswerHeaders
from .auth import KeyChecker
from .callers import Callers
from .cors import add_cors
from .errors import answer_api_error, answer_http_error
from .limits import Limits
from .middleware import AnswerCounter, RequestBounds
from .routes import (
    add_routes,
    chat,
    conversations,
    docs,
    envelope,
    health,
    models,
    responses,
    websocket,
)
from .routes import playground as playground_routes
from .service import ResponseService


class ResponsesApp(FastAPI):
    """The FastAPI app whose OpenAPI document holds the wire's schemas."""

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document (built once): FastAPI's, with the wire's and chat's component schemas."""
        if self.openapi_schema is None:
            self.openapi_schema = add_chat_schemas(add_schemas(super().openapi()))
        return self.openapi_schema


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The app's life: the service's upkeep while it serves; on the way out, the
    service closed, then ``app.state.on_shutdown`` (if set) awaited."""
    service: ResponseService = app.state.service
    service.start_maintenance()
    yield
    await service.aclose()
    on_shutdown: Callable[[], Awaitable[None]] | None = app.state.on_shutdown
    if on_shutdown is not None:
        await on_shutdown()


def create_app(
    service: ResponseService,
    *,
    keys: KeyChecker | None = None,
    limits: Limits | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    cors_origins: Sequence[str] = (),
    playground: bool = True,
) -> FastAPI:
    """The app serving ``service``; ``on_shutdown`` runs when the server stops;
    ``cors_origins``: the origins browsers may call it from (:mod:`.cors`); ``playground``:
    whether ``/`` serves the playground page (:mod:`.routes.playground`). The envelope
    route is there where ``service`` records envelopes (:mod:`.routes.envelope`)."""
    limits = limits or Limits()
    app = ResponsesApp(title="openchatml", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = service
    app.state.limits = limits
    app.state.callers = Callers(keys or KeyChecker(), limits)
    app.state.on_shutdown = on_shutdown

    app.add_exception_handler(APIError, answer_api_error)
    app.add_exception_handler(StarletteHTTPException, answer_http_error)
    # the last added is the outermost: ids and the access log see every answer
    app.add_middleware(RequestBounds, limits=limits)
    app.add_middleware(AnswerCounter, metrics=service.metrics)
    add_cors(app, cors_origins)
    app.add_middleware(AccessLog)
    app.add_middleware(AnswerHeaders)

    for router in (responses.router, chat.router, conversations.router, websocket.router, models.router):
        add_routes(app, router, prefix="/v1")
        add_routes(app, router, in_schema=False)  # the same routes without the prefix
    add_routes(app, models.versioned_router, prefix="/v1")
    if service.envelopes is not None:
        add_routes(app, envelope.router, prefix="/v1")
        add_routes(app, envelope.router, in_schema=False)
    if playground:
        add_routes(app, playground_routes.router)
    add_routes(app, health.router)
    add_routes(app, docs.router)
    app.mount(docs.ASSETS_PATH, docs.assets(), name="docs-assets")
    return app
