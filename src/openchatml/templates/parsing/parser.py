"""A streaming parser for a model's output, generated from its :class:`TemplateFormat`.

:class:`TemplateParser` is sans-IO: :meth:`~TemplateParser.feed` takes the next piece of
the output and returns the :mod:`.deltas` it makes certain; :meth:`~TemplateParser.finish`
says the output has ended. How it reads is :mod:`.machine`'s theory of operation.

The hot path: while plain text continues (content, reasoning, a string inside tool-call
arguments) and a new piece holds no character a marker (or the string's end) begins
with, :meth:`~TemplateParser.feed` emits it without running the state machine. When
markers begin with one character only (most formats: ``<``), a piece is checked with
``in`` rather than a regex.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Final, NamedTuple

from ..errors import UnsupportedTemplateError
from ..format import TemplateFormat
from .deltas import (
    ContentText,
    Delta,
    ReasoningText,
    ToolArgumentsText,
    new_delta,
    set_content_text,
    set_reasoning_text,
    tool_arguments_text,
)
from .json_writer import encode_string
from .machine import Machine
from .markers import Scanner
from .message import ParsedMessage, ToolCall
from .options import ParseOptions
from .plan import compile_plan
from .states import State
from .tagged_states import NO_WRAPPER

__all__ = ["TemplateParser", "parse_output"]

_NEVER: Final = re.compile(r"(?!)")
_HOT_CONTENT: Final = 0
_HOT_REASONING: Final = 1
_HOT_RAW_STRING: Final = 2
"""Raw text of a string value."""
_HOT_DOUBLE_QUOTED: Final = 3
"""The inside of a double-quoted string (escapes decoded)."""
_HOT_SINGLE_QUOTED: Final = 4
"""The inside of a single-quoted string."""
_STRING_BODIES: Final = {
    '"': (re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S), _HOT_DOUBLE_QUOTED),
    "'": (re.compile(r"[^'\\]*(?:\\[^'][^'\\]*)*", re.S), _HOT_SINGLE_QUOTED),
}
_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_NOT_AS_IS: Final = re.compile(r'\\[^"\\bfnrt]|[\x00-\x1f]')
"""What in a double-quoted string body :func:`~.json_writer.encode_string` would write otherwise."""
_SINGLE_NOT_AS_IS: Final = re.compile(r'\\[^"\\bfnrt]|[\x00-\x1f"]')

_DEFAULTS: Final = ParseOptions()

HotPath = tuple[int, str, Callable[[str], "re.Match[str] | None"]]
"""What the next text may continue without the machine: (what it is: ``_HOT_*``; the one
character that would end it, or ``""``; the ``search`` of the characters that would end
it, or for a quoted string the ``match`` of its body)."""


class PlainPaths(NamedTuple):
    """The hot paths of a parser's plain text, made once per parser."""

    content: HotPath
    reasoning: HotPath
    """Reasoning (content when reasoning is not extracted)."""
    raw_string: HotPath
    """A tagged argument's raw string value."""


def parse_output(fmt: TemplateFormat, text: str, options: ParseOptions = _DEFAULTS) -> ParsedMessage:
    """The message ``text`` (the model's whole output, after ``options.prefix``) holds."""
    parser = TemplateParser(fmt, options)
    parser.feed(text)
    parser.finish()
    return parser.message


class TemplateParser:
    """The streaming parser for ``fmt``; see the module docstring.

    :meth:`feed` returns the deltas that what was fed makes certain; :meth:`finish`
    ends the output (flushes, closes what is open, warns of what was recovered);
    :attr:`message` is the parse so far. Never raises on any output text; a Harmony
    format (``fmt.harmony``) raises :class:`~..errors.UnsupportedTemplateError` here: the
    core codec parses it.
    """

    __slots__ = ("_finished", "_hot", "_machine", "_message", "_plain_paths")

    def __init__(self, fmt: TemplateFormat, options: ParseOptions = _DEFAULTS) -> None:
        if fmt.harmony:
            raise UnsupportedTemplateError(
                f"{fmt.name or 'this template'} writes Harmony: parse its output with the core codec"
            )
        plan = compile_plan(fmt, options.extract_reasoning, options.json_schema is not None)
        machine = Machine(plan, options)
        self._machine = machine
        self._finished = False
        self._message: ParsedMessage | None = None
        self._hot: HotPath | None = None
        """The hot path of the next :meth:`feed`, if it has one."""
        reasoning = _HOT_REASONING if options.extract_reasoning else _HOT_CONTENT
        self._plain_paths = PlainPaths(
            _plain(_HOT_CONTENT, plan.content_scanner),
            _plain(reasoning, plan.reasoning_scanner),
            _plain(_HOT_RAW_STRING, plan.value_scanner),
        )
        if options.prefix:
            machine.muted = True
            self.feed(options.prefix)
            machine.muted = False

    @property
    def message(self) -> ParsedMessage:
        """The message parsed so far (after :meth:`finish`, the final one)."""
        if self._message is not None:
            return self._message
        machine = self._machine
        msg = ParsedMessage(
            content="".join(machine.content),
            reasoning="".join(machine.reasoning),
            tool_calls=tuple(ToolCall(c.name, "".join(c.parts), c.id) for c in machine.calls if c.announced),
            warnings=tuple(machine.warnings),
        )
        if self._finished:
            self._message = msg
        return msg

    def feed(self, text: str) -> list[Delta]:
        """Read ``text`` (the next piece of the output); return the deltas it makes
        certain. After :meth:`finish`, nothing is read."""
        hot = self._hot  # set only while the machine has read all it holds
        if hot is not None and text:
            what, stop, check = hot
            if what >= _HOT_DOUBLE_QUOTED:
                quoted = _quoted_string(self._machine, text, check, what == _HOT_SINGLE_QUOTED)
                if quoted is not None:
                    if self._machine.pos != len(text):
                        self._hot = None
                    return [quoted]
            elif not ((stop in text) if stop else check(text)):
                # the text continues what is being read, and nothing in it can end it
                machine = self._machine
                delta: Delta
                if what == _HOT_CONTENT:
                    machine.content.append(text)
                    delta = new_delta(ContentText)
                    set_content_text(delta, text)
                elif what == _HOT_REASONING:
                    machine.reasoning.append(text)
                    delta = new_delta(ReasoningText)
                    set_reasoning_text(delta, text)
                else:
                    delta = _raw_string(machine, text)
                machine.base += len(machine.buf)
                machine.buf = text
                machine.pos = len(text)
                return [delta]
        return self._run(text)

    def _run(self, text: str) -> list[Delta]:
        """Read ``text`` through the state machine."""
        if not text or self._finished:
            return []
        machine = self._machine
        out: list[Delta] = []
        machine.out = out
        i = machine.pos
        if i > 1:  # keep one character read: a marker's word boundary looks back at it
            machine.base += i - 1
            machine.buf = machine.buf[i - 1 :] + text
            machine.pos = 1
        else:
            machine.buf += text
        try:
            machine.run(False)
        except Exception as exc:  # a parser bug: keep the stream alive, say so
            machine.recover(exc)
        self._hot = _hot_path(machine, self._plain_paths)
        return out

    def finish(self) -> list[Delta]:
        """End of output: flush what was held, close what is open, recover and warn.
        Returns the last deltas; later calls return nothing."""
        if self._finished:
            return []
        out: list[Delta] = []
        machine = self._machine
        machine.out = out
        self._hot = None
        try:
            machine.finish()
        except Exception as exc:  # a parser bug: keep what was read, say so
            machine.recover(exc)
        self._finished = True
        return out


def _raw_string(machine: Machine, text: str) -> ToolArgumentsText:
    """The hot path inside a raw string value of tool-call arguments."""
    call = machine.call
    assert call is not None
    piece = encode_string(text)
    call.parts.append(piece)
    return tool_arguments_text(call.index, piece)


def _quoted_string(
    machine: Machine, text: str, body_match: Callable[[str], re.Match[str] | None], single: bool
) -> ToolArgumentsText | None:
    """The hot path inside a quoted string of tool-call arguments (``body_match``: the
    ``match`` of its body): ``None`` when the string may end in ``text`` or holds an
    escape JSON does not know."""
    m = body_match(text)
    used = m.end() if m is not None else 0
    if used == 0 or used < len(text) - 1 or (used == len(text) - 1 and text[-1] != "\\"):
        return None  # a closing quote (or a character the quick decoder cannot take)
    body = text[:used]
    if (_SINGLE_NOT_AS_IS if single else _NOT_AS_IS).search(body) is None:
        piece = body  # already JSON as the writer spells it
    elif "\\" in body:
        if _SURROGATE.search(body):  # pairs and lone halves: the full parser
            return None
        if single and '"' in body:  # its raw double quotes escaped for JSON
            if '\\"' in body:
                return None
            body = body.replace('"', '\\"')
        try:
            piece = encode_string(scanstring(body + '"', 0, False)[0])
        except ValueError:
            return None
    else:
        piece = encode_string(body)
    call = machine.call
    assert call is not None
    if not piece:
        return None
    call.parts.append(piece)
    machine.base += len(machine.buf)
    machine.buf = text
    machine.pos = used
    return tool_arguments_text(call.index, piece)


def _hot_path(machine: Machine, plain: PlainPaths) -> HotPath | None:
    """What the hot path of the next :meth:`~TemplateParser.feed` is, if there is one."""
    if machine.muted or machine.pos != len(machine.buf):
        return None
    state = machine.state
    if state is State.CONTENT:
        return None if machine.at_start else plain.content
    if state is State.REASONING:
        return plain.reasoning
    call = machine.call
    if call is None or not call.announced:
        return None
    if state is State.ARG_VALUE:
        argument = machine.argument
        if (
            argument is not None
            and argument.mode == "string"
            and argument.wrapper == NO_WRAPPER
            and argument.started
        ):
            return plain.raw_string
        return None
    lexer = machine.lexer
    if lexer is None or not lexer.in_string:
        return None
    writer = machine.writer if state is State.VALUE else None
    json_call = machine.json_call
    if state is State.JSON_CALL and json_call is not None and json_call.in_args:
        writer = json_call.writer
    if writer is None or not writer.in_string:
        return None
    body = _STRING_BODIES.get(lexer.quote)
    if body is None:
        return (_HOT_RAW_STRING, lexer.quote[0], _NEVER.search)
    return (body[1], "", body[0].match)


def _plain(what: int, scanner: Scanner) -> HotPath:
    """The hot path of text that ``scanner`` 's markers end."""
    stops = scanner.first_chars
    if len(stops) == 1:
        return (what, stops, _NEVER.search)
    return (what, "", (scanner.first or _NEVER).search)
