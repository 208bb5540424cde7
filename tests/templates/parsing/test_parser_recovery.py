"""Malformed and cut-off output: the parser recovers a message, says what it did with a
typed warning, and never raises. A partial parse reports what is certain and warns of
nothing; a finished one closes what was left open into valid JSON."""

from __future__ import annotations

import json
from typing import Any

from hand_formats import FORMATS

from openchatml.templates.parsing import ParsedMessage, ParseOptions, TemplateParser, parse_output


def tool(name: str, **props: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": props}},
    }


TOOLS = (tool("get_weather", city={"type": "string"}, days={"type": "integer"}),)


def codes(message: ParsedMessage) -> list[str]:
    return [w.code for w in message.warnings]


def test_a_cut_off_tagged_call_is_closed_and_warned_of() -> None:
    text = "<tool_call>\n<function=get_weather>\n<parameter=days>\n4\n</parameter>\n<parameter=city>\nPar"
    msg = parse_output(FORMATS["qwen3.5"], text, ParseOptions(tools=TOOLS))
    assert json.loads(msg.tool_calls[0].arguments) == {"days": 4, "city": "Par"}
    assert codes(msg) == ["W-TRUNCATED"]


def test_a_partial_parse_reports_the_raw_arguments_so_far() -> None:
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"
    msg = parse_output(FORMATS["qwen3.5"], text, ParseOptions(tools=TOOLS, partial=True))
    assert msg.tool_calls[0].arguments == '{"city": "Par'
    assert msg.warnings == ()
    text = '<|tool_call_start|>[get_weather(city="Paris", days='
    msg = parse_output(FORMATS["lfm2"], text, ParseOptions(tools=TOOLS, partial=True))
    assert msg.tool_calls[0].arguments == '{"city": "Paris", "days": '


def test_a_partial_parse_leaves_out_what_may_be_a_marker() -> None:
    msg = parse_output(FORMATS["hermes"], "Hello <tool_ca", ParseOptions(partial=True))
    assert msg.content == "Hello "
    msg = parse_output(FORMATS["hermes"], "Hello <tool_ca")
    assert msg.content == "Hello <tool_ca"


def test_cut_off_json_calls_close_into_json() -> None:
    msg = parse_output(FORMATS["hermes"], '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa')
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Pa"}
    assert codes(msg) == ["W-TRUNCATED"]
    msg = parse_output(
        FORMATS["cohere2"], '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
    )
    assert (msg.tool_calls[0].name, msg.tool_calls[0].arguments, msg.tool_calls[0].id) == (
        "get_weather",
        "{}",
        "0",
    )
    msg = parse_output(FORMATS["lfm2"], "<|tool_call_start|>[get_weather(city='Par")
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Par"}


def test_unclosed_reasoning_is_warned_of() -> None:
    msg = parse_output(FORMATS["qwen3.5"], "still thinking", ParseOptions(prefix="<think>\n"))
    assert msg.reasoning == "\nstill thinking"
    assert codes(msg) == ["W-TRUNCATED"]
    msg = parse_output(FORMATS["qwen3.5"], "still thinking", ParseOptions(prefix="<think>\n", partial=True))
    assert msg.warnings == ()


def test_arguments_that_are_not_json_are_repaired() -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"'
        'city": "Paris", oops oops, "days": 3}}\n</tool_call>'
    )
    msg = parse_output(FORMATS["hermes"], text, ParseOptions(tools=TOOLS))
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Paris", "oops": "oops", "days": 3}


def test_a_call_whose_arguments_run_into_its_end_marker() -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"<|tool_call_end|><|tool_calls_section_end|>after'
    )
    msg = parse_output(FORMATS["kimi-k2"], text, ParseOptions(tools=TOOLS))
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Paris"}
    assert msg.content == "after"
    assert codes(msg) == ["W-TOOL-ARGS"]


def test_a_parameter_that_is_never_closed() -> None:
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>"
    msg = parse_output(FORMATS["qwen3.5"], text, ParseOptions(tools=TOOLS))
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Paris"}
    assert codes(msg) == ["W-TOOL-ARGS"]


def test_a_call_to_a_tool_not_offered() -> None:
    msg = parse_output(
        FORMATS["hermes"],
        '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>',
        ParseOptions(tools=TOOLS),
    )
    assert [c.name for c in msg.tool_calls] == ["nope"]
    assert codes(msg) == ["W-TOOL-UNKNOWN"]
    msg = parse_output(FORMATS["hermes"], '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>')
    assert msg.warnings == ()  # no tools offered: nothing to hold it to


def test_a_call_without_a_name() -> None:
    msg = parse_output(FORMATS["hermes"], '<tool_call>\n{"arguments": {"a": 1}}\n</tool_call>')
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("", '{"a": 1}')]
    assert codes(msg) == ["W-TOOL-CALL"]


def test_stray_markers_are_dropped() -> None:
    msg = parse_output(FORMATS["qwen3.5"], "Hello</think> world")
    assert msg.content == "Hello world"
    assert codes(msg) == ["W-STRAY"]
    msg = parse_output(FORMATS["gemma4"], "<|channel><|channel>thought\n<channel|>Hi")
    assert (msg.reasoning, msg.content) == ("\n", "Hi")
    assert codes(msg) == ["W-STRAY"]


def test_a_call_start_with_no_call_after_it() -> None:
    text = "Look: [TOOL_CALLS]" + "x" * 2000
    msg = parse_output(FORMATS["mistral-small-3.2"], text)
    assert msg.content == "Look: " + "x" * 2000
    assert codes(msg) == ["W-MARKER"]


def test_a_section_left_open() -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f"
        ":0<|tool_call_argument_begin|>{}<|tool_call_end|>Then text."
    )
    msg = parse_output(FORMATS["kimi-k2"], text)
    assert [c.name for c in msg.tool_calls] == ["f"]
    assert msg.content == "Then text."
    assert codes(msg) == ["W-TOOL-CALL"]


def test_warning_offsets_count_from_the_output_not_the_prefix() -> None:
    msg = parse_output(FORMATS["qwen3.5"], "ab</think>c</think>", ParseOptions(prefix="<think>\n"))
    assert [(w.code, w.offset) for w in msg.warnings] == [("W-STRAY", 11)]


def test_a_parser_feeding_nothing() -> None:
    parser = TemplateParser(FORMATS["qwen3.5"])
    assert parser.feed("") == []
    assert parser.finish() == []
    assert parser.message == ParsedMessage()
