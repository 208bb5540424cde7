"""Sealed payloads: reasoning and compaction content handed to clients, opaque to them.

AES-256-GCM with a server key. A sealed string is ``ocm1.`` followed by the URL-safe
base64 of a 12-byte random nonce and the ciphertext; the payload ``kind`` is bound as
associated data, so a reasoning payload cannot be replayed as a compaction. A string
that was tampered with, sealed under another key or of another kind does not open:
:class:`~.errors.RequestError` (``invalid_encrypted_content``).
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any, Final

import orjson

from .errors import RequestError

_PREFIX: Final = "ocm1."
KEY_BYTES: Final = 32


def new_key() -> bytes:
    """A fresh random 256-bit key."""
    return os.urandom(KEY_BYTES)


class Sealer:
    """Seals and opens JSON payloads under one key (``key``: 32 bytes)."""

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if len(key) != KEY_BYTES:
            raise ValueError(f"the sealing key must be {KEY_BYTES} bytes, got {len(key)}")
        self._aead = AESGCM(key)

    def seal(self, kind: str, payload: Any) -> str:
        """``payload`` (JSON-serialisable) sealed as an opaque string of ``kind``."""
        nonce = os.urandom(12)
        blob = self._aead.encrypt(nonce, orjson.dumps(payload), kind.encode())
        return _PREFIX + base64.urlsafe_b64encode(nonce + blob).decode().rstrip("=")

    def open(self, kind: str, sealed: str, *, param: str | None = None) -> Any:
        """The payload of a string from :meth:`seal`; raises :class:`RequestError`."""
        from cryptography.exceptions import InvalidTag

        def bad(reason: str) -> RequestError:
            return RequestError(
                f"The encrypted content {'at ' + repr(param) + ' ' if param else ''}"
                f"could not be verified: {reason}.",
                param=param,
                code="invalid_encrypted_content",
            )

        if not sealed.startswith(_PREFIX):
            raise bad("it was not produced by this server")
        body = sealed[len(_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise bad("it is not valid base64") from None
        if len(raw) < 12 + 16:
            raise bad("it is too short")
        try:
            plain = self._aead.decrypt(raw[:12], raw[12:], kind.encode())
        except InvalidTag:
            raise bad("it was altered, sealed under another key, or is of another kind") from None
        return orjson.loads(plain)
