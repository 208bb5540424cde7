"""The Open Responses document itself: readable, and the validator rejects what it should."""

from __future__ import annotations

import jsonschema
import pytest
from openapi import STREAMING_EVENT_SCHEMAS, document, known, validate, validate_event


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


def test_extensions_are_left_out_and_the_rest_still_checked() -> None:
    """The document has no schema of a prefixed extension: an extension event needs only a
    sequence number; an extension item is left out of what is checked, the rest is not."""
    custom = {"type": "openai:custom_tool_call", "id": "ctc_1", "call_id": "c", "name": "f", "input": "x"}
    validate_event(
        {"type": "openai:response.custom_tool_call_input.delta", "sequence_number": 3, "delta": "x"}
    )
    with pytest.raises(jsonschema.ValidationError):
        validate_event({"type": "openai:response.custom_tool_call_input.delta", "sequence_number": "3"})
    added = {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": custom}
    validate_event(added)
    with pytest.raises(jsonschema.ValidationError):
        validate_event({**added, "output_index": "zero"})
    assert known({"output": [custom, {"type": "message"}], "tool_choice": {"type": "openai:custom"}}) == {
        "output": [{"type": "message"}],
        "tool_choice": "required",
    }
