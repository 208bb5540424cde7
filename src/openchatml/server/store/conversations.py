"""Conversations over SQL: the tables and queries SQLite and PostgreSQL share.

Two tables beside the responses' (created with them, so a database from before gains
them when it is opened): ``conversations`` (owner, creation time, metadata JSON, the
next free item position, and the response holding it: ``locked_by`` / ``locked_runner``)
and ``conversation_items`` (each item's JSON by position, indexed by item id). Positions
are handed out by bumping ``next_position`` in the write that adds the items, so that
concurrent writers on PostgreSQL never collide and items keep the order they were added
in; a deleted item leaves a gap. A response holds a conversation from its start to its
end (:meth:`SQLConversations.claim`, :meth:`SQLConversations.end_turn`); a hold lapses
with the server that took it. Conversations do not expire.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from .base import Claim, FoundItem, HistoryTooLong, ItemPage, StoredConversation

if TYPE_CHECKING:
    from .sql import Connection, SQLStore

CONVERSATION_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    next_position INTEGER NOT NULL DEFAULT 0,
    locked_by TEXT,
    locked_runner TEXT
);
CREATE TABLE IF NOT EXISTS conversation_items (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
CREATE INDEX IF NOT EXISTS conversation_items_by_id ON conversation_items (item_id);
"""


def _dump(value: Any) -> str:
    return orjson.dumps(value).decode()


class SQLConversations:
    """:class:`~.base.ConversationStore` on the connection of ``store``."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store

    def _row(self, conn: Connection, conversation_id: str, owner: str) -> StoredConversation | None:
        row = self.store._x(
            conn,
            "SELECT created_at, metadata FROM conversations WHERE id = ? AND owner = ?",
            (conversation_id, owner),
        ).fetchone()
        if row is None:
            return None
        return StoredConversation(conversation_id, owner, int(row[0]), orjson.loads(row[1]))

    def _count(self, conn: Connection, conversation_id: str) -> int:
        sql = "SELECT COUNT(*) FROM conversation_items WHERE conversation_id = ?"
        return int(self.store._x(conn, sql, (conversation_id,)).fetchone()[0])

    def _append(self, conn: Connection, conversation_id: str, items: Sequence[dict[str, Any]]) -> None:
        """Add ``items`` after the conversation's last (inside a write transaction)."""
        if not items:
            return
        x = self.store._x
        x(
            conn,
            "UPDATE conversations SET next_position = next_position + ? WHERE id = ?",
            (len(items), conversation_id),
        )
        end = int(
            x(conn, "SELECT next_position FROM conversations WHERE id = ?", (conversation_id,)).fetchone()[0]
        )
        for offset, item in enumerate(items):
            x(
                conn,
                "INSERT INTO conversation_items (conversation_id, position, item_id, body) "
                "VALUES (?, ?, ?, ?)",
                (conversation_id, end - len(items) + offset, str(item.get("id", "")), _dump(item)),
            )

    def _item(self, conn: Connection, conversation_id: str, item_id: str) -> dict[str, Any] | None:
        row = self.store._x(
            conn,
            "SELECT body FROM conversation_items WHERE conversation_id = ? AND item_id = ? "
            "ORDER BY position LIMIT 1",
            (conversation_id, item_id),
        ).fetchone()
        return None if row is None else orjson.loads(row[0])

    def find(self, conn: Connection, item_id: str, owner: str) -> dict[str, Any] | None:
        """The item ``item_id`` of one of ``owner``'s conversations (the oldest), if any."""
        row = self.store._x(
            conn,
            "SELECT i.body FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id "
            "WHERE i.item_id = ? AND c.owner = ? ORDER BY c.created_at, i.position LIMIT 1",
            (item_id, owner),
        ).fetchone()
        return None if row is None else orjson.loads(row[0])

    async def create(self, conversation: StoredConversation, items: Sequence[dict[str, Any]]) -> None:
        """Insert the conversation and its first items in one transaction."""

        def write(conn: Connection) -> None:
            with self.store._transaction(conn):
                self.store._x(
                    conn,
                    "INSERT INTO conversations (id, owner, created_at, metadata) VALUES (?, ?, ?, ?)",
                    (
                        conversation.id,
                        conversation.owner,
                        conversation.created_at,
                        _dump(conversation.metadata),
                    ),
                )
                self._append(conn, conversation.id, items)

        await self.store._run(write)

    async def get(self, conversation_id: str, owner: str) -> StoredConversation | None:
        """The conversation if ``owner`` may see it."""
        return await self.store._run(lambda conn: self._row(conn, conversation_id, owner))

    async def update(
        self, conversation_id: str, owner: str, metadata: dict[str, str]
    ) -> StoredConversation | None:
        """Replace the metadata; the conversation after."""

        def write(conn: Connection) -> StoredConversation | None:
            with self.store._transaction(conn):
                self.store._x(
                    conn,
                    "UPDATE conversations SET metadata = ? WHERE id = ? AND owner = ?",
                    (_dump(metadata), conversation_id, owner),
                )
                return self._row(conn, conversation_id, owner)

        return await self.store._run(write)

    async def delete(self, conversation_id: str, owner: str) -> bool:
        """Delete the conversation and its items."""

        def write(conn: Connection) -> bool:
            with self.store._transaction(conn):
                cur = self.store._x(
                    conn, "DELETE FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
                )
                return bool(cur.rowcount > 0)

        return await self.store._run(write)

    async def add_items(
        self, conversation_id: str, owner: str, items: Sequence[dict[str, Any]], *, max_items: int
    ) -> bool:
        """Append ``items`` unless the conversation would then hold more than ``max_items``
        (:class:`~.base.HistoryTooLong`, counted first)."""

        def write(conn: Connection) -> bool:
            with self.store._transaction(conn):
                if self._row(conn, conversation_id, owner) is None:
                    return False
                count = self._count(conn, conversation_id)
                if count + len(items) > max_items:
                    raise HistoryTooLong(count)
                self._append(conn, conversation_id, items)
                return True

        return await self.store._run(write)

    async def list_items(
        self, conversation_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage | None:
        """Up to ``limit`` items after the item ``after`` (exclusive; none when it is not
        in the conversation), in ``order``."""
        desc = order == "desc"

        def read(conn: Connection) -> ItemPage | None:
            if self._row(conn, conversation_id, owner) is None:
                return None
            sql = "SELECT body FROM conversation_items WHERE conversation_id = ?"
            params: list[Any] = [conversation_id]
            if after is not None:
                sql += (
                    f" AND position {'<' if desc else '>'} (SELECT MIN(position) FROM conversation_items"
                    " WHERE conversation_id = ? AND item_id = ?)"
                )
                params += [conversation_id, after]
            sql += f" ORDER BY position {'DESC' if desc else 'ASC'} LIMIT ?"
            rows = self.store._x(conn, sql, (*params, limit + 1)).fetchall()
            return ItemPage([orjson.loads(r[0]) for r in rows[:limit]], len(rows) > limit)

        return await self.store._run(read)

    async def get_item(self, conversation_id: str, owner: str, item_id: str) -> FoundItem | None:
        """The conversation and its item ``item_id`` (the first so named)."""

        def read(conn: Connection) -> FoundItem | None:
            conversation = self._row(conn, conversation_id, owner)
            if conversation is None:
                return None
            return FoundItem(conversation, self._item(conn, conversation_id, item_id))

        return await self.store._run(read)

    async def delete_item(self, conversation_id: str, owner: str, item_id: str) -> FoundItem | None:
        """Delete the items named ``item_id``; the conversation and the (first) deleted one."""

        def write(conn: Connection) -> FoundItem | None:
            with self.store._transaction(conn):
                conversation = self._row(conn, conversation_id, owner)
                if conversation is None:
                    return None
                item = self._item(conn, conversation_id, item_id)
                if item is not None:
                    self.store._x(
                        conn,
                        "DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
                        (conversation_id, item_id),
                    )
                return FoundItem(conversation, item)

        return await self.store._run(write)

    async def history(
        self, conversation_id: str, owner: str, *, max_items: int | None = None
    ) -> list[dict[str, Any]] | None:
        """Every item, oldest first; :class:`~.base.HistoryTooLong` when they are more than
        ``max_items`` (counted first)."""

        def read(conn: Connection) -> list[dict[str, Any]] | None:
            if self._row(conn, conversation_id, owner) is None:
                return None
            if max_items is not None:
                count = self._count(conn, conversation_id)
                if count > max_items:
                    raise HistoryTooLong(count)
            rows = self.store._x(
                conn,
                "SELECT body FROM conversation_items WHERE conversation_id = ? ORDER BY position",
                (conversation_id,),
            )
            return [orjson.loads(r[0]) for r in rows]

        return await self.store._run(read)

    async def claim(self, conversation_id: str, owner: str, turn: str, live: frozenset[str]) -> Claim:
        """Hold the conversation for ``turn`` unless a live response holds it (see
        :meth:`~.base.ConversationStore.claim`)."""
        store = self.store

        def write(conn: Connection) -> Claim:
            with store._transaction(conn):
                row = store._x(
                    conn,
                    "SELECT locked_by, locked_runner FROM conversations WHERE id = ? AND owner = ?",
                    (conversation_id, owner),
                ).fetchone()
                if row is None:
                    return "missing"
                holder, runner = row
                if holder is not None and not self._lapsed(conn, holder, runner, live):
                    return "locked"
                held = "locked_by IS NULL" if holder is None else "locked_by = ?"
                cur = store._x(
                    conn,
                    f"UPDATE conversations SET locked_by = ?, locked_runner = ? WHERE id = ? AND {held}",
                    (turn, store.runner, conversation_id, *(() if holder is None else (holder,))),
                )
                return "claimed" if cur.rowcount > 0 else "locked"

        return await store._run(write)

    def _lapsed(self, conn: Connection, holder: str, runner: str | None, live: frozenset[str]) -> bool:
        """Whether the hold of ``holder`` (taken by ``runner``) has lapsed: this server
        no longer runs it, or its server is gone."""
        if runner == self.store.runner:
            return holder not in live
        seen = int(time.time()) - self.store.lease_seconds
        row = self.store._x(
            conn, "SELECT 1 FROM runners WHERE id = ? AND seen_at >= ?", (runner or "", seen)
        ).fetchone()
        return row is None

    async def end_turn(self, conversation_id: str, turn: str, items: Sequence[dict[str, Any]]) -> bool:
        """Append ``items`` and let go of the hold of ``turn``, if it still holds the
        conversation; whether it did."""

        def write(conn: Connection) -> bool:
            with self.store._transaction(conn):
                cur = self.store._x(
                    conn,
                    "UPDATE conversations SET locked_by = NULL, locked_runner = NULL "
                    "WHERE id = ? AND locked_by = ?",
                    (conversation_id, turn),
                )
                if cur.rowcount == 0:  # deleted meanwhile, or the hold lapsed
                    return False
                self._append(conn, conversation_id, items)
                return True

        return await self.store._run(write)
