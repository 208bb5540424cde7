"""What a parse gives: a :class:`ParsedMessage` and its :class:`ToolCall` s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.messages import Message
from ..errors import ParseWarning


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: the tool's name, its arguments as JSON text (for a call cut off in a
    partial parse: the JSON text written so far), and the id the model wrote or the
    template's ``id_pattern`` makes (``""`` if none)."""

    name: str
    arguments: str
    id: str = ""


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """A parsed assistant message: its answer, its reasoning, its tool calls, and the
    warnings about what had to be recovered."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()

    def to_messages(self, *, call_id: Callable[[], str] | None = None) -> list[Message]:
        """The OpenChatML messages: the reasoning on ``analysis``, the answer on ``final``
        (each stripped of surrounding whitespace, left out when empty), and each tool call
        on ``commentary`` addressed ``to=functions.NAME`` with its arguments as JSON and
        its ``call_id``: the model's id, else ``call_id()``, else none."""
        out: list[Message] = []
        if self.reasoning.strip():
            out.append(Message.assistant(self.reasoning.strip(), channel="analysis"))
        if self.content.strip():
            out.append(Message.assistant(self.content.strip(), channel="final"))
        for call in self.tool_calls:
            cid = call.id or (call_id() if call_id is not None else None)
            out.append(Message.tool_call(f"functions.{call.name}", call.arguments, call_id=cid or None))
        return out
