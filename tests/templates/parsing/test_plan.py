"""The parse plan a format compiles to: which markers each state looks for."""

from __future__ import annotations

from hand_formats import FORMATS

from openchatml.templates.format import TemplateFormat, ToolCallFormat, ToolSyntax
from openchatml.templates.parsing.markers import MarkerAction
from openchatml.templates.parsing.plan import ParsePlan, compile_plan


def plan(family: str, json_answer: bool = False) -> ParsePlan:
    return compile_plan(FORMATS[family], True, json_answer)


def actions(markers: object) -> dict[str, MarkerAction]:
    assert isinstance(markers, tuple)
    return {m.text: m.action for m in markers}


def test_a_plan_is_compiled_once_per_format_and_settings() -> None:
    fmt = FORMATS["qwen3.5"]
    assert compile_plan(fmt, True, False) is compile_plan(fmt, True, False)
    assert compile_plan(fmt, True, False) is not compile_plan(fmt, False, False)


def test_what_ends_the_answer_and_the_reasoning() -> None:
    qwen = plan("qwen3.5")
    assert actions(qwen.content_scanner.markers) == {
        "<think>": MarkerAction.REASONING_START,
        "</think>": MarkerAction.REASONING_END,
        "<tool_call>": MarkerAction.CALL_START,
        "<|im_end|>": MarkerAction.END_OF_TURN,
    }
    assert actions(qwen.reasoning_scanner.markers) == {
        "</think>": MarkerAction.REASONING_END,
        "<tool_call>": MarkerAction.CALL_START,
        "<|im_end|>": MarkerAction.END_OF_TURN,
    }
    assert actions(qwen.reasoning_end_scanner.markers) == {"</think>": MarkerAction.REASONING_END}
    assert not qwen.starts_in_reasoning


def test_markers_keep_the_whitespace_after_them_as_a_trail() -> None:
    (call_start,) = [m for m in plan("qwen3.5").content_scanner.markers if m.text == "<tool_call>"]
    assert call_start.trail == "\n"


def test_a_json_answer_looks_for_its_fence() -> None:
    fences = [
        m
        for m in plan("devstral", json_answer=True).content_scanner.markers
        if m.action is MarkerAction.FENCE
    ]
    assert [(m.text, m.trail) for m in fences] == [("```json\n", ""), ("```", "\n")]
    assert not [m for m in plan("devstral").content_scanner.markers if m.action is MarkerAction.FENCE]


def test_an_opener_with_a_piece_of_itself_repeated_before_it() -> None:
    repeats = [m for m in plan("gemma4").content_scanner.markers if m.action is MarkerAction.REPEAT]
    assert [(m.text, m.drop) for m in repeats] == [("<|channel><|channel>thought", len("<|channel>"))]


def test_role_header_pieces_a_model_may_write_again_longest_first() -> None:
    assert plan("command-r-plus").repeated_headers == (
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
    )
    assert plan("hermes").repeated_headers == ()  # "<|im_start|>assistant\n" ends in a word


def test_calls_with_no_marker() -> None:
    assert plan("llama3.1").bare_calls == "json"
    assert plan("hermes").bare_calls == ""
    assert plan("lfm2").bare_calls == ""
    pythonic = TemplateFormat(tools=ToolCallFormat(syntax=ToolSyntax.PYTHONIC))
    assert compile_plan(pythonic, True, False).bare_calls == "pythonic"


def test_what_stands_between_calls_longest_first() -> None:
    assert plan("kimi-k2").section_markers == (
        ("<|tool_calls_section_begin|>", "section_start"),
        ("<|tool_calls_section_end|>", "section_end"),
        ("<|tool_call_begin|>", "call_start"),
        ("<|tool_call_end|>", "call_end"),
        ("<|im_end|>", "end"),
    )


def test_what_ends_a_calls_name() -> None:
    mistral = plan("mistral-small-3.2")
    assert mistral.arguments_opener is not None
    assert mistral.arguments_opener.search("get_weather[CALL_ID]x[ARGS]{").group() == "[ARGS]"
    assert mistral.arguments_opener.search("get_weather{").group() == "{"
    qwen = plan("qwen3.5")
    assert qwen.arguments_opener is not None
    assert qwen.arguments_opener.search("get_weather>\n<parameter=city>").group() == "<parameter="
    assert qwen.arguments_opener.search("f>\n</function>").group() == "</function>"  # no arguments


def test_what_ends_a_value_left_open() -> None:
    assert plan("kimi-k2").value_stops == (
        "<|tool_call_end|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|im_end|>",
    )
    assert plan("hermes").value_stops == ("</tool_call>", "<tool_call>", "<|im_end|>")
    assert plan("mistral-small-3.2").value_stops == ("</s>",)  # "[TOOL_CALLS]" may be a value's bracket


def test_tagged_arguments() -> None:
    qwen = plan("qwen3.5")
    between = dict(qwen.between_arguments)
    assert between["<parameter="] == "arg" and between["</function>"] == "args_end"
    assert between["</tool_call>"] == "stop"
    name_ends = actions(qwen.argument_name_scanner.markers)
    assert name_ends == {">": MarkerAction.VALUE_END}
    assert qwen.argument_name_trail == "\n"
    value_ends = actions(qwen.value_scanner.markers)
    assert value_ends["\n</parameter>"] is MarkerAction.VALUE_END
    assert value_ends["</parameter>"] is MarkerAction.VALUE_END
    assert value_ends["\n<parameter="] is MarkerAction.STOP
    assert [(m.text, m.drop) for m in qwen.value_scanner.markers if m.text == "\n</function>"] == [
        ("\n</function>", 1)
    ]


def test_ids_made_by_a_pattern_name_the_tool() -> None:
    kimi = plan("kimi-k2")
    assert kimi.id_regex is not None
    match = kimi.id_regex.fullmatch("functions.get_weather:0")
    assert match is not None and match.group("name") == "get_weather"
    assert plan("cohere2").id_regex is not None
    assert plan("hermes").id_regex is None
