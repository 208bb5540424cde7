"""Server test fixtures: ``serve`` starts live servers (see ``live.py``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "responses"))

from live import LiveServer, make_service

from openchatml.server.app import Limits
from openchatml.server.auth import KeyChecker
from openchatml.server.service import ServiceSettings


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """``serve(engine, keys=…, limits=…)``: a started live server with a SQLite store."""
    servers: list[LiveServer] = []

    def start(
        engine: Any,
        *,
        keys: Sequence[str] = (),
        limits: Limits | None = None,
        store: Path | bool | None = True,
        settings: ServiceSettings | None = None,
    ) -> LiveServer:
        path = tmp_path / "store.sqlite3" if store is True else (store or None)
        service = make_service(engine, path if isinstance(path, Path) else None, settings=settings)
        server = LiveServer(service, keys=KeyChecker(keys), limits=limits)
        servers.append(server.__enter__())
        return server

    yield start
    for server in servers:
        server.__exit__()
