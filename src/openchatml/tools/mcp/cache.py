"""Tool listings kept for a while: one per (conversation, server label, server URL).

Listing a server's tools costs a round trip at every turn of a conversation; the agent
loop asks this cache first. Entries expire after ``ttl_s`` seconds and the cache holds
at most ``max_entries``, dropping the least recently used.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .client import McpConnection, McpToolInfo


@dataclass(frozen=True, slots=True)
class ToolListKey:
    """Whose listing: a conversation (or response chain) and the server it came from."""

    conversation: str
    server_label: str
    server_url: str


class ToolListCache:
    """Listings by :class:`ToolListKey`, each kept ``ttl_s`` seconds (``clock`` in seconds)."""

    __slots__ = ("_clock", "_entries", "max_entries", "ttl_s")

    def __init__(
        self, *, ttl_s: float = 300.0, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[ToolListKey, tuple[float, tuple[McpToolInfo, ...]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: ToolListKey) -> tuple[McpToolInfo, ...] | None:
        """The listing kept for ``key``, or ``None`` when there is none or it expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, tools = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return tools

    def put(self, key: ToolListKey, tools: tuple[McpToolInfo, ...]) -> None:
        """Keep ``tools`` for ``key`` for ``ttl_s`` seconds."""
        self._entries[key] = (self._clock() + self.ttl_s, tools)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def forget(self, key: ToolListKey) -> None:
        """Drop the listing of ``key`` (a server said its tools changed)."""
        self._entries.pop(key, None)

    async def tools(self, key: ToolListKey, connection: McpConnection) -> tuple[McpToolInfo, ...]:
        """The kept listing of ``key``, else the server's (listed now and kept)."""
        tools = self.get(key)
        if tools is None:
            tools = await connection.list_tools()
            self.put(key, tools)
        return tools
