"""The deltas: one frozen, slotted class per kind, checked when a caller builds one, built
unchecked (and equal) by the parsers."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

from openchatml.templates.parsing import deltas
from openchatml.templates.parsing.deltas import (
    ContentText,
    Delta,
    ReasoningText,
    ToolArgumentsText,
    ToolCallIdentified,
    ToolCallStarted,
)

EXAMPLES: list[Delta] = [
    ContentText("Hi"),
    ReasoningText("hmm"),
    ToolCallStarted(0, "get_weather", "call_1"),
    ToolArgumentsText(0, '{"city": '),
    ToolCallIdentified(0, "call_1"),
]


def test_the_union_names_every_kind_once() -> None:
    assert set(get_args(Delta)) == {type(d) for d in EXAMPLES}
    assert len(get_args(Delta)) == len(EXAMPLES)


@pytest.mark.parametrize("delta", EXAMPLES, ids=lambda d: type(d).__name__)
def test_deltas_are_frozen_and_slotted(delta: Delta) -> None:
    field = dataclasses.fields(delta)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(delta, field, "changed")
    assert not hasattr(delta, "__dict__")
    assert delta == dataclasses.replace(delta)
    assert hash(delta) == hash(dataclasses.replace(delta))


@pytest.mark.parametrize("kind", [ToolCallStarted, ToolArgumentsText, ToolCallIdentified])
def test_a_tool_delta_built_by_a_caller_needs_a_call_index(kind: type[Delta]) -> None:
    with pytest.raises(ValueError, match="index"):
        kind(-1, "x")  # type: ignore[call-arg]


def test_the_parsers_builders_give_equal_deltas() -> None:
    built = [
        deltas.content_text("Hi"),
        deltas.reasoning_text("hmm"),
        deltas.tool_call_started(0, "get_weather", "call_1"),
        deltas.tool_arguments_text(0, '{"city": '),
        deltas.tool_call_identified(0, "call_1"),
    ]
    assert built == EXAMPLES
    assert [type(d) for d in built] == [type(d) for d in EXAMPLES]
    assert [hash(d) for d in built] == [hash(d) for d in EXAMPLES]


def test_the_parsers_builders_skip_the_check() -> None:
    assert deltas.tool_arguments_text(-1, "x").index == -1


def test_a_consumer_matches_on_the_classes() -> None:
    def describe(delta: Delta) -> str:
        match delta:
            case ContentText(text=text):
                return f"answer {text}"
            case ReasoningText(text=text):
                return f"thought {text}"
            case ToolCallStarted(index=index, name=name):
                return f"call {index} {name}"
            case ToolArgumentsText(index=index, text=text):
                return f"arguments {index} {text}"
            case ToolCallIdentified(index=index, id=id):
                return f"id {index} {id}"

    assert [describe(d) for d in EXAMPLES] == [
        "answer Hi",
        "thought hmm",
        "call 0 get_weather",
        'arguments 0 {"city": ',
        "id 0 call_1",
    ]


def test_every_kind_has_its_own_name_for_json() -> None:
    assert set(deltas.KIND_NAMES) == set(get_args(Delta))
    assert sorted(deltas.KIND_NAMES.values()) == [
        "content",
        "reasoning",
        "tool_arguments",
        "tool_call",
        "tool_id",
    ]
