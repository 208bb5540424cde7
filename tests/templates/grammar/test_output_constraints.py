"""What a request asks of a template model's output beyond its calls: ``none`` (content
only), the answer's JSON Schema, freeform tools as one string argument, and a bound on the
reasoning — run by llguidance (and xgrammar, where installed)."""

from __future__ import annotations

import llguidance as llg
import pytest
from grammar_checks import TOOLS, _tokenizer, check, lark_accepts
from hand_formats import FORMATS

from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.grammar.tool_choice import FreeformTool

HERMES = FORMATS["hermes"]
QWEN = FORMATS["qwen3.5"]
CALL = '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>'
ANSWER = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["x", "y"]}}},
    "required": ["n"],
    "additionalProperties": False,
}


def test_none_allows_content_only() -> None:
    grammar = tool_call_grammar(HERMES, TOOLS, tool_choice="none")
    assert grammar.tools == () and not grammar.lazy and grammar.triggers == ()
    check(grammar, HERMES, "It is noon in Oslo.", True)
    check(grammar, HERMES, CALL, False)
    check(grammar, HERMES, "Let me see. " + CALL, False)


def test_none_on_a_format_whose_calls_have_no_marker() -> None:
    """Llama 3.1 calls with bare JSON: under ``none`` the content may not begin like one."""
    llama = FORMATS["llama3.1"]
    grammar = tool_call_grammar(llama, TOOLS, tool_choice="none")
    check(grammar, llama, "It is noon in Oslo.", True)
    check(grammar, llama, '{"name": "get_time", "parameters": {"city": "Oslo"}}', False)
    check(grammar, llama, ' \n{"name": "x"}', False)


def test_none_on_a_format_without_calls() -> None:
    plain = FORMATS["hermes"].__class__(name="plain")
    grammar = tool_call_grammar(plain, TOOLS, tool_choice="none")
    check(grammar, plain, "Anything.", True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"n": 3}', True),
        ('\n{"n": 3, "tags": ["x"]}\n', True),
        ('{"n": "3"}', False),
        ('{"n": 3, "m": 1}', False),
        ("three", False),
    ],
)
def test_the_answer_conforms_to_its_schema(text: str, expected: bool) -> None:
    grammar = tool_call_grammar(HERMES, TOOLS, tool_choice="none", answer_schema=ANSWER)
    check(grammar, HERMES, text, expected)
    auto = tool_call_grammar(HERMES, TOOLS, answer_schema=ANSWER)
    check(auto, HERMES, text, expected)
    check(auto, HERMES, CALL, True)


def test_freeform_tools_are_one_string_argument() -> None:
    pin = FreeformTool("pin", "regex", "[0-9]{4}")
    grammar = tool_call_grammar(HERMES, TOOLS, tool_choice={"type": "custom", "name": "pin"}, freeform=[pin])
    assert grammar.tools == ("pin",)
    call = '<tool_call>\n{"name": "pin", "arguments": {"input": "%s"}}\n</tool_call>'
    assert lark_accepts(grammar.lark, call % "1234")
    assert not lark_accepts(grammar.lark, call % "12345")
    assert not lark_accepts(grammar.lark, call % "12a4")
    free = tool_call_grammar(HERMES, TOOLS, tool_choice="required", freeform=[FreeformTool("note")])
    assert lark_accepts(free.lark, call.replace("pin", "note") % "any text {")
    with pytest.raises(ValueError, match="Lark grammar"):
        tool_call_grammar(HERMES, TOOLS, freeform=[FreeformTool("patch", "lark", 'start: "a"')])


def test_a_reasoning_bound_closes_the_thinking() -> None:
    markers = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
    ids = {m: 257 + i for i, m in enumerate(markers)}
    grammar = tool_call_grammar(QWEN, TOOLS, tool_choice="required", special_tokens=ids, reasoning_tokens=8)
    assert "max_tokens=8" in grammar.lark
    call = (
        "<tool_call>\n<function=get_time>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    )
    assert lark_accepts(grammar.lark, "<think>\nshort\n</think>\n" + call, markers)  # 7 bytes of text
    assert not lark_accepts(grammar.lark, "<think>\nmuch too long\n</think>\n" + call, markers)
    raw, tokenizer = _tokenizer(tuple(markers))
    matcher = llg.LLMatcher(tokenizer, llg.LLMatcher.grammar_from_lark(grammar.lark), log_level=0)
    assert matcher.consume_tokens(raw.encode("<think>12345678"))
    assert matcher.validate_tokens(raw.encode("9")) == 0
    assert matcher.validate_tokens(raw.encode("</think>")) == 1


def test_fixed_spacing_takes_the_formats_json_spacing_only() -> None:
    grammar = tool_call_grammar(HERMES, TOOLS, tool_choice="required")
    spaced = '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>'
    loose = '<tool_call>\n{"name": "get_time", "arguments": {"city":   "Oslo"}}\n</tool_call>'
    assert lark_accepts(grammar.lark, spaced) and lark_accepts(grammar.lark, loose)
    assert lark_accepts(grammar.lark_fixed_spacing, spaced)
    assert not lark_accepts(grammar.lark_fixed_spacing, loose)
    assert '"whitespace_flexible": false' in grammar.lark_fixed_spacing
