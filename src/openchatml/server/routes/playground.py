"""The playground: ``GET /`` is its page, ``GET /playground/{name}`` its scripts and
style sheet — static files shipped in the package (``server/playground/``), no CDN, no
build step.

Every answer carries a Content-Security-Policy that lets the page load scripts, styles,
images and connections from this server only (no inline script, no ``eval``, no frames),
and ``X-Content-Type-Options: nosniff``. Only the files the folder holds are served; any
other name is a 404.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.exceptions import HTTPException

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
"""What the playground's pages may load: their own server's files, nothing else."""
MEDIA_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
"""The files the playground serves, by suffix, and their media types."""
FOLDER: Final = files("openchatml.server") / "playground"

router = APIRouter()


def _answer(name: str) -> Response:
    """The playground's file ``name`` with its media type and the page's security headers."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    resource = FOLDER / name
    if suffix not in MEDIA_TYPES or "/" in name or name.startswith(".") or not resource.is_file():
        raise HTTPException(404)
    headers = {
        "content-security-policy": CONTENT_SECURITY_POLICY,
        "x-content-type-options": "nosniff",
        "cache-control": "no-cache",
        "referrer-policy": "no-referrer",
    }
    return Response(resource.read_bytes(), media_type=MEDIA_TYPES[suffix], headers=headers)


@router.get("/", include_in_schema=False)
async def playground_page() -> Response:
    """The playground's page."""
    return _answer("index.html")


@router.get("/playground/{name}", include_in_schema=False)
async def playground_file(name: str) -> Response:
    """One of the playground's scripts or style sheets (404 for a name it does not ship)."""
    return _answer(name)
