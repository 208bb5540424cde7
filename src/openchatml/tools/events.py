"""What the tool router reports while a turn's calls run: one frozen dataclass per event.

A call yields :class:`ToolCallStarted` when its task starts, :class:`ToolCancel` if the
runtime cancels it (OCM §9 ``tool.cancel {call_id, reason}``: asked for, or past its
deadline), and :class:`ToolCallDone` with its result. The router hands them to the
callback it was given, in the order they happen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import ToolResult


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """Call ``call_id`` of ``recipient`` started running."""

    call_id: str
    recipient: str


@dataclass(frozen=True, slots=True)
class ToolCancel:
    """The runtime cancelled call ``call_id`` (OCM §9 ``tool.cancel``), for ``reason``."""

    type: ClassVar[str] = "tool.cancel"

    call_id: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """The OCM §9 wire event: ``{"type": "tool.cancel", "call_id": …, "reason": …}``."""
        return {"type": self.type, "call_id": self.call_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    """Call ``call_id`` of ``recipient`` finished with ``result`` (failed ones included)."""

    call_id: str
    recipient: str
    result: ToolResult


ToolEvent = ToolCallStarted | ToolCancel | ToolCallDone
"""Anything :class:`~openchatml.tools.router.ToolRouter` reports."""
