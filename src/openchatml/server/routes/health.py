"""The operator's endpoints, at the root only: ``GET /health`` and ``GET /metrics``
(Prometheus); neither asks for a key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from ..dependencies import Service
from ..json_response import json_response
from ..metrics import CONTENT_TYPE

router = APIRouter()


@router.get("/health")
async def health(service: Service) -> Response:
    """The model and engine served, and how many responses run and wait."""
    info = service.engine.info
    admission = service.admission
    return json_response(
        {
            "status": "ok",
            "model": info.id,
            "engine": info.engine,
            "running": admission.running,
            "queued": admission.queued,
        }
    )


@router.get("/metrics")
async def prometheus(service: Service) -> Response:
    """The server's metrics in the Prometheus text format."""
    return Response(service.metrics.render(), media_type=CONTENT_TYPE)
