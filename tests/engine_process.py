"""What the tests' real-engine harnesses (vLLM, llama.cpp) share: where their caches
live, a file lock for builds and installs racing across pytest processes, a free port,
the tail of a log, and stopping a server with its whole process group."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path


def openchatml_home() -> Path:
    """``$OPENCHATML_HOME``, or ``~/.cache/openchatml``."""
    env = os.environ.get("OPENCHATML_HOME")
    return Path(env) if env else Path.home() / ".cache" / "openchatml"


def tail(path: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of the file at ``path`` (``(no log)`` if unreadable)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file at ``path`` (created if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def kill_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group of ``process``, SIGKILL after ``grace`` seconds, reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
