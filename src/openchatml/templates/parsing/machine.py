"""The template parser's state machine.

Theory of operation
-------------------

:class:`~.parser.TemplateParser` reads the assistant message as one text: the ``prefix``
the prompt already wrote of it (``"<think>\\n"`` when the generation prompt opens the
reasoning) followed by what the model writes, fed in pieces of any size. It is sans-IO:
``feed`` takes text and returns :mod:`.deltas`, ``finish`` says the output has ended.

Everything it reads sits in one buffer of a :class:`Machine`; a :class:`~.states.State`
says what the text at the read position is, and each state's handler (the table
:data:`HANDLERS`) consumes what it is sure of, moves the read position and perhaps the
state, and says whether to run again:

==============  ========================================================================
state           reads
==============  ========================================================================
CONTENT         the answer; watches for a reasoning start or end, the content markers,
                the tool-call openers (section start, call start), end-of-turn markers
REASONING       reasoning, until its end marker
HELD_REASONING  reasoning in which a tool-call opener appeared: nothing is emitted until
                the reasoning ends (all of it was reasoning) or the output does (the calls
                were real: they are read again as calls)
HELD_CONTENT    a reasoning start inside the answer: held until its end marker (a
                reasoning block) or the end of output (it was text)
PROBE           a ``{`` or ``[`` opening a format whose calls have no markers (Llama 3.1's
                bare JSON): a call, or content?
SECTION         the tool-call region between calls: call starts, separators, list
                brackets, the section end
HEADER          a call's name (and id) up to where its arguments begin
VALUE           arguments written as one JSON-like value (tag_json, object_notation,
                pythonic), through :class:`~.lexer.Lexer` and
                :class:`~.json_writer.JsonWriter`
JSON_CALL       a whole call written as a JSON object (json syntax, :mod:`.json_calls`)
TAGGED          between tagged arguments (tag_tagged)
ARG_NAME        a tagged argument's name
ARG_PREFIX      the marker between its name and its value
ARG_VALUE       its value: a string streamed as it comes, any other type when complete
CALL_END        after the arguments: their end marker, an id written after them, the call
                end marker
DONE            after an end-of-turn marker: the rest is dropped
==============  ========================================================================

The handlers live in :mod:`.text_states` (free text), :mod:`.call_states` (calls) and
:mod:`.tagged_states` (tagged arguments); what they look for is the format's
:class:`~.plan.ParsePlan`. A marker is looked for by its text without surrounding
whitespace; whitespace the format puts after it is consumed when present. Text that may
be the beginning of a marker is held back until it is known not to be one
(:mod:`.markers`), so no piece of a marker ever reaches a content or reasoning delta.
Content and reasoning deltas are slices of the input. What the ``prefix`` makes certain
is part of the message before the first ``feed`` and never part of a delta.

Malformed or cut-off output never raises: what can be recovered is, and a
:class:`~..errors.ParseWarning` says what was done (codes in :mod:`.warning_codes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from ..errors import ParseWarning
from ..format import ToolSyntax
from . import call_states, tagged_states, text_states
from .deltas import (
    ContentText,
    Delta,
    ReasoningText,
    content_text,
    new_delta,
    set_content_text,
    set_reasoning_text,
    tool_arguments_text,
    tool_call_identified,
    tool_call_started,
)
from .json_calls import JsonCallReader
from .json_writer import JsonWriter
from .lexer import Lexer
from .options import ParseOptions
from .partial_arguments import write_partial_arguments
from .plan import ParsePlan
from .schemas import tool_schemas
from .states import CALL_STATES, State
from .tagged_states import TaggedArgument
from .warning_codes import W_INTERNAL, W_REASONING_OPEN, W_TOOL_CALL, W_TOOL_UNKNOWN, W_TRUNCATED


class CallRecord:
    """A tool call being read, or read."""

    __slots__ = ("announced", "closed", "id", "index", "name", "parts", "schema", "start")

    def __init__(self, index: int, start: int) -> None:
        self.index = index
        self.start = start
        """Where the call begins in the text (an absolute offset)."""
        self.name = ""
        self.id = ""
        self.parts: list[str] = []
        """Its arguments' JSON text so far."""
        self.announced = False
        """Its name is known and a :class:`~.deltas.ToolCallStarted` went out."""
        self.closed = False
        self.schema: Mapping[str, Any] = {}


class Machine:
    """The buffer, the read position, the state, and what was read so far (see the module
    docstring). Offsets called *absolute* count from the start of the text (the prefix
    included); ``base`` is the absolute offset of ``buf[0]``."""

    __slots__ = (
        "argument",
        "argument_count",
        "arguments_end_seen",
        "at_start",
        "base",
        "buf",
        "call",
        "call_end_step",
        "calls",
        "content",
        "expect_call",
        "extract_reasoning",
        "fence_open",
        "held_from",
        "held_marker_end",
        "json_call",
        "lexer",
        "list_depth",
        "muted",
        "options",
        "out",
        "plan",
        "pos",
        "prefix_length",
        "reasoning",
        "reasoning_starts_are_text",
        "scan_from",
        "schemas",
        "section_open",
        "state",
        "turn_end",
        "warned",
        "warnings",
        "writer",
    )

    def __init__(self, plan: ParsePlan, options: ParseOptions) -> None:
        self.plan = plan
        self.options = options
        self.extract_reasoning = options.extract_reasoning
        self.schemas = tool_schemas(options.tools)
        # the text
        self.buf = ""
        self.pos = 0
        """The read position in ``buf``."""
        self.base = 0
        self.prefix_length = len(options.prefix)
        self.muted = False
        """The prefix is being read: what it holds is no delta."""
        # what was read
        self.out: list[Delta] = []
        """Where deltas go (a fresh list for each ``feed``)."""
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[CallRecord] = []
        self.warnings: list[ParseWarning] = []
        self.warned: set[tuple[str, str, int]] = set()
        # free text
        self.state = State.REASONING if plan.starts_in_reasoning else State.CONTENT
        self.at_start = True
        """Nothing but whitespace of the answer has been read."""
        self.fence_open = False
        self.turn_end = 0
        """DONE: where the end-of-turn marker ended (an absolute offset)."""
        self.reasoning_starts_are_text = False
        """A reasoning start inside the answer never closed: later ones are text too."""
        self.held_from = 0
        """HELD_*: absolute offset where the held text begins."""
        self.held_marker_end = 0
        """HELD_CONTENT: absolute offset where the reasoning start marker ends."""
        self.scan_from = 0
        """HELD_*: absolute offset from which to look for the reasoning end."""
        # calls
        self.section_open = False
        self.expect_call = False
        self.list_depth = 0
        """Open ``[`` of a list of calls."""
        self.call: CallRecord | None = None
        self.lexer: Lexer | None = None
        self.writer: JsonWriter | None = None
        self.json_call: JsonCallReader | None = None
        self.arguments_end_seen = False
        self.call_end_step = 0
        """CALL_END: 0 before anything, 1 the arguments' end, 2 an id, 3 the call's end."""
        self.argument_count = 0
        """Tagged arguments of the call written so far."""
        self.argument: TaggedArgument | None = None
        """The tagged argument being read."""

    def run(self, final: bool) -> None:
        """Run the handlers until one says to stop (``final``: the output has ended)."""
        handlers = HANDLERS
        guard = 8 * (len(self.buf) - self.pos) + 256
        while handlers[self.state](self, final):
            guard -= 1
            if guard < 0:  # pragma: no cover - a handler that never settles
                raise RuntimeError("parser loop did not settle")

    def recover(self, exc: Exception) -> None:
        """A parser bug: say so, and keep the rest of the buffer as content."""
        self.warn(W_INTERNAL, f"parser error {type(exc).__name__}: {exc}; the rest is kept as content")
        rest = self.buf[self.pos :]
        self.pos = len(self.buf)
        self.state = State.CONTENT
        self.at_start = False
        if rest:
            self.content.append(rest)
            if not self.muted:
                self.out.append(content_text(rest))

    def absolute(self, j: int) -> int:
        """The absolute offset of ``buf[j]``."""
        return self.base + j

    def warn(self, code: str, message: str, at: int | None = None) -> None:
        """Record a warning about the text at buffer index ``at`` (by default: the end
        of what was read); the same warning about the same call is given once."""
        offset = max(0, self.absolute(len(self.buf) if at is None else at) - self.prefix_length)
        key = (code, message, self.call.index if self.call is not None else -1)
        if key in self.warned:
            return
        self.warned.add(key)
        self.warnings.append(ParseWarning(code, message, offset))

    # --- text -----------------------------------------------------------------------

    def emit_content(self, a: int, b: int) -> None:
        """``buf[a:b]`` is the answer's."""
        if b <= a:
            return
        text = self.buf[a:b]
        self.content.append(text)
        if not self.muted:
            delta = new_delta(ContentText)
            set_content_text(delta, text)
            self.out.append(delta)

    def emit_reasoning(self, a: int, b: int) -> None:
        """``buf[a:b]`` is reasoning (the answer's, when reasoning is not extracted)."""
        if not self.extract_reasoning:
            self.emit_content(a, b)
            return
        if b <= a:
            return
        text = self.buf[a:b]
        self.reasoning.append(text)
        if not self.muted:
            delta = new_delta(ReasoningText)
            set_reasoning_text(delta, text)
            self.out.append(delta)

    def emit_reasoning_marker(self, a: int, b: int) -> None:
        """A reasoning marker: part of the content when reasoning is not extracted."""
        if not self.extract_reasoning:
            self.emit_content(a, b)

    # --- calls ----------------------------------------------------------------------

    def new_call(self, at: int) -> CallRecord:
        """A call that begins at buffer index ``at``, now the current one."""
        call = CallRecord(len(self.calls), self.absolute(at))
        self.calls.append(call)
        self.call = call
        return call

    def announce(self, call: CallRecord, name: str, id: str) -> None:
        """The call's name (and id) are known: say so, with the arguments read so far."""
        call.name = name
        call.schema = self.schemas.get(name, {})
        if not id and self.plan.id_pattern:
            try:
                id = self.plan.id_pattern.format(name=name, index=call.index)
            except (KeyError, IndexError, ValueError):
                id = ""
        call.id = id
        call.announced = True
        if self.schemas and name not in self.schemas:
            self.warn(
                W_TOOL_UNKNOWN, f"call to {name!r}, a tool that was not offered", call.start - self.base
            )
        if not name:
            self.warn(W_TOOL_CALL, "a tool call without a name", call.start - self.base)
        if not self.muted:
            self.out.append(tool_call_started(call.index, name, id))
            if call.parts:
                self.out.append(tool_arguments_text(call.index, "".join(call.parts)))

    def add_arguments(self, text: str) -> None:
        """More of the current call's arguments (JSON text)."""
        call = self.call
        if not text or call is None:
            return
        call.parts.append(text)
        if call.announced and not self.muted:
            self.out.append(tool_arguments_text(call.index, text))

    def identify(self, call: CallRecord, id: str) -> None:
        """An id written after the call began."""
        if not id or id == call.id:
            return
        call.id = id
        if call.announced and not self.muted:
            self.out.append(tool_call_identified(call.index, id))

    def begin_arguments(self) -> None:
        """The current call's arguments begin."""
        self.arguments_end_seen = False
        self.call_end_step = 0
        self.argument_count = 0

    # --- the end --------------------------------------------------------------------

    def finish(self) -> None:
        """The output has ended: read the rest, close what is open, warn of what was."""
        if self.options.partial:  # the output goes on: what is still uncertain is left out
            if self.state in CALL_STATES or self.state is State.CALL_END:
                self._finish_call(True)
            return
        self.run(True)
        for _ in range(64):
            if not self._release_held():
                break
            self.run(True)
        state = self.state
        buf, i = self.buf, self.pos
        if state is State.CONTENT:
            if i < len(buf):
                self.emit_content(i, len(buf))
                self.pos = len(buf)
        elif state is State.REASONING:
            self.warn(W_TRUNCATED, "the output ended inside the reasoning")
        elif state in CALL_STATES or state is State.CALL_END:
            self._finish_call(False)
        elif state is State.SECTION and self.section_open and self.plan.section_end:
            self.warn(W_TRUNCATED, "the output ended before the tool-call section's end marker")

    def _release_held(self) -> bool:
        """Held text at the end of output: what it was is now known; whether there was."""
        if self.state is State.HELD_REASONING:
            self.warn(
                W_REASONING_OPEN,
                "the reasoning was never closed; the tool call inside it was taken as the message's",
                self.held_from - self.base,
            )
            self.pos = self.held_from - self.base
            self.state = State.CONTENT
            self.at_start = True
            return True
        if self.state is State.HELD_CONTENT:
            mark = self.held_marker_end - self.base
            self.emit_content(self.pos, mark)
            self.pos = mark
            self.reasoning_starts_are_text = True
            self.at_start = False
            self.state = State.CONTENT
            return True
        return False

    def _finish_call(self, partial: bool) -> None:
        state = self.state
        call = self.call
        if state is State.HEADER:
            if not partial:
                self.warn(W_TRUNCATED, "the output ended inside a tool call's name")
            return
        if call is None:
            return
        if state is State.CALL_END:
            if self.plan.syntax is ToolSyntax.TAG_TAGGED and self.call_end_step == 0:
                self.add_arguments("}")
            if self.plan.call_end and not partial:
                self.warn(W_TRUNCATED, "the output ended before the tool call's end marker")
            call.closed = True
            return
        argument = self.argument
        if partial:
            write_partial_arguments(self)
            return
        self.warn(W_TRUNCATED, "the output ended inside a tool call")
        if state is State.JSON_CALL:
            assert self.json_call is not None
            call_states.close_json_call(self, self.json_call, call)
        elif state is State.VALUE:
            assert self.writer is not None
            self.add_arguments(self.writer.close() if self.writer.started else "{}")
        else:  # tagged
            if state is State.ARG_VALUE and argument is not None:
                tagged_states.close_value(self, argument)
            self.add_arguments("}")
        call.closed = True


Handler: TypeAlias = Callable[[Machine, bool], bool]
"""A state's handler: reads from ``machine.pos`` (``final``: the output has ended);
``True`` to run the machine again, ``False`` when it needs more text."""

HANDLERS: Final[dict[State, Handler]] = {
    State.CONTENT: text_states.read_content,
    State.REASONING: text_states.read_reasoning,
    State.HELD_REASONING: text_states.read_held_reasoning,
    State.HELD_CONTENT: text_states.read_held_content,
    State.PROBE: text_states.read_probe,
    State.SECTION: call_states.read_section,
    State.HEADER: call_states.read_header,
    State.VALUE: call_states.read_value,
    State.JSON_CALL: call_states.read_json_call,
    State.TAGGED: tagged_states.read_tagged,
    State.ARG_NAME: tagged_states.read_argument_name,
    State.ARG_PREFIX: tagged_states.read_argument_prefix,
    State.ARG_VALUE: tagged_states.read_argument_value,
    State.CALL_END: call_states.read_call_end,
    State.DONE: text_states.read_done,
}
"""Each state's handler."""
