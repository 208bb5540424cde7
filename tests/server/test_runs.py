"""A run and its followers, and the registry of the runs a server holds: every follower
sees every event from its cursor, whenever it joins; a run is found while it is the one
to ask, and forgotten when it ends (a background one after it lingered)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from openchatml.responses.wire.events import OutputTextDelta
from openchatml.server.runs import Run, RunRegistry


def event(number: int) -> OutputTextDelta:
    return OutputTextDelta(number, "msg_1", 0, 0, str(number))


async def collect(run: Run, starting_after: int | None = None) -> list[int]:
    return [e.sequence_number async for e in run.follow(starting_after)]


def test_followers_see_every_event_from_their_cursor_whenever_they_join() -> None:
    async def main() -> tuple[list[int], list[int], list[int], list[int]]:
        run = Run("resp_1", "", background=False)
        early = asyncio.ensure_future(collect(run))
        from_cursor = asyncio.ensure_future(collect(run, starting_after=2))
        await asyncio.sleep(0)
        for number in range(3):
            run.append(event(number))
            await asyncio.sleep(0)
        late = asyncio.ensure_future(collect(run))  # joins midway: gets the past events too
        for number in range(3, 6):
            run.append(event(number))
            await asyncio.sleep(0)
        run.close()
        after_end = await collect(run, starting_after=4)
        return await early, await from_cursor, await late, after_end

    early, from_cursor, late, after_end = asyncio.run(main())
    assert early == late == [0, 1, 2, 3, 4, 5]
    assert from_cursor == [3, 4, 5]
    assert after_end == [5]


def test_a_follower_waits_for_the_next_event_and_ends_with_the_run() -> None:
    async def main() -> None:
        run = Run("resp_1", "", background=False)
        run.append(event(0))
        waiting = asyncio.ensure_future(run.wait_beyond(1))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # one event: it waits for a second
        run.append(event(1))
        await asyncio.wait_for(waiting, 1)
        closed = asyncio.ensure_future(run.wait_beyond(5))
        await asyncio.sleep(0.01)
        assert not closed.done()
        run.close()  # no more events will come: the waiter returns
        await asyncio.wait_for(closed, 1)
        assert await collect(run, starting_after=10) == []

    asyncio.run(main())


def test_final_waits_for_the_task_and_survives_a_cancelled_waiter() -> None:
    async def main() -> None:
        run = Run("resp_1", "", background=False)
        gate = asyncio.Event()

        async def work() -> None:
            await gate.wait()

        run.task = asyncio.create_task(work())
        waiter = asyncio.ensure_future(run.final())
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not run.task.done()  # the waiter left; the run goes on
        gate.set()
        await run.task
        assert run.snapshot is None  # no stream attached in this test

    asyncio.run(main())


def test_the_registry_is_a_mapping_of_the_runs_it_holds() -> None:
    runs = RunRegistry()
    assert isinstance(runs, Mapping)
    assert runs == {}
    first, second = Run("resp_1", "a", False), Run("resp_2", "b", True, stored=True)
    runs.add(first)
    runs.add(second)
    assert runs == {"resp_1": first, "resp_2": second}
    assert len(runs) == 2 and list(runs) == ["resp_1", "resp_2"]
    assert runs.get("resp_3") is None
    runs.discard("resp_1")
    runs.discard("resp_1")  # forgetting twice is harmless
    assert dict(runs) == {"resp_2": second}


def test_live_finds_the_owners_run_while_it_is_the_one_to_ask() -> None:
    async def main() -> None:
        runs = RunRegistry()
        unstored = Run("resp_1", "a", False)
        stored = Run("resp_2", "a", True, stored=True)
        runs.add(unstored)
        runs.add(stored)
        assert runs.live("resp_1", "b") is None  # another key's run is not found
        assert runs.live("resp_9", "a") is None
        assert runs.live("resp_1", "a") is unstored  # no task yet: still the one to ask
        stored.task = asyncio.create_task(asyncio.sleep(0))
        assert runs.live("resp_2", "a") is stored  # running
        await stored.task
        assert runs.live("resp_2", "a") is None  # ended and saved: the store is the one to ask
        unstored.task = asyncio.create_task(asyncio.sleep(0))
        await unstored.task
        assert runs.live("resp_1", "a") is unstored  # nothing stored: the run answers

    asyncio.run(main())


def test_running_stored_lists_the_stored_runs_with_events_to_come() -> None:
    runs = RunRegistry()
    for response_id, stored, done in [("r1", True, False), ("r2", True, True), ("r3", False, False)]:
        run = Run(response_id, "", True, stored=stored)
        if done:
            run.close()
        runs.add(run)
    assert runs.running_stored() == ["r1"]


def test_forget_later_at_once_in_the_foreground_after_lingering_in_the_background() -> None:
    async def main() -> None:
        runs = RunRegistry(linger_seconds=0.05)
        foreground, background = Run("resp_f", "", False), Run("resp_b", "", True)
        runs.add(foreground)
        runs.add(background)
        runs.forget_later(foreground)
        runs.forget_later(background)
        assert "resp_f" not in runs
        assert "resp_b" in runs  # still lingering
        await asyncio.sleep(0.1)
        assert runs == {}

    asyncio.run(main())


def test_forget_later_leaves_a_newer_run_of_the_same_id_alone() -> None:
    async def main() -> None:
        runs = RunRegistry(linger_seconds=0.02)
        old, new = Run("resp_1", "", True), Run("resp_1", "", True)
        runs.add(old)
        runs.forget_later(old)
        runs.add(new)
        await asyncio.sleep(0.05)
        assert runs["resp_1"] is new

    asyncio.run(main())


def test_aclose_cancels_what_runs_and_waits_for_it() -> None:
    async def main() -> None:
        runs = RunRegistry(linger_seconds=60)
        ended: list[str] = []

        async def work(run: Run) -> None:
            try:
                await asyncio.sleep(60)
            finally:
                ended.append(run.response_id)
                run.close()

        for response_id in ("r1", "r2"):
            run = Run(response_id, "", True)
            run.task = asyncio.create_task(work(run))
            runs.add(run)
        lingering = Run("r3", "", True)
        runs.add(lingering)
        runs.forget_later(lingering)
        await asyncio.sleep(0)
        await asyncio.wait_for(runs.aclose(), 1)
        assert sorted(ended) == ["r1", "r2"]
        assert all(run.task is None or run.task.done() for run in runs.values())
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}  # the lingering timer is stopped too

    asyncio.run(main())
