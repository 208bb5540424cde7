"""Remote MCP servers as hosted tools, over the official ``mcp`` SDK.

:mod:`.spec` checks a request's ``mcp`` tool, :mod:`.policy` decides whether its server
may be connected to (deny by default), :mod:`.client` holds the connection,
:mod:`.cache` keeps tool listings, :mod:`.tools` makes the server a namespace of the
prompt and a :class:`~openchatml.tools.base.Tool`.
"""

from .cache import ToolListCache, ToolListKey
from .client import McpCallResult, McpConnection, McpToolInfo, TransportKind, open_connection
from .errors import McpRequestError, McpServerNotAllowedError, McpToolError, McpUnavailableError
from .policy import REDACTED, McpEndpoint, McpPolicy, McpServerConfig, SecretHeaders, redact_tool_echo
from .spec import ApprovalPolicy, McpToolSpec, ToolFilter
from .tools import McpTool, namespace_config, visible_tools

__all__ = [
    "REDACTED",
    "ApprovalPolicy",
    "McpCallResult",
    "McpConnection",
    "McpEndpoint",
    "McpPolicy",
    "McpRequestError",
    "McpServerConfig",
    "McpServerNotAllowedError",
    "McpTool",
    "McpToolError",
    "McpToolInfo",
    "McpToolSpec",
    "McpUnavailableError",
    "SecretHeaders",
    "ToolFilter",
    "ToolListCache",
    "ToolListKey",
    "TransportKind",
    "namespace_config",
    "open_connection",
    "redact_tool_echo",
    "visible_tools",
]
