"""The routers of the API, and how they are added to an app.

Each endpoint is a module-level function on an :class:`~fastapi.APIRouter`:
:mod:`.responses`, :mod:`.chat`, :mod:`.conversations`, :mod:`.websocket` and
:mod:`.models` (their routes answer under ``/v1`` and, hidden from the OpenAPI document, at
the root), :mod:`.health` (at the root),
:mod:`.docs` (``/docs``, hidden from the document it shows), :mod:`.envelope` (a
response's token ids, under ``/v1`` and at the root, where envelopes are recorded) and
:mod:`.playground` (``/`` and its files).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute

from . import chat, conversations, docs, envelope, health, models, playground, responses, websocket

__all__ = [
    "add_routes",
    "chat",
    "conversations",
    "docs",
    "envelope",
    "health",
    "models",
    "playground",
    "responses",
    "websocket",
]


def add_routes(app: FastAPI, router: APIRouter, *, prefix: str = "", in_schema: bool = True) -> None:
    """Add each route of ``router`` to ``app`` with its path under ``prefix``; hidden from
    the OpenAPI document unless ``in_schema``. Each becomes a route of the app itself, so
    that a request's ``scope["route"]`` holds its full path (what the metrics count by),
    whichever way FastAPI's version nests included routers."""
    for route in router.routes:
        if isinstance(route, APIWebSocketRoute):
            app.add_api_websocket_route(prefix + route.path, route.endpoint, name=route.name)
        elif isinstance(route, APIRoute):
            app.add_api_route(
                prefix + route.path,
                route.endpoint,
                methods=sorted(route.methods or ()),
                name=route.name,
                include_in_schema=in_schema and route.include_in_schema,
                openapi_extra=route.openapi_extra,
            )
        else:
            raise TypeError(f"cannot add a route of type {type(route).__name__}")
