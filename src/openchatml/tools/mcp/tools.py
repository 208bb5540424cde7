"""An MCP server's tools as a hosted tool: the prompt's namespace, approvals and calls.

The namespace is the server's label, with the server's description; each tool the
request allows becomes a ``type name = (_: {…}) => any;`` line, its input schema
rendered as TypeScript by the core. A call ``label.tool`` goes to the server over
an :class:`~openchatml.tools.mcp.client.McpConnection`; :class:`McpTool` implements the
:class:`~openchatml.tools.base.Tool` protocol. Whether a call needs the user's approval
first is the request's ``require_approval`` (:meth:`McpTool.requires_approval`), decided
by the agent loop before it routes the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from ...core.content import ToolDescription, ToolNamespaceConfig
from ...core.errors import CallSchemaError, OCMError, ToolCancelledError
from ..base import DEADLINE_KEY, HostedCall, Provenance, ToolResult
from .client import McpConnection, McpToolInfo
from .errors import McpToolError
from .spec import McpToolSpec

DEFAULT_DEADLINE_MS = 60_000
"""The deadline of a call whose body sets none."""


def visible_tools(spec: McpToolSpec, tools: Sequence[McpToolInfo]) -> tuple[McpToolInfo, ...]:
    """The listed ``tools`` the request allows (``allowed_tools``), in the server's order."""
    return tuple(tool for tool in tools if spec.allows(tool.name, tool.read_only))


def prompt_schema(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """An input schema as the prompt shows it: ``None`` for an object without properties
    (``() => any``), and without the titles generated from the names (``"a_b"`` → ``"A B"``)."""
    if not schema or (schema.get("type") == "object" and not schema.get("properties")):
        return None
    shown = {key: value for key, value in schema.items() if key != "title"}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        shown["properties"] = {
            name: _without_generated_title(name, value) for name, value in properties.items()
        }
    return shown


def _without_generated_title(name: str, schema: Any) -> Any:
    """``schema`` without a ``title`` that only repeats ``name``."""
    if isinstance(schema, Mapping) and schema.get("title") == name.replace("_", " ").title():
        return {key: value for key, value in schema.items() if key != "title"}
    return schema


def namespace_config(spec: McpToolSpec, tools: Sequence[McpToolInfo]) -> ToolNamespaceConfig:
    """The prompt's namespace for the server: its label, description and allowed tools."""
    return ToolNamespaceConfig(
        name=spec.server_label,
        description=spec.server_description,
        tools=tuple(
            ToolDescription(tool.name, tool.description, prompt_schema(tool.input_schema))
            for tool in visible_tools(spec, tools)
        ),
    )


class McpTool:
    """A remote MCP server serving the namespace ``spec.server_label`` (a ``Tool``).

    ``tools`` is the server's listing (from ``list_tools`` or the cache); only those the
    request allows are shown and callable.
    """

    __slots__ = ("_calls", "_namespace", "_tools", "connection", "default_deadline_ms", "spec")

    def __init__(
        self,
        spec: McpToolSpec,
        connection: McpConnection,
        tools: Sequence[McpToolInfo],
        *,
        default_deadline_ms: int = DEFAULT_DEADLINE_MS,
    ) -> None:
        self.spec = spec
        self.connection = connection
        self.default_deadline_ms = default_deadline_ms
        self._tools = {tool.name: tool for tool in visible_tools(spec, tools)}
        self._namespace = namespace_config(spec, tools)
        self._calls: dict[str, anyio.CancelScope] = {}

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The namespace the prompt shows."""
        return self._namespace

    @property
    def tools(self) -> tuple[McpToolInfo, ...]:
        """The tools the model may call."""
        return tuple(self._tools.values())

    def requires_approval(self, name: str) -> bool:
        """Whether a call of tool ``name`` needs the user's approval first."""
        tool = self._tools.get(name)
        return self.spec.require_approval.requires_approval(name, tool.read_only if tool else None)

    async def call(self, request: HostedCall) -> ToolResult:
        """The server's answer to ``request``; failures come back as a failed result."""
        name = request.tool_name
        provenance = Provenance.now(f"mcp:{self.spec.server_label}/{name}")
        scope = anyio.CancelScope()
        self._calls[request.call_id] = scope
        try:
            if name not in self._tools:
                raise CallSchemaError(f"MCP server {self.spec.server_label!r} offers no tool {name!r}")
            arguments = request.arguments()
            arguments.pop(DEADLINE_KEY, None)
            deadline_ms = request.deadline_ms or self.default_deadline_ms
            with scope:
                result = await self.connection.call_tool(name, arguments, deadline_s=deadline_ms / 1000)
            if scope.cancelled_caught:
                raise ToolCancelledError(f"the call of {request.recipient} was cancelled")
        except McpToolError as exc:
            return ToolResult.failed(exc, content=exc.output, provenance=provenance)
        except OCMError as exc:
            return ToolResult.failed(exc, provenance=provenance)
        finally:
            self._calls.pop(request.call_id, None)
        return ToolResult(content=result.text, provenance=provenance)

    async def cancel(self, call_id: str, reason: str) -> None:
        """Cancel call ``call_id`` if it still runs (the server is told); idempotent."""
        scope = self._calls.pop(call_id, None)
        if scope is not None:
            scope.cancel()
