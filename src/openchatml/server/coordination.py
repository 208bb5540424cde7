"""This server among the others that share its store.

Theory of operation. A ``cancel`` (or ``delete``) of a response another server runs is
asked through the store (:meth:`Coordinator.cancel_elsewhere`; a deletion removes the
row); the server running it hears of it and cancels its run. Servers hear of each other
at once where the store sends notices (PostgreSQL: :meth:`Coordinator.on_notice`), else
by polling every ``poll_seconds`` (:meth:`Coordinator.check_stops`). Every
``maintenance_seconds`` the store hears this server is alive, and responses that dead
servers left unfinished are marked failed and expired ones evicted
(:meth:`Coordinator.maintain_once`).

Notice kinds (from :meth:`~.store.base.Store.listen`): ``u`` new events or snapshot,
``c`` cancel asked, ``d`` deleted, ``*`` anything may have changed (a reconnect).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from ..responses.resource import TERMINAL
from .notices import Notices
from .records import response_not_found
from .runs import RunRegistry
from .settings import ServiceSettings
from .store.base import Store

log = logging.getLogger("openchatml.server")


class Coordinator:
    """Hears the other servers on ``store`` (through ``notices``), stops the runs of
    ``runs`` they ask to stop, and keeps the store's upkeep."""

    def __init__(
        self, store: Store | None, runs: RunRegistry, notices: Notices, settings: ServiceSettings
    ) -> None:
        self.store = store
        self.runs = runs
        self.notices = notices
        self.settings = settings
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_notice(self, kind: str, response_id: str) -> None:
        """A notice from the store: wake who waits on the response; stop a run of ours
        that another server was asked to cancel, or deleted."""
        if kind == "*":
            self.notices.wake_all()
            self._spawn(self.check_stops())
            return
        if kind in ("c", "d"):
            self.stop_run(response_id, deleted=kind == "d")
        self.notices.wake(response_id)

    def stop_run(self, response_id: str, *, deleted: bool) -> None:
        """Cancel our stored run of ``response_id`` (asked on another server); forget it
        when it was ``deleted`` from the store."""
        run = self.runs.get(response_id)
        if run is None or not run.stored:
            return
        if deleted:  # gone from the store: gone here too
            self.runs.discard(response_id)
        if run.running:
            log.info("response %s: %s on another server", response_id, "deleted" if deleted else "cancelled")
            run.cancel()

    async def check_stops(self) -> None:
        """Stop the stored runs of ours that another server asked to cancel, or deleted."""
        if self.store is None:
            return
        running = self.runs.running_stored()
        if not running:
            return
        try:
            stop = await self.store.stop_requests(running)
        except Exception as exc:  # a database hiccup: the next look will do
            log.warning("store: cannot read stop requests (%s)", exc)
            return
        for response_id, why in stop.items():
            self.stop_run(response_id, deleted=why == "delete")

    async def cancel_elsewhere(self, response_id: str, owner: str) -> dict[str, Any] | None:
        """Ask the server running ``owner``'s unfinished response to cancel it; the stored
        snapshot once it has ended (or as it stands after ``cancel_wait_seconds``).
        ``None`` when no server runs it."""
        if self.store is None or not await self.store.request_cancel(response_id, owner):
            return None
        deadline = time.monotonic() + self.settings.cancel_wait_seconds
        with self.notices.watching(response_id) as wake:
            while True:
                wake.clear()
                record = await self.store.get(response_id, owner)
                if record is None:
                    raise response_not_found(response_id)
                if record.status in TERMINAL or time.monotonic() >= deadline:
                    return record.response
                await self.notices.wait(wake)

    async def maintain_once(self, now: int | None = None) -> None:
        """One round of store upkeep: heartbeat, fail what dead runners left, evict what
        expired."""
        if self.store is None:
            return
        at = int(time.time()) if now is None else now
        await self.store.heartbeat(at)
        interrupted = await self.store.interrupt_unfinished(at)
        evicted = await self.store.evict(at)
        if interrupted or evicted:
            log.info(
                "store: %d response(s) of stopped servers marked failed, %d expired", interrupted, evicted
            )

    def start(self) -> None:
        """Until :meth:`stop`: run :meth:`maintain_once` every ``maintenance_seconds``, and
        hear from other servers on the store (notices, or polls for stop requests)."""
        if self.store is None:
            return
        self._spawn(self._maintain())
        self._spawn(self._watch())

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(self.settings.maintenance_seconds)
            try:
                await self.maintain_once()
            except Exception:  # a database hiccup: try again next round
                log.exception("store upkeep failed")

    async def _watch(self) -> None:
        assert self.store is not None
        await self.store.listen(self.on_notice)
        while True:
            await asyncio.sleep(self.notices.interval)
            await self.check_stops()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        """Stop listening, polling and upkeep."""
        for task in list(self._tasks):
            task.cancel()
