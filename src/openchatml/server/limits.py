"""The bounds on an HTTP request before any route runs, and how uvicorn is to keep them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits: body size in bytes, and requests per minute per key (``None``: none);
    the URL (path and query) and all header lines together, in bytes."""

    max_body_bytes: int = 32 * 1024 * 1024
    requests_per_minute: int | None = None
    auth_failures_per_minute: int | None = 10
    """Failed authentications a client address may make a minute (then 429 for it)."""
    max_url_bytes: int = 8 * 1024
    max_header_bytes: int = 32 * 1024

    def uvicorn_options(self) -> dict[str, Any]:
        """How uvicorn is to run the app: the h11 parser, which refuses (400) a request line
        and headers that outgrow a bound (the default parser buffers headers of any size),
        and WebSocket messages bounded as bodies are."""
        return {
            "http": "h11",
            "h11_max_incomplete_event_size": 2 * (self.max_url_bytes + self.max_header_bytes),
            "ws_max_size": self.max_body_bytes,
        }
