"""The parse plan: what a :class:`~..format.TemplateFormat` tells a parser, compiled once.

:func:`compile_plan` turns a format's markers into the scanners and candidate lists each
state of the parser reads with (:mod:`.machine`): which markers end free text, which may
stand between calls, what ends a call's name, where a tagged argument's name and value
end. Markers are kept without their surrounding whitespace (see :mod:`.markers`).
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from typing import Final

from ..format import CallIdPosition, ContentMode, ReasoningMode, TemplateFormat, ToolCallFormat, ToolSyntax
from .markers import Marker, MarkerAction, Scanner, marker_for, split_whitespace

JSON_OPENERS: Final = "{[("
_CLOSERS: Final = "}])"
_MARKER_SEGMENT: Final = re.compile(r"<[^<>\s]{1,64}>|\[[^\[\]\s]{1,64}\]|<｜[^｜]{1,64}｜>")

BetweenCalls = tuple[tuple[str, str], ...]
"""Markers read between calls or between tagged arguments: (text, what it is), longest first."""
ValuePrefixes = tuple[tuple[str, tuple[str, str]], ...]
"""The markers before a tagged value: (text, (``"json"`` or ``"raw"``, the whitespace after it))."""


@dataclass(frozen=True, slots=True)
class ParsePlan:
    """The scanners and settings a format gives a parser (built once per format)."""

    fmt: TemplateFormat
    extract_reasoning: bool
    json_answer: bool
    """The answer is JSON: a code fence around it is dropped."""
    syntax: ToolSyntax
    content_scanner: Scanner
    """The markers that end the answer's text: reasoning, tool calls, end of turn …"""
    reasoning_scanner: Scanner
    """The markers that end the reasoning's text: its end, a tool-call opener, end of turn."""
    reasoning_end_scanner: Scanner
    starts_in_reasoning: bool
    """The output begins inside the reasoning (a reasoning end with no start marker)."""
    bare_calls: str
    """``"json"`` or ``"pythonic"`` when calls may open the output with no marker."""
    repeated_headers: tuple[str, ...]
    """Pieces of the role header a model may write again at the start, longest first."""
    section_markers: BetweenCalls
    """What may stand between calls: ``section_end``, ``call_start``, ``call_end``,
    ``section_start``, ``separator``, ``end`` (an end-of-turn marker)."""
    call_start: str
    call_end: str
    call_end_trail: str
    """The whitespace after the call end marker."""
    arguments_start: str
    arguments_end: str
    arguments_end_closes: bool
    """The arguments' end marker begins with the JSON value's own closing bracket."""
    section_end: str
    name_prefix: str
    name_suffix: str
    arguments_opener: re.Pattern[str] | None
    """What ends a call's name: its arguments' opener, or an end marker (no arguments)."""
    header_openers: tuple[str, ...]
    """The markers :attr:`arguments_opener` may find a piece of at the buffer's end."""
    value_stops: tuple[str, ...]
    """Markers that end a JSON-like value left open."""
    between_arguments: BetweenCalls
    """What may stand between tagged arguments: ``arg`` (a name prefix), ``args_end``,
    ``stop`` (the call ends), ``separator``."""
    between_arguments_first: re.Pattern[str] | None
    """The characters those begin with."""
    argument_name_scanner: Scanner
    """What ends a tagged argument's name: its suffix (``VALUE_END``) or a value prefix."""
    argument_name_trail: str
    """Whitespace consumed after a tagged argument's name."""
    value_prefixes: ValuePrefixes
    value_scanner: Scanner
    """What ends a tagged value: its suffix (``VALUE_END``), or what ends one left open."""
    value_wrap_start: str
    """A wrapper around tagged values (``<![CDATA[``); ``""`` for none."""
    value_wrap_end: str
    string_quote: str
    """Object notation's own string delimiter (``<|"|>``)."""
    id_regex: re.Pattern[str] | None
    """Ids made by the format's ``id_pattern``, naming the tool in group ``name``."""
    id_pattern: str
    id_position: CallIdPosition
    id_prefix: str
    id_suffix: str
    call_keys: frozenset[str]
    """Keys that make a markerless JSON object a call."""


@functools.lru_cache(maxsize=256)
def compile_plan(fmt: TemplateFormat, extract_reasoning: bool, json_answer: bool) -> ParsePlan:
    """The parse plan of ``fmt`` (cached)."""
    reasoning, tools = fmt.reasoning, fmt.tools
    has_reasoning = reasoning.mode is not ReasoningMode.NONE and bool(reasoning.end)
    triggers = _tool_triggers(tools)
    end_markers = [marker_for(e, MarkerAction.END_OF_TURN) for e in fmt.end_markers]
    reasoning_end = marker_for(reasoning.end, MarkerAction.REASONING_END)
    name_markers, name_trail = _argument_name_markers(tools)
    between_arguments = _between_arguments(fmt)
    args_end = tools.arguments_end.strip()
    return ParsePlan(
        fmt=fmt,
        extract_reasoning=extract_reasoning,
        json_answer=json_answer,
        syntax=tools.syntax,
        content_scanner=Scanner(_content_markers(fmt, triggers, end_markers, json_answer)),
        reasoning_scanner=Scanner([reasoning_end, *triggers, *end_markers]),
        reasoning_end_scanner=Scanner([reasoning_end]),
        starts_in_reasoning=has_reasoning and reasoning.mode is ReasoningMode.DELIMITER,
        bare_calls=_bare_calls(tools),
        repeated_headers=_repeated_headers(fmt),
        section_markers=_section_markers(fmt),
        call_start=tools.call_start.strip(),
        call_end=tools.call_end.strip(),
        call_end_trail=tools.call_end[len(tools.call_end.rstrip()) :],
        arguments_start=tools.arguments_start.strip(),
        arguments_end=args_end,
        arguments_end_closes=bool(args_end) and args_end[0] in _CLOSERS,
        section_end=tools.section_end.strip(),
        name_prefix=tools.name_prefix.strip(),
        name_suffix=tools.name_suffix.strip(),
        arguments_opener=_arguments_opener(tools),
        header_openers=tuple(
            t.strip()
            for t in (
                tools.arguments_start,
                tools.arg_name_prefix,
                tools.arguments_end,
                tools.call_end,
                tools.section_end,
            )
            if t.strip()
        ),
        value_stops=_value_stops(fmt),
        between_arguments=between_arguments,
        between_arguments_first=_first_characters(between_arguments),
        argument_name_scanner=Scanner(name_markers, exact=True),
        argument_name_trail=name_trail,
        value_prefixes=_value_prefixes(tools),
        value_scanner=Scanner(_value_markers(tools), exact=True),
        value_wrap_start=tools.arg_value_wrap_start if tools.arg_value_wrap_end else "",
        value_wrap_end=tools.arg_value_wrap_end,
        string_quote=tools.string_quote.strip() if tools.syntax is ToolSyntax.OBJECT_NOTATION else "",
        id_regex=_id_regex(tools.id_pattern),
        id_pattern=tools.id_pattern,
        id_position=tools.id_position,
        id_prefix=tools.id_prefix.strip(),
        id_suffix=tools.id_suffix.strip(),
        call_keys=frozenset(
            {tools.name_key, tools.arguments_key, tools.id_key, tools.wrapper_key, "name", "function", "type"}
        ),
    )


# --- free text ------------------------------------------------------------------------------


def _tool_triggers(tools: ToolCallFormat) -> list[Marker | None]:
    """The markers that open tool calls in free text."""
    if tools.syntax is ToolSyntax.NONE:
        return []
    triggers = [
        marker_for(tools.section_start, MarkerAction.SECTION_START),
        marker_for(tools.call_start, MarkerAction.CALL_START),
    ]
    if (
        not tools.section_start.strip()
        and not tools.call_start.strip()
        and tools.syntax in (ToolSyntax.TAG_JSON, ToolSyntax.TAG_TAGGED, ToolSyntax.OBJECT_NOTATION)
    ):
        triggers.append(marker_for(tools.name_prefix, MarkerAction.NAME_PREFIX))
    return triggers


def _content_markers(
    fmt: TemplateFormat, triggers: list[Marker | None], end_markers: list[Marker | None], json_answer: bool
) -> list[Marker | None]:
    """The markers looked for in the answer's text."""
    reasoning, content = fmt.reasoning, fmt.content
    has_reasoning = reasoning.mode is not ReasoningMode.NONE and bool(reasoning.end)
    found: list[Marker | None] = []
    reasoning_start = (
        marker_for(reasoning.start, MarkerAction.REASONING_START)
        if has_reasoning and reasoning.mode is ReasoningMode.TAGS
        else None
    )
    if reasoning_start is not None:
        found.append(reasoning_start)
    repeats: list[Marker | None] = []
    for opener in [reasoning_start, *triggers]:
        if opener is not None:
            segment = _leading_segment(opener.text)
            if segment:
                repeats.append(Marker(segment + opener.text, opener.trail, MarkerAction.REPEAT, len(segment)))
    found += triggers
    if has_reasoning:
        found.append(marker_for(reasoning.end, MarkerAction.REASONING_END))
    if content.mode is not ContentMode.PLAIN:
        found.append(marker_for(content.start, MarkerAction.CONTENT_START))
        found.append(marker_for(content.end, MarkerAction.CONTENT_END))
    found += end_markers
    found += repeats
    if json_answer:
        found.append(Marker("```json\n", "", MarkerAction.FENCE))
        found.append(Marker("```", "\n", MarkerAction.FENCE))
    return found


def _leading_segment(text: str) -> str:
    """The special-token-like piece a marker begins with (``<|channel>`` of
    ``<|channel>thought``), ``""`` when it is the whole marker or there is none."""
    m = _MARKER_SEGMENT.match(text)
    if m is None or m.end() == len(text):
        return ""
    return m.group()


def _repeated_headers(fmt: TemplateFormat) -> tuple[str, ...]:
    """The role-header pieces that end the generation prompt, a model may write again."""
    prompt = fmt.generation_prompt
    found: set[str] = set()
    for text in {prompt.header} if prompt.header else {prompt.default, prompt.thinking, prompt.no_thinking}:
        found.update(_trailing_segments(text))
    return tuple(sorted(found, key=len, reverse=True))


def _trailing_segments(text: str) -> list[str]:
    """Every suffix of ``text`` made only of special-token-like pieces, shortest first
    (``<|CHATBOT_TOKEN|>``, ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``)."""
    out: list[str] = []
    end = len(text.rstrip())
    start = end
    while start > 0:
        best = -1
        for m in _MARKER_SEGMENT.finditer(text, 0, start):
            if m.end() == start:
                best = m.start()
        if best < 0:
            break
        start = best
        out.append(text[start:end])
    return out


def _bare_calls(tools: ToolCallFormat) -> str:
    if tools.section_start.strip() or tools.call_start.strip():
        return ""
    if tools.syntax is ToolSyntax.JSON:
        return "json"
    if tools.syntax is ToolSyntax.PYTHONIC:
        return "pythonic"
    return ""


# --- calls ------------------------------------------------------------------------------------


def _section_markers(fmt: TemplateFormat) -> BetweenCalls:
    tools = fmt.tools
    found: list[tuple[str, str]] = []
    for text, tag in (
        (tools.section_end.strip(), "section_end"),
        (tools.call_start.strip(), "call_start"),
        (tools.call_end.strip(), "call_end"),
        (tools.section_start.strip(), "section_start"),
        (tools.separator.strip(), "separator"),
    ):
        if text:
            found.append((text, tag))
    found += [(e.strip(), "end") for e in fmt.end_markers if e.strip()]
    found.sort(key=lambda c: -len(c[0]))
    return tuple(found)


def _arguments_opener(tools: ToolCallFormat) -> re.Pattern[str] | None:
    """What ends a call's name: the arguments' start, the bracket that opens them, the
    first argument's name prefix, or an end marker (a call with no arguments)."""
    syntax = tools.syntax
    alternatives: list[str] = []
    if tools.arguments_start.strip():
        alternatives.append(re.escape(tools.arguments_start.strip()))
    if syntax in (ToolSyntax.TAG_JSON, ToolSyntax.OBJECT_NOTATION):
        alternatives.append(r"\{")
    elif syntax is ToolSyntax.PYTHONIC:
        alternatives.append(r"\(")
    elif syntax is ToolSyntax.TAG_TAGGED and tools.arg_name_prefix.strip():
        alternatives.append(re.escape(tools.arg_name_prefix.strip()))
    name_suffix = tools.name_suffix.strip()
    for t in (tools.arguments_end.strip(), tools.call_end.strip(), tools.section_end.strip()):
        # an end marker ends a call with no arguments, unless the name's suffix holds it
        if t and not (syntax is not ToolSyntax.TAG_TAGGED and t[0] in _CLOSERS) and t not in name_suffix:
            alternatives.append(re.escape(t))
    alternatives.sort(key=len, reverse=True)
    return re.compile("|".join(alternatives)) if alternatives else None


def _value_stops(fmt: TemplateFormat) -> tuple[str, ...]:
    tools = fmt.tools
    ends = (
        tools.arguments_end.strip(),
        tools.call_end.strip(),
        tools.section_end.strip(),
        tools.call_start.strip(),
    )
    stops = [t for t in ends if t and t[0] not in JSON_OPENERS + _CLOSERS]
    return tuple(stops + [e.strip() for e in fmt.end_markers if e.strip()])


def _id_regex(pattern: str) -> re.Pattern[str] | None:
    """A regex matching ids made by ``id_pattern`` (``functions.{name}:{index}``)."""
    if not pattern or "{" not in pattern:
        return None
    try:
        fields = list(string.Formatter().parse(pattern))
    except ValueError:
        fields = [(pattern, None, None, None)]
    out = []
    for literal, field, _spec, _conversion in fields:
        out.append(re.escape(literal))
        if field is None:
            continue
        if field == "name":
            out.append(r"(?P<name>[^\s<>]+?)")
        elif field == "index":
            out.append(r"\d+")
        else:
            out.append(r".*?")
    try:
        return re.compile("".join(out))
    except re.error:
        return None


# --- tagged arguments -------------------------------------------------------------------------


def _between_arguments(fmt: TemplateFormat) -> BetweenCalls:
    tools = fmt.tools
    found: list[tuple[str, str]] = []
    for text, tag in (
        (tools.arg_name_prefix.strip(), "arg"),
        (tools.arguments_end.strip(), "args_end"),
        (tools.call_end.strip(), "stop"),
        (tools.section_end.strip(), "stop"),
        (tools.call_start.strip(), "stop"),
        (tools.arg_separator.strip(), "separator"),
    ):
        if text:
            found.append((text, tag))
    found += [(e.strip(), "stop") for e in fmt.end_markers if e.strip()]
    found.sort(key=lambda c: -len(c[0]))
    return tuple(found)


def _first_characters(candidates: BetweenCalls) -> re.Pattern[str] | None:
    firsts = sorted({text[0] for text, _ in candidates})
    return re.compile("[" + "".join(re.escape(c) for c in firsts) + "]") if firsts else None


def _argument_name_markers(tools: ToolCallFormat) -> tuple[list[Marker | None], str]:
    """What ends a tagged argument's name, and the whitespace consumed after it."""
    _, suffix, trail = split_whitespace(tools.arg_name_suffix)
    _, value_prefix, _ = split_whitespace(tools.arg_value_prefix)
    _, json_prefix, _ = split_whitespace(tools.arg_value_prefix_json)
    if not suffix:  # the name ends at a newline: nothing more to consume
        trail = ""
    elif not value_prefix:  # whitespace between the name's end and the value
        trail += tools.arg_value_prefix
    markers = [
        Marker(suffix, "", MarkerAction.VALUE_END) if suffix else None,
        Marker(value_prefix, "", MarkerAction.STOP) if value_prefix else None,
        Marker(json_prefix, "", MarkerAction.STOP) if json_prefix else None,
    ]
    if not suffix and not value_prefix:
        markers.append(Marker("\n", "", MarkerAction.VALUE_END))
    return markers, trail


def _value_prefixes(tools: ToolCallFormat) -> ValuePrefixes:
    _, value_prefix, value_trail = split_whitespace(tools.arg_value_prefix)
    _, json_prefix, json_trail = split_whitespace(tools.arg_value_prefix_json)
    found: list[tuple[str, tuple[str, str]]] = []
    if json_prefix and json_prefix != value_prefix:
        found.append((json_prefix, ("json", json_trail)))
    if value_prefix:
        found.append((value_prefix, ("raw", value_trail)))
    found.sort(key=lambda c: -len(c[0]))
    return tuple(found)


def _value_markers(tools: ToolCallFormat) -> list[Marker | None]:
    """What ends a tagged value: its suffix, or (a value left open) what comes after it."""
    lead, suffix, trail = split_whitespace(tools.arg_value_suffix)
    found: list[Marker | None] = []
    if suffix:
        if lead:
            found.append(Marker(lead + suffix, trail, MarkerAction.VALUE_END))
        found.append(Marker(suffix, trail, MarkerAction.VALUE_END))
    name_prefix = tools.arg_name_prefix.strip()
    for t in (
        tools.arguments_end.strip(),
        tools.call_end.strip(),
        tools.section_end.strip(),
        name_prefix if name_prefix != suffix else "",
    ):
        if t:  # where a value left open ends (the suffix's leading whitespace is not the value's)
            if lead:
                found.append(Marker(lead + t, "", MarkerAction.STOP, len(lead)))
            found.append(Marker(t, "", MarkerAction.STOP))
    return found
