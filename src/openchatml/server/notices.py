"""Waiting for a stored response to change on another server.

Who waits on a response in the store (a follower of its stored events, a ``cancel``
waiting for its end) holds an :class:`asyncio.Event` from :meth:`Notices.watching`,
clears it, reads the store, and waits. A notice from the store (PostgreSQL sends them)
sets the events of that response, or of all; without notices, or where one was lost,
the wait ends after the poll interval and the waiter reads again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from .store.base import Store


class Notices:
    """The waiters on responses of ``store``, woken by its notices or by polling every
    ``poll_seconds`` (``4 * poll_seconds`` while the store sends notices)."""

    def __init__(self, store: Store | None, poll_seconds: float) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[asyncio.Event]] = {}

    @property
    def interval(self) -> float:
        """How long to wait for a notice before looking again."""
        listening = self.store is not None and self.store.listening
        return self.poll_seconds * (4 if listening else 1)

    @contextlib.contextmanager
    def watching(self, response_id: str) -> Iterator[asyncio.Event]:
        """An event set by each notice that ``response_id`` changed in the store."""
        wake = asyncio.Event()
        self._waiters.setdefault(response_id, set()).add(wake)
        try:
            yield wake
        finally:
            waiting = self._waiters.get(response_id)
            if waiting is not None:
                waiting.discard(wake)
                if not waiting:
                    del self._waiters[response_id]

    async def wait(self, wake: asyncio.Event) -> None:
        """Wait for ``wake``, or the poll interval."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), self.interval)

    def wake(self, response_id: str) -> None:
        """Wake who waits on ``response_id``."""
        for wake in self._waiters.get(response_id, ()):
            wake.set()

    def wake_all(self) -> None:
        """Wake every waiter (anything may have changed)."""
        for waiting in self._waiters.values():
            for wake in waiting:
                wake.set()

    def __len__(self) -> int:
        """How many responses are waited on."""
        return len(self._waiters)
