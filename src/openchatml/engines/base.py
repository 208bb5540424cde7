"""The engine protocol: prompt token ids and sampling settings in, token ids out.

An :class:`Engine` knows nothing of messages, channels or HTTP. ``generate`` returns an
async iterator of token-id chunks; the stream ends after a stop token (which is yielded,
so the parser sees ``<|call|>`` or ``<|return|>``) or after ``max_tokens`` ids. Closing
the iterator (``aclose()``, or leaving an ``async for`` early) cancels generation: the
engine stops spending compute on it promptly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class EngineError(Exception):
    """The engine failed on a valid request (model or upstream failure): ``model_error``."""

    code = "engine_error"


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How to sample. ``max_tokens`` ``None``: up to the context window.

    ``stop_token_ids`` end generation (the stop token itself is yielded). ``seed`` makes
    sampling repeatable where the engine supports it; ``temperature`` 0 is greedy.
    """

    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What an engine serves: its model id, context window and where it runs."""

    id: str
    context_length: int | None = None
    owned_by: str = "openchatml"
    engine: str = ""
    device: str = ""


@runtime_checkable
class Engine(Protocol):
    """Token ids in, token ids out; cancellable."""

    @property
    def info(self) -> ModelInfo:
        """The model this engine serves."""
        ...

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[list[int]]:
        """Stream the ids sampled after ``prompt``, in chunks, ending after a stop token or
        ``params.max_tokens`` ids. Raises :class:`EngineError` when the engine fails."""
        ...

    async def aclose(self) -> None:
        """Release the engine (threads, connections, memory)."""
        ...
