"""The PostgreSQL store: several server processes share one database.

``PostgresStore("postgresql://user@host/db")`` (psycopg 3, the ``postgres`` extra).
"""

from __future__ import annotations

from typing import Any

from .sql import SCHEMA, Connection, SQLStore, migrate


class PostgresStore(SQLStore):
    """The store in a PostgreSQL database at ``url``."""

    placeholder = "%s"

    def __init__(self, url: str, *, lease_seconds: int = 30) -> None:
        super().__init__(lease_seconds=lease_seconds)
        self.url = url

    def __repr__(self) -> str:
        head, _, tail = self.url.rpartition("@")
        return f"PostgresStore({'postgresql://…@' + tail if head else self.url!r})"

    def _connect(self) -> Connection:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - install error
            raise RuntimeError("PostgreSQL needs psycopg: pip install 'openchatml[postgres]'") from exc
        conn: Any = psycopg.connect(self.url, autocommit=True)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7316852)")  # one process creates the tables
            conn.execute(SCHEMA.replace("INTEGER", "BIGINT"))
            migrate(conn)
        return conn  # type: ignore[no-any-return]
