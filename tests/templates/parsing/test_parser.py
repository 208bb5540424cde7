"""The parser generated from a TemplateFormat, with formats written by hand
(``hand_formats.py``): the parse cases of the real templates, every family's syntax, and
streaming — fed whole, one character at a time, split in two anywhere or cut at random, a
parse gives the same message, and its deltas add up to it.

The cases are read from ``tests/templates/data/template-parse-cases.json`` (or
``$OPENCHATML_CASES``, see ``data_paths.py``); their tests are skipped when it is missing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest
from data_paths import CASES as CASES_FILE
from hand_formats import BY_TEMPLATE, FORMATS, ROLE_HEADERS
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml import Role
from openchatml.templates.errors import UnsupportedTemplateError
from openchatml.templates.format import (
    CallIdPosition,
    ReasoningFormat,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)
from openchatml.templates.parsing import (
    ContentText,
    Delta,
    ParsedMessage,
    ParseOptions,
    ReasoningText,
    TemplateParser,
    ToolArgumentsText,
    ToolCall,
    ToolCallIdentified,
    ToolCallStarted,
    parse_output,
)
from openchatml.templates.parsing.machine import HANDLERS, Machine
from openchatml.templates.parsing.states import State

ALL_CASES: list[dict[str, Any]] = (
    json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"] if CASES_FILE.is_file() else []
)
CASES = [c for c in ALL_CASES if not FORMATS[BY_TEMPLATE[c["template"]]].harmony]
DEFAULT = ParseOptions()

# --- feeding a parser ------------------------------------------------------------------------


def stream(
    fmt: TemplateFormat, pieces: Sequence[str], options: ParseOptions = DEFAULT
) -> tuple[ParsedMessage, list[Delta], ParsedMessage]:
    """Feed ``pieces``; the message, the deltas, and the message the prefix alone gave."""
    parser = TemplateParser(fmt, options)
    start = parser.message
    deltas: list[Delta] = []
    for piece in pieces:
        deltas += parser.feed(piece)
    deltas += parser.finish()
    return parser.message, deltas, start


def check_deltas(start: ParsedMessage, deltas: Sequence[Delta], final: ParsedMessage) -> None:
    """The deltas, after what the prefix held, make up the final message."""
    assert start.content + "".join(d.text for d in deltas if isinstance(d, ContentText)) == final.content
    assert (
        start.reasoning + "".join(d.text for d in deltas if isinstance(d, ReasoningText)) == final.reasoning
    )
    arguments: dict[int, str] = {}
    for d in deltas:
        if isinstance(d, ContentText | ReasoningText | ToolArgumentsText):
            assert d.text, "an empty delta"
        if isinstance(d, ToolCallStarted):
            assert d.index not in arguments, "a call begun twice"
            arguments[d.index] = ""
        elif isinstance(d, ToolArgumentsText):
            assert d.index in arguments, "arguments before their call"
            arguments[d.index] += d.text
    for index, call in enumerate(final.tool_calls):
        if index >= len(start.tool_calls):
            assert arguments.get(index) == call.arguments


def check_streams(fmt: TemplateFormat, text: str, options: ParseOptions = DEFAULT) -> ParsedMessage:
    """Whole, character by character, and split in two anywhere: the same message."""
    whole = parse_output(fmt, text, options)
    by_char, deltas, start = stream(fmt, list(text), options)
    assert by_char == whole
    check_deltas(start, deltas, by_char)
    for cut in range(len(text) + 1):
        split, deltas, start = stream(fmt, [text[:cut], text[cut:]], options)
        assert split == whole, f"split at {cut}: {text[:cut]!r} | {text[cut:]!r}"
        check_deltas(start, deltas, split)
    return whole


def tool(name: str, **props: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": props}},
    }


WEATHER = tool(
    "get_weather",
    city={"type": "string"},
    days={"type": "integer"},
    metric={"type": "boolean"},
    opts={"type": "object"},
    zip={"type": "string"},
)
TOOLS = (WEATHER,)


def calls(message: ParsedMessage) -> list[tuple[str, Any, str]]:
    return [(c.name, json.loads(c.arguments), c.id) for c in message.tool_calls]


# --- the parse cases -------------------------------------------------------------------------


def case_options(case: dict[str, Any]) -> ParseOptions:
    """The options of a case; the prefix is its reference generation prompt after the role header."""
    options = case["options"]
    prompt = case["reference_params"]["generation_prompt"]
    header = ROLE_HEADERS[case["template"]]
    return ParseOptions(
        tools=tuple(options["tools"]),
        extract_reasoning=options["reasoning_format"] != "none",
        prefix=prompt[len(header) :] if prompt.startswith(header) else "",
        partial=options["is_partial"],
        json_schema=options["json_schema"],
    )


def same_arguments(got: str, want: str) -> bool:
    try:
        return bool(json.loads(got) == json.loads(want))
    except ValueError:
        return got == want


@pytest.mark.skipif(not CASES, reason=f"no cases at {CASES_FILE}")
@pytest.mark.parametrize("case", CASES, ids=[f"{c['id']}-{c['template']}" for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    fmt = FORMATS[BY_TEMPLATE[case["template"]]]
    got = check_streams(fmt, case["input"], case_options(case))
    want = case["expected"]
    assert got.content.strip() == want["content"].strip()
    assert got.reasoning.strip() == want["reasoning_content"].strip()
    assert len(got.tool_calls) == len(want["tool_calls"])
    for call, expected in zip(got.tool_calls, want["tool_calls"], strict=True):
        assert call.name == expected["name"]
        assert same_arguments(call.arguments, expected["arguments"]), (call.arguments, expected["arguments"])
        if expected.get("id"):
            assert call.id == expected["id"]


@pytest.mark.skipif(not CASES, reason=f"no cases at {CASES_FILE}")
def test_every_case_template_has_a_hand_format() -> None:
    assert {c["template"] for c in ALL_CASES} <= set(BY_TEMPLATE)


# --- the families ------------------------------------------------------------------------------


def test_qwen_tagged_arguments_typed_by_schema() -> None:
    text = (
        "I'm\nthinking\n</think>\n\nLet me look.\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "<parameter=zip>\n007\n</parameter>\n<parameter=opts>\n{'units': None}\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    msg = check_streams(FORMATS["qwen3.5"], text, ParseOptions(tools=TOOLS, prefix="<think>\n"))
    assert msg.reasoning.strip() == "I'm\nthinking"
    assert msg.content.strip() == "Let me look."
    assert calls(msg) == [
        ("get_weather", {"city": "Paris", "days": 3, "zip": "007", "opts": {"units": None}}, "")
    ]
    assert not msg.warnings


def test_qwen_string_values_keep_their_inner_lines() -> None:
    text = (
        "<tool_call>\n<function=python>\n<parameter=code>\n\n"
        "  x = 1\n\n\n</parameter>\n</function>\n</tool_call>"
    )
    msg = check_streams(
        FORMATS["qwen3-coder"], text, ParseOptions(tools=(tool("python", code={"type": "string"}),))
    )
    assert calls(msg) == [("python", {"code": "\n  x = 1\n\n"}, "")]


def test_glm_keys_and_values() -> None:
    text = (
        "<think>hmm</think>Sure<tool_call>get_weather\n<arg"
        "_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>metric</arg_key>\n<arg_value>true</arg_value>\n</tool_call>"
    )
    msg = check_streams(FORMATS["glm-4.6"], text, ParseOptions(tools=TOOLS))
    assert (msg.reasoning, msg.content) == ("hmm", "Sure")
    assert calls(msg) == [("get_weather", {"city": "Paris", "metric": True}, "")]


def test_minimax_invokes() -> None:
    text = (
        '<think>\nplan\n</think>\n\nChecking.\n<minimax:tool_call>\n<invoke name="get_weather">\n'
        '<parameter name="city">Paris</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n'
        '<invoke name="get_weather">\n<parameter name="opts">{"x": [1, 2]}</parameter>\n</invoke>\n'
        "</minimax:tool_call>"
    )
    msg = check_streams(FORMATS["minimax-m2"], text, ParseOptions(tools=TOOLS))
    assert msg.reasoning.strip() == "plan"
    assert calls(msg) == [
        ("get_weather", {"city": "Paris", "days": 3}, ""),
        ("get_weather", {"opts": {"x": [1, 2]}}, ""),
    ]


def test_dsml_string_attribute_says_how_a_value_is_written() -> None:
    text = (
        'ok</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="opts" string="false">{"a": 1}</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="zip" string="true">12345</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">-14</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    )
    msg = check_streams(FORMATS["deepseek-v3.2"], text, ParseOptions(tools=TOOLS, prefix="<think>"))
    assert msg.reasoning == "ok"
    assert calls(msg) == [("get_weather", {"opts": {"a": 1}, "zip": "12345", "days": -14}, "")]


def test_minicpm_values_in_cdata() -> None:
    text = (
        '<function name="html"><param name="markup"><![CDATA[<a href="/x">hi</a> </param>]]>'
        "</param></function>"
    )
    msg = check_streams(
        FORMATS["minicpm5"], text, ParseOptions(tools=(tool("html", markup={"type": "string"}),))
    )
    assert calls(msg) == [("html", {"markup": '<a href="/x">hi</a> </param>'}, "")]


def test_kimi_ids_name_the_call() -> None:
    text = (
        "<think>x</think>Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_call_begin|>'
        'functions.get_weather:1<|tool_call_argument_begin|>{"city": "Rome"}<|tool_call_end|>'
        "<|tool_calls_section_end|>"
    )
    msg = check_streams(FORMATS["kimi-k2"], text, ParseOptions(tools=TOOLS))
    assert msg.content == "Sure."
    assert calls(msg) == [
        ("get_weather", {"city": "Paris"}, "functions.get_weather:0"),
        ("get_weather", {"city": "Rome"}, "functions.get_weather:1"),
    ]


def test_mistral_call_ids_between_name_and_arguments() -> None:
    text = '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}'
    msg = check_streams(FORMATS["mistral-small-3.2"], text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "a1B2c3D4e")]


def test_mistral_nemo_ids_after_the_arguments_arrive_as_tool_id_deltas() -> None:
    text = (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}, '
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}", "id": "xyz987uvw"}]'
    )
    msg = check_streams(FORMATS["mistral-nemo"], text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [
        ("get_weather", {"city": "Paris"}, "abc123def"),
        ("get_weather", {"city": "Rome"}, "xyz987uvw"),
    ]
    _, deltas, _ = stream(FORMATS["mistral-nemo"], list(text), ParseOptions(tools=TOOLS))
    assert [d for d in deltas if isinstance(d, ToolCallStarted | ToolCallIdentified)] == [
        ToolCallStarted(0, "get_weather", ""),
        ToolCallIdentified(0, "abc123def"),
        ToolCallStarted(1, "get_weather", ""),
        ToolCallIdentified(1, "xyz987uvw"),
    ]


def test_cohere_actions_and_wrapped_text() -> None:
    fmt = FORMATS["cohere2"]
    text = (
        "I'm thinking<|END_THINKING|><|START_TEXT|>Let me check.<|END_TEXT|><|START_ACTION|>[\n"
        '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n'
        "]<|END_ACTION|>"
    )
    msg = check_streams(fmt, text, ParseOptions(tools=TOOLS, prefix="<|START_THINKING|>"))
    assert (msg.reasoning, msg.content) == ("I'm thinking", "Let me check.")
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "0")]


def test_command_r_plus_action_block_and_a_repeated_role_header() -> None:
    fmt = FORMATS["command-r-plus"]
    msg = check_streams(fmt, "<|CHATBOT_TOKEN|>Hello!<|END_OF_TURN_TOKEN|>")
    assert msg.content == "Hello!"
    assert [w.code for w in msg.warnings] == ["W-STRAY"]
    text = (
        'I will search.\nAction:\n```json\n[{"tool_name": "g'
        'et_weather", "parameters": {"city": "Paris"}}]\n```'
    )
    msg = check_streams(fmt, text, ParseOptions(tools=TOOLS))
    assert msg.content.strip() == "I will search."
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "")]


def test_apertus_names_as_keys() -> None:
    text = (
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}'
        ', {"get_weather": {"city": "Rome"}}]<|tools_suffix|>'
    )
    msg = check_streams(FORMATS["apertus"], text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [("get_weather", {"city": "Paris"}, ""), ("get_weather", {"city": "Rome"}, "")]


def test_granite_response_wrapper() -> None:
    msg = check_streams(
        FORMATS["granite-3.3"], "<think>thinking here</think><response>The answer.</response>"
    )
    assert (msg.reasoning, msg.content) == ("thinking here", "The answer.")


def test_llama_bare_json_is_a_call_only_when_it_is_one() -> None:
    fmt = FORMATS["llama3.1"]
    msg = check_streams(
        fmt, ' {"name": "get_weather", "parameters": {"city": "Paris"}}', ParseOptions(tools=TOOLS)
    )
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "")]
    assert msg.content == ""
    msg = check_streams(fmt, '{"answer": 42}', ParseOptions(tools=TOOLS))
    assert (msg.content, msg.tool_calls) == ('{"answer": 42}', ())
    msg = check_streams(fmt, "[1, 2] is a list", ParseOptions(tools=TOOLS))
    assert (msg.content, msg.tool_calls) == ("[1, 2] is a list", ())


def test_functionary_recipients() -> None:
    fmt = FORMATS["functionary-v3.2"]
    text = 'all\nLet me see>>>get_weather\n{"city": "Paris"}>>>get_weather\n{"city": "Rome"}'
    msg = check_streams(fmt, text, ParseOptions(tools=TOOLS, prefix=">>>"))
    assert msg.content == "Let me see"
    assert calls(msg) == [("get_weather", {"city": "Paris"}, ""), ("get_weather", {"city": "Rome"}, "")]
    msg = check_streams(fmt, "allocate\n{}", ParseOptions(prefix=">>>"))  # a tool named like "all…"
    assert [c.name for c in msg.tool_calls] == ["allocate"]
    msg = check_streams(FORMATS["functionary-v3.1"], 'Hi <function=get_weather>{"city": "Paris"}</function>')
    assert msg.content == "Hi "
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "")]


def test_lfm2_pythonic_calls() -> None:
    text = (
        "<|tool_call_start|>[get_weather(\"Paris\", days=3, opts={'a': True, 'b': None, 'c': (1, 2)}), "
        "get_weather(city='Rome')]<|tool_call_end|>"
    )
    msg = check_streams(FORMATS["lfm2"], text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [
        ("get_weather", {"city": "Paris", "days": 3, "opts": {"a": True, "b": None, "c": [1, 2]}}, ""),
        ("get_weather", {"city": "Rome"}, ""),
    ]


def test_gemma_object_notation() -> None:
    text = (
        '<|channel>thought\nlet me think<channel|>Ok<|tool_call>call:get_weather{city:<|"|>Paris, "FR"<|"|>,'
        'opts:{deep:{a:[1,2,<|"|>x<|"|>]},b:true},days:3}<tool_call|>'
    )
    msg = check_streams(FORMATS["gemma4"], text, ParseOptions(tools=TOOLS))
    assert (msg.reasoning.strip(), msg.content) == ("let me think", "Ok")
    assert calls(msg) == [
        (
            "get_weather",
            {"city": 'Paris, "FR"', "opts": {"deep": {"a": [1, 2, "x"]}, "b": True}, "days": 3},
            "",
        )
    ]


def test_reasoning_in_the_middle_of_the_answer_is_read_once_it_closes() -> None:
    fmt = FORMATS["gemma4"]
    msg = check_streams(fmt, "<|channel>thought\n<channel|>Hi<|channel>thought\nmore<channel|> there")
    assert (msg.reasoning, msg.content) == ("\n\nmore", "Hi there")
    msg = check_streams(FORMATS["qwen3.5"], "Use <think> tags to think.")
    assert (msg.reasoning, msg.content) == ("", "Use <think> tags to think.")


def test_a_tool_call_inside_reasoning_is_reasoning_if_the_reasoning_closes() -> None:
    fmt = FORMATS["qwen3.5"]
    inner = (
        "<tool_call>\n<function=get_weather>\n<parameter=ci"
        "ty>\nParis\n</parameter>\n</function>\n</tool_call>"
    )
    msg = check_streams(
        fmt, f"maybe {inner}\n</think>\n\nNo call.", ParseOptions(tools=TOOLS, prefix="<think>\n")
    )
    assert msg.reasoning == f"\nmaybe {inner}\n"
    assert (msg.content.strip(), msg.tool_calls) == ("No call.", ())
    msg = check_streams(fmt, f"maybe {inner}", ParseOptions(tools=TOOLS, prefix="<think>\n"))
    assert msg.reasoning == "\nmaybe "
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "")]
    assert [w.code for w in msg.warnings] == ["W-REASONING-OPEN"]


def test_reasoning_left_in_the_content_when_not_extracted() -> None:
    options = ParseOptions(prefix="<think>\n", extract_reasoning=False)
    msg = check_streams(FORMATS["qwen3.5"], "I think</think>\n\nAnswer", options)
    assert (msg.reasoning, msg.content) == ("", "<think>\nI think</think>\n\nAnswer")


def test_a_json_answer_loses_its_fence() -> None:
    options = ParseOptions(json_schema={"type": "object"})
    msg = check_streams(FORMATS["devstral"], '[THINK]plan[/THINK]```json\n{"a": 1}\n```', options)
    assert (msg.reasoning, msg.content.strip()) == ("plan", '{"a": 1}')
    msg = check_streams(FORMATS["devstral"], "A ```json\nfence``` in text", options)
    assert msg.content == "A ```json\nfence``` in text"


def test_end_of_turn_markers_end_the_message() -> None:
    msg = check_streams(FORMATS["hermes"], "Hello.<|im_end|>\n<|im_start|>user\nmore")
    assert msg.content == "Hello."
    assert [w.code for w in msg.warnings] == ["W-STRAY"]


# --- deltas ---------------------------------------------------------------------------------------


def test_the_prefix_is_in_the_message_but_not_in_the_deltas() -> None:
    fmt = FORMATS["qwen3.5"]
    options = ParseOptions(prefix="<think>\nI'm thinking\n</think>\n\nHello, ")
    msg, deltas, start = stream(fmt, ["world", "!"], options)
    assert (start.reasoning, start.content) == ("\nI'm thinking\n", "\n\nHello, ")
    assert (msg.reasoning, msg.content) == ("\nI'm thinking\n", "\n\nHello, world!")
    assert deltas == [ContentText("world"), ContentText("!")]


def test_no_piece_of_a_marker_is_ever_shown() -> None:
    fmt = FORMATS["kimi-k2"]
    text = (
        "Hi <|tool_c <|tool_calls_section_begin|><|tool_call"
        "_begin|>functions.f:0<|tool_call_argument_begin|>{}"
    )
    parser = TemplateParser(fmt)
    shown = ""
    for char in text:
        for d in parser.feed(char):
            if isinstance(d, ContentText):
                shown += d.text
                assert "<|tool_calls" not in shown
    parser.finish()
    assert parser.message.content == shown == "Hi <|tool_c "


def test_a_call_is_announced_once_with_its_name_then_its_arguments_stream() -> None:
    fmt = FORMATS["qwen3.5"]
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n"
        "San Francisco\n</parameter>\n</function>\n</tool_call>"
    )
    _, deltas, _ = stream(fmt, list(text), ParseOptions(tools=TOOLS))
    assert deltas[0] == ToolCallStarted(0, "get_weather", "")
    assert all(isinstance(d, ToolArgumentsText) and d.index == 0 for d in deltas[1:])
    assert len(deltas) > 10  # the string value streamed as it came


def test_to_messages() -> None:
    msg = ParsedMessage(
        content="\nThe answer.\n",
        reasoning=" thought ",
        tool_calls=(ToolCall("f", '{"a": 1}', "call_1"), ToolCall("g", "{}")),
    )
    ids = iter(["gen_1"])
    out = msg.to_messages(call_id=lambda: next(ids))
    assert [(m.channel, m.recipient, m.text, m.call_id) for m in out] == [
        ("analysis", None, "thought", None),
        ("final", None, "The answer.", None),
        ("commentary", "functions.f", '{"a": 1}', "call_1"),
        ("commentary", "functions.g", "{}", "gen_1"),
    ]
    assert all(m.role is Role.ASSISTANT for m in out)
    assert ParsedMessage(content="  \n").to_messages() == []


def test_harmony_formats_go_to_the_core_codec() -> None:
    with pytest.raises(UnsupportedTemplateError):
        TemplateParser(FORMATS["gpt-oss"])


def test_after_finish_nothing_is_read() -> None:
    parser = TemplateParser(FORMATS["hermes"])
    parser.feed("Hi")
    parser.finish()
    assert parser.feed("more") == []
    assert parser.finish() == []
    assert parser.message.content == "Hi"


# --- random cutting ------------------------------------------------------------------------------

SAMPLES: list[tuple[str, str, ParseOptions]] = [
    (BY_TEMPLATE[c["template"]], c["input"], case_options(c)) for c in CASES
] + [
    (
        "qwen3.5",
        "a\n</think>\n\nb\n<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n"
        "</function>\n</tool_call>",
        ParseOptions(tools=TOOLS, prefix="<think>\n"),
    ),
    (
        "hermes",
        '<tool_call>\n{"name": "get_weather", "arguments": {'
        '"city": "é\\u00e9\\ud83d\\ude00\\n"}}\n</tool_call>',
        ParseOptions(),
    ),
    (
        "lfm2",
        "<|tool_call_start|>[f(a='it\\'s', b=\"x\\ty\", c=[1, (2, 3)])]<|tool_call_end|>",
        ParseOptions(),
    ),
]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_cutting_gives_the_same_message(data: st.DataObject) -> None:
    family, text, options = data.draw(st.sampled_from(SAMPLES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    fmt = FORMATS[family]
    msg, deltas, start = stream(fmt, pieces, options)
    assert msg == parse_output(fmt, text, options)
    check_deltas(start, deltas, msg)


PROSE = st.text(alphabet="ab A<>[]/\n{}\"'=:", max_size=120)
"""Plain text full of the characters markers begin with."""

TOKEN_SIZED: list[tuple[str, str, ParseOptions]] = [
    (  # markers begin with "<"; a raw string value ends at "\n" or "<"
        "qwen3.5",
        "{prose}\n</think>\n\n{prose}<tool_call>\n<function=get_weather>\n<parameter=city>\n{prose}"
        "\n</parameter>\n</function>\n</tool_call>",
        ParseOptions(tools=TOOLS, prefix="<think>\n"),
    ),
    (  # a quoted JSON string streamed piece by piece
        "hermes",
        '{prose}<tool_call>\n{"name": "get_weather", "arguments": {"city": "{prose}"}}\n</tool_call>',
        ParseOptions(tools=TOOLS),
    ),
    (  # markers begin with "<" or "["
        "mistral-nemo",
        '{prose}[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "{prose}"}, "id": "123456789"}]',
        ParseOptions(tools=TOOLS),
    ),
    (  # markers begin with "<" or a word ("Action:")
        "command-r-plus",
        '{prose}Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "{prose}"}}]\n```',
        ParseOptions(tools=TOOLS),
    ),
    (  # tagged values: raw strings up to "<"
        "glm-4.6",
        "{prose}<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>{prose}</arg_value>\n</tool_call>",
        ParseOptions(tools=TOOLS),
    ),
]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_token_sized_pieces_give_the_same_message(data: st.DataObject) -> None:
    """Output cut into pieces of 1 to 6 characters, as a tokenizer cuts it, gives the
    message of the whole output and deltas that add up to it: pieces read on the hot path
    (no character a marker begins with: one character checked with ``in``, several with a
    regex) and pieces that hold one alike."""
    family, shape, options = data.draw(st.sampled_from(TOKEN_SIZED))
    parts = shape.split("{prose}")
    text = parts[0] + "".join(data.draw(PROSE) + part for part in parts[1:])
    sizes = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    pieces: list[str] = []
    at = 0
    while at < len(text):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(text[at : at + size])
        at += size
    fmt = FORMATS[family]
    msg, deltas, start = stream(fmt, pieces, options)
    assert msg == parse_output(fmt, text, options)
    check_deltas(start, deltas, msg)


# --- format features no family above shows ---------------------------------------------------


def test_json_calls_in_a_wrapper_with_string_arguments() -> None:
    fmt = TemplateFormat(
        tools=ToolCallFormat(
            syntax=ToolSyntax.JSON,
            section_start="<calls>",
            section_end="</calls>",
            array=True,
            wrapper_key="function",
            arguments_as_string=True,
            id_key="id",
        )
    )
    text = (
        '<calls>[{"id": "c1", "type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"Paris\\", \\"days\\": 2}"}}]</calls>'
    )
    msg = check_streams(fmt, text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [("get_weather", {"city": "Paris", "days": 2}, "c1")]


def test_call_ids_before_the_name_and_after_the_arguments() -> None:
    before = TemplateFormat(
        tools=ToolCallFormat(
            syntax=ToolSyntax.TAG_JSON,
            call_start="<call>",
            call_end="</call>",
            id_position=CallIdPosition.BEFORE_NAME,
            id_prefix="[",
            id_suffix="]",
            arguments_start=":",
        )
    )
    msg = check_streams(before, '<call>[id-7]get_weather:{"city": "Paris"}</call>', ParseOptions(tools=TOOLS))
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "id-7")]
    after = TemplateFormat(
        tools=ToolCallFormat(
            syntax=ToolSyntax.TAG_JSON,
            call_start="<call=",
            call_end="</call>",
            name_suffix=">",
            id_position=CallIdPosition.AFTER_ARGUMENTS,
            id_prefix="<id>",
            id_suffix="</id>",
        )
    )
    text = '<call=get_weather>{"city": "Paris"}<id>x9</id></call>'
    msg = check_streams(after, text, ParseOptions(tools=TOOLS))
    assert calls(msg) == [("get_weather", {"city": "Paris"}, "x9")]
    _, deltas, _ = stream(after, list(text), ParseOptions(tools=TOOLS))
    assert [d for d in deltas if isinstance(d, ToolCallStarted | ToolCallIdentified)] == [
        ToolCallStarted(0, "get_weather", ""),
        ToolCallIdentified(0, "x9"),
    ]


def test_ids_made_by_the_template_pattern() -> None:
    fmt = dataclasses.replace(
        FORMATS["hermes"], tools=dataclasses.replace(FORMATS["hermes"].tools, id_pattern="call_{index}")
    )
    call = '<tool_call>\n{{"name": "{}", "arguments": {{}}}}\n</tool_call>'
    text = call.format("a") + "\n" + call.format("b")
    msg = check_streams(fmt, text)
    assert [(c.name, c.id) for c in msg.tool_calls] == [("a", "call_0"), ("b", "call_1")]


def test_reasoning_ended_by_a_delimiter() -> None:
    fmt = TemplateFormat(reasoning=ReasoningFormat(ReasoningMode.DELIMITER, "", "[BEGIN FINAL RESPONSE]"))
    msg = check_streams(fmt, "Here are my steps.\n[BEGIN FINAL RESPONSE]\nThe answer.")
    assert (msg.reasoning.strip(), msg.content.strip()) == ("Here are my steps.", "The answer.")


def test_a_parser_bug_keeps_the_stream_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(machine: Machine, final: bool) -> bool:
        raise ValueError("boom")

    monkeypatch.setitem(HANDLERS, State.HEADER, broken)
    parser = TemplateParser(FORMATS["qwen3.5"])
    deltas = parser.feed("Hi <tool_call>\n<function=f>")
    deltas += parser.finish()
    assert [w.code for w in parser.message.warnings] == ["W-INTERNAL"]
    assert parser.message.content == "Hi <function=f>"
    assert "".join(d.text for d in deltas if isinstance(d, ContentText)) == "Hi <function=f>"
