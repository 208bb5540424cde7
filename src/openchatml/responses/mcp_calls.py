"""The events of remote MCP servers' items: tool lists, calls, approval requests.

Theory of operation. A response's event builder hands a message addressed
``to=LABEL.TOOL`` (``LABEL`` a server of the request, ``TOOL`` one of its tools the
model may see) to the response's :class:`McpCalls`, which opens the call's item; what
follows is as OpenAI's API streams it:

* a server's tool list, when the conversation has none yet, comes first in the output
  (:meth:`McpCalls.opening`): ``output_item.added``, ``mcp_list_tools.in_progress``,
  ``mcp_list_tools.completed`` (``failed`` with the item's ``error`` when the server could
  not list them: the response then fails), ``output_item.done``;
* a call of a tool that needs no approval: ``output_item.added`` (``in_progress``),
  ``mcp_call.in_progress``, ``mcp_call_arguments.delta`` per piece of its JSON arguments,
  ``mcp_call_arguments.done`` at ``<|call|>``; the item waits for its run (status
  ``calling`` while it runs), then ``mcp_call.completed`` (with the tool's ``output``) or
  ``mcp_call.failed`` (with its ``error``) and ``output_item.done``; a call the loop does
  not run ends ``incomplete``;
* a call of a tool that needs approval becomes an ``mcp_approval_request`` item
  (``output_item.added`` then, once written, ``output_item.done``): the agent loop stops
  there, and a later request's ``mcp_approval_response`` decides;
* an approved call runs before the model samples again: its ``mcp_call`` (with
  ``approval_request_id``) opens the output, after the tool lists (:meth:`McpCalls.opening`).

:func:`mcp_messages` is the way back to Harmony: the messages an MCP item stands for in a
conversation's history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core.events import Header
from ..core.messages import Message, Role
from ..tools.base import ToolResult
from ..tools.errors import ToolFailedError
from .custom_tools import FUNCTIONS
from .hosted_calls import CallQueue, Numbering
from .wire.event_base import StreamEvent
from .wire.events import OutputItemAdded, OutputItemDone
from .wire.hosted_events import (
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
)
from .wire.items import OutputItem
from .wire.mcp_items import McpApprovalRequest, McpApprovalResponse, McpCall, McpItem, McpListTools

DENIED: Final = "The user did not approve this call; it did not run."
"""What the model reads back for a call whose approval was refused."""
PROTOCOL_ERROR: Final = -32603
"""The JSON-RPC code of a call that failed outside the tool (unreachable, timed out)."""


@dataclass(frozen=True, slots=True)
class McpServerTools:
    """The tools of one MCP server the model may call: ``approvals`` says, by tool name,
    whether a call needs the user's approval first."""

    label: str
    approvals: Mapping[str, bool]


def call_error(result: ToolResult) -> dict[str, Any] | None:
    """The ``error`` object of an ``mcp_call`` that gave ``result`` (``None``: it succeeded):
    the tool's own failure as ``mcp_tool_execution_error``, any other as
    ``mcp_protocol_error``."""
    error = result.error
    if error is None:
        return None
    if error.code == ToolFailedError.code and result.content:
        return {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": result.content}]}
    return {"type": "mcp_protocol_error", "code": PROTOCOL_ERROR, "message": f"{error.code}: {error.message}"}


def error_text(error: Mapping[str, Any] | str | None) -> str:
    """What an ``mcp_call`` 's ``error`` says, as text."""
    if error is None or isinstance(error, str):
        return error or ""
    content = error.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content if content is not None else error.get("message", ""))


class McpCallWriter:
    """The events of the ``mcp_call`` or ``mcp_approval_request`` ``item`` at ``index`` of
    the output (see the module docstring); ``item`` always holds it as it stands."""

    def __init__(self, item: McpCall | McpApprovalRequest, index: int) -> None:
        self.item = item
        self.index = index

    @property
    def item_id(self) -> str:
        """The item's id."""
        return self.item.id

    def opened(self, number: Numbering) -> list[StreamEvent]:
        """``output_item.added`` (and ``mcp_call.in_progress`` for a call)."""
        out: list[StreamEvent] = [OutputItemAdded(number(), self.index, self.item)]
        if isinstance(self.item, McpCall):
            out.append(McpCallInProgress(number(), self.index, self.item.id))
        return out

    def delta(self, text: str, number: Numbering) -> list[StreamEvent]:
        """More of the arguments: ``mcp_call_arguments.delta`` (an approval request has none)."""
        if not isinstance(self.item, McpCall) or not text:
            return []
        return [McpCallArgumentsDelta(number(), self.index, self.item.id, text)]

    def written(self, arguments: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The arguments are written (``complete``: at ``<|call|>``); a call cut short ends
        ``incomplete``, an approval request ends either way."""
        self.item = self.item.model_copy(update={"arguments": arguments})
        if isinstance(self.item, McpApprovalRequest):
            return [OutputItemDone(number(), self.index, self.item)]
        out: list[StreamEvent] = [McpCallArgumentsDone(number(), self.index, self.item.id, arguments)]
        return out if complete else out + self.abandoned(number)

    def calling(self) -> None:
        """The call runs: status ``calling`` (OpenAI's API sends no event for it)."""
        self.item = self.item.model_copy(update={"status": "calling"})

    def finished(self, result: ToolResult, number: Numbering) -> list[StreamEvent]:
        """The call gave ``result``: ``completed`` with its ``output``, or ``failed`` with
        its ``error``."""
        error = call_error(result)
        status = "completed" if error is None else "failed"
        output = result.content if error is None else None
        self.item = self.item.model_copy(update={"status": status, "output": output, "error": error})
        ended = McpCallCompleted if error is None else McpCallFailed
        return [ended(number(), self.index, self.item.id), OutputItemDone(number(), self.index, self.item)]

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The call will not run: ``output_item.done``, ``incomplete``."""
        self.item = self.item.model_copy(update={"status": "incomplete"})
        return [OutputItemDone(number(), self.index, self.item)]


class McpCalls:
    """The MCP items of one response, kept in ``output`` (the response's output items) as
    they stand: ``servers`` are the tools the model may call; ``listings`` the tool lists
    made for this response (shown first); ``approved`` the approved calls that run before
    the model samples (their items follow the lists)."""

    def __init__(
        self,
        output: list[OutputItem],
        servers: Sequence[McpServerTools],
        *,
        listings: Sequence[McpListTools] = (),
        approved: Sequence[McpCall] = (),
    ) -> None:
        self.output = output
        self.servers = {server.label: server for server in servers}
        self.listings = tuple(listings)
        self.approved = tuple(approved)
        self.calls: CallQueue[McpCallWriter] = CallQueue()
        """The calls written and not yet done."""

    @property
    def failure(self) -> str | None:
        """Why a server could not list its tools (``None``: every listing worked)."""
        return next((listing.error for listing in self.listings if listing.error), None)

    def opening(self, number: Numbering) -> list[StreamEvent]:
        """The tool lists made for this response, then the approved calls, opened."""
        out: list[StreamEvent] = []
        for listing in self.listings:
            index = len(self.output)
            self.output.append(listing)
            out.append(OutputItemAdded(number(), index, listing.model_copy(update={"tools": ()})))
            out.append(McpListToolsInProgress(number(), index, listing.id))
            ended = McpListToolsFailed if listing.error else McpListToolsCompleted
            out.append(ended(number(), index, listing.id))
            out.append(OutputItemDone(number(), index, listing))
        for call in self.approved:
            item = call.model_copy(update={"arguments": "", "status": "in_progress"})
            writer, events = self._opened(item, number)
            out += events + writer.delta(call.arguments, number)
            out += writer.written(call.arguments, True, number)
            self.output[writer.index] = writer.item
            self.calls.written(writer)
        return out

    @property
    def ready(self) -> int:
        """The approved calls :meth:`opening` opened: they run before the model samples."""
        return len(self.approved)

    def claims(self, header: Header) -> str | None:
        """``LABEL.TOOL`` when ``header`` opens a call of a tool the model may call: gpt-oss's
        ``to=LABEL.TOOL`` or a chat-template model's ``to=functions.LABEL.TOOL``."""
        if header.author.role is not Role.ASSISTANT or header.recipient is None:
            return None
        recipient = header.recipient.removeprefix(FUNCTIONS)
        label, _, name = recipient.partition(".")
        server = self.servers.get(label)
        return recipient if server is not None and name in server.approvals else None

    def open(self, header: Header, number: Numbering) -> tuple[McpCallWriter, list[StreamEvent]]:
        """A new call at the end of the output: an ``mcp_call`` (``in_progress``), or an
        ``mcp_approval_request`` where the tool needs approval."""
        label, _, name = (header.recipient or "").removeprefix(FUNCTIONS).partition(".")
        item: McpCall | McpApprovalRequest
        if self.servers[label].approvals[name]:
            item = McpApprovalRequest(server_label=label, name=name)
        else:
            item = McpCall(server_label=label, name=name, status="in_progress")
        return self._opened(item, number)

    def _opened(
        self, item: McpCall | McpApprovalRequest, number: Numbering
    ) -> tuple[McpCallWriter, list[StreamEvent]]:
        self.output.append(item)
        writer = McpCallWriter(item, len(self.output) - 1)
        return writer, writer.opened(number)

    def close(self, writer: object, body: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The call of ``writer`` is written (``complete``: ended by ``<|call|>``): a call
        waits for its run; an approval request ends the loop (see :meth:`holds`)."""
        assert isinstance(writer, McpCallWriter)
        events = writer.written(body, complete, number)
        self.output[writer.index] = writer.item
        if complete and isinstance(writer.item, McpCall):
            self.calls.written(writer)
        return events

    def holds(self, recipient: str) -> bool:
        """Whether a call of ``recipient`` waits for the user's approval (it is not run)."""
        label, _, name = recipient.partition(".")
        server = self.servers.get(label)
        return server is not None and server.approvals.get(name, False)

    def running(self, number: Numbering) -> list[StreamEvent]:
        """The first waiting call runs: status ``calling``, no event."""
        writer = self.calls.start()
        if writer is not None:
            writer.calling()
            self.output[writer.index] = writer.item
        return []

    def finished(self, result: ToolResult, number: Numbering) -> list[StreamEvent]:
        """The first running call gave ``result``: its last events."""
        writer = self.calls.finish()
        if writer is None:
            return []
        events = writer.finished(result, number)
        self.output[writer.index] = writer.item
        return events

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The response ends with calls left unrun: each ends ``incomplete``."""
        out: list[StreamEvent] = []
        for writer in self.calls.drain():
            out += writer.abandoned(number)
            self.output[writer.index] = writer.item
        return out


def call_message(label: str, name: str, arguments: str) -> Message:
    """The model's call of ``label.name`` with JSON ``arguments`` (on ``commentary``)."""
    return Message.tool_call(f"{label}.{name}", arguments, channel="commentary")


def mcp_messages(item: McpItem, requests: Mapping[str, str]) -> list[Message]:
    """The Harmony messages of an MCP item in a conversation's history: nothing for a tool
    list (its tools are in the developer message); the call and the tool's reply for an
    ``mcp_call`` (the reply alone where the approval request it ran after is in the
    history: that request is the call); the call for an approval request; the refusal for
    an approval refused (``requests``: approval request id → ``LABEL.TOOL``); nothing for
    one given (its call follows)."""
    if isinstance(item, McpCall):
        recipient = f"{item.server_label}.{item.name}"
        text = item.output if item.output is not None else error_text(item.error)
        reply = Message.tool_result(recipient, text, channel="commentary")
        if item.approval_request_id is not None and item.approval_request_id in requests:
            return [reply]
        return [call_message(item.server_label, item.name, item.arguments), reply]
    if isinstance(item, McpApprovalRequest):
        return [call_message(item.server_label, item.name, item.arguments)]
    if isinstance(item, McpApprovalResponse) and not item.approve:
        asked = requests.get(item.approval_request_id)
        if asked is None:
            return []
        text = f"{DENIED} {item.reason}" if item.reason else DENIED
        return [Message.tool_result(asked, text, channel="commentary")]
    return []


def replayed_events(
    item: McpListTools | McpCall | McpApprovalRequest, index: int, number: Numbering
) -> list[StreamEvent]:
    """The events of a stored MCP ``item`` at ``index`` up to its ``output_item.done`` (not
    included), as they were sent live (the arguments in one delta)."""
    if isinstance(item, McpListTools):
        listed = McpListToolsFailed if item.error else McpListToolsCompleted
        return [
            OutputItemAdded(number(), index, item.model_copy(update={"tools": ()})),
            McpListToolsInProgress(number(), index, item.id),
            listed(number(), index, item.id),
        ]
    if isinstance(item, McpApprovalRequest):
        return [OutputItemAdded(number(), index, item.model_copy(update={"arguments": ""}))]
    opened = item.model_copy(update={"arguments": "", "status": "in_progress", "output": None, "error": None})
    out: list[StreamEvent] = [
        OutputItemAdded(number(), index, opened),
        McpCallInProgress(number(), index, item.id),
    ]
    if item.arguments:
        out.append(McpCallArgumentsDelta(number(), index, item.id, item.arguments))
    out.append(McpCallArgumentsDone(number(), index, item.id, item.arguments))
    if item.status in ("completed", "failed"):
        ended = McpCallCompleted if item.status == "completed" else McpCallFailed
        out.append(ended(number(), index, item.id))
    return out
