"""The wire's models in an OpenAPI document (what ``/docs`` shows).

The routes read their bodies themselves (bounded, off the event loop, errors as the API
spells them), so FastAPI does not see their models. :func:`create_operation` is the create
route's ``openapi_extra`` (the request body a :class:`~.request.CreateResponseBody`; the
answer a :class:`~.resource.ResponseResource`, or a stream of events);
:func:`conversation_operation` a conversation route's (its body and answer, models of
:mod:`.conversations`); :func:`schemas` the component schemas they refer to, for
:func:`add_schemas` to put into the document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Final, get_type_hints

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .conversations import (
    INCLUDABLE,
    AddItemsBody,
    ConversationDeleted,
    ConversationItemList,
    ConversationResource,
    CreateConversationBody,
    UpdateConversationBody,
)
from .event_base import StreamEvent
from .events import EVENT_CLASSES
from .request import CreateResponseBody
from .resource import ResponseResource

REF: Final = "#/components/schemas/{model}"
STREAM_EVENT: Final = "ResponseStreamEvent"
CONVERSATION_ITEM: Final = "ConversationItem"
"""The schema of one item of a conversation (any item a response's input or output holds)."""
INCLUDE_QUERY: Final = (
    {
        "name": "include",
        "in": "query",
        "required": False,
        "description": "More item data to include (items are given back as they were stored).",
        "schema": {"type": "array", "items": {"type": "string", "enum": list(INCLUDABLE)}},
    },
)
"""The ``include`` query parameter of the routes that answer items."""
PAGE_QUERY: Final = (
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
    },
    {
        "name": "order",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
    },
    {
        "name": "after",
        "in": "query",
        "required": False,
        "description": "The id of the item the page starts after.",
        "schema": {"type": "string"},
    },
    *INCLUDE_QUERY,
)
"""The query parameters of a page of a conversation's items."""
_BODIES: Final[tuple[type[BaseModel], ...]] = (
    CreateResponseBody,
    CreateConversationBody,
    UpdateConversationBody,
    AddItemsBody,
)
_ANSWERS: Final[tuple[type[BaseModel], ...]] = (
    ResponseResource,
    ConversationResource,
    ConversationDeleted,
    ConversationItemList,
)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _event_schema(cls: type[StreamEvent], defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one event: its fields' schemas, ``type`` fixed to its name."""
    properties: dict[str, Any] = {"type": {"type": "string", "const": cls.type}}
    hints = get_type_hints(cls)
    for field in dataclasses.fields(cls):
        schema = TypeAdapter(hints[field.name]).json_schema(ref_template=REF, mode="serialization")
        defs.update(schema.pop("$defs", {}))
        properties[field.name] = schema
    required = ["type", *(f.name for f in dataclasses.fields(cls))]
    return {"type": "object", "title": cls.__name__, "properties": properties, "required": required}


def schemas() -> dict[str, Any]:
    """Component schemas: the request body, the response, every streaming event (and
    ``ResponseStreamEvent``, one of them), the conversations' bodies and answers (and
    ``ConversationItem``), and what they refer to."""
    modes: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        *((cls, "validation") for cls in _BODIES),
        *((cls, "serialization") for cls in _ANSWERS),
    ]
    _, top = models_json_schema(modes, ref_template=REF)
    out: dict[str, Any] = dict(top.get("$defs", {}))
    out[CONVERSATION_ITEM] = out[ConversationItemList.__name__]["properties"]["data"]["items"]
    for cls in EVENT_CLASSES:
        out[cls.__name__] = _event_schema(cls, out)
    out[STREAM_EVENT] = {
        "oneOf": [_ref(cls.__name__) for cls in EVENT_CLASSES],
        "discriminator": {
            "propertyName": "type",
            "mapping": {cls.type: REF.format(model=cls.__name__) for cls in EVENT_CLASSES},
        },
    }
    return out


def create_operation() -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /v1/responses``."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _ref(CreateResponseBody.__name__)}},
        },
        "responses": {
            "200": {
                "description": "The response (JSON), or its events (server-sent events with stream: true).",
                "content": {
                    "application/json": {"schema": _ref(ResponseResource.__name__)},
                    "text/event-stream": {"schema": _ref(STREAM_EVENT)},
                },
            }
        },
    }


def conversation_operation(
    answer: type[BaseModel] | str,
    description: str,
    body: type[BaseModel] | None = None,
    query: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The ``openapi_extra`` of a conversation route: its JSON ``body`` (if any), its
    ``query`` parameters, and its answer (a model of :mod:`.conversations`, or the name of a
    schema such as :data:`CONVERSATION_ITEM`) in the wire dialect the request asked for."""
    name = answer if isinstance(answer, str) else answer.__name__
    operation: dict[str, Any] = {
        "responses": {
            "200": {"description": description, "content": {"application/json": {"schema": _ref(name)}}}
        }
    }
    if body is not None:
        content = {"application/json": {"schema": _ref(body.__name__)}}
        operation["requestBody"] = {"required": True, "content": content}
    if query:
        operation["parameters"] = list(query)
    return operation


def add_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an OpenAPI document) with :func:`schemas` among its components."""
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas())
    return document
