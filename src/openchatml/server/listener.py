"""Where ``openchatml serve`` listens: the socket bound before the model loads, the
server that says it serves only once it does, and the server's logging.

:func:`bind` binds ``host:port`` at once, so that a port in use is one clear line
(:class:`ListenError`) before minutes of loading a model; uvicorn listens on that socket
once the app is built (clients meanwhile are refused, not kept waiting).
:class:`AnnouncingServer` is uvicorn's server calling ``announce`` once it accepts
connections. :func:`configure_logging` sends the project's loggers (the access log
included) to standard error at the level ``serve --log-level`` names.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any, Final

import uvicorn

LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_REASONS: Final = {
    errno.EADDRINUSE: "the address is already in use (is another server running on this port?)",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
    errno.EADDRNOTAVAIL: "this machine has no such address",
}


class ListenError(Exception):
    """The server cannot listen where it is told; the message says why."""


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not listening yet). Raises :class:`ListenError`."""
    where = f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ListenError(f"cannot listen on {where}: unknown host ({exc})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = _REASONS.get(exc.errno or 0, exc.strerror or str(exc))
        raise ListenError(f"cannot listen on {where}: {reason}") from None
    sock.set_inheritable(True)
    return sock


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, calling ``announce()`` once it accepts connections."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None]) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving (see uvicorn's); then announce it."""
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self.announce()


def uvicorn_level(level: str) -> str:
    """uvicorn's log level for ``serve --log-level level``: its own lines (start-up banner,
    access lines the app logs itself) only at ``debug``; otherwise its warnings and errors."""
    return level if level in ("debug", "error") else "warning"


def configure_logging(level: str, stream: Any = None) -> None:
    """Send the ``openchatml`` loggers to ``stream`` (standard error) at ``level``
    (``debug``, ``info``, ``warning`` or ``error``), one line a record."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger("openchatml")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    root.propagate = False
