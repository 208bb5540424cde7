"""Admission of responses to the engine: how many run at once, how many wait, how many
one key holds.

Theory of operation. A response is *reserved* when it is created
(:meth:`Admission.reserve`): it is refused there — 429 (``too_many_concurrent_responses``)
when its key already holds ``max_per_key`` responses, queued or running; 503
(``server_overloaded``) when ``max_running`` run and ``max_queued`` wait already — or it
gets a :class:`Ticket`, which takes its place at the end of the queue. Places are
granted in order (FIFO) as running slots free up. :meth:`Ticket.acquire` waits for the
grant; :meth:`Ticket.release` (idempotent) gives back whatever the ticket holds — its
place in the queue or its running slot — and grants the next place. A waiter that is
cancelled leaves the queue.

``None`` or ``0`` turns a limit off. The per-key cap counts only tickets reserved with
a key: a server without API keys has one anonymous caller, whom it does not cap.
"""

from __future__ import annotations

import asyncio
import enum
import math
import time
from collections import deque
from collections.abc import Callable

from ..responses.errors import OverloadedError, RateLimitError

MAX_RETRY_AFTER = 60
"""The longest ``Retry-After`` (seconds) a refusal suggests."""


class TicketState(enum.Enum):
    """Where a ticket stands: waiting for a slot, holding one, or done."""

    QUEUED = "queued"
    RUNNING = "running"
    RELEASED = "released"


class Ticket:
    """One admitted response's place: in the queue, then in a running slot."""

    def __init__(self, admission: Admission, key: str | None) -> None:
        self.admission = admission
        self.key = key
        self.state = TicketState.QUEUED
        self.granted_at: float | None = None
        self._granted: asyncio.Future[None] | None = None

    async def acquire(self) -> None:
        """Wait (FIFO) until the ticket holds a running slot. Cancelled while waiting, it
        leaves the queue. Raises ``RuntimeError`` for a released ticket."""
        if self.state is TicketState.RUNNING:
            return
        if self.state is TicketState.RELEASED:
            raise RuntimeError("the ticket was released")
        self._granted = asyncio.get_running_loop().create_future()
        try:
            await self._granted
        except asyncio.CancelledError:
            self.release()
            raise

    def release(self) -> None:
        """Give back the place or the slot the ticket holds (again: nothing happens)."""
        self.admission._release(self)

    def _grant(self) -> None:
        self.state = TicketState.RUNNING
        self.granted_at = self.admission.clock()
        if self._granted is not None and not self._granted.done():
            self._granted.set_result(None)


class Admission:
    """Running slots, a FIFO queue in front of them, and a cap per key.

    ``max_running``: responses generating at once; ``max_queued``: responses waiting for
    a slot beyond those; ``max_per_key``: responses one key holds, queued or running.
    ``None`` or ``0``: no limit.
    """

    def __init__(
        self,
        max_running: int | None = None,
        max_queued: int | None = None,
        max_per_key: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_running = max_running or None
        self.max_queued = max_queued or None
        self.max_per_key = max_per_key or None
        self.clock = clock
        self._queue: deque[Ticket] = deque()
        self._running = 0
        self._held: dict[str, int] = {}
        self._mean_hold: float | None = None

    @property
    def running(self) -> int:
        """Tickets holding a running slot."""
        return self._running

    @property
    def queued(self) -> int:
        """Tickets waiting for a running slot."""
        return len(self._queue)

    def held(self, key: str) -> int:
        """Tickets ``key`` holds, queued or running."""
        return self._held.get(key, 0)

    def reserve(self, key: str | None = None) -> Ticket:
        """A ticket for one more response of ``key`` (``None``: not capped per key), at the
        end of the queue (granted a slot at once if one is free and nobody waits).

        Raises :class:`RateLimitError` (429, ``too_many_concurrent_responses``) when ``key``
        holds ``max_per_key`` tickets, :class:`OverloadedError` (503) when the queue is
        full; both with ``retry_after``."""
        if self.max_per_key is not None and key is not None and self.held(key) >= self.max_per_key:
            wait = self.retry_after(self.max_per_key)
            raise RateLimitError(
                f"This key already has {self.max_per_key} responses queued or running, the most "
                f"this server runs at once for one key. Try again in {wait} s.",
                code="too_many_concurrent_responses",
                retry_after=wait,
            )
        if (
            self.max_running is not None
            and self.max_queued is not None
            and self._running + len(self._queue) >= self.max_running + self.max_queued
        ):
            wait = self.retry_after(self.max_running)
            raise OverloadedError(
                f"The server is busy: {self._running} responses are running and {len(self._queue)} "
                f"waiting, the most it queues. Try again in {wait} s."
            )
        ticket = Ticket(self, key)
        if key is not None:
            self._held[key] = self.held(key) + 1
        self._queue.append(ticket)
        self._pump()
        return ticket

    def retry_after(self, share: int = 1) -> int:
        """Seconds until a slot of ``share`` is likely to free up: the mean time responses
        held their slot lately, over ``share`` (at least 1, at most :data:`MAX_RETRY_AFTER`)."""
        mean = self._mean_hold or 1.0
        return max(1, min(MAX_RETRY_AFTER, math.ceil(mean / max(1, share))))

    def _release(self, ticket: Ticket) -> None:
        if ticket.state is TicketState.RELEASED:
            return
        if ticket.state is TicketState.QUEUED:
            self._queue.remove(ticket)
        else:
            self._running -= 1
            if ticket.granted_at is not None:
                held = self.clock() - ticket.granted_at
                self._mean_hold = held if self._mean_hold is None else 0.8 * self._mean_hold + 0.2 * held
        ticket.state = TicketState.RELEASED
        if ticket._granted is not None and not ticket._granted.done():
            ticket._granted.cancel()
        if ticket.key is not None:
            left = self.held(ticket.key) - 1
            if left > 0:
                self._held[ticket.key] = left
            else:
                self._held.pop(ticket.key, None)
        self._pump()

    def _pump(self) -> None:
        """Grant free slots to the tickets at the head of the queue."""
        while self._queue and (self.max_running is None or self._running < self.max_running):
            ticket = self._queue.popleft()
            self._running += 1
            ticket._grant()
