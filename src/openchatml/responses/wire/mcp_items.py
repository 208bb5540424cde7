"""The items of remote MCP servers: a server's tool list, a call of one of its tools, and
the approval asked for (and given) before a call.

In ``openai`` their ``type`` s are ``mcp_list_tools``, ``mcp_call``,
``mcp_approval_request`` and ``mcp_approval_response``; in Open Responses they carry the
``openai:`` prefix. A call's ``error`` is an object, as OpenAI's API writes it
(``{"type": "mcp_tool_execution_error", "content": …}``, ``mcp_protocol_error`` or
``http_error`` with ``code`` and ``message``); a string given back as input is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from .. import ids
from .base import (
    READ_EXTENSION,
    WRITE_EXTENSION,
    ItemId,
    Text,
    WireModel,
    extension_schema,
    fresh,
    is_none,
)

MCP_LIST_TOOLS: Final = "openai:mcp_list_tools"
MCP_CALL: Final = "openai:mcp_call"
MCP_APPROVAL_REQUEST: Final = "openai:mcp_approval_request"
MCP_APPROVAL_RESPONSE: Final = "openai:mcp_approval_response"

McpCallStatus = Literal["in_progress", "calling", "completed", "incomplete", "failed"]


def _new(prefix: str) -> Callable[[], str]:
    return lambda: ids.new_id(prefix)


class McpListedTool(WireModel):
    """One tool a server lists: its name, description, input JSON Schema, annotations."""

    name: Text
    description: Text | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    annotations: dict[str, Any] | None = None


class McpListTools(WireModel):
    """The tools the MCP server ``server_label`` lists (``error``: why it could not list
    them)."""

    type: Annotated[
        Literal["openai:mcp_list_tools"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(MCP_LIST_TOOLS)
    ] = MCP_LIST_TOOLS
    id: Annotated[ItemId, fresh(_new("mcpl"))] = Field(default_factory=_new("mcpl"))
    server_label: Text
    tools: tuple[McpListedTool, ...] = ()
    error: Text | None = Field(default=None, exclude_if=is_none)


class McpCall(WireModel):
    """A call of tool ``name`` of the MCP server ``server_label`` with JSON ``arguments``,
    run by this server: what the tool answered (``output``) or why it failed (``error``);
    ``approval_request_id``: the approval it ran after, if it needed one."""

    type: Annotated[
        Literal["openai:mcp_call"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(MCP_CALL)
    ] = MCP_CALL
    id: Annotated[ItemId, fresh(_new("mcp"))] = Field(default_factory=_new("mcp"))
    server_label: Text
    name: Text
    arguments: Text = ""
    output: Text | None = None
    error: dict[str, Any] | Text | None = None
    status: McpCallStatus = "completed"
    approval_request_id: Text | None = Field(default=None, exclude_if=is_none)


class McpApprovalRequest(WireModel):
    """A call of tool ``name`` of ``server_label`` that waits for the user's approval
    (answered by an :class:`McpApprovalResponse` naming its ``id``)."""

    type: Annotated[
        Literal["openai:mcp_approval_request"],
        READ_EXTENSION,
        WRITE_EXTENSION,
        extension_schema(MCP_APPROVAL_REQUEST),
    ] = MCP_APPROVAL_REQUEST
    id: Annotated[ItemId, fresh(_new("mcpr"))] = Field(default_factory=_new("mcpr"))
    server_label: Text
    name: Text
    arguments: Text = ""


class McpApprovalResponse(WireModel):
    """The user's answer to the approval request ``approval_request_id``: ``approve`` or
    not, and why (``reason``)."""

    type: Annotated[
        Literal["openai:mcp_approval_response"],
        READ_EXTENSION,
        WRITE_EXTENSION,
        extension_schema(MCP_APPROVAL_RESPONSE),
    ] = MCP_APPROVAL_RESPONSE
    id: Annotated[ItemId, fresh(_new("mcpa"))] = Field(default_factory=_new("mcpa"))
    approval_request_id: Text
    approve: bool
    reason: Text | None = Field(default=None, exclude_if=is_none)


McpItem = McpListTools | McpCall | McpApprovalRequest | McpApprovalResponse
"""Any item of an MCP server."""
