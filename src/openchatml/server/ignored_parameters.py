"""Parameters a request gave that changed nothing: named on its answer, logged once.

A create body's top-level fields this server does not know (Codex's ``client_metadata``)
and those it accepts but that change nothing here (``moderation`` …) are set aside
(:attr:`~..responses.request.ResponseRequest.ignored`). :func:`report_ignored` names them
in the answer's ``OpenChatML-Ignored-Parameters`` header (JSON and SSE alike), and logs
each name the first time this process meets it (:class:`IgnoredLog`). A WebSocket
connection has written its headers already: it is sent an
``openchatml:ignored_parameters`` event before the response's own (:func:`ignored_event`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Final
from urllib.parse import quote

from ..responses.wire.request import IGNORED_FIELDS
from .answer_headers import Scope, note_header

IGNORED_HEADER: Final = "OpenChatML-Ignored-Parameters"
EVENT_TYPE: Final = "openchatml:ignored_parameters"
MAX_LOGGED: Final = 256
"""Distinct names logged (then one line says the rest go unlogged)."""
_SAFE: Final = "_.:-[]"
"""Characters of a name written as they are in the header (others are %-escaped)."""
UNKNOWN_REASON: Final = "not a parameter this server knows"

log = logging.getLogger("openchatml.server")


def header_value(names: Iterable[str]) -> str:
    """The header's value: ``names`` comma-separated, each %-escaped outside letters,
    digits and ``_.:-[]`` (an ASCII value whatever a client named)."""
    return ", ".join(quote(name.encode("utf-8", "surrogatepass"), safe=_SAFE) for name in names)


class IgnoredLog:
    """The names logged so far: each is logged once, at INFO, with why it is ignored; at
    most :data:`MAX_LOGGED` of them (then one line more)."""

    def __init__(self, limit: int = MAX_LOGGED) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.full = False
        self.lock = threading.Lock()

    def note(self, names: Iterable[str]) -> None:
        """Log each of ``names`` not logged before."""
        for name in names:
            with self.lock:
                if name in self.seen or self.full:
                    continue
                if len(self.seen) >= self.limit:
                    self.full = True
                    log.info("ignoring more request parameters; %d names logged, no more will be", self.limit)
                    continue
                self.seen.add(name)
            reason = IGNORED_FIELDS.get(name, UNKNOWN_REASON)
            log.info("ignoring request parameter %r: %s (logged once)", name, reason)


IGNORED_LOG: Final = IgnoredLog()
"""This process's log of ignored names."""


def report_ignored(scope: Scope, names: Sequence[str]) -> None:
    """Name ``names`` (if any) in the header of the answer to the request of ``scope``, and
    log those not logged before."""
    if names:
        note_header(scope, IGNORED_HEADER, header_value(names))
        IGNORED_LOG.note(names)


def ignored_event(names: Sequence[str]) -> dict[str, Any]:
    """The WebSocket event naming ``names`` (logged as :func:`report_ignored` does):
    ``{"type": "openchatml:ignored_parameters", "parameters": [...]}``."""
    IGNORED_LOG.note(names)
    return {"type": EVENT_TYPE, "parameters": list(names)}
