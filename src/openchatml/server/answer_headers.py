"""Headers every answer carries, whatever made it: the request's id, and those noted for it.

:class:`AnswerHeaders` (ASGI middleware, the outermost) gives each request an id: the
client's ``x-request-id`` when it is a sane one (:func:`request_id_for`), else a new
``req_…``. It keeps the id in the scope (:func:`request_id`, for the access log) and
writes it as ``x-request-id`` on every answer: JSON, SSE, an error of any layer (a 404,
a refused body, a 500), a WebSocket handshake accepted or refused. Code under it adds a
header to the answer with :func:`note_header` (the ignored parameters do).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import MutableMapping
from typing import Any, Final

REQUEST_ID_HEADER: Final = "x-request-id"
MAX_REQUEST_ID: Final = 128
"""The longest client request id echoed (a longer one is replaced by a new id)."""
_SANE_ID: Final = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,%d}" % MAX_REQUEST_ID)
_ID_KEY: Final = "openchatml.request_id"
_HEADERS_KEY: Final = "openchatml.answer_headers"
_STARTS: Final = frozenset({"http.response.start", "websocket.http.response.start", "websocket.accept"})
"""The ASGI messages that carry an answer's headers."""

Scope = MutableMapping[str, Any]


def request_id_for(headers: list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...]) -> str:
    """The id of a request with these raw ``headers``: its ``x-request-id`` when that is 1 to
    128 characters of letters, digits and ``._:/+=@-``; else a new ``req_`` + 32 hex digits."""
    for name, value in headers:
        if name.lower() == b"x-request-id":
            if _SANE_ID.fullmatch(value.strip()):
                return value.strip().decode("ascii")
            break
    return f"req_{uuid.uuid4().hex}"


def request_id(scope: Scope) -> str | None:
    """The id :class:`AnswerHeaders` gave the request of ``scope`` (``None`` outside it)."""
    value = scope.get(_ID_KEY)
    return value if isinstance(value, str) else None


def note_header(scope: Scope, name: str, value: str) -> None:
    """Add ``name: value`` (ASCII) to the answer of the request of ``scope``, if its
    headers are not written yet."""
    noted = scope.get(_HEADERS_KEY)
    if isinstance(noted, list):
        noted.append((name.lower().encode("ascii"), value.encode("ascii")))


class AnswerHeaders:
    """ASGI middleware: the request's id, and the headers noted for its answer, on every
    answer (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        rid = request_id_for(scope.get("headers") or ())
        noted: list[tuple[bytes, bytes]] = [(REQUEST_ID_HEADER.encode(), rid.encode())]
        scope[_ID_KEY] = rid
        scope[_HEADERS_KEY] = noted

        async def sending(message: Any) -> None:
            if message["type"] in _STARTS:
                message = {**message, "headers": [*(message.get("headers") or ()), *noted]}
            await send(message)

        await self.app(scope, receive, sending)
