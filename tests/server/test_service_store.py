"""The service and its store's first write: the engine starts while the store writes, a
failed write stops the engine and leaves nothing running or stored."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from live import ScriptedEngine, completion

from openchatml import Message
from openchatml.responses.request import parse_request
from openchatml.server.service import ResponseService
from openchatml.server.store.base import StoredResponse
from openchatml.server.store.sqlite import SQLiteStore


class GatedStore(SQLiteStore):
    """A SQLite store whose ``create`` waits for ``gate`` (then fails with ``error``, if set)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = asyncio.Event()
        self.error: Exception | None = None

    async def create(self, record: StoredResponse) -> None:
        await self.gate.wait()
        if self.error is not None:
            raise self.error
        await super().create(record)


ANSWER = completion(Message.assistant("Hello there, general.", channel="final"))


def _statuses(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT status FROM responses")]


async def _wait_for(condition: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met in time")


def test_engine_starts_while_the_store_writes(tmp_path: Path) -> None:
    async def main() -> None:
        engine = ScriptedEngine(ANSWER, delay=0.01)
        store = GatedStore(tmp_path / "s.sqlite3")
        service = ResponseService(engine, store)
        starting = asyncio.ensure_future(service.start(parse_request({"input": "hi"}), ""))
        await _wait_for(lambda: engine.prompts)  # the prompt reached the engine …
        assert not starting.done()  # … before the response was stored and handed out
        store.gate.set()
        run = await starting
        final = await service.wait(run)
        assert final["status"] == "completed"
        stored = await store.get(run.response_id, "")
        assert stored is not None and stored.response == final
        await service.aclose()

    asyncio.run(main())


def test_failed_first_write_stops_the_engine(tmp_path: Path) -> None:
    async def main() -> None:
        engine = ScriptedEngine(ANSWER, chunk=1, delay=0.05)
        store = GatedStore(tmp_path / "s.sqlite3")
        store.error = OSError("disk full")
        service = ResponseService(engine, store)
        starting = asyncio.ensure_future(service.start(parse_request({"input": "hi"}), ""))
        await _wait_for(lambda: engine.prompts)
        store.gate.set()
        with pytest.raises(OSError, match="disk full"):
            await starting
        assert engine.cancelled == 1
        assert service.runs == {}
        assert service.metrics.running._value.get() == 0
        await service.aclose()

    asyncio.run(main())


def test_caller_leaving_during_the_first_write_cancels_and_stores_it(tmp_path: Path) -> None:
    async def main() -> None:
        engine = ScriptedEngine(ANSWER, chunk=1, delay=0.05)
        store = GatedStore(tmp_path / "s.sqlite3")
        service = ResponseService(engine, store)
        starting = asyncio.ensure_future(service.start(parse_request({"input": "hi"}), ""))
        await _wait_for(lambda: engine.prompts)
        starting.cancel()
        await asyncio.sleep(0.05)
        store.gate.set()  # the write still lands, and the final state after it
        with pytest.raises(asyncio.CancelledError):
            await starting
        await _wait_for(lambda: engine.cancelled == 1)
        await _wait_for(lambda: _statuses(tmp_path / "s.sqlite3") == ["cancelled"])
        await service.aclose()

    asyncio.run(main())
