"""``GET /responses/{id}/envelope``: the raw envelope of a response this server ran — per
sampling step, the prompt and the completion as token ids, the text of each id and the
positions of control tokens (see :mod:`~..envelopes`).

The route exists only where the server records envelopes (``serve --envelope``); an
envelope shows the system prompt and the hidden reasoning, so it is the owner's alone,
as every response route is (404 for another key's). Envelopes live in memory: a response
this server did not run, or one the log has dropped, is a 404 too.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import Response

from ...responses.dialect import TemplateDialect
from ...responses.errors import NotFoundError
from ..dependencies import Owner, Service
from ..json_response import json_response

router = APIRouter()


@router.get("/responses/{response_id}/envelope")
async def get_envelope(response_id: str, service: Service, owner: Owner) -> Response:
    """The envelope of ``response_id`` (``openchatml.envelope``), decoded with o200k_harmony
    for a Harmony model, else with the model's tokenizer."""
    log = service.envelopes
    envelope = None if log is None else log.get(response_id, owner)
    if envelope is None:
        raise NotFoundError(
            f"No envelope of a response with id {response_id!r} is held by this server.",
            param="response_id",
            code="envelope_not_found",
        )
    templated = isinstance(service.dialect, TemplateDialect)
    tokenizer = service.engine.tokenizer if templated else None
    body = await asyncio.to_thread(envelope.to_json, tokenizer)
    return json_response(body)
