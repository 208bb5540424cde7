"""The PostgreSQL store: several server processes share one database.

``PostgresStore("postgresql://user@host/db")`` (psycopg 3, the ``postgres`` extra).
Writes others wait on (new events of a background response, a new snapshot, a cancel
request) send ``NOTIFY openchatml, 'KIND:ID'`` in their transaction; :meth:`listen` keeps
one asynchronous connection on ``LISTEN openchatml`` and hands each notice to the
service, reconnecting after a second when the connection drops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

from .sql import SCHEMA, Connection, SQLStore, migrate

log = logging.getLogger("openchatml.server")

CHANNEL: Final = "openchatml"
RECONNECT_SECONDS: Final = 1.0


class PostgresStore(SQLStore):
    """The store in a PostgreSQL database at ``url``."""

    placeholder = "%s"

    def __init__(self, url: str, *, lease_seconds: int = 30, events_seconds: int = 3600) -> None:
        super().__init__(lease_seconds=lease_seconds, events_seconds=events_seconds)
        self.url = url
        self._listener: asyncio.Task[None] | None = None
        self._listening = False

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

    def _notify(self, conn: Connection, kind: str, response_id: str) -> None:
        self._x(conn, "SELECT pg_notify(?, ?)", (CHANNEL, f"{kind}:{response_id}"))

    @property
    def listening(self) -> bool:
        """The listening connection is up."""
        return self._listening

    async def listen(self, on_notice: Callable[[str, str], None]) -> None:
        """Start handing notices to ``on_notice(kind, response_id)`` until :meth:`close`."""
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen(on_notice))

    async def _listen(self, on_notice: Callable[[str, str], None]) -> None:
        import psycopg

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._listening = True
                    on_notice("*", "")  # notices sent while nobody listened are lost: look again
                    async for note in conn.notifies():
                        kind, _, response_id = note.payload.partition(":")
                        on_notice(kind, response_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database went away: poll meanwhile, then reconnect
                if self._listening:
                    log.warning("store: lost the notice connection (%s); polling until it is back", exc)
            finally:
                self._listening = False
            await asyncio.sleep(RECONNECT_SECONDS)

    async def close(self) -> None:
        """Stop listening, then unregister and close (see :meth:`SQLStore.close`)."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        await super().close()
