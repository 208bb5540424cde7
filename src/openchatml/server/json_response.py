"""The JSON answers of the server: every JSON body sent to a client is written here."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import Response


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``body`` as an ``application/json`` answer with ``status`` and ``headers``."""
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)
