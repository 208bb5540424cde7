"""Bearer keys, per-key rate limits, and a budget of failed authentications per address.

With no keys configured every caller is the same anonymous owner. With keys, a request
must carry ``Authorization: Bearer KEY`` with one of them (401 otherwise); its responses
are stored under that key and invisible to the others.

Every limit is a token bucket: ``per_minute`` tokens, refilled continuously, bursts of up
to that many; an empty bucket answers 429 with ``Retry-After`` (the seconds until a token
is back). :class:`RateLimiter` takes one token per request of a key. :class:`AuthGuard`
takes one per failed authentication from a client address, and while that address has
none left, refuses every request from it that needs a key — valid key or not, as GitHub's
API does, so that a flood of guesses learns nothing — until a token is back. A client
that mistypes its key once spends one failure of a budget no legitimate client exhausts.
Buckets are kept for at most :data:`MAX_TRACKED` keys or addresses (the least recently
used are forgotten first).
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import time
from collections.abc import Sequence
from typing import Final

from ..responses.errors import AuthError, RateLimitError

MAX_TRACKED: Final = 65536
"""The most keys (or addresses) a limiter keeps a bucket for."""


class KeyChecker:
    """Checks the ``Authorization`` header against the configured keys."""

    def __init__(self, keys: Sequence[str] = ()) -> None:
        self.keys = tuple(k for k in keys if k)

    @property
    def enabled(self) -> bool:
        """Whether keys are required."""
        return bool(self.keys)

    def check(self, authorization: str | None) -> str | None:
        """The caller's key (``None`` when keys are off); raises :class:`AuthError`."""
        if not self.keys:
            return None
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError(
                "Missing bearer authentication in header 'Authorization'.", code="missing_api_key"
            )
        given = authorization[7:].strip()
        for key in self.keys:
            if hmac.compare_digest(given.encode(), key.encode()):
                return key
        raise AuthError("Incorrect API key provided.")


class Buckets:
    """Token buckets by name: ``per_minute`` tokens each, refilled continuously."""

    def __init__(self, per_minute: int, *, max_tracked: int = MAX_TRACKED) -> None:
        self.per_minute = per_minute
        self.max_tracked = max_tracked
        self._buckets: dict[str, tuple[float, float]] = {}

    def _level(self, name: str, now: float) -> float:
        tokens, last = self._buckets.get(name, (float(self.per_minute), now))
        return min(float(self.per_minute), tokens + (now - last) * self.per_minute / 60.0)

    def wait(self, name: str, now: float | None = None) -> int:
        """Seconds until ``name``'s bucket holds a token (0: it holds one now)."""
        now = time.monotonic() if now is None else now
        tokens = self._level(name, now)
        return 0 if tokens >= 1.0 else math.ceil((1.0 - tokens) * 60.0 / self.per_minute)

    def take(self, name: str, now: float | None = None) -> None:
        """Take a token from ``name``'s bucket (none left: it stays empty)."""
        now = time.monotonic() if now is None else now
        tokens = max(0.0, self._level(name, now) - 1.0)
        self._buckets.pop(name, None)  # re-inserted last: the order is of last use
        self._buckets[name] = (tokens, now)
        while len(self._buckets) > self.max_tracked:
            del self._buckets[next(iter(self._buckets))]

    def __len__(self) -> int:
        return len(self._buckets)


class RateLimiter:
    """Requests per minute per owner (``None`` or ``0``: no limit)."""

    def __init__(self, per_minute: int | None) -> None:
        self.per_minute = per_minute
        self._buckets = Buckets(per_minute) if per_minute else None

    def check(self, owner: str, now: float | None = None) -> None:
        """Take one request from ``owner``'s bucket; raises :class:`RateLimitError` (with
        ``retry_after`` seconds) when it is empty."""
        if self._buckets is None:
            return
        wait = self._buckets.wait(owner, now)
        if wait:
            raise RateLimitError(
                f"Rate limit reached: {self.per_minute} requests per minute. Try again in {wait} s.",
                retry_after=wait,
            )
        self._buckets.take(owner, now)


class AuthGuard:
    """:class:`KeyChecker` with failed authentications limited per client address:
    ``failures_per_minute`` (``None`` or ``0``: no limit)."""

    def __init__(self, keys: KeyChecker, failures_per_minute: int | None) -> None:
        self.keys = keys
        self.failures_per_minute = failures_per_minute
        self._failures = Buckets(failures_per_minute) if failures_per_minute else None

    def check(self, authorization: str | None, address: str, now: float | None = None) -> str | None:
        """The caller's key (``None`` when keys are off). Raises :class:`AuthError` (401)
        for a missing or wrong key, counting a failure of ``address``; raises
        :class:`RateLimitError` (429, ``too_many_auth_failures``) while ``address`` has
        no failures left, whatever the key."""
        if not self.keys.enabled:
            return None
        if self._failures is not None:
            wait = self._failures.wait(address, now)
            if wait:
                raise RateLimitError(
                    f"Too many failed authentications from your address ({self.failures_per_minute} "
                    f"a minute at most). Try again in {wait} s.",
                    code="too_many_auth_failures",
                    retry_after=wait,
                )
        try:
            return self.keys.check(authorization)
        except AuthError:
            if self._failures is not None:
                self._failures.take(address, now)
            raise


def client_address(host: str | None) -> str:
    """The address a client is limited by: its IPv4 address, the /64 network of its IPv6
    address (one host's share of a network), ``host`` as it is when it is neither, and
    ``"unknown"`` when the server was not told."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
