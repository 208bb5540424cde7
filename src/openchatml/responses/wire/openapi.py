"""The wire's models in an OpenAPI document (what ``/docs`` shows).

The create route reads its body itself (bounded, off the event loop, errors as the API
spells them), so FastAPI does not see its models. :func:`create_operation` is the route's
``openapi_extra`` (the request body a :class:`~.request.CreateResponseBody`; the answer a
:class:`~.resource.ResponseResource`, or a stream of events); :func:`schemas` the
component schemas it refers to, for :func:`add_schemas` to put into the document.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, get_type_hints

from pydantic import TypeAdapter
from pydantic.json_schema import models_json_schema

from .events import EVENT_CLASSES, StreamEvent
from .request import CreateResponseBody
from .resource import ResponseResource

REF: Final = "#/components/schemas/{model}"
STREAM_EVENT: Final = "ResponseStreamEvent"


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
    ``ResponseStreamEvent``, one of them), and what they refer to."""
    _, top = models_json_schema(
        [(CreateResponseBody, "validation"), (ResponseResource, "serialization")], ref_template=REF
    )
    out: dict[str, Any] = dict(top.get("$defs", {}))
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


def add_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an OpenAPI document) with :func:`schemas` among its components."""
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas())
    return document
