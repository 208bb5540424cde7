"""The service and its store's first write: the engine starts while the store writes, a
failed write stops the engine and leaves nothing running or stored; what a response
continues comes back as typed items (the request's own as they are, stored ones read
back from their JSON)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from live import ScriptedEngine, completion

from openchatml import Message
from openchatml.responses.errors import RequestError
from openchatml.responses.request import parse_request
from openchatml.responses.wire.items import AssistantMessage, UserMessage
from openchatml.server.records import stored_item
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
        assert final.status == "completed"
        stored = await store.get(run.response_id, "")
        assert stored is not None and stored.response == final.to_json()
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


def test_the_requests_own_items_are_not_read_again_and_stored_ones_come_back_typed(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "s.sqlite3")
        service = ResponseService(ScriptedEngine(ANSWER), store)
        first = parse_request({"input": [{"role": "user", "content": "hi"}]})
        history, new_input = await service.items(first, "")
        assert history == [] and new_input[0] is first.items[0]
        run = await service.start(first, "")
        await service.wait(run)
        follow_up = parse_request({"input": "more", "previous_response_id": run.response_id})
        history, new_input = await service.items(follow_up, "")
        assert [type(item) for item in history] == [UserMessage, AssistantMessage]
        assert history[0] == first.items[0]  # read back from its stored JSON
        assert new_input[0] is follow_up.items[0]
        stored = await store.get(run.response_id, "")
        assert stored is not None and stored.input_items == [first.items[0].to_json()]
        await service.aclose()

    asyncio.run(main())


def test_a_stored_item_that_is_no_item_is_refused_naming_where_it_is() -> None:
    with pytest.raises(RequestError) as caught:
        stored_item({"type": "message", "role": "user", "content": 3}, "input[0]")
    assert (caught.value.param, caught.value.code) == ("input[0].content", "invalid_type")
