"""The typed Open Responses wire: requests, items, content parts, tools, the response
resource and every streaming event, spelled in two dialects (see :mod:`.dialects`).

Pydantic models where the wire is read (:mod:`.request`, :mod:`.items`,
:mod:`.content`, :mod:`.tools`, :mod:`.resource`); frozen slotted dataclasses where it is
written per token (:mod:`.events`). Every object's ``to_json(dialect)`` is its JSON;
:func:`dump` and :func:`encode` the one way out.
"""

from .dialects import DEFAULT_DIALECT, WIRE_HEADER, WireDialect, choose_dialect, dump, encode
from .event_base import StreamEvent
from .events import EVENT_TYPES, load_event, respell
from .items import InputItem, Item, OutputItem, load_item
from .openapi import add_schemas, create_operation
from .request import CreateResponseBody
from .resource import ResponseResource, load_resource

__all__ = [
    "DEFAULT_DIALECT",
    "EVENT_TYPES",
    "WIRE_HEADER",
    "CreateResponseBody",
    "InputItem",
    "Item",
    "OutputItem",
    "ResponseResource",
    "StreamEvent",
    "WireDialect",
    "add_schemas",
    "choose_dialect",
    "create_operation",
    "dump",
    "encode",
    "load_event",
    "load_item",
    "load_resource",
    "respell",
]
