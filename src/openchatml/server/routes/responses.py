"""The responses endpoints: ``POST /responses`` (JSON, or SSE with ``stream: true``),
``GET|DELETE /responses/{id}`` (``?stream=true`` replays), ``POST /responses/{id}/cancel``,
``GET /responses/{id}/input_items``, ``POST /responses/input_tokens`` and
``POST /responses/compact``. Responses, items and events are written in the wire dialect
of the request (:data:`~..dependencies.Wire`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.interchange import message_to_json
from ...core.render import CoTPolicy, select_messages
from ...responses import ids
from ...responses.errors import RequestError
from ...responses.input import COMPACTION_KIND, item_messages
from ...responses.request import ResponseRequest
from ...responses.resource import Usage
from ...responses.wire import InputItem, ResponseResource, WireDialect, create_operation, load_item
from ...responses.wire.items import CompactionItem
from ...responses.wire.openapi import REF
from ...responses.wire.resource import CompactResource
from ..dependencies import HTTPLimits, Owner, Service, Wire
from ..errors import CLIENT_CLOSED_REQUEST
from ..json_response import json_response
from ..query import bool_param, choice_param, id_param, int_param
from ..request_body import read_request
from ..runs import Run
from ..service import ResponseService
from ..sse import event_stream
from ..store.base import ItemPage

COMPACT_KEYS: Final = frozenset(
    {"model", "input", "previous_response_id", "instructions", "prompt_cache_key"}
)
"""The keys a ``POST /responses/compact`` body may hold."""
RESOURCE_ANSWER: Final = {
    "responses": {
        "200": {
            "description": "The response.",
            "content": {
                "application/json": {"schema": {"$ref": REF.format(model=ResponseResource.__name__)}}
            },
        }
    }
}
"""The OpenAPI answer of the routes that give a response's snapshot."""

router = APIRouter()


@router.post("/responses", openapi_extra=create_operation())
async def create_response(
    request: Request, service: Service, owner: Owner, limits: HTTPLimits, dialect: Wire
) -> Response:
    """Create a response: its final snapshot, its events (``stream``), or at once its
    queued snapshot (``background``)."""
    parsed = await read_request(request, limits.max_body_bytes, service.settings.limits)
    run = await service.start(parsed, owner)
    if parsed.stream:
        return event_stream(run.follow(), service.metrics, dialect, None if parsed.background else run)
    if parsed.background:
        snapshot = run.snapshot
        assert snapshot is not None
        if snapshot.status == "in_progress":
            snapshot = snapshot.model_copy(update={"status": "queued"})
        return json_response(snapshot.to_json(dialect))
    try:
        snapshot, left = await _wait_unless_client_leaves(request, service, run)
    except asyncio.CancelledError:
        if run.task is not None:
            run.task.cancel()
        raise
    return json_response(snapshot.to_json(dialect), CLIENT_CLOSED_REQUEST if left else 200)


@router.get("/responses/{response_id}", openapi_extra=RESOURCE_ANSWER)
async def get_response(
    request: Request, response_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """A response's snapshot, or its events from ``starting_after`` (``stream=true``)."""
    if bool_param(request, "stream"):
        after = int_param(request, "starting_after", None, low=-1)
        return event_stream(await service.replay(response_id, owner, after), service.metrics, dialect)
    return json_response((await service.retrieve(response_id, owner)).to_json(dialect))


@router.delete("/responses/{response_id}")
async def delete_response(response_id: str, service: Service, owner: Owner) -> Response:
    """Delete a stored response (cancelling it if it runs)."""
    return json_response(await service.delete(response_id, owner))


@router.post("/responses/{response_id}/cancel", openapi_extra=RESOURCE_ANSWER)
async def cancel_response(response_id: str, service: Service, owner: Owner, dialect: Wire) -> Response:
    """Cancel a running response; its snapshot after."""
    return json_response((await service.cancel(response_id, owner)).to_json(dialect))


@router.get("/responses/{response_id}/input_items")
async def list_input_items(
    request: Request, response_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """A page of a stored response's input items (``limit``, ``order``, ``after``)."""
    limit = int_param(request, "limit", 20, low=1, high=100)
    assert limit is not None
    order = choice_param(request, "order", "desc", ("asc", "desc"))
    after = id_param(request, "after", ids.MAX_ID_LENGTH)
    page = await service.input_items(response_id, owner, after=after, limit=limit, order=order)
    return json_response(_page_json(page, dialect))


def _page_json(page: ItemPage, dialect: WireDialect) -> dict[str, Any]:
    """The list object of a page of stored items, each item spelled in ``dialect``."""
    data = [load_item(item).to_json(dialect) for item in page.data]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": page.has_more,
    }


@router.post("/responses/input_tokens")
async def count_input_tokens(
    request: Request, service: Service, owner: Owner, limits: HTTPLimits
) -> Response:
    """How many tokens the prompt of a create-response body would be."""
    parsed = await read_request(
        request, limits.max_body_bytes, service.settings.limits, drop=("stream", "background", "store")
    )
    service.check_model(parsed.model)
    items = await _items_for(service, parsed, owner)
    count = await asyncio.to_thread(service.prompt_length, parsed, items)
    return json_response({"object": "response.input_tokens", "input_tokens": count})


@router.post("/responses/compact")
async def compact(
    request: Request, service: Service, owner: Owner, limits: HTTPLimits, dialect: Wire
) -> Response:
    """A conversation compacted into one sealed ``compaction`` item."""
    parsed = await read_request(request, limits.max_body_bytes, service.settings.limits, only=COMPACT_KEYS)
    if parsed.model is None:
        raise RequestError("'model' is required.", param="model", code="missing_required_parameter")
    service.check_model(parsed.model)
    sealer = service.sealer
    if sealer is None:
        raise RequestError("Compaction needs a server key.", code="unsupported")
    items = await _items_for(service, parsed, owner)

    def compacted() -> tuple[str, int]:
        messages = select_messages(item_messages(items, sealer=sealer), CoTPolicy.DROP_FINISHED)
        sealed = sealer.seal(COMPACTION_KIND, {"messages": [message_to_json(m) for m in messages]})
        return sealed, service.prompt_length(parsed, items)

    sealed, count = await asyncio.to_thread(compacted)
    answer = CompactResource(
        id=ids.response_id(),
        created_at=int(time.time()),
        output=(CompactionItem(encrypted_content=sealed),),
        usage=Usage(input_tokens=count).wire(),
    )
    return json_response(answer.to_json(dialect))


async def _items_for(service: ResponseService, request: ResponseRequest, owner: str) -> list[InputItem]:
    history, new_input = await service.items(request, owner)
    return history + new_input


async def _wait_unless_client_leaves(
    request: Request, service: ResponseService, run: Run
) -> tuple[ResponseResource, bool]:
    """``run``'s final snapshot, and whether the client left first: then (``http.disconnect``
    on the request's channel, its body already read) the run is cancelled, and its
    cancelled snapshot given once it has ended."""

    async def client_left() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    waiting = asyncio.ensure_future(service.wait(run))
    watching = asyncio.ensure_future(client_left())
    try:
        await asyncio.wait({waiting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not waiting.done():
            waiting.cancel()
        await asyncio.gather(waiting, watching, return_exceptions=True)
    if waiting.done() and not waiting.cancelled():
        return waiting.result(), False
    left = watching.done() and not watching.cancelled() and watching.exception() is None
    if left and run.task is not None and not run.done:  # an ended run is saving: let it
        run.task.cancel()
    return await service.wait(run), left
