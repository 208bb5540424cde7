"""The model endpoints: ``GET /models`` (served at the root too) and
``GET /v1/models/{model_id}`` (under ``/v1`` only)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from ..dependencies import Owner, Service
from ..json_response import json_response

router = APIRouter()
"""The routes served under ``/v1`` and at the root."""
versioned_router = APIRouter()
"""The routes served under ``/v1`` only."""


@router.get("/models")
async def list_models(service: Service, owner: Owner) -> Response:
    """The one model served, as a list."""
    info = service.engine.info
    model = {"id": info.id, "object": "model", "created": 0, "owned_by": info.owned_by}
    return json_response({"object": "list", "data": [model]})


@versioned_router.get("/models/{model_id:path}")
async def get_model(model_id: str, service: Service, owner: Owner) -> Response:
    """The model served, if ``model_id`` names it (404 ``model_not_found`` if not)."""
    served = service.check_model(model_id)
    return json_response(
        {"id": served, "object": "model", "created": 0, "owned_by": service.engine.info.owned_by}
    )
