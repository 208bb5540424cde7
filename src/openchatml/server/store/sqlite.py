"""The SQLite store (WAL): one file in the data directory, the default."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .sql import SCHEMA, Connection, SQLStore, migrate


class SQLiteStore(SQLStore):
    """The store in one SQLite file (``path``; ``":memory:"`` for a throwaway one)."""

    begin = "BEGIN IMMEDIATE"

    def __init__(self, path: str | Path, *, lease_seconds: int = 30, events_seconds: int = 3600) -> None:
        super().__init__(lease_seconds=lease_seconds, events_seconds=events_seconds)
        self.path = str(path)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connect(self) -> Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("BEGIN IMMEDIATE")  # one process creates or migrates the tables
        try:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            migrate(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return conn
