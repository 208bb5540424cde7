"""The errors of MCP hosted tools, in the core's taxonomy.

A request's MCP tool can be refused before anything is sent (:class:`McpRequestError`,
:class:`McpServerNotAllowedError`: the caller's fault, a 400 naming the offending
``param``); a server can be unreachable or break the protocol
(:class:`McpUnavailableError`: a 424, as the OpenAI API answers a failed MCP dependency);
a call can fail on the server (:class:`McpToolError`). A call past its deadline raises the
core's :class:`~openchatml.core.errors.ToolTimeoutError` (``E-TOOL-TIMEOUT``).

No message ever holds a header value: headers are credentials.
"""

from __future__ import annotations

from ...core.errors import OCMError
from ..errors import ToolFailedError


class McpRequestError(OCMError):
    """A request's ``mcp`` tool is malformed; ``param`` names the field (``server_label`` …)."""

    code = "E-TOOL-CONFIG"
    fault = "caller"

    def __init__(self, message: str, *, param: str) -> None:
        super().__init__(message)
        self.param = param


class McpServerNotAllowedError(McpRequestError):
    """The server policy does not allow connecting to the ``server_url`` (or label) asked for."""

    code = "E-TOOL-NOT-ALLOWED"


class McpUnavailableError(ToolFailedError):
    """An MCP server could not be reached, refused the connection or broke the protocol."""

    http_status = 424
    error_type = "external_connector_error"


class McpToolError(ToolFailedError):
    """An MCP tool answered with an error (``isError``) or the server rejected the call.

    ``output`` is the text the tool answered with (what the model reads back).
    """

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output
