"""The preserved tokens of a format: the markers a tokenizer must keep whole and a
grammar may write, in the order a message writes them."""

from __future__ import annotations

import re

from ..format import TemplateFormat

HARMONY_TOKENS = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|constrain|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
)
"""The control tokens of a Harmony template."""


def preserved_tokens(fmt: TemplateFormat) -> tuple[str, ...]:
    """Every marker of ``fmt`` (stripped) in order, once each, then the end markers; the
    small pieces around names and values only when they are not bare words
    (``functions.``, ``:``)."""
    reasoning, content, t = fmt.reasoning, fmt.content, fmt.tools
    structural = (
        reasoning.start,
        reasoning.end,
        content.start,
        content.end,
        t.section_start,
        t.section_end,
        t.call_start,
        t.call_end,
    )
    pieces = (
        t.name_prefix,
        t.name_suffix,
        t.id_prefix,
        t.id_suffix,
        t.arguments_start,
        t.arguments_end,
        t.arg_name_prefix,
        t.arg_name_suffix,
        t.arg_value_prefix,
        t.arg_value_suffix,
        t.arg_value_prefix_json,
        t.arg_value_wrap_start,
        t.arg_value_wrap_end,
        t.string_quote,
    )
    out: list[str] = []
    for cand, words_too in (
        *((x, True) for x in structural),
        *((x, False) for x in pieces),
        *((x, True) for x in fmt.end_markers),
    ):
        token = cand.strip()
        if token and token not in out and (words_too or not re.fullmatch(r"[\w.:,\s]*", token)):
            out.append(token)
    return tuple(out)
