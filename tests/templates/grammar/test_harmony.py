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
    with pytest.raises(ValueError, match="none"):
        harmony_tool_call_grammar(TOOLS, tool_choice="none")
