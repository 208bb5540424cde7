"""A real MCP server (mcp_test_server.py) in a subprocess on loopback, for the session."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TOKEN = "s3cret-token-7f1c"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RunningServer:
    """Where the test server listens, and its bearer token."""

    http_port: int
    sse_port: int
    token: str

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.sse_port}/events"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/stats", timeout=5) as answer:
            stats: dict[str, int] = json.load(answer)
        return stats


@pytest.fixture(scope="session")
def mcp_server() -> Iterator[RunningServer]:
    running = RunningServer(free_port(), free_port(), TOKEN)
    script = Path(__file__).with_name("mcp_test_server.py")
    process = subprocess.Popen(
        [sys.executable, str(script), str(running.http_port), str(running.sse_port), TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                running.stats()
                urllib.request.urlopen(f"http://127.0.0.1:{running.sse_port}/stats", timeout=5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    _, err = process.communicate(timeout=5)
                    pytest.fail(f"the MCP test server did not start: {err.decode()[-2000:]}")
                time.sleep(0.05)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
