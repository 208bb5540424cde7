"""Remote MCP servers, set up per response: the policy, the connections, the tool lists.

Theory of operation. :class:`McpServers` lives as long as the service and holds the
operator's :class:`~..tools.mcp.McpPolicy` (deny by default: ``--mcp-allow`` URL prefixes
and ``--mcp-server`` labels). :meth:`McpServers.check` refuses (400, naming
``tools[i].…``) an ``mcp`` tool that is malformed or whose server the policy does not
allow, before anything is sent. :meth:`McpServers.join` then sets up one response:

* each server's tool list: the last ``mcp_list_tools`` item of that label in the
  conversation (or ``previous_response_id`` chain), else a new listing, whose item opens
  the response's output (a failed listing fails the response);
* the tools the model may see (``allowed_tools``), as a Harmony namespace named by the
  label (the request's :attr:`~..responses.request.ResponseRequest.mcp_namespaces`, so
  the prompt is built after this);
* one router tool per server (:class:`ServerTools`), which connects on its first call (a
  cached listing costs no connection at all) and calls through :class:`~..tools.mcp.McpTool`;
* the calls the new input approves (``mcp_approval_response``), which run before the
  model samples; which tools need approval (``require_approval``, default ``always``).

A connection is held by an owner task of its own (:class:`ServerLink`) and closed when
the response ends. Headers are credentials: they reach the connection only, never an
item, a log line or an error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ..responses.errors import RequestError
from ..responses.mcp_calls import McpCalls, McpServerTools
from ..responses.request import ResponseRequest
from ..responses.resource import ResponseState
from ..responses.stream import EventBuilder
from ..responses.wire import InputItem
from ..responses.wire.event_base import StreamEvent
from ..responses.wire.mcp_items import (
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    McpListedTool,
    McpListTools,
)
from ..responses.wire.resource import ErrorPayload
from ..responses.wire.tools import FunctionTool, McpServerTool, NamespaceTool
from ..tools.base import HostedCall, ToolResult
from ..tools.mcp import (
    McpConnection,
    McpEndpoint,
    McpPolicy,
    McpRequestError,
    McpServerConfig,
    McpTool,
    McpToolInfo,
    McpToolSpec,
    McpUnavailableError,
    namespace_config,
    open_connection,
    visible_tools,
)
from ..tools.mcp.policy import check_headers
from ..tools.mcp.tools import prompt_schema
from .settings import McpSettings

if TYPE_CHECKING:
    from ..core.content import ToolNamespaceConfig
    from .hosted import HostedSession

log = logging.getLogger("openchatml.server")

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The tool names a namespace can show (others are left out of the prompt)."""
CLOSE_WAIT_S: Final = 5.0
"""How long a connection is given to close before its owner task is cancelled."""


class ServerLink:
    """The connection to one server, opened on first use by an owner task of its own
    (the SDK's sessions must be entered and left by one task) and closed by :meth:`close`."""

    def __init__(self, endpoint: McpEndpoint, settings: McpSettings) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self._ready: asyncio.Future[McpConnection] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def connection(self) -> McpConnection:
        """The open connection; raises :class:`McpUnavailableError` when none can be made."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._own(self._ready), name=f"mcp {self.endpoint.label}")
        return await asyncio.shield(self._ready)

    async def _own(self, ready: asyncio.Future[McpConnection]) -> None:
        """Connect, hand the connection over, hold it until :meth:`close`."""
        try:
            async with open_connection(
                self.endpoint,
                connect_timeout_s=self.settings.connect_timeout,
                call_timeout_s=self.settings.call_timeout,
            ) as connection:
                ready.set_result(connection)
                await self._stop.wait()
        except Exception as exc:  # handed to the waiting caller
            if not ready.done():
                failure = exc if isinstance(exc, McpUnavailableError) else McpUnavailableError(str(exc))
                ready.set_exception(failure)

    async def close(self) -> None:
        """Close the connection, if one was opened (idempotent)."""
        self._stop.set()
        task = self._task
        if task is None:
            return
        await asyncio.wait({task}, timeout=CLOSE_WAIT_S)
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class ServerTools:
    """One MCP server as a router tool: its namespace ``spec.server_label`` shows the
    ``listed`` tools the request allows; calls go through :class:`McpTool` over ``link``."""

    def __init__(self, spec: McpToolSpec, link: ServerLink, listed: Sequence[McpToolInfo]) -> None:
        self.spec = spec
        self.link = link
        self.listed = tuple(listed)
        self._namespace = namespace_config(spec, listed)
        self._tool: McpTool | None = None

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The server's namespace, as the prompt shows it."""
        return self._namespace

    async def call(self, request: HostedCall) -> ToolResult:
        """The server's answer to ``request`` (connecting first where needed)."""
        if self._tool is None:
            try:
                connection = await self.link.connection()
            except McpUnavailableError as exc:
                return ToolResult.failed(exc)
            deadline_ms = int(self.link.settings.call_timeout * 1000)
            self._tool = McpTool(self.spec, connection, self.listed, default_deadline_ms=deadline_ms)
        return await self._tool.call(request)

    async def cancel(self, call_id: str, reason: str) -> None:
        """Cancel call ``call_id`` on the server, if it runs."""
        if self._tool is not None:
            await self._tool.cancel(call_id, reason)


def _info(tool: McpListedTool) -> McpToolInfo:
    return McpToolInfo(tool.name, tool.description or "", tool.input_schema, tool.annotations)


def _listed(tool: McpToolInfo) -> McpListedTool:
    return McpListedTool(
        name=tool.name,
        description=tool.description or None,
        input_schema=dict(tool.input_schema or {}),
        annotations=dict(tool.annotations) if tool.annotations is not None else None,
    )


def namespace_tool(spec: McpToolSpec, tools: Sequence[McpToolInfo]) -> NamespaceTool:
    """The namespace of the server's tools the model may see, as functions that are not
    strict (their schemas as the prompt shows them)."""
    functions = tuple(
        FunctionTool(
            name=tool.name,
            description=tool.description or None,
            parameters=dict(schema) if (schema := prompt_schema(tool.input_schema)) is not None else None,
            strict=False,
        )
        for tool in visible_tools(spec, tools)
        if _TOOL_NAME.fullmatch(tool.name)
    )
    return NamespaceTool(name=spec.server_label, description=spec.server_description or "", tools=functions)


class McpServers:
    """The server's MCP policy and the setup of each response's servers (see the module
    docstring)."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self.policy = McpPolicy(settings.allow, settings.servers)

    def check(self, request: ResponseRequest) -> None:
        """Refuse (400) a malformed ``mcp`` tool, or one whose server is not allowed."""
        for tool in request.mcp_servers:
            self._endpoint(request, tool)

    def _endpoint(self, request: ResponseRequest, tool: McpServerTool) -> tuple[McpToolSpec, McpEndpoint]:
        """The checked spec of ``tool`` and where it connects; raises :class:`RequestError`."""
        position = next(i for i, offered in enumerate(request.all_tools) if offered is tool)
        try:
            spec = McpToolSpec.from_request(tool.spec_fields())
            endpoint = self.policy.resolve(spec.server_label, spec.server_url, spec.headers)
        except McpRequestError as exc:
            raise RequestError(
                f"The MCP tool at 'tools[{position}]' is refused: {exc.message}",
                param=f"tools[{position}].{exc.param}",
                code="mcp_server_not_allowed" if exc.code == "E-TOOL-NOT-ALLOWED" else "invalid_value",
            ) from None
        return spec, endpoint

    async def join(
        self,
        session: HostedSession,
        state: ResponseState,
        history: Sequence[InputItem],
        new_input: Sequence[InputItem],
    ) -> None:
        """Add the servers of ``state`` 's request to ``session`` (see the module docstring);
        the request gains their namespaces. Raises :class:`RequestError` for an approval
        response that answers no approval request of an offered server."""
        request = state.request
        earlier = (*history, *new_input)
        servers: list[McpServerTools] = []
        listings: list[McpListTools] = []
        namespaces: list[NamespaceTool] = []
        for tool in request.mcp_servers:
            spec, endpoint = self._endpoint(request, tool)
            link = ServerLink(endpoint, self.settings)
            session.closers.append(link.close)
            tools, listing = await self._tools(spec, link, earlier)
            if listing is not None:
                listings.append(listing)
            namespaces.append(namespace_tool(spec, tools))
            approvals = {t.name: spec.require_approval.requires_approval(t.name, t.read_only) for t in tools}
            servers.append(McpServerTools(spec.server_label, approvals))
            session.tools.append(ServerTools(spec, link, tools))
        approved = approved_calls(request, earlier, new_input)
        calls = McpCalls(state.output, servers, listings=listings, approved=approved)
        session.calls.append(calls)
        session.held = calls.holds
        session.first_calls = tuple(first_call(call) for call in approved)
        if calls.failure is not None:
            session.failure = ErrorPayload(type="server_error", code="server_error", message=calls.failure)
        deadline_ms = int(self.settings.call_timeout * 1000) + 5000
        session.deadline_ms = max(session.deadline_ms, deadline_ms)
        state.request = replace(request, mcp_namespaces=tuple(namespaces))

    async def _tools(
        self, spec: McpToolSpec, link: ServerLink, earlier: Sequence[InputItem]
    ) -> tuple[tuple[McpToolInfo, ...], McpListTools | None]:
        """The server's tools: from the last listing of its label in ``earlier`` (no new
        item), else listed now (a new item, with ``error`` where listing failed)."""
        label = spec.server_label
        kept = [i for i in earlier if isinstance(i, McpListTools) and i.server_label == label and not i.error]
        if kept:
            return tuple(map(_info, kept[-1].tools)), None
        try:
            connection = await link.connection()
            tools = await connection.list_tools(timeout_s=self.settings.call_timeout)
        except Exception as exc:  # the listing fails, and with it the response
            message = f"could not list the tools of MCP server {label!r}: {exc}"
            log.warning("%s", message)
            return (), McpListTools(server_label=label, error=message)
        return tools, McpListTools(server_label=label, tools=tuple(map(_listed, tools)))


def approved_calls(
    request: ResponseRequest, earlier: Sequence[InputItem], new_input: Sequence[InputItem]
) -> list[McpCall]:
    """The calls the new input approves that have not run yet, as ``mcp_call`` items;
    raises :class:`RequestError` for an approval response whose request is unknown or
    names a server the request does not offer."""
    asked = {item.id: item for item in earlier if isinstance(item, McpApprovalRequest)}
    ran = {item.approval_request_id for item in earlier if isinstance(item, McpCall)}
    labels = {tool.server_label for tool in request.mcp_servers}
    approved: list[McpCall] = []
    for position, item in enumerate(new_input):
        if not isinstance(item, McpApprovalResponse):
            continue
        where = f"input[{position}].approval_request_id"
        question = asked.get(item.approval_request_id)
        if question is None:
            raise RequestError(
                f"No mcp_approval_request with id {item.approval_request_id!r} precedes this approval "
                "response (give the request in 'input', or continue its response with "
                "'previous_response_id').",
                param=where,
                code="invalid_value",
            )
        if question.server_label not in labels:
            raise RequestError(
                f"The approval response answers a call of MCP server {question.server_label!r}, "
                "which this request's 'tools' do not offer.",
                param=where,
                code="invalid_value",
            )
        if item.approve and question.id not in ran:
            approved.append(
                McpCall(
                    server_label=question.server_label,
                    name=question.name,
                    arguments=question.arguments,
                    approval_request_id=question.id,
                    status="in_progress",
                )
            )
    return approved


def first_call(call: McpCall) -> HostedCall:
    """The router's call of an approved ``mcp_call``."""
    recipient = f"{call.server_label}.{call.name}"
    return HostedCall(recipient, call.approval_request_id or call.id, call.arguments, "commentary", "json")


async def failed_events(builder: EventBuilder, failure: ErrorPayload) -> AsyncIterator[StreamEvent]:
    """The events of a response that fails before it samples (a server could not list its
    tools): the stream opens (with the failed listing) and fails."""
    for event in builder.begin():
        yield event
    for event in builder.finish("error", error=failure):
        yield event


HEADERS_ENV: Final = "OPENCHATML_MCP_HEADERS_"
"""The environment variables holding the headers of configured servers: this prefix, then
the label in upper case with ``-`` as ``_`` (``OPENCHATML_MCP_HEADERS_DOCS``), set to a
JSON object (``{"Authorization": "Bearer …"}``)."""


def headers_variable(label: str) -> str:
    """The environment variable of the headers of the server configured as ``label``."""
    return HEADERS_ENV + label.upper().replace("-", "_")


def mcp_settings(
    allow: Sequence[str],
    servers: Sequence[str],
    environ: Mapping[str, str],
    *,
    call_timeout: float = 60.0,
) -> McpSettings | None:
    """The settings of ``--mcp-allow URL-PREFIX`` and ``--mcp-server LABEL=URL`` options
    (``None``: neither given, MCP is off), the headers of each configured server read from
    ``environ`` (:func:`headers_variable`). Raises ``ValueError`` (never showing a header's
    value) for a malformed option, URL or header variable."""
    if not allow and not servers:
        return None
    configured: list[McpServerConfig] = []
    for given in servers:
        label, sep, url = given.partition("=")
        if not sep or not label or not url:
            raise ValueError(f"--mcp-server takes LABEL=URL, not {given!r}")
        variable = headers_variable(label)
        headers: Any = None
        if variable in environ:
            try:
                headers = json.loads(environ[variable])
            except ValueError:
                raise ValueError(f"{variable} must hold a JSON object of headers") from None
        try:
            McpToolSpec.from_request({"type": "mcp", "server_label": label})
            checked = check_headers(headers, param=variable)
        except McpRequestError as exc:
            raise ValueError(f"--mcp-server {label}: {exc.message}") from None
        configured.append(McpServerConfig(label, url, checked))
    settings = McpSettings(allow=tuple(allow), servers=tuple(configured), call_timeout=call_timeout)
    McpPolicy(settings.allow, settings.servers)  # a prefix or URL that does not parse is refused now
    return settings
