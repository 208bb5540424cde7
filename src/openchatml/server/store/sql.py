"""The store over SQL: the tables and queries SQLite and PostgreSQL share.

Four tables for responses: ``responses`` (snapshot JSON, owner, expiry, the runner
generating it, a cancel request), ``items`` (input and output items by position, indexed by item id for
``item_reference``), ``events`` (the streamed events of background responses, by
sequence number, so any server can stream them from a cursor) and ``runners`` (one row
per live store, with the time it last said so). Several servers may share one database:
a response left unfinished is marked failed only once its runner has closed or has not
been seen for ``lease_seconds``; a cancel asked of one server reaches the runner through
``cancel_requested``. Writes that other servers wait on send a notice (:meth:`SQLStore._notify`,
``u:ID`` for new events or a new snapshot, ``c:ID`` for a cancel request, ``d:ID`` for
a deletion) where the
database can (PostgreSQL ``NOTIFY``); elsewhere they poll. One connection per store,
used from a worker thread under a lock, so the event loop never waits on the database.
Subclasses say how to connect and how to begin a write transaction; queries are written
with ``?`` placeholders and translated by :meth:`SQLStore._sql`. The conversations'
tables and queries are in :mod:`.conversations`, on the same connection.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import orjson

from .base import HistoryTooLong, ItemPage, StoredResponse
from .conversations import CONVERSATION_SCHEMA, SQLConversations

T = TypeVar("T")

RESPONSE_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    status TEXT NOT NULL,
    previous_id TEXT,
    body TEXT NOT NULL,
    runner TEXT
);
CREATE INDEX IF NOT EXISTS responses_expiry ON responses (expires_at);
CREATE INDEX IF NOT EXISTS responses_status ON responses (status);
CREATE TABLE IF NOT EXISTS items (
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    position INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (response_id, role, position)
);
CREATE INDEX IF NOT EXISTS items_by_id ON items (item_id);
CREATE TABLE IF NOT EXISTS runners (
    id TEXT PRIMARY KEY,
    seen_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL,
    written_at INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (response_id, sequence)
);
"""

SCHEMA: Final = RESPONSE_SCHEMA + CONVERSATION_SCHEMA
"""Every table, created where missing each time a store opens (a database from before
gains the tables added since)."""

COLUMNS_ADDED: Final = (("responses", "runner", "TEXT"), ("responses", "cancel_requested", "INTEGER"))
"""Columns later versions added to existing tables: (table, column, type)."""

MAX_CHAIN: Final = 10_000
"""The longest ``previous_response_id`` chain followed."""

UNFINISHED: Final = ("queued", "in_progress")

_CHAIN: Final = (
    "WITH RECURSIVE chain(id, previous_id, depth) AS ("
    " SELECT id, previous_id, 0 FROM responses WHERE id = ? AND owner = ?"
    " UNION ALL SELECT r.id, r.previous_id, c.depth + 1 FROM responses r"
    " JOIN chain c ON r.id = c.previous_id WHERE r.owner = ? AND c.depth < ?)"
)
"""The ``previous_response_id`` chain from a response (id, owner, owner, most links)."""


def _dump(value: Any) -> str:
    return orjson.dumps(value).decode()


class Connection(Protocol):
    """What the store needs of a DB-API connection in autocommit mode."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def close(self) -> None: ...


class SQLStore:
    """:class:`~.base.Store` over one SQL connection; see the subclasses."""

    begin: str = "BEGIN"
    placeholder: str = "?"

    def __init__(self, *, lease_seconds: int = 30, events_seconds: int = 3600) -> None:
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self.runner = uuid.uuid4().hex
        self.lease_seconds = lease_seconds
        self.events_seconds = events_seconds
        self.conversations = SQLConversations(self)

    def _connect(self) -> Connection:
        raise NotImplementedError

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _x(self, conn: Connection, sql: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(self._sql(sql), tuple(params))

    async def _run(self, fn: Callable[[Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                if self._conn is None:
                    conn = self._connect()
                    self._beat(conn, int(time.time()))
                    self._conn = conn
                return fn(self._conn)

        return await asyncio.to_thread(call)

    def _transaction(self, conn: Connection) -> _Transaction:
        return _Transaction(conn, self.begin)

    def _notify(self, conn: Connection, kind: str, response_id: str) -> None:
        """Tell other servers ``kind:response_id`` changed (at commit); a no-op here."""

    @property
    def listening(self) -> bool:
        """Notices of other servers arrive now (else those waiting poll)."""
        return False

    async def listen(self, on_notice: Callable[[str, str], None]) -> None:
        """Call ``on_notice(kind, response_id)`` on the event loop for each notice other
        servers send; a no-op where the database has no notices."""

    def _write_items(
        self, conn: Connection, response_id: str, role: str, items: Sequence[dict[str, Any]]
    ) -> None:
        for i, item in enumerate(items):
            self._x(
                conn,
                "INSERT INTO items (response_id, role, position, item_id, body) VALUES (?, ?, ?, ?, ?)",
                (response_id, role, i, str(item.get("id", "")), _dump(item)),
            )

    async def open(self) -> None:
        """Connect, create the tables, and register this store as a live runner."""
        await self._run(lambda conn: None)

    def _beat(self, conn: Connection, now: int) -> None:
        self._x(
            conn,
            "INSERT INTO runners (id, seen_at) VALUES (?, ?) "
            "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
            (self.runner, now),
        )

    async def heartbeat(self, now: int) -> None:
        """Say this store's runner is alive at ``now``."""
        await self._run(lambda conn: self._beat(conn, now))

    async def close(self) -> None:
        """Unregister the runner (what it left unfinished is then another store's to fail)
        and close the connection."""

        def shut(conn: Connection) -> None:
            try:
                self._x(conn, "DELETE FROM runners WHERE id = ?", (self.runner,))
            finally:
                conn.close()
                self._conn = None

        if self._conn is not None:
            await self._run(shut)

    async def create(self, record: StoredResponse) -> None:
        """Insert the response and its input and output items in one transaction."""

        def write(conn: Connection) -> None:
            body = record.response
            with self._transaction(conn):
                self._x(
                    conn,
                    "INSERT INTO responses (id, owner, created_at, expires_at, status, previous_id, body, "
                    "runner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id,
                        record.owner,
                        int(body.get("created_at") or time.time()),
                        record.expires_at,
                        record.status,
                        record.previous_response_id,
                        _dump(body),
                        self.runner,
                    ),
                )
                self._write_items(conn, record.id, "input", record.input_items)
                self._write_items(conn, record.id, "output", body.get("output") or [])

        await self._run(write)

    async def update(self, response: dict[str, Any]) -> None:
        """Replace the snapshot and the output items (of a response still stored)."""

        def write(conn: Connection) -> None:
            with self._transaction(conn):
                cur = self._x(
                    conn,
                    "UPDATE responses SET status = ?, body = ? WHERE id = ?",
                    (response["status"], _dump(response), response["id"]),
                )
                if cur.rowcount == 0:  # deleted meanwhile: nothing to keep
                    return
                self._x(
                    conn, "DELETE FROM items WHERE response_id = ? AND role = 'output'", (response["id"],)
                )
                self._write_items(conn, response["id"], "output", response.get("output") or [])
                self._notify(conn, "u", response["id"])

        await self._run(write)

    async def append_events(self, response_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Add streamed events of a response (each with its ``sequence_number``)."""
        if not events:
            return

        def write(conn: Connection) -> None:
            now = int(time.time())
            with self._transaction(conn):
                for event in events:
                    self._x(
                        conn,
                        "INSERT INTO events (response_id, sequence, written_at, body) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (response_id, sequence) DO NOTHING",
                        (response_id, int(event["sequence_number"]), now, _dump(event)),
                    )
                self._notify(conn, "u", response_id)

        await self._run(write)

    async def events_after(
        self, response_id: str, owner: str, after: int, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` stored events of ``owner``'s response with a sequence number
        above ``after``, in order."""

        def read(conn: Connection) -> list[dict[str, Any]]:
            rows = self._x(
                conn,
                "SELECT e.body FROM events e JOIN responses r ON r.id = e.response_id "
                "WHERE e.response_id = ? AND r.owner = ? AND e.sequence > ? ORDER BY e.sequence LIMIT ?",
                (response_id, owner, after, limit),
            ).fetchall()
            return [orjson.loads(r[0]) for r in rows]

        return await self._run(read)

    async def last_event(self, response_id: str, owner: str) -> dict[str, Any] | None:
        """The stored event of ``owner``'s response with the highest sequence number."""

        def read(conn: Connection) -> dict[str, Any] | None:
            row = self._x(
                conn,
                "SELECT e.body FROM events e JOIN responses r ON r.id = e.response_id "
                "WHERE e.response_id = ? AND r.owner = ? ORDER BY e.sequence DESC LIMIT 1",
                (response_id, owner),
            ).fetchone()
            return None if row is None else orjson.loads(row[0])

        return await self._run(read)

    async def request_cancel(self, response_id: str, owner: str) -> bool:
        """Ask whichever server runs ``owner``'s unfinished response to cancel it;
        ``False`` when there is no such response."""

        def write(conn: Connection) -> bool:
            with self._transaction(conn):
                cur = self._x(
                    conn,
                    "UPDATE responses SET cancel_requested = 1 "
                    "WHERE id = ? AND owner = ? AND status IN (?, ?)",
                    (response_id, owner, *UNFINISHED),
                )
                asked = bool(cur.rowcount > 0)
                if asked:
                    self._notify(conn, "c", response_id)
            return asked

        return await self._run(write)

    async def stop_requests(self, response_ids: Sequence[str]) -> dict[str, str]:
        """Of ``response_ids`` (responses this server runs), those another server asked to
        stop: ``"cancel"`` (a cancel request) or ``"delete"`` (deleted)."""
        wanted = list(dict.fromkeys(response_ids))
        if not wanted:
            return {}

        def read(conn: Connection) -> dict[str, str]:
            marks = ", ".join("?" * len(wanted))
            rows = self._x(
                conn, f"SELECT id, cancel_requested, status FROM responses WHERE id IN ({marks})", wanted
            ).fetchall()
            found = {str(r[0]): bool(r[1]) and r[2] in UNFINISHED for r in rows}
            return {rid: "cancel" if rid in found else "delete" for rid in wanted if found.get(rid, True)}

        return await self._run(read)

    async def get(self, response_id: str, owner: str) -> StoredResponse | None:
        """The response if ``owner`` may see it."""

        def read(conn: Connection) -> StoredResponse | None:
            row = self._x(
                conn,
                "SELECT body, expires_at FROM responses WHERE id = ? AND owner = ?",
                (response_id, owner),
            ).fetchone()
            if row is None:
                return None
            items = [
                orjson.loads(r[0])
                for r in self._x(
                    conn,
                    "SELECT body FROM items WHERE response_id = ? AND role = 'input' ORDER BY position",
                    (response_id,),
                )
            ]
            return StoredResponse(response_id, owner, orjson.loads(row[0]), items, row[1])

        return await self._run(read)

    async def delete(self, response_id: str, owner: str) -> bool:
        """Delete the response and its items."""

        def write(conn: Connection) -> bool:
            with self._transaction(conn):
                cur = self._x(conn, "DELETE FROM responses WHERE id = ? AND owner = ?", (response_id, owner))
                deleted = bool(cur.rowcount > 0)
                if deleted:  # its runner stops, its followers end
                    self._notify(conn, "d", response_id)
                return deleted

        return await self._run(write)

    async def input_items(
        self, response_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage | None:
        """A page of input items after the item ``after`` (exclusive), in ``order``."""

        def read(conn: Connection) -> ItemPage | None:
            if (
                self._x(
                    conn, "SELECT 1 FROM responses WHERE id = ? AND owner = ?", (response_id, owner)
                ).fetchone()
                is None
            ):
                return None
            desc = order == "desc"
            rows = self._x(
                conn,
                "SELECT position, item_id, body FROM items WHERE response_id = ? AND role = 'input' "
                f"ORDER BY position {'DESC' if desc else 'ASC'}",
                (response_id,),
            ).fetchall()
            start = 0
            if after is not None:
                start = next((i + 1 for i, r in enumerate(rows) if r[1] == after), len(rows))
            page = rows[start : start + limit]
            return ItemPage([orjson.loads(r[2]) for r in page], start + limit < len(rows))

        return await self._run(read)

    async def history(
        self, response_id: str, owner: str, *, max_items: int | None = None
    ) -> list[dict[str, Any]] | None:
        """Input and output items of the chain ending at ``response_id``, oldest first;
        :class:`~.base.HistoryTooLong` when they are more than ``max_items`` (counted first)."""

        def read(conn: Connection) -> list[dict[str, Any]] | None:
            params = (response_id, owner, owner, MAX_CHAIN)
            chain = self._x(conn, _CHAIN + " SELECT id FROM chain ORDER BY depth DESC", params).fetchall()
            if not chain:
                return None
            if max_items is not None:
                counted = _CHAIN + " SELECT COUNT(*) FROM items WHERE response_id IN (SELECT id FROM chain)"
                count = int(self._x(conn, counted, params).fetchone()[0])
                if count > max_items:
                    raise HistoryTooLong(count)
            out: list[dict[str, Any]] = []
            for (rid,) in chain:
                for role in ("input", "output"):
                    out += [
                        orjson.loads(r[0])
                        for r in self._x(
                            conn,
                            "SELECT body FROM items WHERE response_id = ? AND role = ? ORDER BY position",
                            (rid, role),
                        )
                    ]
            return out

        return await self._run(read)

    async def find_items(self, item_ids: Sequence[str], owner: str) -> dict[str, dict[str, Any]]:
        """Items of ``owner``'s responses by id; else of ``owner``'s conversations."""

        def read(conn: Connection) -> dict[str, dict[str, Any]]:
            found: dict[str, dict[str, Any]] = {}
            for item_id in set(item_ids):
                row = self._x(
                    conn,
                    "SELECT i.body FROM items i JOIN responses r ON r.id = i.response_id "
                    "WHERE i.item_id = ? AND r.owner = ? LIMIT 1",
                    (item_id, owner),
                ).fetchone()
                item = (
                    orjson.loads(row[0]) if row is not None else self.conversations.find(conn, item_id, owner)
                )
                if item is not None:
                    found[item_id] = item
            return found

        return await self._run(read)

    async def interrupt_unfinished(self, now: int | None = None) -> int:
        """Mark unfinished responses whose runner is gone as ``failed``: it closed, or was
        last seen more than ``lease_seconds`` before ``now`` (default: the time). Forget
        runners gone that long. Never touches this store's own responses."""
        at = int(time.time()) if now is None else now

        def write(conn: Connection) -> int:
            rows = self._x(
                conn,
                "SELECT id, body FROM responses WHERE status IN (?, ?) AND (runner IS NULL OR "
                "(runner <> ? AND runner NOT IN (SELECT id FROM runners WHERE seen_at >= ?)))",
                (*UNFINISHED, self.runner, at - self.lease_seconds),
            ).fetchall()
            with self._transaction(conn):
                for rid, raw in rows:
                    body = interrupted(orjson.loads(raw))
                    self._x(
                        conn,
                        "UPDATE responses SET status = ?, body = ? WHERE id = ? AND status IN (?, ?)",
                        (body["status"], _dump(body), rid, *UNFINISHED),
                    )
                    self._notify(conn, "u", rid)
                self._x(
                    conn,
                    "DELETE FROM runners WHERE seen_at < ? AND id <> ?",
                    (at - self.lease_seconds, self.runner),
                )
            return len(rows)

        return await self._run(write)

    async def evict(self, now: int) -> int:
        """Delete responses whose ``expires_at`` is before ``now``; and all the stored
        events of a response that ended once its last one is ``events_seconds`` old (its
        replays are then rebuilt from its snapshot). How many responses were deleted."""

        def write(conn: Connection) -> int:
            with self._transaction(conn):
                cur = self._x(
                    conn, "DELETE FROM responses WHERE expires_at IS NOT NULL AND expires_at < ?", (now,)
                )
                self._x(
                    conn,
                    "DELETE FROM events WHERE response_id IN (SELECT e.response_id FROM events e "
                    "JOIN responses r ON r.id = e.response_id WHERE r.status NOT IN (?, ?) "
                    "GROUP BY e.response_id HAVING MAX(e.written_at) < ?)",
                    (*UNFINISHED, now - self.events_seconds),
                )
                return int(cur.rowcount)

        return await self._run(write)


def migrate(conn: Connection) -> None:
    """Add the columns of :data:`COLUMNS_ADDED` that an older database lacks."""
    for table, column, kind in COLUMNS_ADDED:
        names = {d[0] for d in conn.execute(f"SELECT * FROM {table} LIMIT 0").description}
        if column not in names:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def interrupted(body: dict[str, Any]) -> dict[str, Any]:
    """A snapshot of a response the server died in the middle of: ``failed``, with its
    open items marked ``incomplete``."""
    body = dict(body)
    body["status"] = "failed"
    body["error"] = {
        "code": "server_restarted",
        "message": "The server stopped before this response finished.",
    }
    output = []
    for item in body.get("output") or []:
        if item.get("status") == "in_progress":
            item = {**item, "status": "incomplete"}
        output.append(item)
    body["output"] = output
    return body


class _Transaction:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: Connection, begin: str) -> None:
        self.conn = conn
        self.begin = begin

    def __enter__(self) -> None:
        self.conn.execute(self.begin)

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
