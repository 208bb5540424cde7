"""The reasoning markers.

An answer with and without reasoning (``reasoning_content``, else ``reasoning``,
``thinking``, a thinking content chunk; plainly, with the thinking switch on, or on a
tool-call message) differ by the reasoning and its markers. A template that drops
reasoning from history shows its markers in the generation prompt: an empty block
(``<think></think>``), or an opened one whose end is proved by the template cutting
``THOUGHT</think>`` off an answer."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..format import GenerationPrompts, ReasoningFormat, ReasoningMode
from .closers import closes, closing_candidates
from .diff import MARKER, diff_split, first_marker, last_marker, markers, overlap
from .probes import (
    ANSWER,
    ARG1,
    ID1,
    NAME1,
    OTHER,
    STRING_TOOLS,
    THOUGHT,
    USER,
    USER2,
    VAL1,
    ProbeMessage,
    ProbeRenderer,
    ToolCallProbes,
    assistant_message,
    tool_call,
    user_message,
)
from .thinking import ThinkingSwitch

# the usual reasoning markers, tried only where a template proves one by cutting it
_USUAL_REASONING = (
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
)


@dataclass(frozen=True, slots=True)
class ReasoningMarkers:
    """The reasoning format, with the content wrapper a template opens right after the
    reasoning (``</think><response>`` … ``</response>``), if any."""

    fmt: ReasoningFormat = field(default_factory=ReasoningFormat)
    content_start: str = ""
    content_end: str = ""


def plausible(marker: str) -> bool:
    """Whether ``marker`` can be a marker: no needle in it, and no quotes or braces outside
    tags (a template that prints a Python list of content chunks writes no marker)."""
    if any(n in marker for n in (ANSWER, THOUGHT, USER, OTHER)):
        return False
    return re.search(r"['\"{}]", MARKER.sub("", marker)) is None


def find_reasoning(
    renderer: ProbeRenderer,
    gens: GenerationPrompts,
    calls: ToolCallProbes | None,
    header: str,
    switch: ThinkingSwitch | None,
) -> ReasoningMarkers:
    """The reasoning markers of the template (``header``: the raw common start of the
    assistant's messages), with the thinking ``switch`` recorded."""
    found = _find_markers(renderer, gens, calls, header, switch)
    if switch is None:
        return found
    fmt = replace(found.fmt, switch=switch.name, on=switch.on, off=switch.off, efforts=switch.efforts)
    return replace(found, fmt=fmt)


def reasoning_variants(
    renderer: ProbeRenderer, calls: ToolCallProbes | None, switch: ThinkingSwitch | None
) -> Iterator[tuple[ProbeMessage, ProbeMessage, dict[str, Any]]]:
    """``(message with reasoning, without, render options)``, likeliest first: thinking
    left alone, then switched on."""
    shapes: list[tuple[ProbeMessage, dict[str, Any]]] = [(assistant_message(ANSWER), {})]
    if calls is not None:
        call = tool_call(NAME1, {ARG1: VAL1}, ID1, calls.as_string)
        shapes.append((assistant_message(calls.content, tool_calls=[call]), {"tools": STRING_TOOLS}))
    thinking: list[dict[str, Any]] = [{}]
    if switch is not None:
        thinking.append({switch.name: switch.on})
    elif "enable_thinking" in renderer.template.variables:
        thinking.append({"enable_thinking": True})
    for variables in thinking:
        for base, opts in shapes:
            for key in ("reasoning_content", "reasoning", "thinking"):
                yield {**base, key: THOUGHT}, base, {**opts, **variables}
            if base.get("content") == ANSWER:
                chunks = [{"type": "thinking", "thinking": THOUGHT}, {"type": "text", "text": ANSWER}]
                yield {**base, "content": chunks}, base, {**opts, **variables}


def _find_markers(
    renderer: ProbeRenderer,
    gens: GenerationPrompts,
    calls: ToolCallProbes | None,
    header: str,
    switch: ThinkingSwitch | None,
) -> ReasoningMarkers:
    """The markers from the first variant that renders reasoning, else from the
    generation prompts."""
    toggles = gens.thinking != gens.no_thinking
    for with_r, without, opts in reasoning_variants(renderer, calls, switch):
        plain = renderer.tail(without, **opts)
        thought = renderer.tail(with_r, **opts)
        if plain is None or thought is None or THOUGHT not in thought:
            continue
        found = markers_around_thought(plain, thought)
        if found is None or not (plausible(found.fmt.start) and plausible(found.fmt.end)):
            continue
        fmt = found.fmt
        if fmt.mode is ReasoningMode.DELIMITER:
            # history without a start marker, but a prompt that opens one
            for prompt in (gens.thinking, gens.default):
                opened = last_marker(prompt)
                if opened and prompt.rstrip().endswith(opened) and fmt.end in closing_candidates(opened):
                    fmt = replace(fmt, mode=ReasoningMode.TAGS, start=opened)
                    break
        fmt = replace(fmt, toggles=toggles, tools_only="tool_calls" in without)
        return replace(found, fmt=fmt)
    return markers_from_prompt(renderer, gens, toggles, header)


def markers_around_thought(without: str, with_r: str) -> ReasoningMarkers | None:
    """The markers around ``THOUGHT`` in ``with_r`` that ``without`` lacks or writes as an
    empty block; ``None`` without an end marker."""
    split = diff_split(without, with_r)
    i = split.right.find(THOUGHT)
    if i == -1:
        return None
    before, after = split.right[:i], split.right[i + len(THOUGHT) :]
    content_start = content_end = ""
    end = after.strip()
    if end:
        # a content wrapper opened after the reasoning (``</think><response>``)
        j = split.suffix.find(ANSWER)
        opened = last_marker(end)
        closing = first_marker(split.suffix[j + len(ANSWER) :]) if j != -1 else ""
        if opened and end != opened and closes(opened, closing):
            content_start, content_end = opened, closing
            end = end[: len(end) - len(opened)].rstrip()
    else:
        # the end marker is in the message without reasoning too (an empty block)
        first = first_marker(split.suffix)
        if first and split.suffix.lstrip().startswith(first):
            end = first
    if not end:
        return None
    start = before.strip()
    if not start:
        # an empty block in the plain message: the start marker ends the common prefix
        cand = last_marker(split.prefix)
        if (
            cand
            and split.prefix.rstrip().endswith(cand)
            and without[len(split.prefix) :].lstrip().startswith(end)
        ):
            start = cand
    mode = ReasoningMode.TAGS if start else ReasoningMode.DELIMITER
    return ReasoningMarkers(ReasoningFormat(mode, start, end), content_start, content_end)


def markers_from_prompt(
    renderer: ProbeRenderer, gens: GenerationPrompts, toggles: bool, header: str
) -> ReasoningMarkers:
    """Templates that drop reasoning from history: an empty block in a generation prompt
    shows both markers; an opened one (``<think>\\n``) is closed by the start marker's
    closing spelling, proved by the template cutting ``THOUGHT<end>`` off an answer; last,
    the usual markers, each proved the same way."""
    extras = [p[len(overlap(header, p)) :] for p in (gens.thinking, gens.default, gens.no_thinking)]
    for extra in extras:
        found = list(MARKER.finditer(extra))
        for m, nxt in itertools.pairwise(found):
            if not extra[m.end() : nxt.start()].strip() and nxt.group() in closing_candidates(m.group()):
                return ReasoningMarkers(
                    ReasoningFormat(ReasoningMode.TAGS, m.group(), nxt.group(), toggles=toggles)
                )
    for extra in extras:
        for tag in reversed(markers(extra)):
            for end in closing_candidates(tag):
                if cuts_reasoning(renderer, end):
                    return ReasoningMarkers(ReasoningFormat(ReasoningMode.TAGS, tag, end, toggles=toggles))
    for start, end in _USUAL_REASONING:
        if cuts_reasoning(renderer, end):
            return ReasoningMarkers(ReasoningFormat(ReasoningMode.TAGS, start, end, toggles=toggles))
    return ReasoningMarkers(ReasoningFormat(toggles=toggles))


def cuts_reasoning(renderer: ProbeRenderer, end: str) -> bool:
    """Whether the template cuts ``THOUGHT<end>`` off an answer (in history, before a later
    answer, or last)."""
    msg = assistant_message(THOUGHT + end + ANSWER)
    for tail in (
        renderer.tail(msg, user_message(USER2)),
        renderer.tail(msg, user_message(USER2), assistant_message(OTHER)),
        renderer.tail(msg),
    ):
        if tail is not None and ANSWER in tail and THOUGHT not in tail:
            return True
    return False
