"""The Harmony (gpt-oss) tool-call grammar, run by llguidance over o200k_harmony itself.

What the core renderer writes for an assistant turn — analysis, preambles, then a call
or a final answer — is tokenized with the real vocabulary and fed to ``LLMatcher`` token
by token: accepted exactly when ``tool_choice`` allows it and the arguments conform to
the tool's schema. The markers are special tokens, matched only as tokens: a user who
types ``<|call|>`` as text does not end a call.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import llguidance as llg
import pytest

from openchatml import Message, Renderer, load_encoding
from openchatml.core.tokens import FIRST_SPECIAL_ID
from openchatml.templates.format import TemplateFormat
from openchatml.templates.grammar import Trigger, harmony_tool_call_grammar, tool_call_grammar
from openchatml.templates.grammar.tool_choice import FreeformTool

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
TOOLS = [WEATHER, TIME]
THINK = Message.assistant("The user wants the weather.", channel="analysis")
PREAMBLE = Message.assistant("Let me check.", channel="commentary")
ANSWER = Message.assistant("It is sunny.", channel="final")


class _Harmony:
    """o200k_harmony as llguidance's tokenizer wrapper wants it."""

    def __init__(self) -> None:
        self.encoding = load_encoding()
        self.tokens = list(self.encoding.token_bytes)
        self.eos_token_id = 199999
        self.bos_token_id = None
        self.special_token_ids = list(range(FIRST_SPECIAL_ID, len(self.tokens)))

    def __call__(self, text: str | bytes) -> list[int]:
        return self.encoding.encode(text.decode() if isinstance(text, bytes) else text)


@functools.cache
def _tokenizer() -> llg.LLTokenizer:
    return llg.LLTokenizer(llg.TokenizerWrapper(_Harmony()))


def accepts(lark: str, ids: list[int]) -> bool:
    matcher = llg.LLMatcher(_tokenizer(), llg.LLMatcher.grammar_from_lark(lark), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return matcher.consume_tokens(ids) and matcher.is_accepting()


def turn(*messages: Message) -> list[int]:
    """The ids gpt-oss samples for ``messages`` after the prompt's ``<|start|>assistant``."""
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    if messages and not messages[-1].is_tool_call:
        ids[-1] = 200002  # <|return|> ends a final answer
    return ids[2:]


def call(name: str, arguments: dict[str, Any]) -> Message:
    return Message.tool_call(f"functions.{name}", json.dumps(arguments))


def text_ids(text: str) -> list[int]:
    return load_encoding().encode(text, allowed_special="all")


@pytest.mark.parametrize(
    ("choice", "ids", "expected"),
    [
        ("auto", turn(THINK, call("get_weather", {"city": "Paris"})), True),
        ("auto", turn(THINK, ANSWER), True),
        ("auto", turn(THINK, PREAMBLE, call("get_time", {})), True),
        ("auto", turn(call("get_weather", {"city": "Paris", "days": 3})), True),
        ("required", turn(THINK, call("get_weather", {"city": "Paris"})), True),
        ("required", turn(THINK, ANSWER), False),
        (
            {"type": "function", "name": "get_weather"},
            turn(THINK, call("get_weather", {"city": "Oslo"})),
            True,
        ),
        ({"type": "function", "name": "get_weather"}, turn(THINK, call("get_time", {})), False),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "get_time"}],
            },
            turn(call("get_weather", {"city": "Paris"})),
            False,
        ),
        ("auto", turn(call("get_weather", {"days": 3})), False),  # "city" is required
        ("auto", turn(call("get_weather", {"city": 3})), False),  # not a string
        ("auto", turn(call("get_weather", {"city": "Paris", "when": "now"})), False),  # no such argument
        ("auto", turn(call("send_mail", {})), False),  # not offered
        ("auto", turn(THINK), False),  # a turn must end in an answer or a call
    ],
)
def test_rendered_turns(choice: Any, ids: list[int], expected: bool) -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice=choice)
    assert accepts(grammar.lark, ids) is expected


def test_recipient_before_the_channel_and_constraint_spellings() -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice="required")
    for head in (
        " to=functions.get_weather<|channel|>commentary json<|message|>",
        "<|channel|>commentary to=functions.get_weather<|message|>",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    ):
        assert accepts(grammar.lark, text_ids(head + '{"city": "Rome"}<|call|>')), head


def test_markers_are_tokens_never_text() -> None:
    grammar = harmony_tool_call_grammar(TOOLS)
    # "<|call|>" written as ordinary text inside the answer does not end anything
    spelled = text_ids("<|channel|>final<|message|>Type ") + load_encoding().encode("<|call|> to call.")
    assert not accepts(grammar.lark, spelled)
    assert accepts(grammar.lark, [*spelled, 200002])


def test_harmony_formats_route_here() -> None:
    fmt = TemplateFormat(name="gpt-oss", harmony=True)
    grammar = tool_call_grammar(fmt, TOOLS, tool_choice="required", prefix="ignored", parallel=True)
    assert grammar == harmony_tool_call_grammar(TOOLS, tool_choice="required")
    assert grammar.parallel is False and grammar.tools == ("get_weather", "get_time")
    assert grammar.triggers == (Trigger(" to=functions."),) and not grammar.lazy
    auto = harmony_tool_call_grammar(TOOLS)
    assert auto.lazy and auto.gbnf != auto.ebnf and "get_weather" in auto.gbnf
    with pytest.raises(ValueError, match="not an offered tool"):
        harmony_tool_call_grammar(TOOLS, tool_choice={"type": "function", "name": "nope"})


def test_none_allows_the_answer_only() -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice="none")
    assert not grammar.lazy and grammar.tools == ()
    assert accepts(grammar.lark, turn(THINK, PREAMBLE, ANSWER))
    assert not accepts(grammar.lark, turn(THINK, call("get_weather", {"city": "Paris"})))
    assert accepts(harmony_tool_call_grammar([], tool_choice="none").lark, turn(ANSWER))


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"city": "Paris"}', True),
        ('{"city": "Paris", "tags": ["a", "b"]}', True),
        ('{"city": "Paris", "tags": ["c"]}', False),
        ('{"tags": []}', False),
        ("Paris", False),
    ],
)
def test_the_answer_conforms_to_its_schema(answer: str, expected: bool) -> None:
    final = Message.assistant(answer, channel="final")
    for choice in ("none", "auto"):
        grammar = harmony_tool_call_grammar(TOOLS, tool_choice=choice, answer_schema=ANSWER_SCHEMA)
        assert accepts(grammar.lark, turn(THINK, final)) is expected
    # under auto a call stays possible
    auto = harmony_tool_call_grammar(TOOLS, answer_schema=ANSWER_SCHEMA)
    assert accepts(auto.lark, turn(THINK, call("get_time", {})))


def test_a_tool_that_is_not_strict_takes_any_json_object() -> None:
    loose = {**WEATHER, "strict": False}
    grammar = harmony_tool_call_grammar([loose], tool_choice="required")
    assert accepts(grammar.lark, turn(call("get_weather", {"anything": [1, 2]})))
    assert not accepts(
        grammar.lark, text_ids(" to=functions.get_weather<|channel|>commentary<|message|>[1]<|call|>")
    )
    assert not accepts(
        grammar.lark, text_ids(" to=functions.get_weather<|channel|>commentary<|message|>{<|call|>")
    )


def freeform_call(name: str, text: str) -> list[int]:
    return text_ids(f"<|channel|>commentary to=functions.{name}<|message|>{text}<|call|>")


PATCH = FreeformTool("apply_patch", "lark", 'start: "*** Begin" line+ "*** End"\nline: /[+-][a-z ]*\\n/')
DIGITS = FreeformTool("pin", "regex", "[0-9]{4}")
NOTE = FreeformTool("note")


@pytest.mark.parametrize(
    ("tool", "text", "expected"),
    [
        (PATCH, "*** Begin+add this\n-drop that\n*** End", True),
        (PATCH, "*** Begin+Add This\n*** End", False),
        (PATCH, "*** Begin*** End", False),
        (DIGITS, "1234", True),
        (DIGITS, "12345", False),
        (DIGITS, "12a4", False),
        (NOTE, "anything at all {", True),
    ],
)
def test_freeform_tools_take_their_grammar(tool: FreeformTool, text: str, expected: bool) -> None:
    grammar = harmony_tool_call_grammar(
        TOOLS, tool_choice={"type": "custom", "name": tool.name}, freeform=[tool]
    )
    assert grammar.tools == (tool.name,)
    thought = text_ids("<|channel|>analysis<|message|>Patch it.<|end|><|start|>assistant")
    assert accepts(grammar.lark, [*thought, *freeform_call(tool.name, text)]) is expected
    auto = harmony_tool_call_grammar(TOOLS, freeform=[tool])
    assert accepts(auto.lark, freeform_call(tool.name, text)) is expected
    assert accepts(auto.lark, turn(call("get_time", {})))


def test_freeform_tool_choices_name_the_right_kind() -> None:
    with pytest.raises(ValueError, match="as a function tool"):
        harmony_tool_call_grammar(TOOLS, tool_choice={"type": "function", "name": "pin"}, freeform=[DIGITS])
    with pytest.raises(ValueError, match="as a custom tool"):
        harmony_tool_call_grammar(
            TOOLS, tool_choice={"type": "custom", "name": "get_time"}, freeform=[DIGITS]
        )
    with pytest.raises(ValueError, match="two tools"):
        harmony_tool_call_grammar(TOOLS, freeform=[FreeformTool("get_time")])


def test_a_reasoning_bound_ends_the_thoughts_in_time() -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice="required", reasoning_tokens=40)
    words = " one" * 10
    short = Message.assistant(words, channel="analysis")
    assert accepts(grammar.lark, turn(short, call("get_time", {})))
    assert accepts(grammar.lark, turn(short, short, call("get_time", {})))  # 10 + 10 of 20 + 10
    assert not accepts(
        grammar.lark, turn(Message.assistant(words * 3, channel="analysis"), call("get_time", {}))
    )
    assert not accepts(grammar.lark, turn(short, short, short, short, call("get_time", {})))  # four messages
    # at the bound the thought must end: the next token is <|end|>
    matcher = llg.LLMatcher(_tokenizer(), llg.LLMatcher.grammar_from_lark(grammar.lark), log_level=0)
    assert matcher.consume_tokens(text_ids("<|channel|>analysis<|message|>") + text_ids(" one" * 20))
    assert matcher.validate_tokens([200007]) == 1
    assert matcher.validate_tokens(text_ids(" one")) == 0
    assert "max_tokens=20" in grammar.lark


def test_fixed_spacing_is_compact_json() -> None:
    grammar = harmony_tool_call_grammar(TOOLS, tool_choice="required")
    head = "<|channel|>commentary to=functions.get_weather<|message|>"
    assert accepts(grammar.lark_fixed_spacing, text_ids(head + '{"city":"Rome"}<|call|>'))
    assert not accepts(grammar.lark_fixed_spacing, text_ids(head + '{"city": "Rome"}<|call|>'))
    assert accepts(grammar.lark, text_ids(head + '{"city": "Rome"}<|call|>'))


def test_a_structured_answer_comes_without_preambles() -> None:
    schema = {"type": "object"}
    grammar = harmony_tool_call_grammar(TOOLS, answer_schema=schema)
    final = Message.assistant("{}", channel="final")
    assert accepts(grammar.lark, turn(THINK, final))
    assert not accepts(grammar.lark, turn(THINK, PREAMBLE, final))
    assert accepts(harmony_tool_call_grammar(TOOLS).lark, turn(THINK, PREAMBLE, ANSWER))
