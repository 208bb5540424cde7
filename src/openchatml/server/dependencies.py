"""What the routes take from the app (``app.state``) and the request, as FastAPI
dependencies: the service, the HTTP limits, the owner of the request's key, and the
wire dialect of the answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header
from starlette.requests import HTTPConnection, Request

from ..responses.wire import WireDialect
from .callers import Callers
from .limits import Limits
from .service import ResponseService
from .wire import WIRE_HEADER_NAME, request_dialect


async def service_of(connection: HTTPConnection) -> ResponseService:
    """The service the app serves."""
    service: ResponseService = connection.app.state.service
    return service


async def limits_of(connection: HTTPConnection) -> Limits:
    """The app's HTTP limits."""
    limits: Limits = connection.app.state.limits
    return limits


def callers_of(connection: HTTPConnection) -> Callers:
    """Who may call the app (keys and rate limits)."""
    callers: Callers = connection.app.state.callers
    return callers


async def caller(request: Request) -> str:
    """The owner of the request's key, the request counted against its rate limit
    (401, 429: see :meth:`Callers.owner`)."""
    return callers_of(request).owner(request)


async def dialect_of(
    connection: HTTPConnection,
    wire: Annotated[
        str | None,
        Header(
            alias=WIRE_HEADER_NAME,
            description="How the answer is spelled: 'openresponses' (the Open Responses schema's "
            "names) or 'openai' (OpenAI's); without it, the server's setting.",
        ),
    ] = None,
) -> WireDialect:
    """The wire dialect of the answer (400 for an ``OpenChatML-Wire`` header naming none;
    see :func:`~.wire.request_dialect`). ``wire`` declares the header for the OpenAPI
    document; it is read with the others (``auto`` looks at the client's headers)."""
    service: ResponseService = connection.app.state.service
    return request_dialect(connection.headers, service.settings.wire)


Service = Annotated[ResponseService, Depends(service_of)]
HTTPLimits = Annotated[Limits, Depends(limits_of)]
Owner = Annotated[str, Depends(caller)]
"""The caller, checked before the body is read."""
Wire = Annotated[WireDialect, Depends(dialect_of)]
"""The dialect the answer is spelled in."""
