"""The responses running on this server, and who follows them.

Every response runs as an asyncio task writing its typed events into a :class:`Run`;
any number of followers read them (an SSE stream, a WebSocket, a JSON answer waiting
for the end, a ``GET ?stream=true`` from a cursor), each at its own pace, from any
cursor, and spells them in its own dialect.
:class:`RunRegistry` finds a run by its response's id while it runs, and for a while
after it ended when it ran in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping

from ..responses.stream import EventBuilder
from ..responses.wire import InputItem, ResponseResource
from ..responses.wire.event_base import StreamEvent
from .admission import Ticket


class Run:
    """The events of one running response; any number of followers read them."""

    def __init__(self, response_id: str, owner: str, background: bool, *, stored: bool = False) -> None:
        self.response_id = response_id
        self.owner = owner
        self.background = background
        self.stored = stored
        self.events: list[StreamEvent] = []
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self.publisher: asyncio.Task[None] | None = None
        self.builder: EventBuilder | None = None
        """What builds the run's events and holds its state."""
        self.items: list[InputItem] = []
        """The conversation the response continues: its history and input (references resolved)."""
        self.ticket: Ticket | None = None
        self._wake = asyncio.Event()

    def append(self, event: StreamEvent) -> None:
        """Add an event and wake the followers."""
        self.events.append(event)
        self._wake.set()

    def close(self) -> None:
        """No more events."""
        self.done = True
        self._wake.set()

    async def follow(self, starting_after: int | None = None) -> AsyncIterator[StreamEvent]:
        """Every event with a sequence number above ``starting_after``, as they come."""
        index = 0 if starting_after is None else starting_after + 1
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.done:
                return
            await self.wait_beyond(index)

    async def wait_beyond(self, count: int) -> None:
        """Return once there are more than ``count`` events, or no more will come."""
        while len(self.events) <= count and not self.done:
            self._wake.clear()
            if len(self.events) > count or self.done:
                return
            await self._wake.wait()

    @property
    def snapshot(self) -> ResponseResource | None:
        """The response as it stands."""
        return self.builder.state.resource() if self.builder is not None else None

    @property
    def running(self) -> bool:
        """Whether the run's task is still to end (it may be saving after its last event)."""
        return self.task is not None and not self.done

    def cancel(self) -> None:
        """Cancel the run's task if it has events still to write."""
        if self.task is not None and not self.done:
            self.task.cancel()

    async def final(self) -> ResponseResource:
        """The response once the run's task has ended (a waiter cancelled meanwhile leaves
        the run going)."""
        if self.task is not None:
            await asyncio.shield(self.task)
        snapshot = self.snapshot
        assert snapshot is not None
        return snapshot


class RunRegistry(Mapping[str, Run]):
    """The runs this server holds, by response id (a read-only mapping; :meth:`add`,
    :meth:`discard` and :meth:`forget_later` change it).

    A run is forgotten when it ends: at once when it ran in the foreground, after
    ``linger_seconds`` when in the background (a ``GET`` soon after its end still finds
    it live)."""

    def __init__(self, linger_seconds: float = 60.0) -> None:
        self.linger_seconds = linger_seconds
        self._runs: dict[str, Run] = {}
        self._timers: set[asyncio.Task[None]] = set()

    def __getitem__(self, response_id: str) -> Run:
        return self._runs[response_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._runs)

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, run: Run) -> None:
        """Hold ``run`` under its response's id."""
        self._runs[run.response_id] = run

    def discard(self, response_id: str) -> None:
        """Forget the run of ``response_id``, if held."""
        self._runs.pop(response_id, None)

    def live(self, response_id: str, owner: str) -> Run | None:
        """``owner``'s run of the response, if this server holds it and is the one to ask:
        once a stored run has ended and saved, the store is (another server may delete it)."""
        run = self._runs.get(response_id)
        if run is None or run.owner != owner:
            return None
        if run.stored and run.task is not None and run.task.done():
            return None
        return run

    def running_stored(self) -> list[str]:
        """The ids of the stored responses whose runs have events still to write."""
        return [response_id for response_id, run in self._runs.items() if run.stored and not run.done]

    def forget_later(self, run: Run) -> None:
        """Forget ``run`` (it has ended): at once, or after ``linger_seconds`` for a
        background run still held then."""
        linger = self.linger_seconds if run.background else 0.0
        if linger <= 0:
            self._runs.pop(run.response_id, None)
            return

        async def forget() -> None:
            await asyncio.sleep(linger)
            if self._runs.get(run.response_id) is run:
                del self._runs[run.response_id]

        timer = asyncio.get_running_loop().create_task(forget())
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    async def aclose(self) -> None:
        """Cancel every run still going and wait for each task to end; stop the timers."""
        for run in list(self._runs.values()):
            run.cancel()
        for run in list(self._runs.values()):
            if run.task is not None:
                with contextlib.suppress(BaseException):
                    await run.task
        for timer in list(self._timers):
            timer.cancel()
