"""Bearer keys and per-key rate limits.

With no keys configured every caller is the same anonymous owner. With keys, a request
must carry ``Authorization: Bearer KEY`` with one of them (401 otherwise); its responses
are stored under that key and invisible to the others. ``RateLimiter`` is a token
bucket per key: ``per_minute`` requests, refilled continuously (429 with
``Retry-After`` when empty).
"""

from __future__ import annotations

import hmac
import math
import time
from collections.abc import Sequence

from ..responses.errors import AuthError, RateLimitError


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


class RateLimiter:
    """A token bucket per owner: ``per_minute`` requests a minute, bursts up to that many."""

    def __init__(self, per_minute: int | None) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}

    def check(self, owner: str, now: float | None = None) -> None:
        """Take one request from ``owner``'s bucket; raises :class:`RateLimitError` (with
        ``retry_after`` seconds) when it is empty."""
        if not self.per_minute:
            return
        now = time.monotonic() if now is None else now
        rate = self.per_minute / 60.0
        tokens, last = self._buckets.get(owner, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - last) * rate)
        if tokens < 1.0:
            self._buckets[owner] = (tokens, now)
            wait = math.ceil((1.0 - tokens) / rate)
            error = RateLimitError(
                f"Rate limit reached: {self.per_minute} requests per minute. Try again in {wait} s."
            )
            error.retry_after = wait
            raise error
        self._buckets[owner] = (tokens - 1.0, now)
