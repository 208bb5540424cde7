"""The hosted tools of the agent loop: the router (OCM §8) and the tools it runs.

:class:`ToolRouter` dispatches a turn's :class:`HostedCall` s by recipient to the
registered :class:`Tool` s — ``python``, ``browser.*``, MCP servers under their labels —
with deadlines and cancellation, and gives back :class:`ToolResult` s in call order;
``functions.*`` calls are the client's. :func:`reply_message` turns a result into the
tool's reply (the OCM §8.2 envelope or Harmony's plain text). This layer imports the
core only.

The tools live in their own packages, imported where used (each brings its own
dependencies): :mod:`.python` (the stateful kernel, confined by bubblewrap),
:mod:`.browser` (page stack, corpus and HTTP search backends, citations) and :mod:`.mcp`
(remote MCP servers over the official SDK).
"""

from .base import (
    FileOutput,
    FindInPageAction,
    HostedCall,
    ImageOutput,
    LogOutput,
    OpenPageAction,
    Provenance,
    SearchAction,
    Tool,
    ToolFailure,
    ToolOutput,
    ToolResult,
    deadline_from_body,
    new_call_id,
)
from .errors import ToolFailedError, ToolLimitError, ToolNotHostedError
from .events import ToolCallDone, ToolCallStarted, ToolEvent
from .reply import plain_reply, read_reply_envelope, reply_envelope, reply_message, reply_text
from .router import BUILTIN_NAMESPACES, CLIENT_NAMESPACES, CallBudget, Route, ToolRouter

__all__ = [
    "BUILTIN_NAMESPACES",
    "CLIENT_NAMESPACES",
    "CallBudget",
    "FileOutput",
    "FindInPageAction",
    "HostedCall",
    "ImageOutput",
    "LogOutput",
    "OpenPageAction",
    "Provenance",
    "Route",
    "SearchAction",
    "Tool",
    "ToolCallDone",
    "ToolCallStarted",
    "ToolEvent",
    "ToolFailedError",
    "ToolFailure",
    "ToolLimitError",
    "ToolNotHostedError",
    "ToolOutput",
    "ToolResult",
    "ToolRouter",
    "deadline_from_body",
    "new_call_id",
    "plain_reply",
    "read_reply_envelope",
    "reply_envelope",
    "reply_message",
    "reply_text",
]
