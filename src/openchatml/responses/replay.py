"""The event stream of a response that already ended, rebuilt from its snapshot.

``replay(response)`` gives what a live stream would have sent, with each item's text in
a single delta (an ``output_text`` delta carrying all of the part's ``logprobs``):
``response.created``, ``response.in_progress``, every item's lifecycle (a reasoning
item's summary parts after its content, a ``shell`` call's commands one by one; a
``local_shell`` or ``apply_patch`` call has none but its ``added`` and ``done``; a code
interpreter call its code, ``interpreting`` and ``completed``; an MCP item as
:func:`~.mcp_calls.replayed_events` gives them), then the
terminal event. ``starting_after``
drops events up to that sequence number, so a client can resume. ``replay_events``
does the same from a stored snapshot's JSON and gives the events' JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from .mcp_calls import replayed_events
from .wire.content import OutputText, ReasoningText, Refusal
from .wire.dialects import DEFAULT_DIALECT, WireDialect
from .wire.event_base import StreamEvent
from .wire.events import (
    ContentPartAdded,
    ContentPartDone,
    CustomToolCallInputDelta,
    CustomToolCallInputDone,
    ErrorEvent,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    OutputItemAdded,
    OutputItemDone,
    OutputTextAnnotationAdded,
    OutputTextDelta,
    OutputTextDone,
    ReasoningDelta,
    ReasoningDone,
    ReasoningSummaryPartAdded,
    ReasoningSummaryPartDone,
    ReasoningSummaryTextDelta,
    ReasoningSummaryTextDone,
    RefusalDelta,
    RefusalDone,
    ResponseCompleted,
    ResponseCreated,
    ResponseEvent,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    ShellCallCommandAdded,
    ShellCallCommandDelta,
    ShellCallCommandDone,
)
from .wire.hosted_events import (
    CodeInterpreterCallCodeDelta,
    CodeInterpreterCallCodeDone,
    CodeInterpreterCallCompleted,
    CodeInterpreterCallInProgress,
    CodeInterpreterCallInterpreting,
    WebSearchCallCompleted,
    WebSearchCallInProgress,
    WebSearchCallSearching,
)
from .wire.items import (
    ApplyPatchCall,
    AssistantMessage,
    CodeInterpreterCall,
    CustomToolCall,
    FunctionCall,
    LocalShellCall,
    OutputItem,
    ReasoningItem,
    ShellAction,
    ShellCall,
    WebSearchCall,
)
from .wire.mcp_items import McpApprovalRequest, McpCall, McpListTools
from .wire.resource import ErrorPayload, ResponseResource, load_resource

_TERMINAL_EVENT: Final[Mapping[str, type[ResponseEvent]]] = {
    "completed": ResponseCompleted,
    "incomplete": ResponseIncomplete,
    "cancelled": ResponseIncomplete,
    "failed": ResponseFailed,
}


class _Numbering:
    """Sequence numbers, from 0."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


def _message_events(seq: _Numbering, index: int, item: AssistantMessage) -> Iterator[StreamEvent]:
    for c, part in enumerate(item.content):
        if isinstance(part, Refusal):
            yield ContentPartAdded(seq(), item.id, index, c, Refusal(refusal=""))
            yield RefusalDelta(seq(), item.id, index, c, part.refusal)
            yield RefusalDone(seq(), item.id, index, c, part.refusal)
        else:
            logprobs = part.logprobs or ()
            empty = OutputText(text="", annotations=(), logprobs=() if part.logprobs is not None else None)
            yield ContentPartAdded(seq(), item.id, index, c, empty)
            yield OutputTextDelta(seq(), item.id, index, c, part.text, logprobs)
            for place, annotation in enumerate(part.annotations):
                yield OutputTextAnnotationAdded(seq(), item.id, index, c, place, annotation)
            yield OutputTextDone(seq(), item.id, index, c, part.text, logprobs)
        yield ContentPartDone(seq(), item.id, index, c, part)


def _reasoning_events(seq: _Numbering, index: int, item: ReasoningItem) -> Iterator[StreamEvent]:
    for c, thought in enumerate(item.content or ()):
        yield ContentPartAdded(seq(), item.id, index, c, ReasoningText(text=""))
        yield ReasoningDelta(seq(), item.id, index, c, thought.text)
        yield ReasoningDone(seq(), item.id, index, c, thought.text)
        yield ContentPartDone(seq(), item.id, index, c, thought)
    for s, part in enumerate(item.summary):
        yield ReasoningSummaryPartAdded(seq(), item.id, index, s, part.model_copy(update={"text": ""}))
        yield ReasoningSummaryTextDelta(seq(), item.id, index, s, part.text)
        yield ReasoningSummaryTextDone(seq(), item.id, index, s, part.text)
        yield ReasoningSummaryPartDone(seq(), item.id, index, s, part)


def _code_events(seq: _Numbering, index: int, item: CodeInterpreterCall) -> Iterator[StreamEvent]:
    """A code interpreter call's events up to its ``output_item.done``, its code in one delta."""
    code = item.code or ""
    yield OutputItemAdded(
        seq(), index, item.model_copy(update={"status": "in_progress", "code": "", "outputs": None})
    )
    yield CodeInterpreterCallInProgress(seq(), index, item.id)
    if code:
        yield CodeInterpreterCallCodeDelta(seq(), index, item.id, code)
    yield CodeInterpreterCallCodeDone(seq(), index, item.id, code)
    yield CodeInterpreterCallInterpreting(seq(), index, item.id)
    yield CodeInterpreterCallCompleted(seq(), index, item.id)


def _search_events(seq: _Numbering, index: int, item: WebSearchCall) -> Iterator[StreamEvent]:
    """A browser call's events up to its ``output_item.done``."""
    yield OutputItemAdded(seq(), index, item.model_copy(update={"status": "in_progress"}))
    yield WebSearchCallInProgress(seq(), index, item.id)
    if item.status != "incomplete":  # an unrun call never searched
        yield WebSearchCallSearching(seq(), index, item.id)
        yield WebSearchCallCompleted(seq(), index, item.id)


def _item_events(seq: _Numbering, index: int, item: OutputItem) -> Iterator[StreamEvent]:
    if isinstance(item, FunctionCall):
        yield OutputItemAdded(
            seq(), index, item.model_copy(update={"status": "in_progress", "arguments": ""})
        )
        yield FunctionCallArgumentsDelta(seq(), item.id, index, item.arguments)
        yield FunctionCallArgumentsDone(seq(), item.id, index, item.name, item.arguments)
    elif isinstance(item, CustomToolCall):
        yield OutputItemAdded(seq(), index, item.model_copy(update={"status": "in_progress", "input": ""}))
        yield CustomToolCallInputDelta(seq(), item.id, index, item.input)
        yield CustomToolCallInputDone(seq(), item.id, index, item.input)
    elif isinstance(item, AssistantMessage):
        yield OutputItemAdded(seq(), index, item.model_copy(update={"status": "in_progress", "content": ()}))
        yield from _message_events(seq, index, item)
    elif isinstance(item, ShellCall):
        yield OutputItemAdded(
            seq(),
            index,
            item.model_copy(update={"status": "in_progress", "action": ShellAction(commands=())}),
        )
        for c, command in enumerate(item.action.commands):
            yield ShellCallCommandAdded(seq(), index, c, "")
            yield ShellCallCommandDelta(seq(), index, c, command)
            yield ShellCallCommandDone(seq(), index, c, command)
    elif isinstance(item, CodeInterpreterCall):
        yield from _code_events(seq, index, item)
    elif isinstance(item, WebSearchCall):
        yield from _search_events(seq, index, item)
    elif isinstance(item, McpListTools | McpCall | McpApprovalRequest):
        yield from replayed_events(item, index, seq)
    elif isinstance(item, LocalShellCall | ApplyPatchCall):
        yield OutputItemAdded(seq(), index, item.model_copy(update={"status": "in_progress"}))
    else:
        opened = {"status": "in_progress", "content": (), "summary": (), "encrypted_content": None}
        yield OutputItemAdded(seq(), index, item.model_copy(update=opened))
        yield from _reasoning_events(seq, index, item)
    yield OutputItemDone(seq(), index, item)


def replay(response: ResponseResource, *, starting_after: int | None = None) -> list[StreamEvent]:
    """Events of a finished ``response``, numbered from 0 (those after ``starting_after``)."""
    seq = _Numbering()
    early = response.model_copy(
        update={
            "status": "in_progress",
            "output": (),
            "usage": None,
            "completed_at": None,
            "error": None,
            "incomplete_details": None,
        }
    )
    events: list[StreamEvent] = [ResponseCreated(seq(), early), ResponseInProgress(seq(), early)]
    for index, item in enumerate(response.output):
        events.extend(_item_events(seq, index, item))
    if response.status == "failed":
        error = response.error
        payload = ErrorPayload(
            type="server_error",
            code=error.code if error is not None else None,
            message=error.message if error is not None else "",
        )
        events.append(ErrorEvent(seq(), payload))
    events.append(_TERMINAL_EVENT.get(response.status, ResponseCompleted)(seq(), response))
    if starting_after is not None:
        events = [e for e in events if e.sequence_number > starting_after]
    return events


def replay_events(
    snapshot: Mapping[str, Any],
    *,
    starting_after: int | None = None,
    dialect: WireDialect = DEFAULT_DIALECT,
) -> list[dict[str, Any]]:
    """The events' JSON (in ``dialect``) of the response whose stored ``snapshot`` is given."""
    return [e.to_json(dialect) for e in replay(load_resource(snapshot), starting_after=starting_after)]
