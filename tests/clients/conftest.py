"""Client-program fixtures: Codex and the JavaScript SDK installed once per session
(``codex_harness``), and live servers whose requests are recorded (``recorder``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "server"))

from live import LiveServer, ScriptedEngine, make_service
from recorder import RecordedRequest, RecordedServer, RequestRecorder

import codex_harness
from codex_harness import NodeClients


@pytest.fixture(scope="session")
def node_clients() -> NodeClients:
    """Codex and the JavaScript SDK from npm, installed once (cached under ``$OPENCHATML_HOME``)."""
    if codex_harness.MODE == "0":
        pytest.skip("client-program tests are off (OPENCHATML_TEST_CLIENTS=0)")
    try:
        clients = codex_harness.ensure_node_clients()
    except codex_harness.NpmMissingError as exc:
        if codex_harness.MODE == "1":
            raise
        pytest.skip(f"{exc} (OPENCHATML_TEST_CLIENTS=1 makes this an error)")
    state = f"installed in {clients.install_seconds:.1f} s" if clients.install_seconds else "cached"
    print(
        f"\nCodex {codex_harness.CODEX_VERSION}, openai (JS) {codex_harness.OPENAI_JS_VERSION}, "
        f"@openai/agents {codex_harness.AGENTS_JS_VERSION}: {state}"
    )
    return clients


@pytest.fixture
def recorded_server(tmp_path: Path) -> Iterator[Callable[[ScriptedEngine], RecordedServer]]:
    """``recorded_server(engine)``: a started live server (SQLite store) over ``engine``
    that records each request."""
    servers: list[LiveServer] = []

    def start(engine: ScriptedEngine) -> RecordedServer:
        requests: list[RecordedRequest] = []
        server = LiveServer(make_service(engine, tmp_path / f"store-{len(servers)}.sqlite3"))
        server.app.add_middleware(RequestRecorder, log=requests)
        servers.append(server.__enter__())
        return RecordedServer(server, engine, requests)

    yield start
    for server in servers:
        server.__exit__()
