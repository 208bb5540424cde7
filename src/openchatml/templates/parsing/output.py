"""One interface over every model's output: a template parser, or the core codec for
Harmony templates (gpt-oss).

``open_parser(fmt, options)`` gives an :class:`OutputParser`: ``feed(text)`` and
``finish()`` return :mod:`.deltas`, ``message`` is the
:class:`~.message.ParsedMessage` so far. For a Harmony format the text (what follows
``<|start|>assistant`` in the prompt) goes through the core's lenient
:class:`~openchatml.core.parse.StreamParser`: ``analysis`` messages are reasoning, ``final``
and plain ``commentary`` messages the answer, messages addressed ``to=functions.NAME``
tool calls; messages to built-in tools (``python``, ``browser.*``, ``container.*``) are
not function calls and are left out. Output normally ends inside its last message (the
stop token is not part of it); only a function call whose arguments are cut short is
warned of (``W-TRUNCATED``).
"""

from __future__ import annotations

import json
from typing import Final, Protocol

from ...core.events import ContentDelta, Event, MessageDone, MessageStarted
from ...core.messages import Role
from ...core.parse import StreamParser
from ..errors import ParseWarning
from ..format import TemplateFormat
from .deltas import Delta, content_text, reasoning_text, tool_arguments_text, tool_call_started
from .message import ParsedMessage, ToolCall
from .options import ParseOptions
from .parser import TemplateParser

__all__ = ["HarmonyOutputParser", "OutputParser", "open_parser"]

_FUNCTIONS: Final = "functions."
_ANSWER: Final = "answer"
_REASONING: Final = "reasoning"
_ARGUMENTS: Final = "arguments"
"""What the open message's text is."""


class OutputParser(Protocol):
    """What every output parser offers (see the module docstring)."""

    def feed(self, text: str) -> list[Delta]: ...

    def finish(self) -> list[Delta]: ...

    @property
    def message(self) -> ParsedMessage: ...


def open_parser(fmt: TemplateFormat, options: ParseOptions | None = None) -> OutputParser:
    """A fresh parser of one assistant message written in ``fmt``."""
    options = options or ParseOptions()
    if fmt.harmony:
        return HarmonyOutputParser(options)
    return TemplateParser(fmt, options)


class HarmonyOutputParser:
    """Harmony output through the core codec, as :mod:`.deltas` (see the module
    docstring). With ``extract_reasoning=False`` a reasoning message stays in the answer
    as written (``<|channel|>analysis<|message|>…<|end|>``)."""

    def __init__(self, options: ParseOptions) -> None:
        self._options = options
        self._parser = StreamParser(
            Role.ASSISTANT, strict=False, check_constraints=False, allow_truncated=True
        )
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[tuple[str, str]] = []  # (name, id)
        self._arguments: list[list[str]] = []  # the pieces of each call's arguments
        self._warnings: list[ParseWarning] = []
        self._kind: str | None = None  # what the open message's text is: _ANSWER, _REASONING, _ARGUMENTS
        self._raw_end = ""  # closes a reasoning message kept in the answer
        self._open = False
        self._fed = 0
        if options.prefix:
            self._map(self._parser.feed_text(options.prefix))

    @property
    def message(self) -> ParsedMessage:
        """The message so far."""
        return ParsedMessage(
            "".join(self._content),
            "".join(self._reasoning),
            tuple(
                ToolCall(name, "".join(parts), cid)
                for (name, cid), parts in zip(self._calls, self._arguments, strict=True)
            ),
            tuple(self._warnings),
        )

    def feed(self, text: str) -> list[Delta]:
        """The deltas ``text`` makes certain."""
        self._fed += len(text)
        return self._map(self._parser.feed_text(text))

    def finish(self) -> list[Delta]:
        """The output ended: the last deltas (a message cut off is kept, with a warning
        unless the parse is ``partial``)."""
        in_call = self._open and self._kind == _ARGUMENTS
        deltas = self._map(self._parser.close())
        if in_call and not self._options.partial and not _is_json("".join(self._arguments[-1])):
            name = self._calls[-1][0]
            detail = f"the output ended inside the arguments of {name!r}; kept as written"
            self._warnings.append(ParseWarning("W-TRUNCATED", detail, self._fed))
        return deltas

    def _map(self, events: list[Event]) -> list[Delta]:
        out: list[Delta] = []
        for event in events:
            if type(event) is ContentDelta:  # the most frequent, first
                self._text(event.text, out)
            elif isinstance(event, MessageStarted):
                self._start(event, out)
            elif isinstance(event, MessageDone):
                if self._raw_end:
                    self._text(self._raw_end, out, raw=True)
                self._kind, self._raw_end, self._open = None, "", False
        return out

    def _start(self, event: MessageStarted, out: list[Delta]) -> None:
        header = event.header
        self._open = True
        self._kind, self._raw_end = None, ""
        if header.author.role is not Role.ASSISTANT:
            return
        recipient = header.recipient
        if recipient is not None and recipient.startswith(_FUNCTIONS):
            name = recipient[len(_FUNCTIONS) :]
            self._calls.append((name, header.call_id or ""))
            self._arguments.append([])
            self._kind = _ARGUMENTS
            out.append(tool_call_started(len(self._calls) - 1, name, header.call_id or ""))
            return
        if recipient not in (None, "all", "assistant", "user"):
            return  # a built-in tool's call: not a function call
        if header.channel in (None, "final", "commentary"):
            self._kind = _ANSWER
            return
        if self._options.extract_reasoning:
            self._kind = _REASONING
            return
        self._kind = _ANSWER
        self._text(f"<|channel|>{header.channel}<|message|>", out, raw=True)
        self._raw_end = "<|end|>"

    def _text(self, text: str, out: list[Delta], *, raw: bool = False) -> None:
        if not text or self._kind is None:
            return
        if self._kind == _ARGUMENTS:
            self._arguments[-1].append(text)
            out.append(tool_arguments_text(len(self._calls) - 1, text))
        elif self._kind == _REASONING:
            self._reasoning.append(text)
            out.append(reasoning_text(text))
        else:
            self._content.append(text)
            out.append(content_text(text))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
