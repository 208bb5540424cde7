"""The codes of the warnings a template parser gives (:class:`~..errors.ParseWarning`)."""

from __future__ import annotations

from typing import Final

W_TRUNCATED: Final = "W-TRUNCATED"
"""The output ended inside something left open."""
W_TOOL_ARGS: Final = "W-TOOL-ARGS"
"""Tool-call arguments had to be repaired."""
W_TOOL_UNKNOWN: Final = "W-TOOL-UNKNOWN"
"""A call to a tool that was not offered."""
W_MARKER: Final = "W-MARKER"
"""A marker with nothing after it that it should open."""
W_STRAY: Final = "W-STRAY"
"""Text or a marker out of place was dropped."""
W_TOOL_CALL: Final = "W-TOOL-CALL"
"""A tool call or section is malformed (no name, not closed)."""
W_REASONING_OPEN: Final = "W-REASONING-OPEN"
"""The reasoning never closed; a tool call inside it was taken as the message's."""
W_INTERNAL: Final = "W-INTERNAL"
"""The parser failed on its own; the rest was kept as content."""
