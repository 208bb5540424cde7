"""Several servers on one store: a response is failed only when the server running it is gone.

Each store registers a runner and heartbeats it; ``interrupt_unfinished`` fails what a
runner left unfinished once it closed or missed its lease, never a live one's work.
Run on SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from openchatml.server.store.base import StoredResponse
from openchatml.server.store.sql import SQLStore
from openchatml.server.store.sqlite import SQLiteStore


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: Any, tmp_path: Path) -> Any:
    """``open_store()``: another store (another server) on one shared database."""
    if request.param == "sqlite":
        return lambda: SQLiteStore(tmp_path / "shared.sqlite3", lease_seconds=30)
    from openchatml.server.store.postgres import PostgresStore

    url = request.getfixturevalue("postgres_url")
    return lambda: PostgresStore(url, lease_seconds=30)


def running(response_id: str) -> StoredResponse:
    body = {"id": response_id, "status": "in_progress", "created_at": 1, "output": []}
    return StoredResponse(response_id, "owner", body, [{"type": "message", "id": "msg_1"}])


async def status(store: SQLStore, response_id: str) -> str:
    record = await store.get(response_id, "owner")
    assert record is not None
    return record.status


def test_live_runners_keep_their_work_dead_ones_lose_it(open_store: Any) -> None:
    async def main() -> None:
        a, b = open_store(), open_store()
        await a.open()
        await b.open()
        now = 10_000_000_000
        await a.heartbeat(now)
        await b.heartbeat(now)
        await a.create(running("resp_a"))
        await b.create(running("resp_b"))
        # a server starting (or a periodic sweep) leaves live servers' responses alone
        c = open_store()
        await c.open()
        assert await c.interrupt_unfinished(now + 5) == 0
        assert await b.interrupt_unfinished(now + 29) == 0
        assert await status(c, "resp_a") == "in_progress"
        # a is not heard from for longer than its lease: its work is failed, b's is not
        await b.heartbeat(now + 31)
        assert await b.interrupt_unfinished(now + 31) == 1
        assert await status(c, "resp_a") == "failed"
        assert await status(c, "resp_b") == "in_progress"
        # a store never fails its own work, however old its heartbeat
        assert await b.interrupt_unfinished(now + 10_000) == 0
        # b closes cleanly: at once, what it left is another's to fail
        await b.close()
        assert await c.interrupt_unfinished() == 1
        failed = await c.get("resp_b", "owner")
        assert failed is not None and failed.response["error"]["code"] == "server_restarted"
        for store in (a, c):
            await store.close()

    asyncio.run(main())


def test_an_older_database_gains_the_runner_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE responses (id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL,
                expires_at INTEGER, status TEXT NOT NULL, previous_id TEXT, body TEXT NOT NULL);
            INSERT INTO responses VALUES ('resp_old', 'owner', 1, NULL, 'in_progress', NULL,
                '{"id": "resp_old", "status": "in_progress", "output": []}');
            """
        )

    async def main() -> None:
        store = SQLiteStore(path)
        await store.open()
        assert await store.interrupt_unfinished() == 1  # no runner: left by an older server
        assert await status(store, "resp_old") == "failed"
        await store.create(running("resp_new"))
        assert await status(store, "resp_new") == "in_progress"
        await store.close()

    asyncio.run(main())


def test_events_cancel_requests_and_notices_between_stores(open_store: Any) -> None:
    """Events written by one store are read by another from a cursor, owner-scoped; a
    cancel asked through one is seen by the other, as is a deletion; on PostgreSQL each
    of these also reaches a listening store as a notice."""

    async def main() -> None:
        a, b = open_store(), open_store()
        await a.open()
        await b.open()
        notices: list[tuple[str, str]] = []
        await a.listen(lambda kind, rid: notices.append((kind, rid)))
        for _ in range(100):  # PostgreSQL: until the listening connection is up
            if not isinstance(a, SQLiteStore) and not a.listening:
                await asyncio.sleep(0.05)
        await a.create(running("resp_1"))
        await a.create(running("resp_2"))
        events = [{"type": "e", "sequence_number": n} for n in range(5)]
        await a.append_events("resp_1", events[:3])
        await a.append_events("resp_1", events[2:])  # a batch written again adds nothing
        assert await b.events_after("resp_1", "owner", -1) == events
        assert await b.events_after("resp_1", "owner", 2) == events[3:]
        assert await b.events_after("resp_1", "owner", 1, limit=2) == events[2:4]
        assert await b.events_after("resp_1", "someone else", -1) == []
        assert await b.last_event("resp_1", "owner") == events[-1]
        assert await b.last_event("resp_1", "someone else") is None
        assert await b.last_event("resp_2", "owner") is None
        assert await a.stop_requests(["resp_1", "resp_2"]) == {}
        assert not await b.request_cancel("resp_1", "someone else")
        assert await b.request_cancel("resp_1", "owner")
        assert await b.delete("resp_2", "owner")
        assert await a.stop_requests(["resp_1", "resp_2", "resp_1"]) == {
            "resp_1": "cancel",
            "resp_2": "delete",
        }
        await a.update({"id": "resp_1", "status": "cancelled", "output": []})
        assert not await b.request_cancel("resp_1", "owner")  # it ended: nothing to cancel
        assert await a.stop_requests(["resp_1"]) == {}
        await a.update({"id": "resp_2", "status": "cancelled", "output": []})  # gone: a no-op
        assert await b.get("resp_2", "owner") is None
        if not isinstance(a, SQLiteStore):
            for _ in range(100):
                if ("u", "resp_1") in notices and ("d", "resp_2") in notices:
                    break
                await asyncio.sleep(0.05)
            assert ("c", "resp_1") in notices and ("d", "resp_2") in notices and ("u", "resp_1") in notices
        else:
            assert notices == []
        await a.close()
        await b.close()

    asyncio.run(main())


def test_events_of_ended_responses_are_dropped_after_a_while(open_store: Any) -> None:
    async def main() -> None:
        store = open_store()
        await store.open()
        for rid in ("resp_done", "resp_running"):
            await store.create(running(rid))
            await store.append_events(rid, [{"type": "e", "sequence_number": n} for n in range(3)])
        await store.update({"id": "resp_done", "status": "completed", "output": []})
        now = int(time.time())
        await store.evict(now + store.events_seconds - 5)  # not yet
        assert len(await store.events_after("resp_done", "owner", -1)) == 3
        await store.evict(now + store.events_seconds + 5)
        assert await store.events_after("resp_done", "owner", -1) == []  # all of them at once
        assert len(await store.events_after("resp_running", "owner", -1)) == 3  # still running
        assert await store.get("resp_done", "owner") is not None  # the response stays
        await store.close()

    asyncio.run(main())
