"""The state machine: one handler per state in a table, run until one needs more text;
driven directly, state by state."""

from __future__ import annotations

import inspect

import pytest
from hand_formats import FORMATS

from openchatml.templates.format import ReasoningFormat, ReasoningMode, TemplateFormat
from openchatml.templates.parsing import ParseOptions
from openchatml.templates.parsing.deltas import ContentText, ToolArgumentsText, ToolCallStarted
from openchatml.templates.parsing.machine import HANDLERS, Machine
from openchatml.templates.parsing.plan import compile_plan
from openchatml.templates.parsing.states import CALL_STATES, State

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
)


DEFAULTS = ParseOptions()


def machine(family: str | TemplateFormat, options: ParseOptions = DEFAULTS) -> Machine:
    fmt = FORMATS[family] if isinstance(family, str) else family
    return Machine(compile_plan(fmt, options.extract_reasoning, options.json_schema is not None), options)


def run(m: Machine, text: str, final: bool = False) -> Machine:
    m.buf += text
    m.run(final)
    return m


def test_every_state_has_one_handler() -> None:
    assert list(HANDLERS) == list(State)
    for handler in HANDLERS.values():
        assert list(inspect.signature(handler).parameters) == ["m", "final"]


def test_the_call_states() -> None:
    assert State.HEADER in CALL_STATES and State.ARG_VALUE in CALL_STATES
    assert State.CALL_END not in CALL_STATES and State.SECTION not in CALL_STATES


def test_the_first_state() -> None:
    assert machine("qwen3.5").state is State.CONTENT
    delimited = TemplateFormat(
        reasoning=ReasoningFormat(ReasoningMode.DELIMITER, "", "[BEGIN FINAL RESPONSE]")
    )
    assert machine(delimited).state is State.REASONING


def test_a_handler_that_needs_more_text_stops_the_machine() -> None:
    m = run(machine("qwen3.5"), "Hi <tool_ca")
    assert (m.state, m.pos, m.out) == (State.CONTENT, 3, [ContentText("Hi ")])


def test_states_follow_the_text() -> None:
    m = machine("qwen3.5", ParseOptions(tools=TOOLS))
    run(m, "Sure.<think>x")
    assert (m.state, m.reasoning, m.content) == (State.HELD_CONTENT, [], ["Sure."])
    run(m, "</think>Hi")
    assert (m.state, m.reasoning, m.content) == (State.CONTENT, ["x"], ["Sure.", "Hi"])
    run(m, "<tool_call>\n<function=get_weather>\n")
    assert m.state is State.HEADER  # the name ends where the arguments begin
    run(m, "<parameter=city>\nPar")
    assert m.state is State.ARG_VALUE
    assert m.argument is not None and (m.argument.name, m.argument.mode) == ("city", "string")
    run(m, "is\n</parameter>\n</function>\n</tool_call>")
    assert m.state is State.SECTION and m.call is None
    run(m, "<|im_end|>")
    assert m.state is State.DONE
    assert [d for d in m.out if not isinstance(d, ToolArgumentsText)][-1] == ToolCallStarted(
        0, "get_weather", ""
    )
    assert "".join(d.text for d in m.out if isinstance(d, ToolArgumentsText)) == '{"city": "Paris"}'


def test_held_reasoning_is_released_at_the_end() -> None:
    m = run(machine("qwen3.5", ParseOptions(prefix="<think>\n")), "<think>\nmaybe <tool_call>\n<funct")
    assert m.state is State.HELD_REASONING
    assert m.reasoning == ["\nmaybe "]
    m.finish()
    assert [w.code for w in m.warnings] == ["W-REASONING-OPEN", "W-TRUNCATED"]
    assert m.state is State.HEADER


def test_a_handler_that_never_settles_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(HANDLERS, State.CONTENT, lambda m, final: True)
    m = machine("hermes")
    m.buf = "text"
    with pytest.raises(RuntimeError, match="did not settle"):
        m.run(False)


def test_recover_keeps_the_rest_as_content() -> None:
    m = machine("hermes")
    m.buf, m.pos, m.state = "ab<tool_call>x", 2, State.HEADER
    m.recover(ValueError("boom"))
    assert (m.state, m.pos, m.content, m.out) == (
        State.CONTENT,
        14,
        ["<tool_call>x"],
        [ContentText("<tool_call>x")],
    )
    assert [(w.code, w.message) for w in m.warnings] == [
        ("W-INTERNAL", "parser error ValueError: boom; the rest is kept as content")
    ]


def test_what_the_prefix_holds_is_no_delta() -> None:
    m = machine("hermes")
    m.muted = True
    run(m, "Hello")
    assert m.content == ["Hello"] and m.out == []


def test_a_warning_is_given_once_per_call() -> None:
    m = machine("hermes")
    m.warn("W-STRAY", "dropped", 0)
    m.warn("W-STRAY", "dropped", 5)
    assert [(w.code, w.offset) for w in m.warnings] == [("W-STRAY", 0)]
