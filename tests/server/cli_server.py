"""``openchatml serve`` run as a separate process, the way a user starts it.

``CliServer(args, home)`` starts the command with ``OPENCHATML_HOME=home`` on a free
loopback port, waits for ``GET /health`` and stops the process at exit; its output goes
to ``home/serve.log``, whose tail is in the error when it does not come up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
from live import Clients, free_port


class CliServer(Clients):
    """A running ``openchatml serve ARGS --port P``: its URL, clients and log; ``engine``
    and ``upstream`` (the upstream engine's URL) are labels for the tests."""

    def __init__(
        self,
        args: Sequence[str],
        home: Path,
        *,
        timeout: float = 120.0,
        engine: str = "",
        upstream: str | None = None,
    ) -> None:
        self.args = list(args)
        self.engine = engine
        self.upstream = upstream
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.home = home
        self.log_path = home / "serve.log"
        home.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-c", "from openchatml.cli import main; main()", "serve", *args]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(home)]
        env = {**os.environ, "OPENCHATML_HOME": str(home)}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"openchatml serve exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"openchatml serve not healthy after {timeout:.0f} s:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    break
            time.sleep(0.2)

    def log(self) -> str:
        """The server's output so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Stop the server with ``sig`` (default SIGINT, a user's Ctrl-C), SIGKILL after 20 s."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
