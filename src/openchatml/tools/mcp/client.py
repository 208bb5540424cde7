"""A connection to one remote MCP server, over the official SDK's client session.

Theory of operation: the SDK's transports and session are async context managers that
hold task groups, so they must be entered and exited by the same task. Each
:class:`McpConnection` therefore has one *owner task*, started in a task group the caller
gives (:meth:`McpConnection.start`): it opens the HTTP client, the transport and the
session, completes the handshake, reports ready, waits until :meth:`McpConnection.aclose`
asks it to stop, and exits everything in reverse order. Requests
(:meth:`~McpConnection.list_tools`, :meth:`~McpConnection.call_tool`) are plain awaits
on the session and may come from any task; each carries its own deadline, and a request
given up (deadline or cancellation) is cancelled on the server too (the SDK sends
``notifications/cancelled``). :func:`open_connection` is the ``async with`` form that
brings its own task group.

Transports: streamable HTTP, SSE, or ``auto`` (streamable HTTP, then SSE when the server
rejects it at the protocol level; a URL whose path ends in ``/sse`` goes to SSE directly).

Every failure comes out typed: :class:`McpUnavailableError` (not reachable, refused,
broken protocol), :class:`McpToolError` (the tool answered ``isError`` or the server
rejected the call), the core's :class:`ToolTimeoutError` (a deadline passed). Headers
never reach a log line or an error message.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
import httpx2
import mcp_types
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ...core.errors import ToolTimeoutError
from .errors import McpToolError, McpUnavailableError
from .policy import McpEndpoint

logger = logging.getLogger(__name__)

TransportKind = Literal["auto", "streamable_http", "sse"]
"""How to reach a server: streamable HTTP, SSE, or the first of them that works."""

_MAX_TOOL_PAGES: Final = 100
"""Pages of ``tools/list`` read at most: a server that never stops paging cannot hang us."""


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool a server lists: name, description, input JSON Schema, annotations.

    ``annotations`` is the MCP ``ToolAnnotations`` object as the wire names it
    (``readOnlyHint`` …), or ``None``.
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None

    @property
    def read_only(self) -> bool | None:
        """The server's ``readOnlyHint`` for the tool, ``None`` when it gives none."""
        hint = (self.annotations or {}).get("readOnlyHint")
        return hint if isinstance(hint, bool) else None

    def to_dict(self) -> dict[str, Any]:
        """The tool as an ``mcp_list_tools`` item lists it."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema or {}),
            "annotations": dict(self.annotations) if self.annotations is not None else None,
        }

    @classmethod
    def from_sdk(cls, tool: mcp_types.Tool) -> McpToolInfo:
        """The info of an SDK ``Tool``."""
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
        )
        return cls(tool.name, tool.description or "", dict(tool.input_schema), annotations)


@dataclass(frozen=True, slots=True)
class McpCallResult:
    """What a tool answered: its content as text, and its structured content if any."""

    text: str
    structured: Mapping[str, Any] | None = None


class McpConnection:
    """One connection to one MCP server at ``endpoint``, owned by one task.

    ``connect_timeout_s`` bounds the connection and handshake; ``call_timeout_s`` is the
    deadline of a request that gives none; ``sse_read_timeout_s`` how long an open event
    stream may stay silent.
    """

    def __init__(
        self,
        endpoint: McpEndpoint,
        *,
        transport: TransportKind = "auto",
        connect_timeout_s: float = 10.0,
        call_timeout_s: float = 60.0,
        sse_read_timeout_s: float = 300.0,
    ) -> None:
        self.endpoint = endpoint
        self.transport: TransportKind = transport
        self.connect_timeout_s = connect_timeout_s
        self.call_timeout_s = call_timeout_s
        self.sse_read_timeout_s = sse_read_timeout_s
        self.transport_used: TransportKind | None = None
        self._client: Client | None = None
        self._error: McpUnavailableError | None = None
        self._fallback_allowed = False
        self._http_status: int | None = None
        self._started = False
        self._ready = anyio.Event()
        self._close_requested = anyio.Event()
        self._closed = anyio.Event()

    @property
    def label(self) -> str:
        """The server's label."""
        return self.endpoint.label

    @property
    def connected(self) -> bool:
        """Whether the session is open and usable."""
        return self._client is not None

    async def start(self, task_group: TaskGroup) -> None:
        """Start the owner task in ``task_group`` and wait until connected.

        Raises :class:`McpUnavailableError` when no transport connects in time.
        """
        if self._started:
            raise RuntimeError("an McpConnection is started once")
        self._started = True
        task_group.start_soon(self._own, name=f"mcp connection {self.label}")
        try:
            await self._ready.wait()
        except BaseException:
            self._close_requested.set()
            raise
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """Ask the owner task to close the session and wait until it has (idempotent)."""
        self._close_requested.set()
        if self._started:
            with anyio.CancelScope(shield=True):
                await self._closed.wait()

    async def list_tools(self, *, timeout_s: float | None = None) -> tuple[McpToolInfo, ...]:
        """Every tool the server lists (all pages). Raises the errors of :meth:`call_tool`."""
        client = self._require_client()
        limit = self.call_timeout_s if timeout_s is None else timeout_s
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        with self._translated_errors("tools/list", limit):
            with anyio.fail_after(limit):
                for _ in range(_MAX_TOOL_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(McpToolInfo.from_sdk(tool) for tool in page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        return tuple(tools)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, deadline_s: float | None = None
    ) -> McpCallResult:
        """Call tool ``name`` with ``arguments`` within ``deadline_s`` seconds.

        Returns the tool's text (and structured content). Raises :class:`McpToolError` when
        the tool answers ``isError`` or the server rejects the call, the core's
        :class:`ToolTimeoutError` past the deadline (the call is cancelled on the server),
        :class:`McpUnavailableError` when the connection fails.
        """
        client = self._require_client()
        limit = self.call_timeout_s if deadline_s is None else deadline_s
        with self._translated_errors(f"tool {name!r}", limit), anyio.fail_after(limit):
            result = await client.call_tool(name, dict(arguments or {}))
        text = result_text(result)
        if result.is_error:
            raise McpToolError(f"MCP tool {self.label}.{name} failed: {text[:500]}", output=text)
        return McpCallResult(text, result.structured_content)

    def _require_client(self) -> Client:
        """The open session, or :class:`McpUnavailableError`."""
        if self._client is None:
            raise self._error or McpUnavailableError(f"the connection to MCP server {self.label!r} is closed")
        return self._client

    @contextmanager
    def _translated_errors(self, what: str, limit: float) -> Iterator[None]:
        """Turn what a request may raise into the typed errors (messages hold no headers)."""
        server = f"MCP server {self.label!r}"
        try:
            yield
        except TimeoutError:
            raise ToolTimeoutError(
                f"{server}: {what} gave no answer within {limit:g} s; the request was cancelled"
            ) from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise McpUnavailableError(f"{server} closed the connection") from None
            raise McpToolError(f"{server} rejected {what}: {exc.message}", output=exc.message) from None
        except ValidationError:
            raise McpUnavailableError(f"{server} answered {what} with an invalid result") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.HTTPError, OSError) as exc:
            raise McpUnavailableError(f"{server}: {describe_failure(exc)}") from None

    async def _own(self) -> None:
        """The owner task: connect over each transport in turn until one works, then serve."""
        try:
            for kind in self._transport_order():
                await self._serve(kind)
                if self._error is None or not self._fallback_allowed:
                    break
        finally:
            self._ready.set()
            self._closed.set()

    def _transport_order(self) -> tuple[TransportKind, ...]:
        """The transports to try, in order."""
        if self.transport != "auto":
            return (self.transport,)
        if self.endpoint.url.split("?", 1)[0].rstrip("/").endswith("/sse"):
            return ("sse",)
        return ("streamable_http", "sse")

    async def _serve(self, kind: TransportKind) -> None:
        """Connect over ``kind``, report ready, hold the session until asked to close."""
        self._error, self._fallback_allowed, self._http_status = None, False, None
        connected = False
        failure: Exception | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout_s) as scope:
            try:
                async with AsyncExitStack() as stack:
                    self._client = await stack.enter_async_context(self._open_client(kind))
                    scope.deadline = math.inf
                    connected, self.transport_used = True, kind
                    logger.debug("MCP server %r connected over %s", self.label, kind)
                    self._ready.set()
                    await self._close_requested.wait()
            except Exception as exc:
                failure = exc
            finally:
                self._client = None
        if connected:
            if failure is not None:
                logger.warning(
                    "MCP server %r: the connection ended: %s", self.label, describe_failure(failure)
                )
            self._error = McpUnavailableError(f"the connection to MCP server {self.label!r} is closed")
        elif scope.cancelled_caught:
            self._error = McpUnavailableError(
                f"MCP server {self.label!r}: no handshake within {self.connect_timeout_s:g} s"
            )
        else:
            self._note_connect_failure(failure)

    def _note_connect_failure(self, failure: Exception | None) -> None:
        """Record why connecting failed, and whether another transport is worth a try."""
        status = self._http_status
        if status is not None:
            reason = f"HTTP {status}" + (" (check the headers)" if status in (401, 403) else "")
        else:
            reason = describe_failure(failure) if failure is not None else "no session"
        self._error = McpUnavailableError(f"cannot connect to MCP server {self.label!r}: {reason}")
        self._fallback_allowed = (
            failure is not None and rejected_by_protocol(failure) and status not in (401, 403)
        )

    def _http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """An HTTP client as the SDK makes one, noting the status of answers that refuse a request."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(self.connect_timeout_s, read=self.sse_read_timeout_s),
            auth=auth,
            event_hooks={"response": [self._note_status]},
        )

    async def _note_status(self, response: httpx2.Response) -> None:
        """Keep the status of an HTTP error answer (the transport reports it less precisely)."""
        if response.status_code >= 400:
            self._http_status = response.status_code

    def _open_client(self, kind: TransportKind) -> Client:
        """The SDK client over transport ``kind``, not yet entered."""
        headers = dict(self.endpoint.headers)
        if kind == "sse":
            transport = sse_client(
                self.endpoint.url,
                headers=headers,
                timeout=self.connect_timeout_s,
                sse_read_timeout=self.sse_read_timeout_s,
                httpx_client_factory=self._http_client,
            )
        else:
            timeout = httpx2.Timeout(self.connect_timeout_s, read=self.sse_read_timeout_s)
            transport = self._streamable_transport(headers, timeout)
        return Client(transport, cache=None)

    @asynccontextmanager
    async def _streamable_transport(
        self, headers: dict[str, str], timeout: httpx2.Timeout
    ) -> AsyncIterator[Any]:
        """The streamable HTTP transport over an HTTP client that carries ``headers``."""
        async with (
            self._http_client(headers=headers, timeout=timeout) as http,
            streamable_http_client(self.endpoint.url, http_client=http) as streams,
        ):
            yield streams


@asynccontextmanager
async def open_connection(
    endpoint: McpEndpoint,
    *,
    transport: TransportKind = "auto",
    connect_timeout_s: float = 10.0,
    call_timeout_s: float = 60.0,
) -> AsyncIterator[McpConnection]:
    """``async with open_connection(endpoint) as connection``: a connected
    :class:`McpConnection` with its own task group, closed on exit."""
    connection = McpConnection(
        endpoint, transport=transport, connect_timeout_s=connect_timeout_s, call_timeout_s=call_timeout_s
    )
    failure: Exception | None = None
    async with anyio.create_task_group() as task_group:
        try:
            await connection.start(task_group)
            yield connection
        except Exception as exc:  # raised as it is, not wrapped in the task group's ExceptionGroup
            failure = exc
        finally:
            await connection.aclose()
    if failure is not None:
        raise failure


def result_text(result: mcp_types.CallToolResult) -> str:
    """A tool result's content as text: text blocks as they are, other blocks as a short
    ``[kind: …]`` note; the structured content as JSON when there is no content."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        elif isinstance(block.resource, mcp_types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[resource: {block.resource.uri}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def rejected_by_protocol(exc: BaseException) -> bool:
    """Whether ``exc`` says the server answered but rejected the transport (an HTTP or
    MCP error), as opposed to being unreachable."""
    return isinstance(_leaf(exc), MCPError | httpx2.HTTPStatusError)


def describe_failure(exc: BaseException) -> str:
    """A short reason for a failure, fit for a client: no URL query, no header."""
    leaf = _leaf(exc)
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"HTTP {leaf.response.status_code}"
    if isinstance(leaf, MCPError):
        return f"MCP error {leaf.code}: {leaf.message}"[:300]
    if isinstance(leaf, httpx2.TimeoutException):
        return "timed out"
    if isinstance(leaf, httpx2.TransportError | OSError):
        return f"connection failed ({type(leaf).__name__})"
    return type(leaf).__name__
