"""The coordinator of servers sharing a store, against a store that records what it is
asked: notices wake the waiters of their response and stop the runs another server asked
to stop; polls find the stop requests a lost notice would have carried; a cancel of a
response running elsewhere waits for its end; upkeep heartbeats, fails and evicts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from openchatml.server.coordination import Coordinator
from openchatml.server.notices import Notices
from openchatml.server.runs import Run, RunRegistry
from openchatml.server.settings import ServiceSettings
from openchatml.server.store.base import StoredResponse


class RecordingStore:
    """The parts of a store the coordinator uses, recording each call."""

    def __init__(self, *, listening: bool = False) -> None:
        self.listening = listening
        self.calls: list[tuple[Any, ...]] = []
        self.stops: dict[str, str] = {}
        self.stop_error: Exception | None = None
        self.records: dict[str, StoredResponse] = {}
        self.running: set[str] = set()
        self.on_notice: Callable[[str, str], None] | None = None

    async def stop_requests(self, response_ids: Sequence[str]) -> dict[str, str]:
        self.calls.append(("stop_requests", tuple(response_ids)))
        if self.stop_error is not None:
            raise self.stop_error
        return {rid: why for rid, why in self.stops.items() if rid in response_ids}

    async def request_cancel(self, response_id: str, owner: str) -> bool:
        self.calls.append(("request_cancel", response_id, owner))
        return response_id in self.running

    async def get(self, response_id: str, owner: str) -> StoredResponse | None:
        record = self.records.get(response_id)
        return record if record is not None and record.owner == owner else None

    async def heartbeat(self, now: int) -> None:
        self.calls.append(("heartbeat", now))

    async def interrupt_unfinished(self, now: int | None = None) -> int:
        self.calls.append(("interrupt_unfinished", now))
        return 1

    async def evict(self, now: int) -> int:
        self.calls.append(("evict", now))
        return 2

    async def listen(self, on_notice: Callable[[str, str], None]) -> None:
        self.on_notice = on_notice


def coordinator(store: RecordingStore | None, **settings: Any) -> Coordinator:
    options = ServiceSettings(**settings)
    runs = RunRegistry()
    store_: Any = store
    return Coordinator(store_, runs, Notices(store_, options.poll_seconds), options)


def running(coord: Coordinator, response_id: str, *, stored: bool = True) -> Run:
    """A run of ``response_id`` held by ``coord``'s server, its task waiting forever."""
    run = Run(response_id, "", True, stored=stored)
    run.task = asyncio.create_task(asyncio.sleep(3600))
    coord.runs.add(run)
    return run


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(("kind", "deleted"), [("c", False), ("d", True)])
def test_a_stop_notice_cancels_our_stored_run(kind: str, deleted: bool) -> None:
    async def main() -> None:
        coord = coordinator(RecordingStore(listening=True))
        ours, other, unstored = running(coord, "r1"), running(coord, "r2"), running(coord, "r3", stored=False)
        coord.on_notice(kind, "r1")
        coord.on_notice(kind, "r3")  # not stored: no other server can ask to stop it
        await settle()
        assert ours.task is not None and ours.task.cancelled()
        assert ("r1" in coord.runs) is not deleted  # a deleted response is forgotten at once
        for run in (other, unstored):
            assert run.task is not None and not run.task.done()
            run.task.cancel()

    asyncio.run(main())


def test_an_update_notice_wakes_only_the_waiters_of_its_response() -> None:
    async def main() -> None:
        coord = coordinator(RecordingStore(listening=True))
        run = running(coord, "r1")
        with coord.notices.watching("r1") as mine, coord.notices.watching("r2") as other:
            coord.on_notice("u", "r1")
            assert mine.is_set() and not other.is_set()
        assert len(coord.notices) == 0  # waiters leave no trace
        assert run.task is not None and not run.task.done()  # an update stops nothing
        run.task.cancel()

    asyncio.run(main())


def test_a_catch_all_notice_wakes_everyone_and_looks_for_stop_requests() -> None:
    async def main() -> None:
        store = RecordingStore(listening=True)
        store.stops = {"r1": "delete", "r2": "cancel"}
        coord = coordinator(store)
        first, second, third = running(coord, "r1"), running(coord, "r2"), running(coord, "r3")
        with coord.notices.watching("r7") as wake:
            coord.on_notice("*", "")
            assert wake.is_set()
        await settle()
        assert ("stop_requests", ("r1", "r2", "r3")) in store.calls
        assert first.task is not None and first.task.cancelled() and "r1" not in coord.runs
        assert second.task is not None and second.task.cancelled() and "r2" in coord.runs
        assert third.task is not None and not third.task.done()
        third.task.cancel()

    asyncio.run(main())


def test_a_failed_look_for_stop_requests_is_logged_and_stops_nothing(caplog: Any) -> None:
    async def main() -> None:
        store = RecordingStore()
        store.stops = {"r1": "cancel"}
        store.stop_error = OSError("connection reset")
        coord = coordinator(store)
        run = running(coord, "r1")
        await coord.check_stops()
        await settle()
        assert run.task is not None and not run.task.done()
        run.task.cancel()

    with caplog.at_level(logging.WARNING, logger="openchatml.server"):
        asyncio.run(main())
    assert "cannot read stop requests (connection reset)" in caplog.text


def test_check_stops_asks_the_store_only_about_stored_runs_still_running() -> None:
    async def main() -> list[tuple[Any, ...]]:
        store = RecordingStore()
        coord = coordinator(store)
        await coord.check_stops()  # nothing runs: the store is not asked
        ended = running(coord, "r1")
        ended.close()
        running(coord, "r2", stored=False)
        await coord.check_stops()
        live = running(coord, "r3")
        await coord.check_stops()
        for run in coord.runs.values():
            assert run.task is not None
            run.task.cancel()
        assert live.task is not None
        return store.calls

    assert asyncio.run(main()) == [("stop_requests", ("r3",))]


def test_without_notices_the_watcher_polls_for_stop_requests() -> None:
    async def main() -> None:
        store = RecordingStore(listening=False)
        coord = coordinator(store, poll_seconds=0.01, maintenance_seconds=3600)
        run = running(coord, "r1")
        coord.start()
        await asyncio.sleep(0.03)
        assert run.task is not None and not run.task.done()
        store.stops = {"r1": "cancel"}  # asked, and no notice came
        await asyncio.sleep(0.1)
        assert run.task.cancelled()
        coord.stop()

    asyncio.run(main())


def test_notices_wait_four_poll_intervals_while_the_store_sends_them() -> None:
    stores: list[Any] = [RecordingStore(listening=True), RecordingStore(listening=False)]
    listening, polling = (Notices(store, 0.5) for store in stores)
    assert listening.interval == 2.0
    assert polling.interval == Notices(None, 0.5).interval == 0.5


def test_cancel_elsewhere_waits_for_the_other_server_to_end_it() -> None:
    async def main() -> tuple[dict[str, Any] | None, dict[str, Any] | None, float]:
        store = RecordingStore(listening=True)
        body = {"id": "r1", "status": "in_progress"}
        store.records["r1"] = StoredResponse("r1", "k", body)
        store.running = {"r1"}
        coord = coordinator(store, poll_seconds=60.0)  # only a notice can wake the wait in time
        nowhere = await coord.cancel_elsewhere("r2", "k")

        async def other_server_ends_it() -> None:
            await asyncio.sleep(0.05)
            store.records["r1"] = StoredResponse("r1", "k", {**body, "status": "cancelled"})
            coord.on_notice("u", "r1")

        started = asyncio.get_running_loop().time()
        ending = asyncio.ensure_future(other_server_ends_it())
        ended = await asyncio.wait_for(coord.cancel_elsewhere("r1", "k"), 5)
        await ending
        return nowhere, ended, asyncio.get_running_loop().time() - started

    nowhere, ended, seconds = asyncio.run(main())
    assert nowhere is None  # no server runs it: nothing to wait for
    assert ended is not None and ended["status"] == "cancelled"
    assert seconds < 5


def test_cancel_elsewhere_gives_the_state_as_it_stands_after_the_wait() -> None:
    async def main() -> dict[str, Any] | None:
        store = RecordingStore()
        store.records["r1"] = StoredResponse("r1", "k", {"id": "r1", "status": "in_progress"})
        store.running = {"r1"}
        coord = coordinator(store, poll_seconds=0.01, cancel_wait_seconds=0.05)
        return await asyncio.wait_for(coord.cancel_elsewhere("r1", "k"), 5)

    ended = asyncio.run(main())
    assert ended is not None and ended["status"] == "in_progress"


def test_maintain_once_heartbeats_then_fails_and_evicts(caplog: Any) -> None:
    store = RecordingStore()
    with caplog.at_level(logging.INFO, logger="openchatml.server"):
        asyncio.run(coordinator(store).maintain_once(now=1234))
    assert store.calls == [("heartbeat", 1234), ("interrupt_unfinished", 1234), ("evict", 1234)]
    assert "1 response(s) of stopped servers marked failed, 2 expired" in caplog.text


def test_without_a_store_there_is_nothing_to_coordinate() -> None:
    async def main() -> None:
        coord = coordinator(None)
        run = running(coord, "r1")
        coord.start()  # no upkeep, no watcher
        assert asyncio.all_tasks() == {asyncio.current_task(), run.task}
        await coord.check_stops()
        await coord.maintain_once()
        assert await coord.cancel_elsewhere("r1", "") is None
        assert run.task is not None and not run.task.done()
        run.task.cancel()

    asyncio.run(main())
