"""The in-process engine's scheduler: one thread that owns the model and batches continuously.

Requests (:class:`Job`) wait in a first-come queue until the batch has room:
``batch_size`` rows and, when ``batch_tokens`` is set, at most that many cache columns
(rows × the longest row, padding included) after the next step. A request is then
prefilled alone — its first id comes from that pass — and joins the running
:class:`~.batching.PaddedBatch`. Every decode step is one forward pass over all rows,
each feeding the id it sampled last and sampling its next with its own
:class:`~.sampling.Sampler`; a row leaves the step it ends (a stop id, its id budget) or
is cancelled, freeing its slot for a waiting request. When rows grow past
``batch_tokens``, the newest rows step out (preemption by recompute): they go back to
the head of the queue with their sampler and what they wrote, and join again with a
prefill over it, so their consumers see one unbroken stream. A model whose cache rows
cannot join (:func:`~.batching.batchable`) decodes one request at a time.

Ids reach each consumer's event loop through :meth:`Job.post`; the consumer sets
``Job.cancel`` when it leaves, which the scheduler checks before every step.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .base import EngineError, SamplingParams, TokenLogprob
from .batching import PaddedBatch, batchable
from .guidance import GrammarMatcher
from .sampling import Sampler


@dataclass(frozen=True, slots=True)
class Done:
    """The end of a job's stream; ``error`` when it failed."""

    error: BaseException | None = None


@dataclass(slots=True, eq=False)
class Job:
    """One generation: its prompt, settings and id budget, and the queue its ids go to."""

    prompt: list[int]
    params: SamplingParams
    max_new: int
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[int | TokenLogprob | Done] = field(default_factory=asyncio.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)

    def post(self, item: int | TokenLogprob | Done) -> None:
        """Hand ``item`` to the consumer's loop (any thread); a closed loop cancels the job."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:
            self.cancel.set()


@dataclass(slots=True, eq=False)
class _Row:
    """A job in the scheduler: its sampler (made at its first prefill), the ids it wrote,
    the one it feeds next."""

    job: Job
    sampler: Sampler | None = None
    written: list[int] = field(default_factory=list)

    @property
    def context(self) -> list[int]:
        """The ids a prefill runs: the prompt, then what the row wrote but has not fed."""
        return [*self.job.prompt, *self.written[:-1]]


class BatchScheduler:
    """Decodes :class:`Job` s on ``model`` (a ``transformers`` causal LM in eval mode) in
    continuous batches on a thread of its own, started by the first :meth:`submit`.
    ``matcher`` compiles a request's Lark grammar (raising :class:`EngineError`)."""

    def __init__(
        self,
        model: Any,
        matcher: Callable[[str], GrammarMatcher],
        *,
        batch_size: int,
        batch_tokens: int | None,
        keep_kwargs: dict[str, int],
    ) -> None:
        self.model = model
        self._matcher = matcher
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._keep_kwargs = keep_kwargs
        self._vocab_size: int = model.get_input_embeddings().num_embeddings
        self._batchable: bool | None = None  # found out by the first prefill
        self._waiting: deque[_Row] = deque()
        self._jobs: set[Job] = set()
        self._wake = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        """Whether a job is running or waiting to."""
        with self._wake:
            return bool(self._jobs)

    def submit(self, job: Job) -> None:
        """Queue ``job``. Raises :class:`EngineError` once closed."""
        with self._wake:
            if self._closed:
                raise EngineError("the engine is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="openchatml-transformers", daemon=True)
                self._thread.start()
            self._jobs.add(job)
            self._waiting.append(_Row(job))
            self._wake.notify()

    def poke(self) -> None:
        """Wake the scheduler (a consumer left: its slot can be freed now)."""
        with self._wake:
            self._wake.notify()

    def close(self) -> None:
        """Cancel every job and stop the thread (blocks until it has)."""
        with self._wake:
            self._closed = True
            for job in self._jobs:
                job.cancel.set()
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()

    # --- the scheduler thread ------------------------------------------------------------

    def _run(self) -> None:
        """Admit waiting rows, decode the batch a step, until closed."""
        import torch

        batch = PaddedBatch(torch, self.model.device)
        rows: list[_Row] = []
        with torch.inference_mode():
            while True:
                admitted = self._admit(batch, rows)
                if admitted is None:
                    break
                for row in admitted:
                    self._prefill(row, batch, rows, torch)
                rows = self._drop_cancelled(batch, rows)
                if rows:
                    rows = self._preempt(batch, self._step(batch, rows))
        for row in rows:
            self._end(row.job)

    def _end(self, job: Job, error: BaseException | None = None) -> None:
        """Post ``job``'s end (``error`` when it failed) and forget it."""
        if error is None and self._closed and job.cancel.is_set():
            error = EngineError("the engine was closed")
        with self._wake:  # forgotten first: a consumer that sees its end sees the engine free
            self._jobs.discard(job)
        job.post(Done(error))

    def _admit(self, batch: PaddedBatch, rows: list[_Row]) -> list[_Row] | None:
        """The waiting rows that fit in the batch now (waiting for one while the batch is
        empty); ``None`` once closed. Cancelled waiting rows end here."""
        with self._wake:
            while True:
                if self._closed:
                    ended = list(self._waiting)
                    self._waiting.clear()
                    break
                ended = [row for row in self._waiting if row.job.cancel.is_set()]
                for row in ended:
                    self._waiting.remove(row)
                if ended or self._waiting or rows:
                    break
                self._wake.wait()
            admitted = [] if self._closed else self._fitting(batch, len(rows))
        for row in ended:
            self._end(row.job)
        return None if self._closed else admitted

    def _fitting(self, batch: PaddedBatch, count: int) -> list[_Row]:
        """Take from the queue the rows that fit beside ``count`` rows (lock held): the
        batch after their joining and one more step stays within the bounds."""
        limit = self._batch_size if self._batchable is not False else 1
        width, admitted = batch.width, list[_Row]()
        while self._waiting and count + len(admitted) < limit:
            if self._batchable is None and (count or admitted):
                break  # one at a time until the first prefill says rows can join
            wider = max(width, len(self._waiting[0].context))
            if count + len(admitted) and not self._fits(count + len(admitted) + 1, wider + 1):
                break
            admitted.append(self._waiting.popleft())
            width = wider
        return admitted

    def _fits(self, rows: int, width: int) -> bool:
        """Whether ``rows`` rows ``width`` long are within ``batch_tokens``."""
        return self._batch_tokens is None or rows * width <= self._batch_tokens

    def _prefill(self, row: _Row, batch: PaddedBatch, rows: list[_Row], torch: Any) -> None:
        """Run ``row``'s context and add it to the batch; a new row first samples and posts
        its first id from that pass (and may end there)."""
        job, model = row.job, self.model
        try:
            if row.sampler is None:
                grammar = job.params.grammar
                matcher = None if grammar is None else self._matcher(grammar.lark)
                row.sampler = Sampler(job.params, self._vocab_size, model.device, matcher, torch)
            context = row.context
            ids = torch.tensor([context], dtype=torch.long, device=model.device)
            out = model(input_ids=ids, use_cache=True, **self._keep_kwargs)
            if self._batchable is None:
                self._batchable = batchable(out.past_key_values)
            going = bool(row.written) or self._emit(row, out.logits[0, -1].float())
        except Exception as exc:
            self._end(job, exc)
            return
        if not going:
            self._end(job)
            return
        batch.join(out.past_key_values, len(context))
        rows.append(row)

    def _step(self, batch: PaddedBatch, rows: list[_Row]) -> list[_Row]:
        """One forward pass for every row; each samples and posts its next id. Returns
        the rows still going (a failed pass ends them all)."""
        try:
            inputs = batch.inputs([row.written[-1] for row in rows])
            out = self.model(**inputs, use_cache=True, **self._keep_kwargs)
            batch.advance(inputs)
            logits = out.logits[:, -1].float()
        except Exception as exc:
            batch.keep([])
            for row in rows:
                self._end(row.job, exc)
            return []
        plain = [n for n, row in enumerate(rows) if row.sampler is not None and row.sampler.plain_greedy]
        greedy = dict(zip(plain, logits[plain].argmax(-1).tolist(), strict=True)) if plain else {}
        going: list[int] = []
        for n, row in enumerate(rows):
            try:
                alive = self._emit(row, logits[n], greedy.get(n))
            except Exception as exc:
                self._end(row.job, exc)
                continue
            if alive:
                going.append(n)
            else:
                self._end(row.job)
        if len(going) < len(rows):
            batch.keep(going)
        return [rows[n] for n in going]

    def _emit(self, row: _Row, logits: Any, chosen: int | None = None) -> bool:
        """Sample ``row``'s next id from ``logits`` (or take ``chosen``, its argmax), post
        it, and say whether the row goes on."""
        job, sampler = row.job, row.sampler
        assert sampler is not None
        picked = sampler.choose(logits) if chosen is None else chosen
        token = picked if isinstance(picked, int) else picked.id
        job.post(picked)
        sampler.record(token)
        row.written.append(token)
        ended = token in job.params.stop_token_ids or len(row.written) >= job.max_new
        return not (ended or job.cancel.is_set())

    def _drop_cancelled(self, batch: PaddedBatch, rows: list[_Row]) -> list[_Row]:
        """End the rows whose consumer left, freeing their slots."""
        going = [n for n, row in enumerate(rows) if not row.job.cancel.is_set()]
        if len(going) == len(rows):
            return rows
        for row in rows:
            if row.job.cancel.is_set():
                self._end(row.job)
        batch.keep(going)
        return [rows[n] for n in going]

    def _preempt(self, batch: PaddedBatch, rows: list[_Row]) -> list[_Row]:
        """Step the newest rows out while the batch's next step would pass
        ``batch_tokens``; they wait at the head of the queue, in order."""
        keep = len(rows)
        while keep > 1 and not self._fits(keep, _width_of(rows[:keep]) + 1):
            keep -= 1
        if keep == len(rows):
            return rows
        batch.keep(list(range(keep)))
        with self._wake:
            self._waiting.extendleft(reversed(rows[keep:]))
        return rows[:keep]


def _width_of(rows: list[_Row]) -> int:
    """The batch width ``rows`` need: the longest fed context."""
    return max(len(row.job.prompt) + len(row.written) - 1 for row in rows)
