"""Several servers on one store: a response is failed only when the server running it is gone.

Each store registers a runner and heartbeats it; ``interrupt_unfinished`` fails what a
runner left unfinished once it closed or missed its lease, never a live one's work.
Run on SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
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
