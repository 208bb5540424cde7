"""The model endpoints: ``GET /models`` (served at the root too) and
``GET /v1/models/{model_id}`` (under ``/v1`` only).

A model object is OpenAI's (``id``, ``object``, ``created``, ``owned_by``) with what a
client needs to size its requests: ``context_length`` (also as vLLM's ``max_model_len``),
the ``max_output_tokens`` a response gets when its request sets none, and
``capabilities`` (tool calls, reasoning, images in, outputs enforced by the sampler) and
``tool_types``: those offered to the model (the hosted tools where the server runs them:
``code_interpreter``, web search where its browser is on, ``mcp`` for a gpt-oss model),
those accepted but not offered (web search without a browser), and those refused.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from ...responses.dialect import TemplateDialect
from ...responses.wire.tools import (
    OFFERED_TOOL_TYPES,
    REFUSED_TOOL_TYPES,
    UNOFFERED_TOOL_TYPES,
)
from ...templates.format import ReasoningMode, ToolSyntax
from ..dependencies import Owner, Service
from ..json_response import json_response
from ..service import ResponseService

router = APIRouter()
"""The routes served under ``/v1`` and at the root."""
versioned_router = APIRouter()
"""The routes served under ``/v1`` only."""


def model_object(service: ResponseService) -> dict[str, Any]:
    """The served model as ``GET /v1/models/{id}`` answers it."""
    info = service.engine.info
    dialect = service.dialect
    if isinstance(dialect, TemplateDialect):  # what the chat template can spell
        tools = dialect.format.tools.syntax is not ToolSyntax.NONE
        reasoning = dialect.format.reasoning.mode is not ReasoningMode.NONE
    else:  # Harmony: gpt-oss reasons on its analysis channel and calls tools
        tools = reasoning = True
    hosted = service.hosted.tool_types()
    return {
        "id": info.id,
        "object": "model",
        "created": 0,
        "owned_by": info.owned_by,
        "context_length": info.context_length,
        "max_model_len": info.context_length,
        "max_output_tokens": service.settings.default_max_output_tokens,
        "capabilities": {
            "tools": tools,
            "reasoning": reasoning,
            "vision": False,
            "enforced_decoding": service.engine.enforces_grammar,
        },
        "tool_types": {
            "offered": [*OFFERED_TOOL_TYPES, *hosted] if tools else [],
            "accepted_not_offered": [kind for kind in UNOFFERED_TOOL_TYPES if kind not in hosted],
            "refused": list(REFUSED_TOOL_TYPES),
        },
    }


@router.get("/models")
async def list_models(service: Service, owner: Owner) -> Response:
    """The one model served, as a list."""
    return json_response({"object": "list", "data": [model_object(service)]})


@versioned_router.get("/models/{model_id:path}")
async def get_model(model_id: str, service: Service, owner: Owner) -> Response:
    """The model served, if ``model_id`` names it (404 ``model_not_found`` if not)."""
    service.check_model(model_id)
    return json_response(model_object(service))
