"""The streaming events of the calls the server runs for the model: the code interpreter's,
the browser's (``web_search_call``) and the MCP servers' — all OpenAI's extensions
(``openai:response.…`` in Open Responses, bare in ``openai``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .event_base import StreamEvent


@dataclass(frozen=True, slots=True)
class CodeInterpreterCallInProgress(StreamEvent):
    """A code interpreter call began (``response.code_interpreter_call.in_progress`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.code_interpreter_call.in_progress"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class CodeInterpreterCallInterpreting(StreamEvent):
    """A code interpreter call's code is running
    (``response.code_interpreter_call.interpreting`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.code_interpreter_call.interpreting"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class CodeInterpreterCallCompleted(StreamEvent):
    """A code interpreter call ended (``response.code_interpreter_call.completed`` in
    ``openai``)."""

    type: ClassVar[str] = "openai:response.code_interpreter_call.completed"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class CodeInterpreterCallCodeDelta(StreamEvent):
    """More of a code interpreter call's code (``response.code_interpreter_call_code.delta``
    in ``openai``)."""

    type: ClassVar[str] = "openai:response.code_interpreter_call_code.delta"
    output_index: int
    item_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class CodeInterpreterCallCodeDone(StreamEvent):
    """A code interpreter call's code is finished
    (``response.code_interpreter_call_code.done`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.code_interpreter_call_code.done"
    output_index: int
    item_id: str
    code: str


@dataclass(frozen=True, slots=True)
class WebSearchCallInProgress(StreamEvent):
    """A browser action began (``response.web_search_call.in_progress`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.web_search_call.in_progress"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class WebSearchCallSearching(StreamEvent):
    """A browser action is running (``response.web_search_call.searching`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.web_search_call.searching"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class WebSearchCallCompleted(StreamEvent):
    """A browser action ended (``response.web_search_call.completed`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.web_search_call.completed"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpListToolsInProgress(StreamEvent):
    """An MCP server is asked for its tools (``response.mcp_list_tools.in_progress`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_list_tools.in_progress"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpListToolsCompleted(StreamEvent):
    """An MCP server listed its tools (``response.mcp_list_tools.completed`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_list_tools.completed"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpListToolsFailed(StreamEvent):
    """An MCP server could not list its tools (``response.mcp_list_tools.failed`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_list_tools.failed"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpCallInProgress(StreamEvent):
    """A call of an MCP tool began (``response.mcp_call.in_progress`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_call.in_progress"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpCallArgumentsDelta(StreamEvent):
    """More of an MCP call's arguments (``response.mcp_call_arguments.delta`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_call_arguments.delta"
    output_index: int
    item_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class McpCallArgumentsDone(StreamEvent):
    """An MCP call's arguments are written (``response.mcp_call_arguments.done`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_call_arguments.done"
    output_index: int
    item_id: str
    arguments: str


@dataclass(frozen=True, slots=True)
class McpCallCompleted(StreamEvent):
    """An MCP call answered (``response.mcp_call.completed`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_call.completed"
    output_index: int
    item_id: str


@dataclass(frozen=True, slots=True)
class McpCallFailed(StreamEvent):
    """An MCP call failed (``response.mcp_call.failed`` in ``openai``)."""

    type: ClassVar[str] = "openai:response.mcp_call.failed"
    output_index: int
    item_id: str
