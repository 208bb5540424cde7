"""The in-process engine: any Hugging Face causal LM through ``transformers``, CPU or GPU.

Theory of operation: one worker thread runs one generation at a time (others queue) —
a prefill over the prompt, then one forward pass per sampled id on the KV cache. Each id
goes to the consumer's event loop with ``call_soon_threadsafe`` into an ``asyncio.Queue``,
and the consumer yields whatever has arrived since its last yield, so a slow reader gets
bigger chunks. Leaving the stream (``aclose()``, ``break``, task cancellation) sets the
job's cancel flag, which the worker checks before every forward pass.

A grammar (``SamplingParams.grammar``) masks each step: the ids its llguidance matcher does
not allow next (:mod:`.guidance`) get minus infinity before penalties and sampling, and the
sampled id advances the matcher.

Log probabilities (``SamplingParams.logprobs``): ``log_softmax`` of the model's raw
logits at each step, before penalties, temperature and top-p — the distribution OpenAI
and vLLM report — so at temperature 0 without penalties the sampled id is the first of
``top``. The worker then posts a :class:`TokenLogprob` instead of a bare id.

torch and transformers are imported only when an engine is loaded: they are the
``transformers`` extra.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..templates.model_tokenizer import ModelTokenizer
from .base import Chunk, EngineError, ModelInfo, SamplingParams, TokenLogprob
from .guidance import GrammarError, GrammarMatcher, Guidance, mask_stops
from .tokenizer import HFTokenizer

_INSTALL_HINT: Final = (
    "the transformers engine needs torch and transformers: pip install 'openchatml[transformers]'"
)
_DTYPES: Final = frozenset({"auto", "float32", "float16", "bfloat16"})


@dataclass(frozen=True, slots=True)
class _Done:
    """The end of a job's stream; ``error`` when it failed."""

    error: BaseException | None = None


@dataclass(slots=True, eq=False)
class _Job:
    prompt: list[int]
    params: SamplingParams
    max_new: int
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[int | TokenLogprob | _Done] = field(default_factory=asyncio.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)

    def post(self, item: int | TokenLogprob | _Done) -> None:
        """Hand ``item`` to the consumer's loop (any thread); a closed loop cancels the job."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:
            self.cancel.set()


class TransformersEngine:
    """An :class:`~openchatml.engines.Engine` running a ``transformers`` model in-process.

    Build one with :meth:`load`. Generations run one at a time on a worker thread;
    concurrent calls to :meth:`generate` wait their turn.
    """

    def __init__(self, model: Any, info: ModelInfo, tokenizer: ModelTokenizer | None = None) -> None:
        """Wrap a loaded ``transformers`` causal LM (in eval mode, on its device) and its
        tokenizer, if it has one."""
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
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openchatml-transformers")
        self._pending: dict[Future[None], _Job] = {}
        self._lock = threading.Lock()
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
    ) -> TransformersEngine:
        """Load ``model`` (a local folder or a Hub id) onto ``device`` (default ``cuda`` when
        available, else ``cpu``) in ``dtype`` (``float32``, ``float16``, ``bfloat16``;
        default: the checkpoint's). ``model_id`` names it in :attr:`info` (default: the
        folder's name, or the Hub id). ``tokenizer``: the model's (default: the one in
        ``model``, its turns ended by the model's eos ids; none when it has none). Raises
        :class:`EngineError` when torch or transformers is missing or the model cannot be
        loaded."""
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
        return cls(hf, info, tokenizer)

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
        """Whether a generation is running on the worker thread or waiting for it."""
        with self._lock:
            return bool(self._pending)

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
        job = _Job(ids, params, max_new, asyncio.get_running_loop())
        future = self._submit(job)
        try:
            scored = params.logprobs is not None
            while True:
                item = await job.queue.get()
                sampled: list[int] = []
                scores: list[TokenLogprob] = []
                while not isinstance(item, _Done):
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
                if isinstance(item, _Done):
                    if item.error is not None:
                        if isinstance(item.error, EngineError):
                            raise item.error
                        raise EngineError(
                            f"generation failed: {type(item.error).__name__}: {item.error}"
                        ) from item.error
                    return
        finally:
            job.cancel.set()
            future.cancel()

    async def aclose(self) -> None:
        """Cancel every generation, stop the worker thread and drop the model."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            jobs = list(self._pending.values())
        for job in jobs:
            job.cancel.set()
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)
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

    def _submit(self, job: _Job) -> Future[None]:
        with self._lock:
            try:
                future = self._executor.submit(self._run, job)
            except RuntimeError as exc:
                raise EngineError("the engine is closed") from exc
            self._pending[future] = job
        future.add_done_callback(self._finished)
        return future

    def _finished(self, future: Future[None]) -> None:
        with self._lock:
            job = self._pending.pop(future, None)
        if job is not None and future.cancelled():
            job.post(_Done(EngineError("the engine was closed") if self._closed else None))

    def _run(self, job: _Job) -> None:
        """Worker thread: decode ``job`` and post its ids, then its end."""
        error: BaseException | None = None
        try:
            if not job.cancel.is_set():
                self._decode(job)
        except Exception as exc:
            error = exc
        if error is None and self._closed and job.cancel.is_set():
            error = EngineError("the engine was closed")
        job.post(_Done(error))

    def _decode(self, job: _Job) -> None:
        import torch

        model = self._model
        if model is None:
            raise EngineError("the engine is closed")
        params = job.params
        device = model.device
        stops = frozenset(params.stop_token_ids)
        generator: torch.Generator | None = None
        if params.seed is not None and params.temperature > 0:
            generator = torch.Generator(device=device)
            generator.manual_seed(params.seed)
        counts: torch.Tensor | None = None
        if params.presence_penalty or params.frequency_penalty:
            counts = torch.zeros(self._vocab_size, dtype=torch.float32, device=device)
        matcher = None if params.grammar is None else self._matcher(params.grammar.lark)
        with torch.inference_mode():
            input_ids = torch.tensor([job.prompt], dtype=torch.long, device=device)
            past: Any = None
            for _ in range(job.max_new):
                if job.cancel.is_set():
                    return
                out = model(input_ids=input_ids, past_key_values=past, use_cache=True, **self._keep_kwargs)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                allowed = logits
                if matcher is not None:
                    keep = params.logprobs is not None  # log probabilities are of the raw logits
                    allowed = _constrained(logits, matcher, params.stop_token_ids, keep=keep)
                token = _sample(allowed, params, counts, generator)
                job.post(token if params.logprobs is None else _score(logits, token, params.logprobs))
                if matcher is not None:
                    matcher.advance(token)  # a stop id the grammar does not name ends the output anyway
                if token in stops:
                    return
                if counts is not None:
                    counts[token] += 1
                input_ids = torch.tensor([[token]], dtype=torch.long, device=device)


def _constrained(logits: Any, matcher: GrammarMatcher, stops: Sequence[int], *, keep: bool) -> Any:
    """``logits`` with every id the grammar does not allow next at minus infinity (the stop
    ids allowed where the output may end); in place unless ``keep`` (the raw logits are
    still wanted). Raises :class:`EngineError` where the grammar allows no id."""
    import torch

    allowed = matcher.allowed()
    mask_stops(allowed, matcher, stops)
    if not allowed.any():
        raise EngineError("the request's grammar allows no token here")
    out = logits.clone() if keep else logits
    size = min(len(allowed), out.shape[-1])
    blocked = torch.from_numpy(~allowed[:size])
    out[:size].masked_fill_(blocked.to(out.device), float("-inf"))
    out[size:] = float("-inf")
    return out


def _eos_ids(model: Any) -> list[int] | None:
    """The end-of-sequence ids of a ``transformers`` model's generation config, else of its
    config: where an assistant turn ends (``None`` when neither names one)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = getattr(getattr(model, "config", None), "eos_token_id", None)
    if eos is None:
        return None
    return [int(i) for i in (eos if isinstance(eos, list) else [eos])]


def _sample(logits: Any, params: SamplingParams, counts: Any, generator: Any) -> int:
    """One id from ``logits`` (1-d, float32): penalties, then argmax or temperature + top-p."""
    import torch

    if counts is not None:
        logits = logits - counts * params.frequency_penalty - (counts > 0).float() * params.presence_penalty
    if params.temperature <= 0:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p >= 1.0:
        return int(torch.multinomial(probs, 1, generator=generator).item())
    ordered, order = torch.sort(probs, descending=True, stable=True)  # ties: lowest id first, as argmax
    before = ordered.cumsum(-1) - ordered
    drop = before >= params.top_p
    drop[0] = False
    ordered = ordered.masked_fill(drop, 0.0)
    pick = torch.multinomial(ordered, 1, generator=generator)
    return int(order[pick].item())


def _score(logits: Any, token: int, k: int) -> TokenLogprob:
    """``token``'s log probability under the raw ``logits`` (1-d, float32), with the ``k``
    most likely ids, most likely first."""
    import torch

    logprobs = torch.log_softmax(logits, dim=-1)
    top: tuple[tuple[int, float], ...] = ()
    if k > 0:
        values, indices = torch.topk(logprobs, min(k, logprobs.shape[-1]))
        top = tuple(zip(indices.tolist(), values.tolist(), strict=True))
    return TokenLogprob(token, float(logprobs[token].item()), top)
