"""The output item a model's message opens: a message (``final`` or a ``commentary``
preamble), reasoning (``analysis``), or the call of a tool, by the tool it calls."""

from __future__ import annotations

from typing import Literal

from ..core.events import Header
from ..core.messages import Message, Role
from . import ids
from .client_tools import ClientCallKind, opened_call
from .input import function_name
from .tool_index import ToolIndex, split_call_name
from .wire.items import AssistantMessage, CustomToolCall, FunctionCall, OutputItem, Phase, ReasoningItem

ItemKind = Literal["message", "reasoning", "function_call", "custom_tool_call", "hosted"] | ClientCallKind
"""The kinds of output item a message opens (``hosted``: a call of a tool the server
runs, whose item its :class:`~.hosted_calls.HostedCalls` makes)."""


def item_kind(header: Header | Message, tools: ToolIndex | None = None) -> ItemKind | None:
    """``message``, ``reasoning``, a call's kind (by the tool of ``tools`` it calls:
    ``function_call`` for any other) or ``None`` (not an output item)."""
    if header.author.role is not Role.ASSISTANT:
        return None
    if header.recipient not in (None, "all"):
        return tools.kind_of(str(header.recipient)) if tools is not None else "function_call"
    if header.channel in (None, "final", "commentary"):
        return "message"
    return "reasoning"


def new_item(kind: ItemKind, header: Header, tools: ToolIndex | None = None) -> OutputItem:
    """The item a message of ``kind`` with ``header`` opens (``in_progress``, empty; a
    call's name and namespace those of the tool of ``tools`` it calls)."""
    client = opened_call(kind, ids.call_id())
    if client is not None:
        return client
    name, space = split_call_name(function_name(str(header.recipient)), tools or ToolIndex())
    if kind == "function_call":
        return FunctionCall(
            call_id=ids.call_id(), name=name, namespace=space, arguments="", status="in_progress"
        )
    if kind == "custom_tool_call":
        return CustomToolCall(
            call_id=ids.call_id(), name=name, namespace=space, input="", status="in_progress"
        )
    if kind == "message":
        phase: Phase = "commentary" if header.channel == "commentary" else "final_answer"
        return AssistantMessage(status="in_progress", content=(), phase=phase)
    return ReasoningItem(status="in_progress", summary=(), content=())
