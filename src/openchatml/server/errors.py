"""The error envelope over HTTP: ``{"error": {message, type, param, code}}`` with the
status of its type, and the handlers that answer with it."""

from __future__ import annotations

from typing import Final

from fastapi import Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..responses.errors import APIError, NotFoundError, RequestError
from .json_response import json_response

CLIENT_CLOSED_REQUEST: Final = 499
"""The status logged (nginx's) for a JSON request whose client left before its answer."""


def error_response(error: APIError, headers: dict[str, str] | None = None) -> Response:
    """The JSON error envelope with the error's status, and ``Retry-After`` when the error
    says when to try again (429, 503)."""
    if error.retry_after is not None:
        headers = {**(headers or {}), "Retry-After": str(error.retry_after)}
    return json_response(error.body(), error.status, headers)


def routing_error(request: Request, exc: StarletteHTTPException) -> APIError:
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


async def answer_api_error(request: Request, exc: Exception) -> Response:
    """The exception handler for :class:`APIError`: its envelope."""
    assert isinstance(exc, APIError)
    return error_response(exc)


async def answer_http_error(request: Request, exc: Exception) -> Response:
    """The exception handler for routing's HTTP errors: the envelope of
    :func:`routing_error`, with the headers the error carries."""
    assert isinstance(exc, StarletteHTTPException)
    return error_response(routing_error(request, exc), dict(exc.headers or {}))
