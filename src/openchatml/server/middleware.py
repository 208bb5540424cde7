"""The ASGI middleware around every route: bounds on a request's URL and headers, and
the count of every answer (with the JSON 500 for what nothing else caught)."""

from __future__ import annotations

import logging
from typing import Any

from ..responses.errors import APIError, RequestError
from .errors import CLIENT_CLOSED_REQUEST, error_response
from .limits import Limits
from .metrics import Metrics

log = logging.getLogger("openchatml.server")


class RequestBounds:
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
        error = self.refusal(scope)
        if error is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1009, "reason": error.code})
        else:
            await error_response(error)(scope, receive, send)

    def refusal(self, scope: Any) -> APIError | None:
        """The error for a request whose URL or headers are out of bounds, if they are."""
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
        return error


class AnswerCounter:
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
