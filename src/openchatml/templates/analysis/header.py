"""The assistant's role header and the generation prompts.

The common start of the tails (an answer, another answer, a tool call) is the end of the
user's turn and the assistant's role header; its part a generation prompt starts with is
the role header (``GenerationPrompts.header``). The generation prompts are what
``add_generation_prompt`` appends, rendered with the thinking switch unset, on and off."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..format import GenerationPrompts, ReasoningFormat
from .diff import diff_split, is_marker, last_marker_match, overlap
from .probes import ProbeRenderer
from .thinking import ThinkingSwitch

_PUNCT_ONLY = re.compile(r"[^\w\s]+")


def generation_prompts(renderer: ProbeRenderer, switch: ThinkingSwitch | None) -> GenerationPrompts:
    """What ``add_generation_prompt`` appends, with thinking unset, on and off (by the
    template's ``switch``; without one, by ``enable_thinking``, for Harmony). The header
    is left empty."""

    def prompt(**variables: Any) -> str:
        # tails: a clock in a system prompt must not show in the diff
        plain = renderer.tail(**variables)
        with_prompt = renderer.tail(gen=True, **variables)
        if plain is None or with_prompt is None:
            return ""
        if with_prompt.startswith(plain):
            return with_prompt[len(plain) :]
        return diff_split(plain, with_prompt).right

    if switch is None:
        if "enable_thinking" not in renderer.template.variables:
            default = prompt()
            return GenerationPrompts(default, default, default)
        return GenerationPrompts(prompt(), prompt(enable_thinking=True), prompt(enable_thinking=False))
    off = prompt(**{switch.name: switch.off}) if switch.off is not None else prompt()
    return GenerationPrompts(prompt(), prompt(**{switch.name: switch.on}), off)


def trim_header(header: str, reasoning: ReasoningFormat) -> str:
    """The end of the user's turn and the assistant's role header: the common start of
    the assistant's messages without a trailing punctuation word (functionary's ``>>>``,
    which starts both answers and calls) or reasoning markers
    (``<think>\\n\\n</think>\\n\\n`` written before every answer)."""
    last = last_marker_match(header)
    after = header[last.end() :] if last else header
    if after.strip() and after.rstrip() == after:
        space = max(after.rfind(c) for c in " \n\t")
        word = after[space + 1 :]
        if space != -1 and _PUNCT_ONLY.fullmatch(word):
            header = header[: len(header) - len(word)]
    for marker in (reasoning.end, reasoning.start):
        body = header.rstrip()
        if marker and is_marker(marker) and body.endswith(marker):
            header = body[: len(body) - len(marker)]
    return header


def role_header(header: str, gens: GenerationPrompts, ends: Sequence[str]) -> str:
    """The part of ``header`` a generation prompt starts with; for a template that writes
    the prompt whatever ``add_generation_prompt`` says, what follows the marker in
    ``ends`` that ends a turn; else ``""``."""
    for prompt in (gens.default, gens.thinking, gens.no_thinking):
        if prompt:
            best = max(overlap(header, prompt), overlap(header.rstrip(), prompt), key=len)
            if best:
                return best
    for end in ends:
        if end in header:
            return header[header.rfind(end) + len(end) :].lstrip()
    return ""
