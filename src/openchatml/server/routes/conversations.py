"""The conversations endpoints, as OpenAI's API has them: ``POST /conversations``,
``GET|POST|DELETE /conversations/{id}``, ``GET|POST /conversations/{id}/items`` and
``GET|DELETE /conversations/{id}/items/{item_id}``. Items are written in the wire
dialect of the request (:data:`~..dependencies.Wire`); every answer is the caller's own
(another key's conversation is a 404)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...responses import ids
from ...responses.limits import RequestLimits
from ...responses.wire.conversations import (
    AddItemsBody,
    ConversationDeleted,
    ConversationItemList,
    ConversationResource,
    CreateConversationBody,
    UpdateConversationBody,
    check_include,
    read_create_body,
    read_items_body,
    read_update_body,
)
from ...responses.wire.openapi import CONVERSATION_ITEM, INCLUDE_QUERY, PAGE_QUERY, conversation_operation
from ..dependencies import HTTPLimits, Owner, Service, Wire
from ..json_response import json_response
from ..query import choice_param, id_param, int_param
from ..request_body import decode_json, off_loop, read_body

T = TypeVar("T")

router = APIRouter()


async def _body(
    request: Request, max_bytes: int, limits: RequestLimits, read: Callable[[Any, RequestLimits], T]
) -> T:
    """The request's JSON body (at most ``max_bytes``) checked by ``read`` within ``limits``
    (off the event loop when large)."""
    raw = await read_body(request, max_bytes)
    return await off_loop(len(raw), lambda: read(decode_json(raw), limits))


def _include(request: Request) -> tuple[str, ...]:
    """The ``include`` query values (``include=…`` or ``include[]=…``, repeated), checked."""
    params = request.query_params
    return check_include([*params.getlist("include"), *params.getlist("include[]")])


@router.post(
    "/conversations",
    openapi_extra=conversation_operation(ConversationResource, "The conversation.", CreateConversationBody),
)
async def create_conversation(
    request: Request, service: Service, owner: Owner, limits: HTTPLimits, dialect: Wire
) -> Response:
    """Create a conversation (``items``: at most 20; ``metadata``)."""
    body = await _body(request, limits.max_body_bytes, service.settings.limits, read_create_body)
    return json_response((await service.conversations.create(body, owner)).to_json(dialect))


@router.get(
    "/conversations/{conversation_id}",
    openapi_extra=conversation_operation(ConversationResource, "The conversation."),
)
async def get_conversation(conversation_id: str, service: Service, owner: Owner, dialect: Wire) -> Response:
    """A conversation."""
    return json_response((await service.conversations.retrieve(conversation_id, owner)).to_json(dialect))


@router.post(
    "/conversations/{conversation_id}",
    openapi_extra=conversation_operation(ConversationResource, "The conversation.", UpdateConversationBody),
)
async def update_conversation(
    request: Request, conversation_id: str, service: Service, owner: Owner, limits: HTTPLimits, dialect: Wire
) -> Response:
    """Replace a conversation's metadata."""
    body = await _body(request, limits.max_body_bytes, service.settings.limits, read_update_body)
    return json_response((await service.conversations.update(conversation_id, owner, body)).to_json(dialect))


@router.delete(
    "/conversations/{conversation_id}",
    openapi_extra=conversation_operation(ConversationDeleted, "The conversation is deleted."),
)
async def delete_conversation(
    conversation_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """Delete a conversation and its items."""
    return json_response((await service.conversations.delete(conversation_id, owner)).to_json(dialect))


@router.post(
    "/conversations/{conversation_id}/items",
    openapi_extra=conversation_operation(
        ConversationItemList, "The items added.", AddItemsBody, INCLUDE_QUERY
    ),
)
async def add_conversation_items(
    request: Request, conversation_id: str, service: Service, owner: Owner, limits: HTTPLimits, dialect: Wire
) -> Response:
    """Append items to a conversation (at most 20); the list of them."""
    _include(request)
    body = await _body(request, limits.max_body_bytes, service.settings.limits, read_items_body)
    added = await service.conversations.add_items(conversation_id, owner, body)
    return json_response(added.to_json(dialect))


@router.get(
    "/conversations/{conversation_id}/items",
    openapi_extra=conversation_operation(ConversationItemList, "A page of the items.", query=PAGE_QUERY),
)
async def list_conversation_items(
    request: Request, conversation_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """A page of a conversation's items (``limit``, ``order``, ``after``, ``include``)."""
    limit = int_param(request, "limit", 20, low=1, high=100)
    assert limit is not None
    order = choice_param(request, "order", "desc", ("asc", "desc"))
    after = id_param(request, "after", ids.MAX_ID_LENGTH)
    _include(request)
    page = await service.conversations.list_items(
        conversation_id, owner, after=after, limit=limit, order=order
    )
    return json_response(page.to_json(dialect))


@router.get(
    "/conversations/{conversation_id}/items/{item_id}",
    openapi_extra=conversation_operation(CONVERSATION_ITEM, "The item.", query=INCLUDE_QUERY),
)
async def get_conversation_item(
    request: Request, conversation_id: str, item_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """One item of a conversation."""
    _include(request)
    item = await service.conversations.item(conversation_id, owner, item_id)
    return json_response(item.to_json(dialect))


@router.delete(
    "/conversations/{conversation_id}/items/{item_id}",
    openapi_extra=conversation_operation(ConversationResource, "The conversation, without the item."),
)
async def delete_conversation_item(
    conversation_id: str, item_id: str, service: Service, owner: Owner, dialect: Wire
) -> Response:
    """Delete one item of a conversation; the conversation after."""
    conversation = await service.conversations.delete_item(conversation_id, owner, item_id)
    return json_response(conversation.to_json(dialect))
