"""A throwaway PostgreSQL server for the tests (Debian's ``postgresql`` package).

``PostgresServer`` runs ``initdb`` in a temporary folder and starts ``postgres`` on a
free loopback port with trust authentication; as root it runs them as the ``postgres``
user. When the binaries are missing and this is root on Debian, the package is
installed first; otherwise the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def ensure_binaries() -> Path | None:
    """The folder of ``initdb`` and ``postgres``, installing Debian's package as root if need be."""
    found = _bin_dir()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "postgresql"],
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
        )
        found = _bin_dir()
    return found


class PostgresServer:
    """``initdb`` + ``postgres`` on ``port``; ``url`` names its ``postgres`` database."""

    def __init__(self, bin_dir: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.port = port
        self.root = Path(tempfile.mkdtemp(prefix="openchatml-pg-"))
        self.data = self.root / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self._process: subprocess.Popen[bytes] | None = None

    def _as_owner(self, argv: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return argv
        return ["runuser", "-u", "postgres", "--", *argv]

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        subprocess.run(
            self._as_owner(
                [str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        log = open(self.root / "postgres.log", "wb")  # noqa: SIM115 - lives as long as the server
        self._process = subprocess.Popen(
            self._as_owner(
                [
                    str(self.bin_dir / "postgres"),
                    "-D",
                    str(self.data),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-k",
                    str(self.root),
                    "-c",
                    "fsync=off",
                ]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    tail = (self.root / "postgres.log").read_text(errors="replace")[-2000:]
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start:\n{tail}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
        shutil.rmtree(self.root, ignore_errors=True)
