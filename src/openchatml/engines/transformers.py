"""The in-process engine: any Hugging Face causal LM through ``transformers``, CPU or GPU.

Theory of operation: one scheduler thread owns the model and batches continuously
(:mod:`.scheduler`): concurrent requests share forward passes, each sampling with its own
settings, and join and leave the batch at any step. Each id goes to the consumer's event
loop with ``call_soon_threadsafe`` into an ``asyncio.Queue``, and the consumer yields
whatever has arrived since its last yield, so a slow reader gets bigger chunks. Leaving
the stream (``aclose()``, ``break``, task cancellation) sets the request's cancel flag,
which the scheduler checks before every step.

A grammar (``SamplingParams.grammar``) masks each of its request's steps: the ids its
llguidance matcher does not allow next (:mod:`.guidance`) get minus infinity before
penalties and sampling, and the sampled id advances the matcher.

Log probabilities (``SamplingParams.logprobs``): ``log_softmax`` of the model's raw
logits at each step, before penalties, temperature and top-p — the distribution OpenAI
and vLLM report — so at temperature 0 without penalties the sampled id is the first of
``top``. The scheduler then posts a :class:`TokenLogprob` instead of a bare id.

torch and transformers are imported only when an engine is loaded: they are the
``transformers`` extra.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Final

from ..templates.model_tokenizer import ModelTokenizer
from .base import Chunk, EngineError, ModelInfo, SamplingParams, TokenLogprob
from .batching import DEFAULT_BATCH_SIZE
from .guidance import GrammarError, GrammarMatcher, Guidance
from .scheduler import BatchScheduler, Done, Job
from .tokenizer import HFTokenizer

_INSTALL_HINT: Final = (
    "the transformers engine needs torch and transformers: pip install 'openchatml[transformers]'"
)
_DTYPES: Final = frozenset({"auto", "float32", "float16", "bfloat16"})


class TransformersEngine:
    """An :class:`~openchatml.engines.Engine` running a ``transformers`` model in-process.

    Build one with :meth:`load`. Concurrent calls to :meth:`generate` share forward
    passes: up to ``batch_size`` requests decode together (see the module notes).
    """

    def __init__(
        self,
        model: Any,
        info: ModelInfo,
        tokenizer: ModelTokenizer | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int | None = None,
    ) -> None:
        """Wrap a loaded ``transformers`` causal LM (in eval mode, on its device) and its
        tokenizer, if it has one. ``batch_size``: the most requests decoded together;
        ``batch_tokens``: the most cache columns the batch may hold (rows × the longest
        row, padding included; ``None``: no bound but the batch size) — a request that
        does not fit waits, and one alone always runs. Raises ``ValueError`` for a bound
        under 1."""
        if batch_size < 1 or (batch_tokens is not None and batch_tokens < 1):
            raise ValueError("batch_size and batch_tokens must be at least 1")
        self._model = model
        self._info = info
        self._tokenizer = tokenizer
        self._vocab_size: int = model.get_input_embeddings().num_embeddings
        forward = inspect.signature(model.forward).parameters
        self._keep_kwargs: dict[str, int] = (
            {"logits_to_keep": 1}
            if "logits_to_keep" in forward
            else {"num_logits_to_keep": 1}
            if "num_logits_to_keep" in forward
            else {}
        )
        self._scheduler = BatchScheduler(
            model,
            self._matcher,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            keep_kwargs=self._keep_kwargs,
        )
        self._closed = False

    @classmethod
    def load(
        cls,
        model: str | Path,
        *,
        device: str | None = None,
        dtype: str | None = None,
        model_id: str | None = None,
        tokenizer: ModelTokenizer | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int | None = None,
    ) -> TransformersEngine:
        """Load ``model`` (a local folder or a Hub id) onto ``device`` (default ``cuda`` when
        available, else ``cpu``) in ``dtype`` (``float32``, ``float16``, ``bfloat16``;
        default: the checkpoint's). ``model_id`` names it in :attr:`info` (default: the
        folder's name, or the Hub id). ``tokenizer``: the model's (default: the one in
        ``model``, its turns ended by the model's eos ids; none when it has none).
        ``batch_size`` and ``batch_tokens``: how many requests decode together (see
        :class:`TransformersEngine`). Raises :class:`EngineError` when torch or
        transformers is missing, the model cannot be loaded, or a batch bound is under 1."""
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise EngineError(_INSTALL_HINT) from exc
        hf_auto: Any = transformers.AutoModelForCausalLM
        if dtype is not None and dtype not in _DTYPES:
            raise EngineError(f"unknown dtype {dtype!r}: use one of {', '.join(sorted(_DTYPES))}")
        torch_dtype: Any = "auto" if dtype in (None, "auto") else getattr(torch, str(dtype))
        target = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            hf = hf_auto.from_pretrained(str(model), dtype=torch_dtype)
            hf = hf.to(target).eval()
        except Exception as exc:
            raise EngineError(f"cannot load model {str(model)!r}: {type(exc).__name__}: {exc}") from exc
        path = Path(model)
        name = model_id or (path.name if path.exists() else str(model))
        context = getattr(hf.config.get_text_config(), "max_position_embeddings", None)
        info = ModelInfo(
            id=name,
            context_length=context if isinstance(context, int) else None,
            engine="transformers",
            device=str(hf.device),
        )
        if tokenizer is None:
            try:
                loaded = transformers.AutoTokenizer.from_pretrained(str(model))
            except Exception:  # a folder without a tokenizer still serves token ids (Harmony models)
                loaded = None
            if loaded is not None:
                tokenizer = HFTokenizer(loaded, stop_token_ids=_eos_ids(hf))
        try:
            return cls(hf, info, tokenizer, batch_size=batch_size, batch_tokens=batch_tokens)
        except ValueError as exc:
            raise EngineError(str(exc)) from None

    @property
    def info(self) -> ModelInfo:
        """The model this engine serves."""
        return self._info

    @property
    def tokenizer(self) -> ModelTokenizer | None:
        """The model's tokenizer (``None`` when its folder has none)."""
        return self._tokenizer

    @property
    def enforces_grammar(self) -> bool:
        """True: ``SamplingParams.grammar`` masks every sampling step."""
        return True

    @property
    def busy(self) -> bool:
        """Whether a generation is running or waiting to."""
        return self._scheduler.busy

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Stream the ids sampled after ``prompt`` in chunks, ending after a stop token
        (yielded) or ``params.max_tokens`` ids (default: up to the context window); with
        ``params.logprobs`` each chunk carries the ids' raw-distribution log probabilities.
        Raises :class:`EngineError` for an empty or oversized prompt, an id outside the
        vocabulary, a negative ``logprobs``, a closed engine, or a failure in the model."""
        if self._closed:
            raise EngineError("the engine is closed")
        ids = [int(t) for t in prompt]
        max_new = self._budget(ids, params)
        if max_new == 0:
            return
        job = Job(ids, params, max_new, asyncio.get_running_loop())
        self._scheduler.submit(job)
        try:
            scored = params.logprobs is not None
            while True:
                item = await job.queue.get()
                sampled: list[int] = []
                scores: list[TokenLogprob] = []
                while not isinstance(item, Done):
                    if isinstance(item, TokenLogprob):
                        sampled.append(item.id)
                        scores.append(item)
                    else:
                        sampled.append(item)
                    try:
                        item = job.queue.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                if sampled:
                    yield Chunk(tuple(sampled), tuple(scores) if scored else None)
                if isinstance(item, Done):
                    if item.error is not None:
                        if isinstance(item.error, EngineError):
                            raise item.error
                        raise EngineError(
                            f"generation failed: {type(item.error).__name__}: {item.error}"
                        ) from item.error
                    return
        finally:
            job.cancel.set()
            self._scheduler.poke()

    async def aclose(self) -> None:
        """Cancel every generation, stop the scheduler thread and drop the model."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._scheduler.close)
        device = str(self._info.device)
        self._model = None
        if device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()

    def _budget(self, ids: list[int], params: SamplingParams) -> int:
        """How many ids to sample at most; raises :class:`EngineError` for a bad request."""
        if not ids:
            raise EngineError("the prompt is empty")
        if min(ids) < 0 or max(ids) >= self._vocab_size:
            bad = next(t for t in ids if not 0 <= t < self._vocab_size)
            raise EngineError(f"token id {bad} is outside the model's vocabulary of {self._vocab_size}")
        if params.max_tokens is not None and params.max_tokens < 0:
            raise EngineError(f"max_tokens must not be negative, got {params.max_tokens}")
        if params.logprobs is not None and params.logprobs < 0:
            raise EngineError(f"logprobs must not be negative, got {params.logprobs}")
        context = self._info.context_length
        room = sys.maxsize if context is None else context - len(ids)
        if room <= 0:
            raise EngineError(f"the prompt ({len(ids)} tokens) fills the context window ({context} tokens)")
        return room if params.max_tokens is None else min(params.max_tokens, room)

    def _matcher(self, lark: str) -> GrammarMatcher:
        """A matcher of ``lark`` over the model's vocabulary (o200k_harmony without a tokenizer)."""
        try:
            return Guidance.of(self._tokenizer).matcher(lark)
        except GrammarError as exc:
            raise EngineError(f"the request's grammar does not compile: {exc}") from exc


def _eos_ids(model: Any) -> list[int] | None:
    """The end-of-sequence ids of a ``transformers`` model's generation config, else of its
    config: where an assistant turn ends (``None`` when neither names one)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = getattr(getattr(model, "config", None), "eos_token_id", None)
    if eos is None:
        return None
    return [int(i) for i in (eos if isinstance(eos, list) else [eos])]
