"""Cross-origin requests from browsers: allowed for the origins the server is told.

``serve --cors-origin ORIGIN`` (repeatable; ``*`` for any origin) lets a page served from
ORIGIN call the API: Starlette's ``CORSMiddleware`` answers the browser's preflight
(``OPTIONS`` with ``Access-Control-Request-Method``) and marks every answer to such an
origin. No origin is allowed by default. Credentials (cookies) are never allowed: a
browser client sends its API key as a bearer token, which preflight allows like any
other request header. The answer headers a page may read are :data:`EXPOSED_HEADERS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware

from .answer_headers import REQUEST_ID_HEADER
from .ignored_parameters import IGNORED_HEADER

ALLOWED_METHODS: Final = ("GET", "POST", "DELETE", "OPTIONS")
EXPOSED_HEADERS: Final = (REQUEST_ID_HEADER, IGNORED_HEADER, "Retry-After")
PREFLIGHT_MAX_AGE: Final = 600
"""Seconds a browser may keep a preflight's answer."""


def add_cors(app: Starlette, origins: Sequence[str]) -> None:
    """Let browsers at ``origins`` (``*``: any) call ``app``; nothing when there are none."""
    if not origins:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_methods=list(ALLOWED_METHODS),
        allow_headers=["*"],
        expose_headers=list(EXPOSED_HEADERS),
        allow_credentials=False,
        max_age=PREFLIGHT_MAX_AGE,
    )
