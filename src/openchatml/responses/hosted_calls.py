"""What the event builder asks of each kind of call the server runs for the model.

Theory of operation. A response's :class:`~.stream.EventBuilder` holds one
:class:`HostedCalls` per hosted tool the request offers (the code interpreter's
``python``, the browser, an MCP server). When the model opens a message, the builder asks
each in turn whether the header opens one of its calls (:meth:`HostedCalls.claims`); the
first that says yes opens the call's item and gives a :class:`HostedWriter` for its body.
The agent loop then runs the call, and the builder relays the run to every kind
(:meth:`HostedCalls.running`, :meth:`HostedCalls.finished`): only the kind whose call
waits answers with events. Items a tool adds before the model samples (an MCP server's
tool list, calls the user approved, which run first) come right after the response
opens (:meth:`HostedCalls.opening`). A call
left unrun when the response ends is :meth:`HostedCalls.abandoned`. Every method takes
:data:`Numbering`, which gives the next event's sequence number, and returns the events
in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from ..core.events import Header
from ..tools.base import ToolResult
from .wire.event_base import StreamEvent

Numbering = Callable[[], int]
"""Gives the next event's sequence number."""

W = TypeVar("W")


class CallQueue(Generic[W]):
    """A tool's calls between being written and being done, in call order: written ones
    wait, then run, then are done (the agent loop starts and finishes them in order)."""

    def __init__(self) -> None:
        self.waiting: deque[W] = deque()
        self.running: deque[W] = deque()

    def written(self, call: W) -> None:
        """``call`` is written and waits for its run."""
        self.waiting.append(call)

    def start(self) -> W | None:
        """The first waiting call, now running (``None``: none waits)."""
        if not self.waiting:
            return None
        call = self.waiting.popleft()
        self.running.append(call)
        return call

    def finish(self) -> W | None:
        """The first running call, now done (``None``: none runs)."""
        return self.running.popleft() if self.running else None

    def drain(self) -> list[W]:
        """Every call not done (running first, then waiting), now given up."""
        calls = [*self.running, *self.waiting]
        self.running.clear()
        self.waiting.clear()
        return calls


class HostedWriter(Protocol):
    """The item of one hosted call being written: its place in the output, its id."""

    @property
    def index(self) -> int:
        """The item's index in the response's output."""
        ...

    @property
    def item_id(self) -> str:
        """The item's id."""
        ...

    def delta(self, text: str, number: Numbering) -> list[StreamEvent]:
        """The events of more of the call's body."""
        ...


class HostedCalls(Protocol):
    """The calls of one hosted tool in one response (see the module docstring)."""

    def opening(self, number: Numbering) -> list[StreamEvent]:
        """Items the tool adds before the model samples (an MCP server's tool list, the
        calls the user approved), with their events; most tools add none."""
        ...

    @property
    def ready(self) -> int:
        """How many calls :meth:`opening` opened that run before the model samples."""
        ...

    def claims(self, header: Header) -> str | None:
        """The call name the request's rules know (``python``, ``web_search`` …) when
        ``header`` opens a call of this tool, else ``None``."""
        ...

    def open(self, header: Header, number: Numbering) -> tuple[HostedWriter, list[StreamEvent]]:
        """A new call at the end of the output: its writer and first events."""
        ...

    def close(self, writer: HostedWriter, body: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The call of ``writer`` is written (``complete``: ended by ``<|call|>``, it waits
        for its run; else it ends ``incomplete``)."""
        ...

    def running(self, number: Numbering) -> list[StreamEvent]:
        """The waiting call starts running (nothing when none of this tool's waits)."""
        ...

    def finished(self, result: ToolResult, number: Numbering) -> list[StreamEvent]:
        """The waiting call gave ``result`` (nothing when none of this tool's waits)."""
        ...

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The response ends with this tool's call unrun: it ends ``incomplete``."""
        ...
