"""What an output parser reports: one frozen, slotted dataclass per kind of delta.

In the order of the output:

* :class:`ContentText` / :class:`ReasoningText` — the next piece of the answer / of the
  reasoning;
* :class:`ToolCallStarted` — call ``index`` begins: its ``name`` and, when written before
  its arguments, its ``id``;
* :class:`ToolArgumentsText` — the next piece of call ``index`` 's arguments (JSON text:
  the pieces of a call join into its arguments);
* :class:`ToolCallIdentified` — the ``id`` of call ``index``, written after the call began.

:data:`Delta` is their union; a consumer matches on the classes. A tool delta built by a
caller has its ``index`` checked; the parsers build theirs with the functions at the end
of this module, which skip ``__init__`` (a hot path) and trust what they are given (the
hottest paths call :data:`new_delta` and a setter in place, saving a call).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeAlias

__all__ = [
    "KIND_NAMES",
    "ContentText",
    "Delta",
    "ReasoningText",
    "ToolArgumentsText",
    "ToolCallIdentified",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class ContentText:
    """The next piece of the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningText:
    """The next piece of the reasoning."""

    text: str


def _check_index(index: int) -> None:
    if index < 0:
        raise ValueError(f"a tool call's index is 0 or more, not {index}")


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """Call ``index`` (0, 1, … in the order of the output) begins: its ``name``, and its
    ``id`` when written before its arguments (``""`` if not)."""

    index: int
    name: str
    id: str = ""

    def __post_init__(self) -> None:
        _check_index(self.index)


@dataclass(frozen=True, slots=True)
class ToolArgumentsText:
    """The next piece of call ``index`` 's arguments, as JSON text."""

    index: int
    text: str

    def __post_init__(self) -> None:
        _check_index(self.index)


@dataclass(frozen=True, slots=True)
class ToolCallIdentified:
    """The ``id`` of call ``index``, written after the call began."""

    index: int
    id: str

    def __post_init__(self) -> None:
        _check_index(self.index)


Delta: TypeAlias = ContentText | ReasoningText | ToolCallStarted | ToolArgumentsText | ToolCallIdentified
"""Any delta an output parser reports."""

KIND_NAMES: Final[Mapping[type[object], str]] = MappingProxyType(
    {
        ContentText: "content",
        ReasoningText: "reasoning",
        ToolCallStarted: "tool_call",
        ToolArgumentsText: "tool_arguments",
        ToolCallIdentified: "tool_id",
    }
)
"""Each kind's name where deltas are written out as JSON (``"kind": "tool_call"``)."""


# --- built by the parsers, without ``__init__`` -------------------------------------------

new_delta = object.__new__
"""A delta's class → an empty delta of it, for the setters below to fill (a hot path)."""
set_content_text = ContentText.__dict__["text"].__set__
"""(delta, text): fills an empty :class:`ContentText`."""
set_reasoning_text = ReasoningText.__dict__["text"].__set__
"""(delta, text): fills an empty :class:`ReasoningText`."""
_set_started_index = ToolCallStarted.__dict__["index"].__set__
_set_started_name = ToolCallStarted.__dict__["name"].__set__
_set_started_id = ToolCallStarted.__dict__["id"].__set__
_set_arguments_index = ToolArgumentsText.__dict__["index"].__set__
_set_arguments_text = ToolArgumentsText.__dict__["text"].__set__
_set_identified_index = ToolCallIdentified.__dict__["index"].__set__
_set_identified_id = ToolCallIdentified.__dict__["id"].__set__


def content_text(text: str) -> ContentText:
    """A :class:`ContentText`, unchecked."""
    delta: ContentText = new_delta(ContentText)
    set_content_text(delta, text)
    return delta


def reasoning_text(text: str) -> ReasoningText:
    """A :class:`ReasoningText`, unchecked."""
    delta: ReasoningText = new_delta(ReasoningText)
    set_reasoning_text(delta, text)
    return delta


def tool_call_started(index: int, name: str, id: str) -> ToolCallStarted:
    """A :class:`ToolCallStarted`, unchecked."""
    delta: ToolCallStarted = new_delta(ToolCallStarted)
    _set_started_index(delta, index)
    _set_started_name(delta, name)
    _set_started_id(delta, id)
    return delta


def tool_arguments_text(index: int, text: str) -> ToolArgumentsText:
    """A :class:`ToolArgumentsText`, unchecked."""
    delta: ToolArgumentsText = new_delta(ToolArgumentsText)
    _set_arguments_index(delta, index)
    _set_arguments_text(delta, text)
    return delta


def tool_call_identified(index: int, id: str) -> ToolCallIdentified:
    """A :class:`ToolCallIdentified`, unchecked."""
    delta: ToolCallIdentified = new_delta(ToolCallIdentified)
    _set_identified_index(delta, index)
    _set_identified_id(delta, id)
    return delta
