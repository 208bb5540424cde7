"""Server test fixtures: ``serve`` starts live servers (see ``live.py``)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "responses"))

from live import LiveServer, free_port, make_service
from pg import PostgresServer, ensure_binaries

from openchatml.server.auth import KeyChecker
from openchatml.server.limits import Limits
from openchatml.server.settings import ServiceSettings


def _mcp_fixtures() -> Any:
    """The real MCP test server's fixtures (tests/tools/mcp/conftest.py), loaded once under
    a name of their own so that the server tests get its session-wide ``mcp_server``."""
    spec = importlib.util.spec_from_file_location(
        "mcp_fixtures", Path(__file__).parents[1] / "tools" / "mcp" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mcp_fixtures"] = module
    spec.loader.exec_module(module)
    return module


mcp_server = _mcp_fixtures().mcp_server


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
        backend = tmp_path / "store.sqlite3" if store is True else (store or None)
        service = make_service(engine, backend, settings=settings)
        server = LiveServer(service, keys=KeyChecker(keys), limits=limits)
        servers.append(server.__enter__())
        return server

    yield start
    for server in servers:
        server.__exit__()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server, started once per session."""
    bin_dir = ensure_binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (Debian package 'postgresql') and cannot be installed here")
    server = PostgresServer(bin_dir, free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, empty database on the session's PostgreSQL server."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_server.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def tiny_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The in-process transformers engine over a tiny random-weight gpt-oss (built once)."""
    from openchatml.demo_models.tiny_random import ensure_tiny_model
    from openchatml.engines.transformers import TransformersEngine

    folder = ensure_tiny_model(tmp_path_factory.mktemp("home"))
    return TransformersEngine.load(folder, model_id="tiny", device="cpu")
