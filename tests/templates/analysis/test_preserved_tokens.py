"""Preserved tokens: a format's markers in order, once each, bare words left out."""

from __future__ import annotations

import pytest
from analysed_templates import fmt_of
from data_paths import TEMPLATES

from openchatml.templates.analysis import preserved_tokens
from openchatml.templates.format import (
    ContentFormat,
    ContentMode,
    ReasoningFormat,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)


@pytest.mark.skipif(not TEMPLATES.is_dir(), reason="the shared templates are not here")
def test_preserved_tokens_skip_bare_words() -> None:
    fmt = fmt_of("moonshotai-Kimi-K2.jinja")
    assert "functions." not in fmt.preserved_tokens
    assert preserved_tokens(fmt) == fmt.preserved_tokens


def test_markers_in_order_once_each_then_the_ends() -> None:
    fmt = TemplateFormat(
        name="x",
        reasoning=ReasoningFormat(ReasoningMode.TAGS, "<think>", "</think>\n"),
        content=ContentFormat(ContentMode.ALWAYS_WRAPPED, "<answer>", "</answer>"),
        tools=ToolCallFormat(
            syntax=ToolSyntax.TAG_TAGGED,
            call_start="<tool_call>\n",
            call_end="</tool_call>",
            name_prefix="<function=",
            name_suffix=">",
            arg_name_prefix="<parameter=",
            arg_value_suffix="</parameter>",
        ),
        end_markers=("<|im_end|>", "</answer>"),
    )
    assert preserved_tokens(fmt) == (
        "<think>",
        "</think>",
        "<answer>",
        "</answer>",
        "<tool_call>",
        "</tool_call>",
        "<function=",
        ">",
        "<parameter=",
        "</parameter>",
        "<|im_end|>",
    )


def test_small_pieces_that_are_words_are_left_out_but_word_markers_kept() -> None:
    tools = ToolCallFormat(
        syntax=ToolSyntax.TAG_JSON, call_start=">>>", name_prefix="functions.", name_suffix=":"
    )
    fmt = TemplateFormat(name="x", tools=tools, end_markers=("END",))
    assert preserved_tokens(fmt) == (">>>", "END")
