"""``/docs``: Swagger UI over the app's OpenAPI document, served without a CDN.

The page (``GET /docs``) loads Swagger UI's script, style sheet and icon from
:data:`ASSETS_PATH`, where :func:`assets` serves the files the ``fastapi-offline``
package ships; nothing on the page comes from another host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import fastapi_offline
from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_PATH: Final = "/docs"
OAUTH2_REDIRECT_PATH: Final = "/docs/oauth2-redirect"
ASSETS_PATH: Final = "/docs/assets"
ASSETS: Final = Path(fastapi_offline.__file__).parent / "static"
"""Swagger UI's files (``swagger-ui-bundle.js``, ``swagger-ui.css``, ``favicon.png``)."""

router = APIRouter()


@router.get(DOCS_PATH, include_in_schema=False)
async def swagger_ui(request: Request) -> HTMLResponse:
    """The Swagger UI page of the app's OpenAPI document."""
    app: FastAPI = request.app
    root = str(request.scope.get("root_path", ""))
    assets = root + ASSETS_PATH
    return get_swagger_ui_html(
        openapi_url=root + (app.openapi_url or "/openapi.json"),
        title=f"{app.title} — Open Responses API",
        oauth2_redirect_url=root + OAUTH2_REDIRECT_PATH,
        swagger_js_url=f"{assets}/swagger-ui-bundle.js",
        swagger_css_url=f"{assets}/swagger-ui.css",
        swagger_favicon_url=f"{assets}/favicon.png",
    )


@router.get(OAUTH2_REDIRECT_PATH, include_in_schema=False)
async def swagger_ui_redirect() -> HTMLResponse:
    """Swagger UI's OAuth2 redirect page."""
    return get_swagger_ui_oauth2_redirect_html()


def assets() -> StaticFiles:
    """The app that serves Swagger UI's files (to mount at :data:`ASSETS_PATH`)."""
    return StaticFiles(directory=ASSETS)
