"""Log probabilities as the wire carries them: for each sampled id its token's text, its
log probability (floored at :data:`LOWEST_LOGPROB`, as JSON has no ``-inf``) and its
bytes, with its ``top`` most likely alternatives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from ..engines.base import TokenLogprob
from .wire.content import LogProb, TopLogProb

LOWEST_LOGPROB: Final = -9999.0
"""The least log probability written."""

TokenBytes = Callable[[int], bytes]
"""The bytes of a token id."""


def table_bytes(table: Sequence[bytes]) -> TokenBytes:
    """The bytes of a token id by ``table`` (an id outside it has none)."""
    return lambda token: table[token] if 0 <= token < len(table) else b""


def wire_logprobs(token_bytes: TokenBytes, scores: Iterable[TokenLogprob], top: int) -> tuple[LogProb, ...]:
    """``LogProb`` s for ``scores``, each with (at most) ``top`` alternatives."""
    return tuple(
        LogProb(
            *_token(token_bytes, score.id, score.logprob),
            tuple(TopLogProb(*_token(token_bytes, t, lp)) for t, lp in score.top[:top]),
        )
        for score in scores
    )


def _token(token_bytes: TokenBytes, token: int, logprob: float) -> tuple[str, float, tuple[int, ...]]:
    """``(token, logprob, bytes)`` of one id."""
    raw = token_bytes(token)
    floored = logprob if logprob >= LOWEST_LOGPROB else LOWEST_LOGPROB  # NaN too
    return raw.decode("utf-8", "replace"), floored, tuple(raw)
