"""Who calls: the owner a request's API key stands for, each request counted against
that key's rate limit (see :mod:`.auth` for the keys and the buckets)."""

from __future__ import annotations

import hashlib

from starlette.requests import HTTPConnection

from .auth import AuthGuard, KeyChecker, RateLimiter, client_address
from .limits import Limits


def owner_of(api_key: str | None) -> str:
    """The owner a key's responses are stored under ("" when the server has no keys)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""


class Callers:
    """The keys a server takes (``keys``), with failed authentications and requests per
    key limited as ``limits`` says."""

    def __init__(self, keys: KeyChecker, limits: Limits) -> None:
        self.guard = AuthGuard(keys, limits.auth_failures_per_minute)
        self.limiter = RateLimiter(limits.requests_per_minute)

    def owner(self, connection: HTTPConnection) -> str:
        """The owner of the request's key, one request counted against its rate limit.
        Raises 401 for a missing or wrong key, 429 over the key's rate limit or while the
        client's address has failed authentication too often."""
        host = connection.client.host if connection.client is not None else None
        key = self.guard.check(connection.headers.get("authorization"), client_address(host))
        owner = owner_of(key)
        self.limiter.check(owner)
        return owner

    def count(self, owner: str) -> None:
        """One more request of ``owner`` (a message on its WebSocket); 429 over its rate limit."""
        self.limiter.check(owner)
