"""Chat completions in an OpenAPI document (what ``/docs`` shows).

The route reads its body itself, so FastAPI does not see its models.
:func:`create_operation` is the route's ``openapi_extra`` (the request body a
:class:`~.wire.ChatCompletionBody`; the answer a :class:`~.objects.ChatCompletion`, or a
stream of :class:`~.objects.ChatCompletionChunk`); :func:`schemas` the component schemas
they refer to, for :func:`add_chat_schemas` to put into the document beside the
Responses wire's.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic.json_schema import models_json_schema

from .objects import ChatCompletion, ChatCompletionChunk
from .wire import ChatCompletionBody

REF: Final = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def schemas() -> dict[str, Any]:
    """Component schemas: the request body, the completion, the chunk, and what they refer to."""
    _, top = models_json_schema(
        [
            (ChatCompletionBody, "validation"),
            (ChatCompletion, "serialization"),
            (ChatCompletionChunk, "serialization"),
        ],
        ref_template=REF,
    )
    return dict(top.get("$defs", {}))


def create_operation() -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /v1/chat/completions``."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _ref(ChatCompletionBody.__name__)}},
        },
        "responses": {
            "200": {
                "description": (
                    "The chat completion (JSON), or with stream: true its chunks (server-sent "
                    "events, each a data: line; data: [DONE] last; a choice that fails ends the "
                    'stream with data: {"error": {…}} before [DONE])'
                ),
                "content": {
                    "application/json": {"schema": _ref(ChatCompletion.__name__)},
                    "text/event-stream": {"schema": _ref(ChatCompletionChunk.__name__)},
                },
            }
        },
    }


def add_chat_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an OpenAPI document) with :func:`schemas` among its components.

    Raises ``ValueError`` when one of them has the name of another schema already there."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in schemas().items():
        if components.setdefault(name, schema) != schema:
            raise ValueError(f"two OpenAPI schemas are named {name!r}")
    return document
