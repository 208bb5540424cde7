"""Every streaming event of a response, as frozen slotted dataclasses.

One class per event ``type`` (the Open Responses name, :attr:`StreamEvent.type`); each
carries its ``sequence_number`` and the fields the schema gives it. ``to_json(dialect)``
is the event's JSON: in ``openai`` the reasoning events are ``response.reasoning_text.*``
and extension items and events lose their ``openai:`` prefix
(``openai:response.custom_tool_call_input.delta`` is OpenAI's
``response.custom_tool_call_input.delta``, ``openai:response.shell_call_command.delta``
its ``response.shell_call_command.delta``; see :mod:`.dialects`).

Events are built for every sampled token: the delta events have a hand-written
``__init__`` and JSON (building and serialising one costs what the plain ``dict`` it
replaces did; see ``bench/bench_wire_events.py``), the others go through the generated
ones and :meth:`StreamEvent.to_json`.
:func:`load_event` reads an event's JSON (either dialect) back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic import TypeAdapter

from .content import LogProb, StreamedPart, TopLogProb
from .dialects import DEFAULT_DIALECT, WireDialect, canonical_type, wire_type
from .event_base import StreamEvent, field_names, set_frozen
from .hosted_events import (
    CodeInterpreterCallCodeDelta,
    CodeInterpreterCallCodeDone,
    CodeInterpreterCallCompleted,
    CodeInterpreterCallInProgress,
    CodeInterpreterCallInterpreting,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
    WebSearchCallCompleted,
    WebSearchCallInProgress,
    WebSearchCallSearching,
)
from .items import OutputItem
from .resource import ErrorPayload, ResponseResource

_REASONING_DELTA: Final = {d: wire_type("response.reasoning.delta", d) for d in WireDialect}
_CUSTOM_INPUT_DELTA: Final = {
    d: wire_type("openai:response.custom_tool_call_input.delta", d) for d in WireDialect
}


@dataclass(frozen=True, slots=True)
class ResponseEvent(StreamEvent):
    """An event carrying the whole response as it stands."""

    response: ResponseResource


@dataclass(frozen=True, slots=True)
class ResponseCreated(ResponseEvent):
    """The response exists (always the first event)."""

    type: ClassVar[str] = "response.created"


@dataclass(frozen=True, slots=True)
class ResponseQueued(ResponseEvent):
    """A background response waits for the engine."""

    type: ClassVar[str] = "response.queued"


@dataclass(frozen=True, slots=True)
class ResponseInProgress(ResponseEvent):
    """The response is being generated."""

    type: ClassVar[str] = "response.in_progress"


@dataclass(frozen=True, slots=True)
class ResponseCompleted(ResponseEvent):
    """The response ended at a stop token."""

    type: ClassVar[str] = "response.completed"


@dataclass(frozen=True, slots=True)
class ResponseIncomplete(ResponseEvent):
    """The response was cut short (``max_output_tokens``) or cancelled."""

    type: ClassVar[str] = "response.incomplete"


@dataclass(frozen=True, slots=True)
class ResponseFailed(ResponseEvent):
    """The response failed (after an ``error`` event)."""

    type: ClassVar[str] = "response.failed"


@dataclass(frozen=True, slots=True)
class OutputItemAdded(StreamEvent):
    """An output item begins (``status: in_progress``)."""

    type: ClassVar[str] = "response.output_item.added"
    output_index: int
    item: OutputItem


@dataclass(frozen=True, slots=True)
class OutputItemDone(StreamEvent):
    """An output item is finished, as the response holds it."""

    type: ClassVar[str] = "response.output_item.done"
    output_index: int
    item: OutputItem


@dataclass(frozen=True, slots=True)
class ContentPartAdded(StreamEvent):
    """A content part of an item begins (empty)."""

    type: ClassVar[str] = "response.content_part.added"
    item_id: str
    output_index: int
    content_index: int
    part: StreamedPart


@dataclass(frozen=True, slots=True)
class ContentPartDone(StreamEvent):
    """A content part is finished."""

    type: ClassVar[str] = "response.content_part.done"
    item_id: str
    output_index: int
    content_index: int
    part: StreamedPart


@dataclass(frozen=True, slots=True, init=False)
class OutputTextDelta(StreamEvent):
    """More text of a message (with its tokens' log probabilities when asked for)."""

    type: ClassVar[str] = "response.output_text.delta"
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: tuple[LogProb, ...] = ()

    def __init__(
        self,
        sequence_number: int,
        item_id: str,
        output_index: int,
        content_index: int,
        delta: str,
        logprobs: tuple[LogProb, ...] = (),
    ) -> None:
        set_frozen(self, "sequence_number", sequence_number)
        set_frozen(self, "item_id", item_id)
        set_frozen(self, "output_index", output_index)
        set_frozen(self, "content_index", content_index)
        set_frozen(self, "delta", delta)
        set_frozen(self, "logprobs", logprobs)

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object (the same in both dialects)."""
        logprobs = self.logprobs
        return {
            "type": "response.output_text.delta",
            "sequence_number": self.sequence_number,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "content_index": self.content_index,
            "delta": self.delta,
            "logprobs": [lp.to_json() for lp in logprobs] if logprobs else [],
        }


@dataclass(frozen=True, slots=True)
class OutputTextDone(StreamEvent):
    """A message's text is finished."""

    type: ClassVar[str] = "response.output_text.done"
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: tuple[LogProb, ...] = ()


@dataclass(frozen=True, slots=True)
class OutputTextAnnotationAdded(StreamEvent):
    """An annotation (a citation …) of a message's text."""

    type: ClassVar[str] = "response.output_text.annotation.added"
    item_id: str
    output_index: int
    content_index: int
    annotation_index: int
    annotation: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RefusalDelta(StreamEvent):
    """More text of a refusal."""

    type: ClassVar[str] = "response.refusal.delta"
    item_id: str
    output_index: int
    content_index: int
    delta: str


@dataclass(frozen=True, slots=True)
class RefusalDone(StreamEvent):
    """A refusal is finished."""

    type: ClassVar[str] = "response.refusal.done"
    item_id: str
    output_index: int
    content_index: int
    refusal: str


@dataclass(frozen=True, slots=True, init=False)
class ReasoningDelta(StreamEvent):
    """More chain of thought (``response.reasoning_text.delta`` in ``openai``)."""

    type: ClassVar[str] = "response.reasoning.delta"
    item_id: str
    output_index: int
    content_index: int
    delta: str

    def __init__(
        self, sequence_number: int, item_id: str, output_index: int, content_index: int, delta: str
    ) -> None:
        set_frozen(self, "sequence_number", sequence_number)
        set_frozen(self, "item_id", item_id)
        set_frozen(self, "output_index", output_index)
        set_frozen(self, "content_index", content_index)
        set_frozen(self, "delta", delta)

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object in ``dialect``."""
        return {
            "type": _REASONING_DELTA[dialect],
            "sequence_number": self.sequence_number,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "content_index": self.content_index,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class ReasoningDone(StreamEvent):
    """The chain of thought of a reasoning item is finished
    (``response.reasoning_text.done`` in ``openai``)."""

    type: ClassVar[str] = "response.reasoning.done"
    item_id: str
    output_index: int
    content_index: int
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningSummaryPartAdded(StreamEvent):
    """A summary part of a reasoning item begins (empty)."""

    type: ClassVar[str] = "response.reasoning_summary_part.added"
    item_id: str
    output_index: int
    summary_index: int
    part: StreamedPart


@dataclass(frozen=True, slots=True)
class ReasoningSummaryPartDone(StreamEvent):
    """A summary part is finished."""

    type: ClassVar[str] = "response.reasoning_summary_part.done"
    item_id: str
    output_index: int
    summary_index: int
    part: StreamedPart


@dataclass(frozen=True, slots=True, init=False)
class ReasoningSummaryTextDelta(StreamEvent):
    """More text of a summary."""

    type: ClassVar[str] = "response.reasoning_summary_text.delta"
    item_id: str
    output_index: int
    summary_index: int
    delta: str

    def __init__(
        self, sequence_number: int, item_id: str, output_index: int, summary_index: int, delta: str
    ) -> None:
        set_frozen(self, "sequence_number", sequence_number)
        set_frozen(self, "item_id", item_id)
        set_frozen(self, "output_index", output_index)
        set_frozen(self, "summary_index", summary_index)
        set_frozen(self, "delta", delta)

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object (the same in both dialects)."""
        return {
            "type": "response.reasoning_summary_text.delta",
            "sequence_number": self.sequence_number,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "summary_index": self.summary_index,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class ReasoningSummaryTextDone(StreamEvent):
    """A summary's text is finished."""

    type: ClassVar[str] = "response.reasoning_summary_text.done"
    item_id: str
    output_index: int
    summary_index: int
    text: str


@dataclass(frozen=True, slots=True, init=False)
class FunctionCallArgumentsDelta(StreamEvent):
    """More of a function call's arguments."""

    type: ClassVar[str] = "response.function_call_arguments.delta"
    item_id: str
    output_index: int
    delta: str

    def __init__(self, sequence_number: int, item_id: str, output_index: int, delta: str) -> None:
        set_frozen(self, "sequence_number", sequence_number)
        set_frozen(self, "item_id", item_id)
        set_frozen(self, "output_index", output_index)
        set_frozen(self, "delta", delta)

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object (the same in both dialects)."""
        return {
            "type": "response.function_call_arguments.delta",
            "sequence_number": self.sequence_number,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class FunctionCallArgumentsDone(StreamEvent):
    """A function call's arguments are finished."""

    type: ClassVar[str] = "response.function_call_arguments.done"
    item_id: str
    output_index: int
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, init=False)
class CustomToolCallInputDelta(StreamEvent):
    """More of a custom tool call's input (``response.custom_tool_call_input.delta`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.custom_tool_call_input.delta"
    item_id: str
    output_index: int
    delta: str

    def __init__(self, sequence_number: int, item_id: str, output_index: int, delta: str) -> None:
        set_frozen(self, "sequence_number", sequence_number)
        set_frozen(self, "item_id", item_id)
        set_frozen(self, "output_index", output_index)
        set_frozen(self, "delta", delta)

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object in ``dialect``."""
        return {
            "type": _CUSTOM_INPUT_DELTA[dialect],
            "sequence_number": self.sequence_number,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class CustomToolCallInputDone(StreamEvent):
    """A custom tool call's input is finished (``response.custom_tool_call_input.done`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.custom_tool_call_input.done"
    item_id: str
    output_index: int
    input: str


@dataclass(frozen=True, slots=True)
class ShellCallCommandAdded(StreamEvent):
    """A command of a ``shell`` call begins (``command``: its text so far, empty)
    (``response.shell_call_command.added`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.shell_call_command.added"
    output_index: int
    command_index: int
    command: str


@dataclass(frozen=True, slots=True)
class ShellCallCommandDelta(StreamEvent):
    """More of a command of a ``shell`` call (``response.shell_call_command.delta`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.shell_call_command.delta"
    output_index: int
    command_index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ShellCallCommandDone(StreamEvent):
    """A command of a ``shell`` call is finished (``response.shell_call_command.done`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.shell_call_command.done"
    output_index: int
    command_index: int
    command: str


@dataclass(frozen=True, slots=True)
class ErrorEvent(StreamEvent):
    """The response failed: why (a ``response.failed`` follows)."""

    type: ClassVar[str] = "error"
    error: ErrorPayload

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """``{type, sequence_number, error}``; in ``openai`` the error's ``code``,
        ``message`` and ``param`` stand beside ``sequence_number`` instead."""
        if dialect is WireDialect.OPENAI:
            error = self.error
            return {
                "type": "error",
                "sequence_number": self.sequence_number,
                "code": error.code,
                "message": error.message,
                "param": error.param,
            }
        return StreamEvent.to_json(self, dialect)


EVENT_CLASSES: Final[tuple[type[StreamEvent], ...]] = (
    ResponseCreated,
    ResponseQueued,
    ResponseInProgress,
    ResponseCompleted,
    ResponseIncomplete,
    ResponseFailed,
    OutputItemAdded,
    OutputItemDone,
    ContentPartAdded,
    ContentPartDone,
    OutputTextDelta,
    OutputTextDone,
    OutputTextAnnotationAdded,
    RefusalDelta,
    RefusalDone,
    ReasoningDelta,
    ReasoningDone,
    ReasoningSummaryPartAdded,
    ReasoningSummaryPartDone,
    ReasoningSummaryTextDelta,
    ReasoningSummaryTextDone,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    CustomToolCallInputDelta,
    CustomToolCallInputDone,
    ShellCallCommandAdded,
    ShellCallCommandDelta,
    ShellCallCommandDone,
    CodeInterpreterCallInProgress,
    CodeInterpreterCallInterpreting,
    CodeInterpreterCallCompleted,
    CodeInterpreterCallCodeDelta,
    CodeInterpreterCallCodeDone,
    WebSearchCallInProgress,
    WebSearchCallSearching,
    WebSearchCallCompleted,
    McpListToolsInProgress,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpCallInProgress,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    ErrorEvent,
)
"""Every event class, one per ``type``."""
EVENT_TYPES: Final = {cls.type: cls for cls in EVENT_CLASSES}
"""Event ``type`` (Open Responses name) → its class."""

_PART: Final[TypeAdapter[StreamedPart]] = TypeAdapter(StreamedPart)
_ITEM: Final[TypeAdapter[OutputItem]] = TypeAdapter(OutputItem)


def _logprobs_of(values: Any) -> tuple[LogProb, ...]:
    return tuple(
        LogProb(
            v["token"],
            v["logprob"],
            tuple(v["bytes"]),
            tuple(TopLogProb(t["token"], t["logprob"], tuple(t["bytes"])) for t in v.get("top_logprobs", ())),
        )
        for v in values or ()
    )


_READERS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "response": ResponseResource.model_validate,
    "item": _ITEM.validate_python,
    "part": _PART.validate_python,
    "error": ErrorPayload.model_validate,
    "logprobs": _logprobs_of,
    "annotation": dict,
}


def load_event(data: Mapping[str, Any]) -> StreamEvent:
    """The event whose JSON (in either dialect) this server wrote; raises ``KeyError``,
    ``TypeError`` or ``pydantic.ValidationError`` for anything else."""
    cls = EVENT_TYPES[canonical_type(str(data["type"]))]
    if cls is ErrorEvent and "error" not in data:  # OpenAI's error event
        data = {**data, "error": {k: data.get(k) for k in ("code", "message", "param")}}
    values = {name: _READERS.get(name, _same)(data[name]) for name in field_names(cls) if name in data}
    return cls(**values)


def respell(data: Mapping[str, Any], dialect: WireDialect) -> dict[str, Any]:
    """An event's JSON written in either dialect (a stored event), in ``dialect``."""
    return load_event(data).to_json(dialect)


def _same(value: Any) -> Any:
    return value
