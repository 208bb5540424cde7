"""Errors of chat-template work: a template that cannot render, one whose format cannot
be derived, and warnings a parser attaches to output it had to recover."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..core.errors import OCMError


class TemplateError(OCMError):
    """Base of the chat-template errors (the template is the caller's input)."""

    code: ClassVar[str] = "E-TEMPLATE"
    fault = "caller"


class TemplateSyntaxError(TemplateError):
    """The template is not valid Jinja."""

    code: ClassVar[str] = "E-TEMPLATE-SYNTAX"


class TemplateRenderError(TemplateError):
    """Rendering failed: the template raised (``raise_exception``), or used something the
    sandbox does not provide."""

    code: ClassVar[str] = "E-TEMPLATE-RENDER"


class UnsupportedTemplateError(TemplateError):
    """The template renders, but a feature it needs (tools, reasoning …) cannot be derived;
    the message says which."""

    code: ClassVar[str] = "E-TEMPLATE-UNSUPPORTED"


@dataclass(frozen=True, slots=True)
class ParseWarning:
    """Something a template parser recovered from instead of failing.

    ``code``: ``W-TRUNCATED`` (output ended inside a marker, reasoning or tool call),
    ``W-TOOL-ARGS`` (arguments not valid JSON; kept as text, or repaired into JSON where
    they were already streamed: what could not stand was skipped and the rest closed),
    ``W-TOOL-UNKNOWN`` (a call to a tool that was not offered), ``W-MARKER`` (a marker
    where it cannot stand; kept as content), ``W-STRAY`` (a marker out of place that was
    dropped: a repeat of the role header, a reasoning end with no reasoning, text after
    the end-of-turn marker), ``W-TOOL-CALL`` (a tool call without a name, or a tool-call
    section left without its end marker), ``W-REASONING-OPEN`` (the reasoning was never
    closed and a tool call inside it was taken as the message's), ``W-INTERNAL`` (the
    parser failed on its own; the rest of the output was kept as content). ``offset`` is
    the character offset in the output where it was noticed.
    """

    code: str
    message: str
    offset: int = 0
