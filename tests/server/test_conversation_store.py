"""The conversations' store, on SQLite and on a real PostgreSQL: a database from before
conversations opens and gains them; items keep the order they were added in, whichever
server adds them; a response's hold on a conversation lapses with the server that took
it; the bound on a conversation is counted before any item is loaded; every read is the
owner's alone."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from openchatml.server.store.base import HistoryTooLong, StoredConversation, StoredResponse
from openchatml.server.store.sql import SQLStore
from openchatml.server.store.sqlite import SQLiteStore

OLD_SCHEMA = """
CREATE TABLE responses (id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL,
    expires_at INTEGER, status TEXT NOT NULL, previous_id TEXT, body TEXT NOT NULL, runner TEXT,
    cancel_requested INTEGER);
CREATE TABLE items (response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    role TEXT NOT NULL, position INTEGER NOT NULL, item_id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (response_id, role, position));
CREATE TABLE runners (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL);
CREATE TABLE events (response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL, written_at INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (response_id, sequence));
INSERT INTO responses VALUES ('resp_old', 'owner', 1, NULL, 'completed', NULL,
    '{"id": "resp_old", "status": "completed", "output": []}', NULL, NULL);
INSERT INTO items VALUES ('resp_old', 'input', 0, 'msg_old',
    '{"type": "message", "id": "msg_old", "role": "user", "content": []}');
"""
"""A database as servers before conversations left it: the responses' tables, one response."""


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: Any, tmp_path: Path) -> Any:
    """``open_store()``: another store (another server) on one shared database;
    ``open_store.old()`` fills that database as a server from before would have."""
    if request.param == "sqlite":
        path = tmp_path / "shared.sqlite3"

        def old_sqlite() -> None:
            with sqlite3.connect(path) as conn:
                conn.executescript(OLD_SCHEMA)

        opener: Any = lambda: SQLiteStore(path, lease_seconds=30)  # noqa: E731
        opener.old = old_sqlite
        return opener
    import psycopg

    from openchatml.server.store.postgres import PostgresStore

    url = request.getfixturevalue("postgres_url")

    def old_postgres() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(OLD_SCHEMA.replace("INTEGER", "BIGINT"))

    opener = lambda: PostgresStore(url, lease_seconds=30)  # noqa: E731
    opener.old = old_postgres
    return opener


def message(text: str, item_id: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }


def ids_of(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def test_a_database_from_before_gains_conversations(open_store: Any) -> None:
    open_store.old()

    async def main() -> None:
        store: SQLStore = open_store()
        await store.open()
        old = await store.get("resp_old", "owner")
        assert old is not None and old.status == "completed" and ids_of(old.input_items) == ["msg_old"]
        await store.conversations.create(StoredConversation("conv_1", "owner", 5), [message("a", "msg_a")])
        assert await store.conversations.history("conv_1", "owner") == [message("a", "msg_a")]
        await store.create(StoredResponse("resp_new", "owner", {"id": "resp_new", "status": "completed"}))
        await store.close()
        again = open_store()  # opening it once more changes nothing
        await again.open()
        assert ids_of(await again.conversations.history("conv_1", "owner") or []) == ["msg_a"]
        assert (await again.find_items(["msg_old", "msg_a"], "owner")).keys() == {"msg_old", "msg_a"}
        await again.close()

    asyncio.run(main())


def test_items_keep_their_order_whichever_server_adds_them(open_store: Any) -> None:
    async def main() -> None:
        a, b = open_store(), open_store()
        await a.open()
        await b.open()
        await a.conversations.create(StoredConversation("conv_1", "owner", 5, {"k": "v"}), [])

        async def add(store: SQLStore, name: str) -> None:
            for n in range(10):
                batch = [message(name, f"msg_{name}{n}_0"), message(name, f"msg_{name}{n}_1")]
                assert await store.conversations.add_items("conv_1", "owner", batch, max_items=1000)

        await asyncio.gather(add(a, "a"), add(b, "b"))
        history = ids_of(await b.conversations.history("conv_1", "owner") or [])
        assert len(history) == 40 and len(set(history)) == 40
        for name in ("a", "b"):  # each writer's items in its own order, each batch unbroken
            mine = [i for i in history if i.startswith(f"msg_{name}")]
            assert mine == [f"msg_{name}{n}_{k}" for n in range(10) for k in range(2)]
            assert all(
                history.index(f"msg_{name}{n}_1") == history.index(f"msg_{name}{n}_0") + 1 for n in range(10)
            )
        page = await a.conversations.list_items("conv_1", "owner", after=history[3], limit=5, order="asc")
        assert page is not None and ids_of(page.data) == history[4:9] and page.has_more
        page = await a.conversations.list_items("conv_1", "owner", after=history[3], limit=5, order="desc")
        assert page is not None and ids_of(page.data) == history[2::-1] and not page.has_more
        page = await a.conversations.list_items("conv_1", "owner", after="msg_unknown", limit=5, order="asc")
        assert page is not None and page.data == [] and not page.has_more
        for store in (a, b):
            await store.close()

    asyncio.run(main())


def test_the_bound_is_counted_before_loading_and_reads_are_the_owners(open_store: Any) -> None:
    async def main() -> None:
        store: SQLStore = open_store()
        await store.open()
        conversations = store.conversations
        await conversations.create(
            StoredConversation("conv_1", "owner", 5), [message(str(i), f"m{i}") for i in range(5)]
        )
        with pytest.raises(HistoryTooLong) as long:
            await conversations.history("conv_1", "owner", max_items=4)
        assert long.value.count == 5
        assert len(await conversations.history("conv_1", "owner", max_items=5) or []) == 5
        with pytest.raises(HistoryTooLong):
            await conversations.add_items("conv_1", "owner", [message("x", "mx")], max_items=5)
        assert len(await conversations.history("conv_1", "owner") or []) == 5  # nothing added
        for read in (
            conversations.get("conv_1", "other"),
            conversations.history("conv_1", "other"),
            conversations.list_items("conv_1", "other", after=None, limit=10, order="asc"),
            conversations.get_item("conv_1", "other", "m1"),
            conversations.delete_item("conv_1", "other", "m1"),
            conversations.update("conv_1", "other", {"k": "v"}),
        ):
            assert await read is None
        assert not await conversations.add_items("conv_1", "other", [message("x", "mx")], max_items=10)
        assert not await conversations.delete("conv_1", "other")
        assert await conversations.claim("conv_1", "other", "turn", frozenset({"turn"})) == "missing"
        assert await store.find_items(["m1"], "other") == {}
        assert (await store.find_items(["m1"], "owner"))["m1"] == message("1", "m1")
        found = await conversations.delete_item("conv_1", "owner", "m1")
        assert found is not None and found.item == message("1", "m1") and found.conversation.id == "conv_1"
        assert ids_of(await conversations.history("conv_1", "owner") or []) == ["m0", "m2", "m3", "m4"]
        assert await conversations.delete("conv_1", "owner")
        assert await conversations.get("conv_1", "owner") is None
        await store.close()

    asyncio.run(main())


def test_a_hold_lapses_with_the_server_that_took_it(open_store: Any) -> None:
    async def main() -> None:
        a, b = open_store(), open_store()
        await a.open()
        await b.open()
        await a.conversations.create(StoredConversation("conv_1", "owner", 5), [])
        assert await a.conversations.claim("conv_1", "owner", "t1", frozenset({"t1"})) == "claimed"
        # held by a live response of a live server: refused on either server
        assert await a.conversations.claim("conv_1", "owner", "t2", frozenset({"t1", "t2"})) == "locked"
        assert await b.conversations.claim("conv_1", "owner", "t3", frozenset({"t3"})) == "locked"
        # the server that took it no longer runs that response (it ended without letting go)
        assert await a.conversations.claim("conv_1", "owner", "t4", frozenset({"t4"})) == "claimed"
        assert not await a.conversations.end_turn("conv_1", "t1", [message("late", "m_late")])
        assert await a.conversations.end_turn(
            "conv_1", "t4", [message("in", "m_in"), message("out", "m_out")]
        )
        assert ids_of(await b.conversations.history("conv_1", "owner") or []) == ["m_in", "m_out"]
        # a server that stopped: its holds lapse at once
        assert await a.conversations.claim("conv_1", "owner", "t5", frozenset({"t5"})) == "claimed"
        await a.close()
        assert await b.conversations.claim("conv_1", "owner", "t6", frozenset({"t6"})) == "claimed"
        # deleted while held: the end adds nothing, and fails nothing
        assert await b.conversations.delete("conv_1", "owner")
        assert not await b.conversations.end_turn("conv_1", "t6", [message("x", "m_x")])
        await b.close()

    asyncio.run(main())
