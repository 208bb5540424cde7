"""One typed wire, two dialects: names, the choice of a dialect per request, and events
read back from either dialect's JSON."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from sdk import validate_openai_event
from starlette.datastructures import Headers
from test_stream import ANSWER, CALL, THINK, TOOLS, completion

from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState, Usage
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.dialects import (
    WireDialect,
    canonical_type,
    choose_dialect,
    dump,
    encode,
    wire_type,
)
from openchatml.responses.wire.event_base import StreamEvent
from openchatml.responses.wire.events import ErrorEvent, OutputTextDelta, load_event, respell
from openchatml.responses.wire.resource import ErrorPayload

OPENAI = WireDialect.OPENAI
OPENRESPONSES = WireDialect.OPENRESPONSES


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("response.reasoning.delta", "response.reasoning_text.delta"),
        ("response.reasoning.done", "response.reasoning_text.done"),
        ("openai:web_search_call", "web_search_call"),
        ("openai:code_interpreter_call", "code_interpreter_call"),
        ("openai:mcp_call", "mcp_call"),
        ("openai:custom_tool_call", "custom_tool_call"),
        ("openchatml:python_call", "openchatml:python_call"),
        ("response.output_text.delta", "response.output_text.delta"),
        ("function_call", "function_call"),
    ],
)
def test_type_names_in_each_dialect(ours: str, theirs: str) -> None:
    assert wire_type(ours, OPENRESPONSES) == ours
    assert wire_type(ours, OPENAI) == theirs
    assert canonical_type(theirs) == ours
    assert canonical_type(ours) == ours


@pytest.mark.parametrize(
    ("headers", "default", "chosen"),
    [
        ({}, "auto", OPENRESPONSES),
        ({"x-stainless-lang": "python", "x-stainless-package-version": "1.100"}, "auto", OPENAI),
        ({"originator": "codex_cli_rs"}, "auto", OPENAI),
        ({"user-agent": "curl/8"}, "auto", OPENRESPONSES),
        ({"openchatml-wire": "openresponses", "x-stainless-lang": "python"}, "auto", OPENRESPONSES),
        ({"openchatml-wire": " OpenAI "}, "openresponses", OPENAI),
        ({"openchatml-wire": "klingon", "originator": "codex"}, "auto", OPENAI),
        ({"x-stainless-lang": "python"}, "openresponses", OPENRESPONSES),
        ({}, "openai", OPENAI),
    ],
)
def test_the_dialect_of_a_request(headers: dict[str, str], default: str, chosen: WireDialect) -> None:
    assert choose_dialect(headers, default) is chosen
    mixed_case = Headers(headers={k.title(): v for k, v in headers.items()})  # as the server sees them
    assert choose_dialect(mixed_case, default) is chosen


def test_an_unknown_default_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown wire dialect"):
        choose_dialect({}, "klingon")


def events_of_every_kind() -> list[StreamEvent]:
    request = parse_request(
        {
            "model": "m",
            "input": "hi",
            "tools": TOOLS,
            "reasoning": {"summary": "auto"},
            "include": ["message.output_text.logprobs"],
        }
    )
    stream = EventBuilder(ResponseState("resp_1", request, "m"), summaries=True)
    events = stream.begin() + stream.feed(completion(THINK, CALL))
    events += stream.summary_delta("A summary.") + stream.summary_done()
    return events + stream.finish(
        "error", error=ErrorPayload(type="model_error", code="boom", message="Boom.")
    )


@pytest.mark.parametrize("dialect", list(WireDialect))
def test_events_read_back_from_either_dialect(dialect: WireDialect) -> None:
    """An event's JSON reads back to the event (OpenAI's error event has no error
    ``type``: it reads back to its JSON); stored (Open Responses) JSON respells into
    either dialect."""
    for event in events_of_every_kind():
        data = dump(event, dialect)
        assert orjson.loads(encode(event, dialect)) == data
        assert load_event(data).to_json(dialect) == data
        assert respell(data, dialect) == data
        if dialect is OPENRESPONSES:
            assert load_event(data) == event
            assert respell(data, OPENAI) == event.to_json(OPENAI)


def test_the_error_event_in_each_dialect() -> None:
    event = ErrorEvent(4, ErrorPayload(type="model_error", code="boom", message="Boom.", param=None))
    assert event.to_json() == {
        "type": "error",
        "sequence_number": 4,
        "error": {"type": "model_error", "code": "boom", "message": "Boom.", "param": None},
    }
    flat = event.to_json(OPENAI)
    assert flat == {"type": "error", "sequence_number": 4, "code": "boom", "message": "Boom.", "param": None}
    validate_openai_event(flat)
    assert load_event(flat).to_json(OPENAI) == flat


def test_usage_in_each_dialect() -> None:
    usage = Usage(input_tokens=3, output_tokens=4, reasoning_tokens=1, cached_tokens=2)
    assert usage.to_json() == {
        "input_tokens": 3,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 4,
        "output_tokens_details": {"reasoning_tokens": 1},
        "total_tokens": 7,
    }
    assert usage.to_json(OPENAI)["input_tokens_details"] == {"cached_tokens": 2, "cache_write_tokens": 0}


def test_only_the_reasoning_events_and_the_error_differ() -> None:
    request = parse_request({"model": "m", "input": "hi"})
    stream = EventBuilder(ResponseState("resp_1", request, "m"))
    events = events_of_every_kind() + stream.begin() + stream.feed(completion(ANSWER)) + stream.finish("stop")
    differ = {e.type for e in events if e.to_json(OPENRESPONSES) != e.to_json(OPENAI)}
    assert differ == {
        "response.reasoning.delta",
        "response.reasoning.done",
        "error",
        # their snapshots' usage: OpenAI's cache_write_tokens
        "response.completed",
        "response.failed",
    }


def test_events_are_frozen() -> None:
    for event in events_of_every_kind():
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.sequence_number = 0  # type: ignore[misc]
    delta = OutputTextDelta(1, "msg_1", 0, 0, "hi")
    assert delta == OutputTextDelta(1, "msg_1", 0, 0, "hi", ())
    assert load_event(delta.to_json()) == delta
