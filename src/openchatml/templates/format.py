"""What a chat template says about a model's output: the markers around reasoning,
content and tool calls, and how a tool call is spelled.

A :class:`TemplateFormat` is derived from a template by differential analysis
(:mod:`.analysis`), can be patched by data (:mod:`.analysis.patches`), is serialisable to JSON
(``to_json`` / ``from_json``), and is all a parser (:mod:`.parsing`) or a grammar
(:mod:`.grammar`) needs. Every marker is a literal string; ``""`` means "none".

How a tool call is spelled (``ToolCallFormat.syntax``):

* ``json`` — the call is a JSON object: ``{"name": "f", "arguments": {...}}`` (keys from
  ``name_key`` / ``arguments_key``, maybe under ``wrapper_key``, or the name as the key
  with ``name_is_key``); several calls may sit in one JSON array (``array``).
* ``tag_json`` — the name between markers, the arguments one JSON object:
  ``<function=f>{...}</function>``, ``[TOOL_CALLS]f[ARGS]{...}``.
* ``tag_tagged`` — the name and every argument between markers:
  ``<function=f><parameter=k>v</parameter></function>``; strings are written raw, other
  values as JSON (``arg_*`` fields; ``arg_value_prefix_json`` where a template marks the
  non-string values differently).
* ``pythonic`` — ``f(k=v, …)`` with Python literals, calls in a list (``[f(), g()]``).
* ``object_notation`` — ``f{k:v,…}``: JSON-like with bare keys and strings between
  ``string_quote`` markers (Gemma 4).

The layout around the calls: ``section_start`` … ``section_end`` around all the calls of
one message, ``call_start`` … ``call_end`` around each call, ``separator`` between calls.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ReasoningMode(StrEnum):
    """How reasoning is set apart from the answer."""

    NONE = "none"
    """The template has no reasoning."""
    TAGS = "tags"
    """Between ``start`` and ``end`` markers (``<think>…</think>``); when the generation
    prompt already ends with ``start``, the output begins inside the reasoning."""
    DELIMITER = "delimiter"
    """No start marker: everything before ``end`` is reasoning (``…[BEGIN FINAL RESPONSE]``)."""


class ContentMode(StrEnum):
    """Whether the answer itself sits between markers."""

    PLAIN = "plain"
    ALWAYS_WRAPPED = "always_wrapped"
    """``content_start`` … ``content_end`` around every answer (``<response>…</response>``)."""
    WRAPPED_WITH_REASONING = "wrapped_with_reasoning"
    """Wrapped only after reasoning."""


class ToolSyntax(StrEnum):
    """How one tool call is spelled (see the module docstring)."""

    NONE = "none"
    JSON = "json"
    TAG_JSON = "tag_json"
    TAG_TAGGED = "tag_tagged"
    PYTHONIC = "pythonic"
    OBJECT_NOTATION = "object_notation"


class CallIdPosition(StrEnum):
    """Where a call id is written (``tag_*`` syntaxes; in ``json`` it is a key)."""

    NONE = "none"
    BEFORE_NAME = "before_name"
    BETWEEN_NAME_AND_ARGUMENTS = "between_name_and_arguments"
    AFTER_ARGUMENTS = "after_arguments"


@dataclass(frozen=True, slots=True)
class ReasoningFormat:
    """The reasoning markers, and whether thinking can be switched on and off."""

    mode: ReasoningMode = ReasoningMode.NONE
    start: str = ""
    end: str = ""
    toggles: bool = False
    """The template's thinking switch (``switch``) changes the generation prompt."""
    tools_only: bool = False
    """The template writes reasoning only on messages that call tools."""
    switch: str = ""
    """The variable the template reads to switch thinking on and off (``enable_thinking``,
    ``thinking``, ``reasoning_effort``, ``thinking_budget`` …); ``""``: it has none."""
    on: Any = None
    """The value of ``switch`` that switches thinking on (a JSON value: ``true``, ``"high"``,
    ``-1``)."""
    off: Any = None
    """The value of ``switch`` that switches thinking off (``false``, ``"no_think"``, ``0``);
    ``None``: thinking cannot be switched off."""
    efforts: tuple[str, ...] = ()
    """Where the switch takes levels of thinking that render differently, its values from
    the least effort to the most (``("low", "high")``); ``on`` is the last."""


@dataclass(frozen=True, slots=True)
class ContentFormat:
    """The markers around the answer."""

    mode: ContentMode = ContentMode.PLAIN
    start: str = ""
    end: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallFormat:
    """How tool calls are written; ``syntax == NONE`` when the template has no tools."""

    syntax: ToolSyntax = ToolSyntax.NONE
    # layout
    section_start: str = ""
    section_end: str = ""
    call_start: str = ""
    call_end: str = ""
    separator: str = ""
    parallel: bool = False
    """The template renders several calls in one message."""
    # tag_* / pythonic / object_notation: the name and the arguments
    name_prefix: str = ""
    name_suffix: str = ""
    arguments_start: str = ""
    arguments_end: str = ""
    # call ids
    id_position: CallIdPosition = CallIdPosition.NONE
    id_prefix: str = ""
    id_suffix: str = ""
    id_pattern: str = ""
    """How a template makes ids it does not get from the message, as a Python format
    string over ``name`` and ``index`` (``"functions.{name}:{index}"``); ``""`` if none."""
    # json
    name_key: str = "name"
    arguments_key: str = "arguments"
    id_key: str = ""
    wrapper_key: str = ""
    """The object the name and arguments sit in (``{"function": {"name": …}}``)."""
    name_is_key: bool = False
    """``{"f": {...arguments}}``."""
    array: bool = False
    """Calls are the elements of a JSON (or Python) list."""
    arguments_as_string: bool = False
    """The arguments are a JSON-encoded string (``"arguments": "{\\"k\\": 1}"``)."""
    key_order: tuple[str, ...] = ()
    """The keys of a ``json`` call in the order the template writes them."""
    # tag_tagged arguments
    arg_name_prefix: str = ""
    arg_name_suffix: str = ""
    arg_value_prefix: str = ""
    arg_value_suffix: str = ""
    arg_value_prefix_json: str = ""
    """Where non-string values get another value prefix (``string="false">``); ``""``:
    the same as ``arg_value_prefix``."""
    arg_separator: str = ""
    # object_notation
    string_quote: str = ""
    arg_value_wrap_start: str = ""
    """``tag_tagged``: what a template may put around a raw string value that holds markup or
    line breaks (MiniCPM's ``<![CDATA[``), inside which ``arg_value_suffix`` does not end it."""
    arg_value_wrap_end: str = ""
    """The end of that wrapper (``]]>``)."""


@dataclass(frozen=True, slots=True)
class GenerationPrompts:
    """What the template appends with ``add_generation_prompt`` (the text after the last
    message), with thinking left to its default, switched on, and switched off."""

    default: str = ""
    thinking: str = ""
    no_thinking: str = ""
    header: str = ""
    """The role header every assistant message starts with (``<|im_start|>assistant\\n``); what a
    prompt writes after it (``<think>\\n``, functionary's ``>>>``) is the start of the output."""


@dataclass(frozen=True, slots=True)
class TemplateFormat:
    """Everything a parser needs to read a model's output, derived from its template."""

    name: str = ""
    harmony: bool = False
    """A Harmony template (gpt-oss): the core codec parses it, the rest is unused."""
    reasoning: ReasoningFormat = field(default_factory=ReasoningFormat)
    content: ContentFormat = field(default_factory=ContentFormat)
    tools: ToolCallFormat = field(default_factory=ToolCallFormat)
    generation_prompt: GenerationPrompts = field(default_factory=GenerationPrompts)
    end_markers: tuple[str, ...] = ()
    """Markers that end the assistant's turn (``<|im_end|>``, ``<|eot_id|>``), to be
    removed from the end of the output."""
    preserved_tokens: tuple[str, ...] = ()
    """Every marker above, for tokenizers and grammars."""
    patches: tuple[str, ...] = ()
    """Names of the data patches applied (:mod:`.analysis.patches`)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as their values, tuples as lists)."""
        out: dict[str, Any] = _plain(dataclasses.asdict(self))
        return out

    def dumps(self) -> str:
        """``to_json`` as indented JSON text."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TemplateFormat:
        """The inverse of :meth:`to_json` (unknown keys are an error)."""
        built: TemplateFormat = _build(cls, data)
        return built


def _plain(value: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _build(cls: Any, data: dict[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    hints = {f.name: f.type for f in dataclasses.fields(cls)}
    for name, value in data.items():
        kind = _TYPES.get(str(hints[name]))
        if kind is not None and dataclasses.is_dataclass(kind):
            kwargs[name] = _build(kind, value)
        elif kind is not None:
            kwargs[name] = kind(value)
        elif isinstance(value, list):
            kwargs[name] = tuple(value)
        else:
            kwargs[name] = value
    return cls(**kwargs)


_TYPES: dict[str, Any] = {
    "ReasoningMode": ReasoningMode,
    "ContentMode": ContentMode,
    "ToolSyntax": ToolSyntax,
    "CallIdPosition": CallIdPosition,
    "ReasoningFormat": ReasoningFormat,
    "ContentFormat": ContentFormat,
    "ToolCallFormat": ToolCallFormat,
    "GenerationPrompts": GenerationPrompts,
}
