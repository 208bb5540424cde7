"""The tool-call syntax, and what follows a message's calls.

One call, two calls, two arguments, an integer argument. The call is JSON when a JSON
value around the name contains it (:mod:`.json_calls`); otherwise the text after the name
is JSON arguments, a Python call, ``{k:<q>v<q>}`` object notation, or tagged arguments
(:mod:`.named_calls`). What follows the last call splits into the section's end and the
turn's end (``<|eom_id|>``) once an answer's end is known."""

from __future__ import annotations

from ..format import ReasoningFormat, ToolCallFormat
from .call_layout import ToolCallBodies, call_bodies
from .closers import find_closer
from .diff import MARKER, first_marker, lcp_marker_safe, markers
from .json_calls import json_calls
from .named_calls import named_calls
from .probes import NAME1, TOOL_RESULT, ToolCallProbes
from .values import json_containing


class ToolCallAnalysis:
    """The tool calls of one template, from its tool-call ``probes`` after the role
    ``header``. :meth:`run` derives the format and keeps the text of the section's start
    (:attr:`section`) and what follows the last call (:attr:`rest`), which
    :meth:`split_rest` splits once an answer's end is known."""

    def __init__(
        self, template_name: str, probes: ToolCallProbes, header: str, reasoning: ReasoningFormat
    ) -> None:
        self.template_name = template_name
        self.header = header
        self.reasoning = reasoning
        self.bodies: ToolCallBodies = call_bodies(probes, header)
        self.section = ""
        self.rest = ""

    def run(self) -> ToolCallFormat:
        """The tool-call format; raises :class:`~..errors.UnsupportedTemplateError` when the
        calls render but cannot be read."""
        one = self.bodies.one
        found = json_containing(one, NAME1)
        if found is not None:
            derived = json_calls(self.bodies, found, self.reasoning, self.template_name)
        else:
            derived = named_calls(self.bodies, self.reasoning, self.template_name)
        self.section, self.rest = derived.section, derived.rest
        self.bound_rest()
        return derived.fmt

    def following(self) -> str | None:
        """What follows the last call when a tool result follows it (from where
        :attr:`rest` starts), or ``None``."""
        followed = self.bodies.followed
        one = self.bodies.one
        if followed is None or not one.endswith(self.rest):
            return None
        prefix = one[: len(one) - len(self.rest)]
        return followed[len(prefix) :] if followed.startswith(prefix) else None

    def bound_rest(self) -> None:
        """Cut :attr:`rest` where a tool result would follow instead (templates that append
        instructions after the last message)."""
        following = self.following() if self.rest else None
        if following is not None:
            n = lcp_marker_safe([self.rest, following])
            if n and self.rest[n:].strip():
                self.rest = self.rest[:n]

    def split_rest(self, answer_end: str) -> tuple[str, str]:
        """What follows the last call as ``(section_end, turn end)``: the section ends with
        the marker closing its start, else before the marker that ends an answer
        (``answer_end``)."""
        rest = self.rest
        if not self.section.strip():
            return "", rest
        closer = find_closer(markers(self.section), rest)
        if closer is not None:
            return rest[: closer.end()], rest[closer.end() :]
        first_end = first_marker(answer_end.strip())
        if first_end and first_end in rest:
            j = rest.find(first_end)
            return rest[:j], rest[j:]
        m = MARKER.search(rest)  # a closing text without markers (``\n```)
        if m is not None:
            return rest[: m.start()], rest[m.start() :]
        return rest, ""

    def next_header_marker(self, section_end: str) -> str:
        """The first marker between the last call (and the section's end) and a tool
        result that follows (``""`` if none)."""
        following = self.following()
        if following is None or TOOL_RESULT not in following:
            return ""
        after = following[: following.find(TOOL_RESULT)]
        if section_end and after.startswith(section_end):
            after = after[len(section_end) :]
        return first_marker(after)
