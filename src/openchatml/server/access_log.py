"""The access log: one line per answer on the ``openchatml.access`` logger.

:class:`AccessLog` (ASGI middleware, inside :class:`~.answer_headers.AnswerHeaders`)
writes, once the app is done with an answer (a stream: after its last event)::

    127.0.0.1:50312 "POST /v1/responses" 200 1532 B 41.2 ms request_id=req_3f…

at INFO (``GET /health`` and ``GET /metrics``, which probes call often, at DEBUG). A
WebSocket connection is one line when it closes: ``"WS /v1/responses" 101`` (or the
status its handshake was refused with). The path is written as the client sent it
(%-escapes kept, at most 200 characters), without its query string.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from .answer_headers import request_id

log = logging.getLogger("openchatml.access")

QUIET_PATHS: Final = frozenset({"/health", "/metrics"})
"""Paths logged at DEBUG."""
MAX_PATH: Final = 200


def _client(scope: Any) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "-"


def _path(scope: Any) -> str:
    raw = scope.get("raw_path") or str(scope.get("path", "")).encode("utf-8", "surrogateescape")
    return bytes(raw[:MAX_PATH]).decode("ascii", "backslashreplace")


class AccessLog:
    """ASGI middleware writing the access log (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None
        size = 0

        async def sending(message: Any) -> None:
            nonlocal status, size
            what = message["type"]
            if what in ("http.response.start", "websocket.http.response.start"):
                status = int(message["status"])
            elif what in ("http.response.body", "websocket.http.response.body"):
                size += len(message.get("body") or b"")
            elif what == "websocket.accept":
                status = 101
            elif what == "websocket.close" and status is None:
                status = 403  # closed before its handshake was answered: the server refuses it
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            path = scope.get("path", "")
            level = logging.DEBUG if path in QUIET_PATHS else logging.INFO
            if log.isEnabledFor(level):
                method = "WS" if kind == "websocket" else scope.get("method", "-")
                log.log(
                    level,
                    '%s "%s %s" %s %d B %.1f ms request_id=%s',
                    _client(scope),
                    method,
                    _path(scope),
                    status if status is not None else "-",
                    size,
                    (time.perf_counter() - started) * 1000,
                    request_id(scope) or "-",
                )
