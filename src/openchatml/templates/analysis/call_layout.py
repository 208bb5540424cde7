"""What surrounds the tool calls of a message.

The text before the first call, between the calls and after the last one splits into
section markers (once per message), call markers (repeated per call) and the separator,
by comparing what precedes the first call with what precedes the second, and what
follows the first with what follows the second (names and ids masked)."""

from __future__ import annotations

from dataclasses import dataclass

from ..format import ReasoningFormat, ToolCallFormat
from .diff import lcp_marker_safe, lcs_marker_safe
from .probes import ID1, ID2, NAME1, NAME2, ToolCallProbes


@dataclass(frozen=True, slots=True)
class ToolCallBodies:
    """The tool-call probes' tails without the role header (see
    :class:`~.probes.ToolCallProbes`); ``None`` where a probe did not render."""

    one: str
    two: str | None
    followed: str | None
    pair: str | None
    typed: str | None
    markup: str | None


def body_of(tail: str | None, header: str) -> str | None:
    """``tail`` without ``header`` (or without the part of it ``tail`` starts with)."""
    if tail is None:
        return None
    if tail.startswith(header):
        return tail[len(header) :]
    return tail[lcp_marker_safe([tail, header]) :]


def call_bodies(probes: ToolCallProbes, header: str) -> ToolCallBodies:
    """The bodies of ``probes`` after the role ``header``."""
    return ToolCallBodies(
        one=body_of(probes.one, header) or "",
        two=body_of(probes.two, header),
        followed=body_of(probes.followed, header),
        pair=body_of(probes.pair, header),
        typed=body_of(probes.typed, header),
        markup=body_of(probes.markup, header),
    )


@dataclass(frozen=True, slots=True)
class DerivedToolCalls:
    """A tool-call format as read off the probes, with the text of its section start
    (``section``) and what follows the last call (``rest``: the section's end and the
    turn's end, split once an answer's end is known)."""

    fmt: ToolCallFormat
    section: str
    rest: str


@dataclass(slots=True)
class CallLayout:
    """What surrounds the calls of a message: ``section`` (before the first call),
    ``head`` (before each call's name or JSON), ``tail`` (after each call's arguments),
    ``separator`` (between calls) and ``rest`` (after the last call's tail)."""

    section: str
    head: str
    tail: str
    separator: str
    rest: str


def masked(text: str) -> str:
    """``text`` with ids and names replaced by placeholders of the same length."""
    for needle, mark in ((ID1, "\x03"), (ID2, "\x03"), (NAME1, "\x01"), (NAME2, "\x01")):
        text = text.replace(needle, mark * len(needle))
    return text


def layout_calls(body: str, cores: list[tuple[int, int]]) -> CallLayout:
    """The text around the calls' ``cores`` in ``body`` (a core: a call's name to the end
    of its arguments, or its JSON; one or two of them)."""
    before = body[: cores[0][0]]
    if len(cores) < 2:
        return CallLayout(before, "", "", "", body[cores[0][1] :])
    between = body[cores[0][1] : cores[1][0]]
    after = body[cores[1][1] :]
    shared = lcs_marker_safe([masked(before), masked(between)])
    head = before[len(before) - shared :] if shared else ""
    shared = len(head.lstrip())  # whitespace after the previous marker stays with it
    section = before[: len(before) - shared]
    between = between[: len(between) - shared]
    common = lcp_marker_safe([masked(between), masked(after)])
    return CallLayout(
        section, before[len(before) - shared :], between[:common], between[common:], after[common:]
    )


def strip_reasoning(text: str, reasoning: ReasoningFormat) -> str:
    """``text`` without the (empty) reasoning block some templates write before calls."""
    if reasoning.end and reasoning.end in text:
        j = text.find(reasoning.end)
        if not reasoning.start or reasoning.start in text[:j] or not text[:j].strip():
            return text[j + len(reasoning.end) :]
    return text


def split_sections(layout: CallLayout, single: bool, reasoning: ReasoningFormat) -> tuple[str, str]:
    """``(section_start, head)`` of ``layout``: with one call only (``single``), the
    markers before it are the call's; whitespace and reasoning before the first marker
    go."""
    section, head = layout.section, layout.head
    if single:
        section, head = "", section
    section = strip_reasoning(section, reasoning)
    if not section.strip():
        return "", strip_reasoning(section + head, reasoning).lstrip()
    return section.lstrip(), head
