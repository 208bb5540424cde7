"""The tool errors OpenChatML 2.2 §14 leaves open, in the core's taxonomy.

The spec's own tool codes (``E-TOOL-TIMEOUT``, ``E-TOOL-CANCELLED``) and the code for a
call of an undeclared tool (``E-CALL-SCHEMA``) are the core's
(:mod:`openchatml.core.errors`); these add what a hosted-tool runtime also meets: a tool
that broke, a turn past its ``max_tool_calls``, and a call of a tool the client runs.
"""

from __future__ import annotations

from ..core.errors import OCMError


class ToolFailedError(OCMError):
    """A hosted tool raised instead of answering (a bug or a broken backend)."""

    code = "E-TOOL-FAILED"
    http_status = 500
    error_type = "server_error"


class ToolLimitError(OCMError):
    """The response already made the ``max_tool_calls`` hosted calls it may make."""

    code = "E-TOOL-LIMIT"


class ToolNotHostedError(OCMError):
    """A call of a tool the client runs (``functions.*``) was handed to the router."""

    code = "E-TOOL-NOT-HOSTED"
    fault = "caller"
