"""What the tool router reports while a turn's calls run: one frozen dataclass per event.

A call yields :class:`ToolCallStarted` when its task starts, the core's
:class:`~openchatml.core.ocm_events.OcmToolCancel` if the runtime cancels it (OCM §9
``tool.cancel {call_id, reason}``: asked for, or past its deadline), and
:class:`ToolCallDone` with its result. The router hands them to the
callback it was given, in the order they happen.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.ocm_events import OcmToolCancel
from .base import ToolResult


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """Call ``call_id`` of ``recipient`` started running."""

    call_id: str
    recipient: str


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    """Call ``call_id`` of ``recipient`` finished with ``result`` (failed ones included)."""

    call_id: str
    recipient: str
    result: ToolResult


ToolEvent = ToolCallStarted | OcmToolCancel | ToolCallDone
"""Anything :class:`~openchatml.tools.router.ToolRouter` reports."""
