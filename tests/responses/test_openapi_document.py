"""The Open Responses document itself: readable, and the validator rejects what it should."""

from __future__ import annotations

import jsonschema
import pytest
from openapi import STREAMING_EVENT_SCHEMAS, document, validate, validate_event


def test_document_has_the_streaming_events() -> None:
    assert document()["openapi"].startswith("3.1")
    validate_event(
        {
            "type": "response.output_text.delta",
            "sequence_number": 0,
            "item_id": "x",
            "output_index": 0,
            "content_index": 0,
            "delta": "hi",
            "logprobs": [],
        }
    )
    assert len(STREAMING_EVENT_SCHEMAS) >= 24


def test_validator_rejects_a_wrong_event() -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate_event({"type": "response.output_text.delta", "sequence_number": "zero"})
    with pytest.raises(jsonschema.ValidationError):
        validate({"type": "message"}, "ItemParam")
