"""Parsing a model's output with its chat template's :class:`~..format.TemplateFormat`:
:func:`open_parser` (any format, Harmony's too) or :class:`TemplateParser`, fed text and
returning :mod:`.deltas`; :func:`parse_output` for a whole output at once."""

from __future__ import annotations

from .deltas import (
    KIND_NAMES,
    ContentText,
    Delta,
    ReasoningText,
    ToolArgumentsText,
    ToolCallIdentified,
    ToolCallStarted,
)
from .message import ParsedMessage, ToolCall
from .options import ParseOptions
from .output import HarmonyOutputParser, OutputParser, open_parser
from .parser import TemplateParser, parse_output

__all__ = [
    "KIND_NAMES",
    "ContentText",
    "Delta",
    "HarmonyOutputParser",
    "OutputParser",
    "ParseOptions",
    "ParsedMessage",
    "ReasoningText",
    "TemplateParser",
    "ToolArgumentsText",
    "ToolCall",
    "ToolCallIdentified",
    "ToolCallStarted",
    "open_parser",
    "parse_output",
]
