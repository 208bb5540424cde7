"""Parser events: immutable values, one kind per thing that happens, in the order a
message makes them."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from openchatml import (
    Author,
    ContentDelta,
    ControlToken,
    DocumentHeader,
    Event,
    Header,
    Message,
    MessageDone,
    MessageStarted,
    Repaired,
    RepairKind,
    Role,
    StreamParser,
    TranscriptHeader,
)
from openchatml.core.errors import Position

A = Author(Role.ASSISTANT)
EVENTS: list[Event] = [
    DocumentHeader(TranscriptHeader(model="m")),
    MessageStarted(0, Header(A, "final")),
    ContentDelta(0, "final", "hi"),
    MessageDone(0, Message.assistant("hi"), ControlToken.RETURN),
    Repaired(RepairKind.STRAY_TEXT, "E-PARSE-UNEXPECTED-TOKEN", "dropped", Position(3)),
]


def test_event_union_names_every_event_class() -> None:
    assert set(typing.get_args(Event)) == {type(e) for e in EVENTS}


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_events_are_frozen_slotted_values(event: Event) -> None:
    field = dataclasses.fields(event)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, field, None)
    assert not hasattr(event, "__dict__")
    assert dataclasses.replace(event) == event


def test_header_defaults_say_nothing_beyond_the_author() -> None:
    header = Header(A)
    assert (header.channel, header.recipient, header.content_type, header.call_id, header.intent) == (
        None,
    ) * 5
    assert header.constrained is False
    assert Header(A, "final") != Header(A, "analysis")


def test_repair_kinds_are_stable_wire_words() -> None:
    assert {k.value for k in RepairKind} == {
        "stray_text", "missing_start", "missing_end", "broken_header", "header_without_body",
        "unknown_attribute", "stray_control", "channel_missing", "constraint_violation",
        "truncated", "invalid_utf8", "call_id", "misrouted_call", "unknown_channel",
        "unknown_intent", "missing_stop", "missing_document_header",
    }  # fmt: skip
    assert RepairKind("truncated") is RepairKind.TRUNCATED


def test_a_message_reports_started_deltas_done_in_order() -> None:
    parser = StreamParser()
    events = [
        *parser.feed_text("<|start|>assistant<|channel|>final<|message|>Hel"),
        *parser.feed_text("lo<|return|>"),
        *parser.close(),
    ]
    header = Header(A, "final")
    assert events == [
        MessageStarted(0, header),
        ContentDelta(0, "final", "Hel"),
        ContentDelta(0, "final", "lo"),
        MessageDone(0, Message.assistant("Hello"), ControlToken.RETURN),
    ]


def test_a_cut_message_is_done_without_a_terminator() -> None:
    parser = StreamParser(Role.ASSISTANT, allow_truncated=True)
    events = [*parser.feed_text("<|channel|>analysis<|message|>thinking"), *parser.close()]
    assert events[-1] == MessageDone(0, Message.assistant("thinking", channel="analysis"), None)


def test_a_lenient_repair_is_an_event_with_its_code_and_position() -> None:
    parser = StreamParser(strict=False)
    text = "<|start|>user<|message|>hi<|end|>junk<|start|>user<|message|>yo<|end|>"
    events = [*parser.feed_text(text), *parser.close()]
    [repair] = [e for e in events if isinstance(e, Repaired)]
    assert (repair.kind, repair.code) == (RepairKind.STRAY_TEXT, "E-PARSE-UNEXPECTED-TOKEN")
    assert repair.position is not None and repair.position.offset == text.index("junk")
    assert [e.message.text for e in events if isinstance(e, MessageDone)] == ["hi", "yo"]
