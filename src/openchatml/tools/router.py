"""The tool router (OCM §8): a turn's calls dispatched to the hosted tools, run together.

Theory of operation. A recipient names a namespace (``python``, ``browser.search`` →
``browser``, an MCP server's ``label.tool`` → ``label``). :meth:`ToolRouter.route` says
who answers it: a registered tool (``HOSTED``), the client (``CLIENT``: ``functions.*``,
which the router never runs), or nobody (``UNKNOWN``).

:meth:`ToolRouter.run` takes the calls of one assistant turn. Each is first admitted or
refused, in call order: a refused call (unknown or client recipient, wrong channel, a
``call_id`` already running, ``max_tool_calls`` spent) gets a failed result at once and
never reaches a tool. Each admitted call gets an asyncio task running its tool and a
supervisor that waits for the first of three things:

* the tool answers → its result (a tool that raises gets ``E-TOOL-FAILED``);
* the deadline passes (the call's ``deadline_ms``, else the router's default, capped by
  its maximum) → ``E-TOOL-TIMEOUT``;
* :meth:`ToolRouter.cancel` / :meth:`ToolRouter.cancel_all` → ``E-TOOL-CANCELLED``.

In the last two cases the router emits ``tool.cancel``, cancels the tool's task, waits a
little for it to unwind, and calls the tool's own ``cancel`` so it can clean up. If the
caller of :meth:`run` is itself cancelled, every call it started is stopped the same
way. The results come back in call order, whatever order the calls finished in. Nothing
a tool does escapes as an exception.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from ..core.calls import find_tool
from ..core.content import ToolNamespaceConfig
from ..core.errors import CallSchemaError, OCMError, ToolCancelledError, ToolTimeoutError
from ..core.messages import Channel
from ..core.ocm_events import OcmToolCancel
from .base import HostedCall, Tool, ToolResult
from .errors import ToolFailedError, ToolLimitError, ToolNotHostedError
from .events import ToolCallDone, ToolCallStarted, ToolEvent

logger = logging.getLogger(__name__)

BUILTIN_NAMESPACES: Final = frozenset({"browser", "python"})
"""The built-ins, callable from ``analysis`` as well as ``commentary`` (OCM §8.3)."""

CLIENT_NAMESPACES: Final = frozenset({"functions"})
"""Namespaces whose tools the client runs: the router never hosts them."""

DEFAULT_DEADLINE_MS: Final = 120_000
"""The deadline of a call that sets none (the python tool's prompt promises 120 s)."""


class Route(StrEnum):
    """Who answers a recipient."""

    HOSTED = "hosted"
    CLIENT = "client"
    UNKNOWN = "unknown"


class CallBudget:
    """How many hosted calls a response may still make: its ``max_tool_calls``.

    The caller keeps one per response and hands it to every :meth:`ToolRouter.run` of
    that response; each call the router admits takes one. ``limit`` ``None``: no limit.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0

    @property
    def remaining(self) -> int | None:
        """Calls left, or ``None`` without a limit."""
        return None if self.limit is None else max(0, self.limit - self.used)

    def take(self) -> bool:
        """Count one call; ``False`` (and nothing counted) when the limit is reached."""
        if self.limit is not None and self.used >= self.limit:
            return False
        self.used += 1
        return True


@dataclass(slots=True)
class _RunningCall:
    """An admitted call: its tool, the task running it, and why it was stopped (if it was)."""

    call: HostedCall
    tool: Tool
    task: asyncio.Task[ToolResult]
    stop: asyncio.Future[None]
    reason: str | None = None


class ToolRouter:
    """Dispatches tool calls to the hosted tools by recipient, with deadlines and cancellation.

    ``tools`` are registered by their namespace's name; ``default_deadline_ms`` applies
    to calls that set none and ``max_deadline_ms`` caps every call's (``None``: no
    default, no cap); ``cleanup_timeout_s`` bounds how long a stopped tool is waited
    for; ``on_event`` receives the router's events (it must not raise).
    """

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        default_deadline_ms: int | None = DEFAULT_DEADLINE_MS,
        max_deadline_ms: int | None = None,
        cleanup_timeout_s: float = 5.0,
        client_namespaces: Iterable[str] = CLIENT_NAMESPACES,
        analysis_namespaces: Iterable[str] = BUILTIN_NAMESPACES,
        on_event: Callable[[ToolEvent], None] | None = None,
    ) -> None:
        self.default_deadline_ms = default_deadline_ms
        self.max_deadline_ms = max_deadline_ms
        self.cleanup_timeout_s = cleanup_timeout_s
        self.client_namespaces = frozenset(client_namespaces)
        self.analysis_namespaces = frozenset(analysis_namespaces)
        self.on_event = on_event
        self._tools: dict[str, Tool] = {}
        self._running: dict[str, _RunningCall] = {}
        self._stragglers: set[asyncio.Task[ToolResult]] = set()
        for tool in tools:
            self.register(tool)

    # --- the tools ----------------------------------------------------------------------

    def register(self, tool: Tool) -> None:
        """Host ``tool`` under its namespace's name (an MCP server's label, say).

        Raises :class:`ValueError` if that name is taken or belongs to the client.
        """
        name = tool.namespace.name
        if not name or "." in name:
            raise ValueError(f"a tool namespace needs a name without dots, not {name!r}")
        if name in self.client_namespaces:
            raise ValueError(f"namespace {name!r} belongs to the client's tools")
        if name in self._tools:
            raise ValueError(f"namespace {name!r} is already registered")
        self._tools[name] = tool

    def unregister(self, name: str) -> Tool | None:
        """Stop hosting namespace ``name``; the tool it had, if any. Running calls go on."""
        return self._tools.pop(name, None)

    @property
    def namespaces(self) -> dict[str, ToolNamespaceConfig]:
        """The hosted namespaces as the prompt shows them, by name."""
        return {name: tool.namespace for name, tool in self._tools.items()}

    def route(self, recipient: str) -> Route:
        """Who answers ``recipient``: a hosted tool, the client, or nobody."""
        namespace = recipient.partition(".")[0]
        if namespace in self.client_namespaces:
            return Route.CLIENT
        tool = self._tools.get(namespace)
        if tool is not None and find_tool(recipient, {namespace: tool.namespace}) is not None:
            return Route.HOSTED
        return Route.UNKNOWN

    @property
    def running(self) -> tuple[str, ...]:
        """The ``call_id`` s of the calls running now."""
        return tuple(self._running)

    # --- running calls ------------------------------------------------------------------

    async def run(self, calls: Sequence[HostedCall], *, budget: CallBudget | None = None) -> list[ToolResult]:
        """The results of one turn's ``calls``, in call order; the calls run concurrently.

        ``budget`` is the response's ``max_tool_calls`` counter. Never raises for what a
        call or a tool does; cancelling this coroutine stops every call it started.
        """
        results: list[ToolResult | None] = []
        supervisors: dict[int, asyncio.Task[ToolResult]] = {}
        for index, call in enumerate(calls):
            admitted = self._admit(call, budget)
            if isinstance(admitted, ToolResult):
                self._emit(ToolCallDone(call.call_id, call.recipient, admitted))
                results.append(admitted)
            else:
                supervisors[index] = asyncio.create_task(self._supervise(admitted))
                results.append(None)
        if supervisors:
            finished = await asyncio.gather(*supervisors.values())
            for index, result in zip(supervisors, finished, strict=True):
                results[index] = result
        return [result for result in results if result is not None]

    async def run_one(self, call: HostedCall, *, budget: CallBudget | None = None) -> ToolResult:
        """The result of a single ``call`` (see :meth:`run`)."""
        return (await self.run([call], budget=budget))[0]

    def cancel(self, call_id: str, reason: str = "cancelled by the runtime") -> bool:
        """Cancel running call ``call_id`` (OCM ``tool.cancel``); its result becomes
        ``E-TOOL-CANCELLED``. ``False`` if no such call is running (or it already ended)."""
        running = self._running.get(call_id)
        if running is None or running.reason is not None or running.task.done():
            return False
        self._request_stop(running, reason)
        return True

    def cancel_all(self, reason: str = "cancelled by the runtime") -> int:
        """Cancel every running call; how many were cancelled."""
        return sum(self.cancel(call_id, reason) for call_id in list(self._running))

    # --- internals ----------------------------------------------------------------------

    def _admit(self, call: HostedCall, budget: CallBudget | None) -> _RunningCall | ToolResult:
        """A started call, or the failed result of a refused one."""
        route = self.route(call.recipient)
        if route is Route.CLIENT:
            return ToolResult.failed(ToolNotHostedError(f"{call.recipient} is run by the client"))
        if route is Route.UNKNOWN:
            return ToolResult.failed(CallSchemaError(f"call to undeclared tool {call.recipient!r}"))
        if not self._channel_allowed(call):
            return ToolResult.failed(
                CallSchemaError(f"{call.recipient} cannot be called on the {call.channel} channel")
            )
        if call.call_id in self._running:
            return ToolResult.failed(CallSchemaError(f"call_id {call.call_id!r} is already running"))
        if budget is not None and not budget.take():
            return ToolResult.failed(ToolLimitError(f"max_tool_calls ({budget.limit}) reached"))
        tool = self._tools[call.namespace]
        task = asyncio.create_task(tool.call(call), name=f"tool {call.recipient} {call.call_id}")
        task.add_done_callback(_retrieve_exception)
        running = _RunningCall(call, tool, task, asyncio.get_running_loop().create_future())
        self._running[call.call_id] = running
        self._emit(ToolCallStarted(call.call_id, call.recipient))
        return running

    def _channel_allowed(self, call: HostedCall) -> bool:
        """Whether ``call`` came on a channel its tool may be called from (OCM §8.3);
        a call without a channel (a chat template's) is let through."""
        if call.channel is None or call.channel == Channel.COMMENTARY:
            return True
        return call.channel == Channel.ANALYSIS and call.namespace in self.analysis_namespaces

    def _deadline_ms(self, call: HostedCall) -> int | None:
        """The deadline ``call`` runs under: its own, else the default, capped by the maximum."""
        deadline = call.deadline_ms if call.deadline_ms is not None else self.default_deadline_ms
        if self.max_deadline_ms is not None:
            deadline = self.max_deadline_ms if deadline is None else min(deadline, self.max_deadline_ms)
        return deadline

    async def _supervise(self, running: _RunningCall) -> ToolResult:
        """Wait for ``running`` to answer, time out or be cancelled; its result."""
        call = running.call
        try:
            result = await self._outcome(running)
        finally:
            if self._running.get(call.call_id) is running:
                del self._running[call.call_id]
        self._emit(ToolCallDone(call.call_id, call.recipient, result))
        return result

    async def _outcome(self, running: _RunningCall) -> ToolResult:
        """The result of ``running``, stopping it on cancellation or past its deadline."""
        call = running.call
        deadline = self._deadline_ms(call)
        waiters: set[asyncio.Future[Any]] = {running.task, running.stop}
        try:
            await asyncio.wait(
                waiters,
                timeout=None if deadline is None else deadline / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            if running.reason is None:
                self._request_stop(running, "the turn was cancelled")
            await self._stop(running)
            raise
        if running.reason is not None:
            await self._stop(running)
            return ToolResult.failed(ToolCancelledError(f"{call.recipient} was cancelled: {running.reason}"))
        if not running.task.done():
            self._request_stop(running, f"deadline of {deadline} ms exceeded")
            await self._stop(running)
            late = ToolTimeoutError(f"{call.recipient} ran past its deadline of {deadline} ms")
            return ToolResult.failed(late)
        return _finished(running.task, call)

    def _request_stop(self, running: _RunningCall, reason: str) -> None:
        """Mark ``running`` stopped for ``reason``, emit ``tool.cancel`` and wake its supervisor."""
        running.reason = reason
        self._emit(OcmToolCancel(running.call.call_id, reason))
        if not running.stop.done():
            running.stop.set_result(None)

    async def _stop(self, running: _RunningCall) -> None:
        """Cancel the task of ``running``, wait a little for it, and let the tool clean up."""
        task = running.task
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=self.cleanup_timeout_s)
        if not task.done():
            logger.warning("tool task %s ignored its cancellation", task.get_name())
            self._stragglers.add(task)
            task.add_done_callback(self._stragglers.discard)
        reason = running.reason or "cancelled by the runtime"
        try:
            await asyncio.wait_for(running.tool.cancel(running.call.call_id, reason), self.cleanup_timeout_s)
        except Exception:
            logger.exception("cleanup of tool call %s failed", running.call.call_id)

    def _emit(self, event: ToolEvent) -> None:
        """Hand ``event`` to the callback, if there is one."""
        if self.on_event is not None:
            self.on_event(event)


def _finished(task: asyncio.Task[ToolResult], call: HostedCall) -> ToolResult:
    """The result of the finished ``task`` running ``call``; a failed one if it did not answer."""
    if task.cancelled():
        return ToolResult.failed(ToolCancelledError(f"{call.recipient} was cancelled"))
    error = task.exception()
    if isinstance(error, OCMError):
        return ToolResult.failed(error)
    if error is not None:
        return ToolResult.failed(ToolFailedError(f"{call.recipient} failed: {type(error).__name__}: {error}"))
    result = task.result()
    if not isinstance(result, ToolResult):
        return ToolResult.failed(ToolFailedError(f"{call.recipient} answered {type(result).__name__}"))
    return result


def _retrieve_exception(task: asyncio.Task[ToolResult]) -> None:
    """Mark the exception of a finished tool task as seen (a stopped call's is not needed)."""
    if not task.cancelled():
        task.exception()
