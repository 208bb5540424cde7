"""Validate JSON against the official OpenAI SDK's pydantic types (``openai.types.responses``).

``validate_openai_event(event)`` raises ``pydantic.ValidationError`` unless ``event`` is
a ``ResponseStreamEvent`` of the class its ``type`` names; ``validate_openai_response``
unless the object is a ``Response``.
"""

from __future__ import annotations

import functools
from typing import Any

from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter


@functools.cache
def _events() -> TypeAdapter[ResponseStreamEvent]:
    return TypeAdapter(ResponseStreamEvent)


def validate_openai_event(event: dict[str, Any]) -> None:
    """Raise unless ``event`` is the SDK's event of its ``type`` (and its response, if it
    carries one, a valid ``Response``)."""
    parsed = _events().validate_python(event)
    assert parsed.type == event["type"], (parsed.type, event["type"])
    if "response" in event:
        validate_openai_response(event["response"])


def validate_openai_response(response: dict[str, Any]) -> None:
    """Raise unless ``response`` is a valid SDK ``Response``."""
    Response.model_validate(response)
