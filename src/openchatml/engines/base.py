"""The engine protocol: prompt token ids and sampling settings in, token ids out.

An :class:`Engine` knows nothing of messages, channels or HTTP; it carries the model's
tokenizer (``tokenizer``, built once and given to it), through which the layers above
render prompts and read answers of models that do not speak Harmony. ``generate`` returns an
async iterator of :class:`Chunk` objects, the ids sampled since the last one; the stream
ends after a stop token (which is yielded, so the parser sees ``<|call|>`` or
``<|return|>``) or after ``max_tokens`` ids. Closing the iterator (``aclose()``, or
leaving an ``async for`` early) cancels generation: the engine stops spending compute on
it promptly.

Log probabilities: with ``SamplingParams.logprobs`` set to ``k`` (0 or more), each chunk's
``logprobs`` holds one :class:`TokenLogprob` per id — the sampled id's log probability
under the model's raw distribution (before temperature, penalties and top-p, as OpenAI
and vLLM report it) and the ``k`` most likely ids with theirs. With ``logprobs`` ``None``
(the default) chunks carry ``logprobs=None`` and engines compute nothing extra. Ids and
floats only: turning an id into text is the caller's business.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, overload, runtime_checkable

from ..templates.grammar import ToolGrammar
from ..templates.model_tokenizer import ModelTokenizer


class EngineError(Exception):
    """The engine failed on a valid request (model or upstream failure): ``model_error``."""

    code = "engine_error"


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How to sample. ``max_tokens`` ``None``: up to the context window.

    ``stop_token_ids`` end generation (the stop token itself is yielded). ``seed`` makes
    sampling repeatable where the engine supports it; ``temperature`` 0 is greedy.
    ``logprobs``: ``None`` for none; ``k`` >= 0 for each sampled id's log probability and
    its ``k`` most likely alternatives (see :class:`TokenLogprob`). ``grammar``: the
    grammar every sampled id must keep the output within (tool choice, call arguments,
    the answer's JSON Schema); ``None``: free sampling. Engines that cannot enforce it say
    so (:attr:`Engine.enforces_grammar`).
    """

    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    logprobs: int | None = None
    grammar: ToolGrammar | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One sampled id and its log probability (natural log, <= 0) under the model's raw
    distribution; ``top``: the most likely ids at that step as ``(id, logprob)``, most
    likely first (it may or may not hold ``id``)."""

    id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk(Sequence[int]):
    """The ids sampled since the last chunk, with their log probabilities when asked for.

    A chunk reads as the sequence of its ids (``len``, indexing, iteration), so code that
    wants only ids can ignore ``logprobs``. ``logprobs`` is ``None`` unless
    ``SamplingParams.logprobs`` was set; then it holds one record per id, in order.
    Raises ``ValueError`` when the two lengths differ.
    """

    ids: tuple[int, ...]
    logprobs: tuple[TokenLogprob, ...] | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.ids):
            raise ValueError(f"{len(self.logprobs)} logprob records for {len(self.ids)} ids")

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...

    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        return self.ids[index]

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)


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

    @property
    def tokenizer(self) -> ModelTokenizer | None:
        """The model's tokenizer; ``None`` where the model speaks Harmony over
        o200k_harmony, the core's :class:`~openchatml.core.encoding.Encoding`."""
        ...

    @property
    def enforces_grammar(self) -> bool:
        """Whether ``SamplingParams.grammar`` holds the sampler (else it is ignored, and the
        layers above check the output after parsing)."""
        ...

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Stream the ids sampled after ``prompt``, in chunks (with their log probabilities
        when ``params.logprobs`` is set), ending after a stop token or ``params.max_tokens``
        ids. Raises :class:`EngineError` when the engine fails."""
        ...

    async def aclose(self) -> None:
        """Release the engine (threads, connections, memory)."""
        ...
