"""Errors of the Open Responses API, as the wire shows them.

``APIError`` carries the HTTP status, the Open Responses error ``type``
(``invalid_request_error``, ``not_found``, ``server_error``, ``model_error``,
``too_many_requests``), a machine-readable ``code`` and the request ``param`` at fault;
``retry_after`` (seconds), when set, is answered as a ``Retry-After`` header.
``body()`` is the JSON error envelope ``{"error": {message, type, param, code}}``.
"""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """An error answered to a client: status, type, code, param and message."""

    status: int = 500
    type: str = "server_error"
    default_code: str = "server_error"
    retry_after: int | None = None
    """Seconds the client should wait before trying again (``Retry-After``), if it should."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code or self.default_code
        if retry_after is not None:
            self.retry_after = retry_after

    def payload(self) -> dict[str, Any]:
        """``{message, type, param, code}``."""
        return {"message": self.message, "type": self.type, "param": self.param, "code": self.code}

    def body(self) -> dict[str, Any]:
        """The error envelope ``{"error": {...}}``."""
        return {"error": self.payload()}


class RequestError(APIError):
    """The request is malformed or asks for something unsupported (400)."""

    status = 400
    type = "invalid_request_error"
    default_code = "invalid_value"


class NotFoundError(APIError):
    """No such resource for this caller (404)."""

    status = 404
    type = "not_found"
    default_code = "not_found"


class AuthError(APIError):
    """Missing or wrong API key (401)."""

    status = 401
    type = "invalid_request_error"
    default_code = "invalid_api_key"


class RateLimitError(APIError):
    """Too many requests, or responses at once, for this key or client (429)."""

    status = 429
    type = "too_many_requests"
    default_code = "rate_limit_exceeded"
    retry_after: int | None = 1


class OverloadedError(APIError):
    """The server has no room for more work now (503): its queue of responses is full."""

    status = 503
    type = "server_error"
    default_code = "server_overloaded"
    retry_after: int | None = 1


class PayloadTooLargeError(APIError):
    """The request body is larger than the server accepts (413)."""

    status = 413
    type = "invalid_request_error"
    default_code = "request_too_large"


class ConflictError(APIError):
    """The resource is not in a state that allows this (409): e.g. cancelling a finished response."""

    status = 409
    type = "invalid_request_error"
    default_code = "conflict"


class ModelError(APIError):
    """The model or engine failed on a valid request (500)."""

    status = 500
    type = "model_error"
    default_code = "model_error"


class ServerError(APIError):
    """An unexpected failure inside the server (500)."""
