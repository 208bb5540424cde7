"""Grammars of templates whose prompt opens the reasoning (DeepSeek-R1's ``<think>\\n``,
Qwen3.5's with thinking on, Apriel's steps before ``[BEGIN FINAL RESPONSE]``): the output
starts inside the open block, so reasoning is written, then closed, then the forced call or
the structured answer; a model that skips the reasoning writes the closer first, as its
template renders an empty block. With thinking off (a bound of 0 tokens) no reasoning is
written: a block the prompt opened closes at once, none opens, and one the prompt closed
never opens again.

Every real template whose generation prompt opens the reasoning, thinking left to its
default or switched on, is checked with the prefix its own prompt writes; markers are text
(the grammar holds them spelled) and, in one test, special tokens."""

from __future__ import annotations

from typing import Any

import pytest
from analysed_templates import TEMPLATE_NAMES, compiled, fmt_of, render_calls
from grammar_checks import lark_accepts

from openchatml.templates.analysis.thinking import open_reasoning, reasoning_closer
from openchatml.templates.format import ReasoningMode, TemplateFormat, ToolSyntax
from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.prompt import output_prefix, thinking_variables

OPENING = (
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    "Bielik-11B-v3.0-Instruct.jinja",
    "Cohere2MoE.jinja",
    "GLM-4.7-Flash.jinja",
    "MiniMax-M2.jinja",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    "NVIDIA-Nemotron-Nano-v2.jinja",
    "Qwen-QwQ-32B.jinja",
    "Qwen3.5-4B.jinja",
    "Reka-Edge.jinja",
    "StepFun3.5-Flash.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "deepseek-ai-DeepSeek-V3.1.jinja",
    "deepseek-ai-DeepSeek-V3.2.jinja",
    "deepseek-ai-DeepSeek-V4.jinja",
    "llama-cpp-deepseek-r1.jinja",
    "llama-cpp-rwkv-world.jinja",
    "openbmb-MiniCPM5-1B.jinja",
    "poolside-Laguna-S-2.1.jinja",
    "poolside-Laguna-XS-2.1.jinja",
    "poolside-Laguna-XS.2.jinja",
    "tencent-Hy3.jinja",
)
"""The templates whose generation prompt opens the reasoning (by default or switched on)."""
ALWAYS_OPEN = (
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    "MiniMax-M2.jinja",
    "NVIDIA-Nemotron-Nano-v2.jinja",
    "StepFun3.5-Flash.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "llama-cpp-deepseek-r1.jinja",
)
"""Those whose prompt opens it whatever the caller sets: no switch turns thinking off."""
NO_CALL = {
    "llama-cpp-rwkv-world.jinja": "no tool calls",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "its template renders no end of the calls",
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
ANSWER = '{"n": 1}'
TEXT = "It is sunny."


def opened_prefix(name: str) -> str:
    """What the template's generation prompt writes of the answer with thinking on (else
    left to its default), after the assistant's header."""
    fmt = fmt_of(name)
    user = [{"role": "user", "content": "Hi"}]
    return output_prefix(compiled(name), user, **thinking_variables(fmt.reasoning, True))


def end_of(fmt: TemplateFormat) -> str:
    return fmt.reasoning.end.strip()


def start_of(fmt: TemplateFormat) -> str:
    return fmt.reasoning.start.strip() if fmt.reasoning.mode is ReasoningMode.TAGS else ""


def call_of(name: str) -> str:
    """The template's own call of ``get_weather``, as the model writes it after its reasoning."""
    fmt = fmt_of(name)
    tail = render_calls(name, [("get_weather", {"city": "Paris"}, "a1b2c3d4e")], TOOLS)
    assert tail is not None
    header, end = fmt.generation_prompt.header, end_of(fmt)
    if header and header in tail:
        tail = tail[tail.index(header) + len(header) :]
    if end in tail:
        tail = tail[tail.index(end) + len(end) :]
    cuts = [i for marker in fmt.end_markers if (i := tail.find(marker, 1)) > 0]
    return (tail[: min(cuts)] if cuts else tail).strip()


def grammars(name: str, prefix: str, **options: Any) -> list[tuple[Any, str]]:
    """(grammar, an answer it holds) for each mode the template can take: a forced call
    (``required``, named, ``allowed_tools``), no call, a JSON answer."""
    fmt = fmt_of(name)
    out: list[tuple[Any, str]] = [
        (tool_call_grammar(fmt, TOOLS, tool_choice="none", prefix=prefix, **options), TEXT),
        (
            tool_call_grammar(fmt, [], tool_choice="none", prefix=prefix, answer_schema=SCHEMA, **options),
            ANSWER,
        ),
    ]
    if name in NO_CALL:
        return out
    call = call_of(name)
    for choice in (
        "required",
        {"type": "function", "name": "get_weather"},
        {"type": "allowed_tools", "mode": "required", "tools": [{"name": "get_weather"}]},
        {"type": "allowed_tools", "mode": "auto", "tools": [{"name": "get_weather"}]},
    ):
        out.append((tool_call_grammar(fmt, TOOLS, tool_choice=choice, prefix=prefix, **options), call))
    return out


def test_the_templates_that_open_the_reasoning() -> None:
    if not TEMPLATE_NAMES:
        pytest.skip("no shared templates here")
    found, always = [], []
    user = [{"role": "user", "content": "Hi"}]
    for name in TEMPLATE_NAMES:
        fmt = fmt_of(name)
        if fmt.harmony or fmt.reasoning.mode is ReasoningMode.NONE:
            continue
        if open_reasoning(fmt.reasoning, opened_prefix(name)):
            found.append(name)
            off = output_prefix(compiled(name), user, **thinking_variables(fmt.reasoning, False))
            if open_reasoning(fmt.reasoning, off):
                always.append(name)
    assert found == list(OPENING)
    assert always == list(ALWAYS_OPEN)


@pytest.mark.parametrize("name", OPENING)
def test_the_output_starts_inside_the_open_block(name: str) -> None:
    fmt = fmt_of(name)
    prefix = opened_prefix(name)
    end = end_of(fmt)
    for grammar, answer in grammars(name, prefix):
        assert lark_accepts(grammar.lark, f"Paris, then.\n{end}\n\n{answer}"), answer
        assert lark_accepts(grammar.lark, f"{end}\n\n{answer}"), answer  # reasoning skipped
        assert lark_accepts(grammar.lark, f"\n{end}\n\n{answer}"), answer
        assert not lark_accepts(grammar.lark, answer), answer  # the open block is closed first


@pytest.mark.parametrize("name", OPENING)
def test_no_reasoning_closes_the_open_block_at_once(name: str) -> None:
    fmt = fmt_of(name)
    end = end_of(fmt)
    for grammar, answer in grammars(name, opened_prefix(name), reasoning_tokens=0):
        assert lark_accepts(grammar.lark, f"{end}\n\n{answer}"), answer
        assert lark_accepts(grammar.lark, f"\n{end}\n\n{answer}"), answer
        assert not lark_accepts(grammar.lark, f"Paris, then.\n{end}\n\n{answer}"), answer
        assert not lark_accepts(grammar.lark, answer), answer


@pytest.mark.parametrize("name", OPENING)
def test_a_closed_block_never_opens_again(name: str) -> None:
    fmt = fmt_of(name)
    start = start_of(fmt)
    if not start:
        pytest.skip("reasoning up to a delimiter: no block to open")
    prefix = opened_prefix(name)
    closed = prefix + reasoning_closer(fmt.reasoning, prefix)
    block = f"{start}\nParis, then.\n{end_of(fmt)}\n\n"
    for options in ({}, {"reasoning_tokens": 0}):
        for grammar, answer in grammars(name, closed, **options):
            assert lark_accepts(grammar.lark, answer), answer
            assert not lark_accepts(grammar.lark, block + answer), answer


@pytest.mark.parametrize("name", [n for n in OPENING if n not in ALWAYS_OPEN])
def test_thinking_off_opens_no_block(name: str) -> None:
    """Where the prompt leaves the reasoning to the model (no prefix), a bound of 0 tokens
    lets no block open; without a bound one may."""
    fmt = fmt_of(name)
    block = f"{start_of(fmt)}\nParis, then.\n{end_of(fmt)}\n\n"
    for grammar, answer in grammars(name, "", reasoning_tokens=0):
        assert lark_accepts(grammar.lark, answer), answer
        assert not lark_accepts(grammar.lark, block + answer), answer
        assert not lark_accepts(grammar.lark, f"{start_of(fmt)}{end_of(fmt)}{answer}"), answer
    for grammar, answer in grammars(name, ""):
        assert lark_accepts(grammar.lark, block + answer), answer


def test_markers_as_special_tokens() -> None:
    name = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
    fmt = fmt_of(name)
    markers = [
        "<think>",
        "</think>",
        *(m for m in fmt.preserved_tokens if m.startswith("<｜") and m.endswith("｜>")),
    ]
    ids = {m: 257 + i for i, m in enumerate(markers)}
    prefix = opened_prefix(name)
    call = call_of(name)
    grammar = tool_call_grammar(fmt, TOOLS, tool_choice="required", prefix=prefix, special_tokens=ids)
    assert lark_accepts(grammar.lark, f"Paris.\n</think>\n\n{call}", markers)
    assert lark_accepts(grammar.lark, f"</think>{call}", markers)
    assert not lark_accepts(grammar.lark, call, markers)
    off = tool_call_grammar(
        fmt, TOOLS, tool_choice="required", prefix=prefix, special_tokens=ids, reasoning_tokens=0
    )
    assert lark_accepts(off.lark, f"</think>\n\n{call}", markers)
    assert not lark_accepts(off.lark, f"Paris.</think>{call}", markers)
    assert fmt.tools.syntax is not ToolSyntax.NONE
