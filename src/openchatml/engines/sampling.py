"""One request's sampler for the in-process engine: logits of one step in, one id out.

A :class:`Sampler` holds what a generation carries from step to step — its seeded
generator, the counts its penalties read, its grammar matcher — and applies, in order:
the grammar's mask (the ids the llguidance matcher does not allow next get minus
infinity), the penalties, then argmax (temperature 0) or temperature and top-p sampling.
With ``SamplingParams.logprobs`` it scores the chosen id under the raw logits (before all
of that, as OpenAI and vLLM report them). A sampler of plain greedy decoding
(:attr:`Sampler.plain_greedy`) needs nothing but an argmax, which the engine takes for a
whole batch at once. torch is imported by the caller and given to the sampler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import EngineError, SamplingParams, TokenLogprob
from .guidance import GrammarMatcher, mask_stops


class Sampler:
    """The sampling state of one generation over ``vocab_size`` ids on ``device``."""

    def __init__(
        self, params: SamplingParams, vocab_size: int, device: Any, matcher: GrammarMatcher | None, torch: Any
    ) -> None:
        self.params = params
        self.matcher = matcher
        self.torch = torch
        self.generator: Any = None
        if params.seed is not None and params.temperature > 0:
            self.generator = torch.Generator(device=device)
            self.generator.manual_seed(params.seed)
        self.counts: Any = None
        if params.presence_penalty or params.frequency_penalty:
            self.counts = torch.zeros(vocab_size, dtype=torch.float32, device=device)

    @property
    def plain_greedy(self) -> bool:
        """Whether the next id is the argmax of the raw logits, with nothing to record."""
        params = self.params
        return (
            params.temperature <= 0
            and self.matcher is None
            and self.counts is None
            and params.logprobs is None
        )

    def choose(self, logits: Any) -> int | TokenLogprob:
        """The next id from ``logits`` (1-d, float32; changed in place), scored when the
        request asks for log probabilities. Raises :class:`EngineError` where the grammar
        allows no id."""
        params = self.params
        allowed = logits
        if self.matcher is not None:
            keep = params.logprobs is not None  # log probabilities are of the raw logits
            allowed = constrained(logits, self.matcher, params.stop_token_ids, keep=keep, torch=self.torch)
        token = sample(allowed, params, self.counts, self.generator, self.torch)
        return token if params.logprobs is None else score(logits, token, params.logprobs, self.torch)

    def record(self, token: int) -> None:
        """Note that ``token`` was emitted: the grammar moves on, the penalties count it."""
        if self.matcher is not None:
            self.matcher.advance(token)  # a stop id the grammar does not name ends the output anyway
        if self.counts is not None:
            self.counts[token] += 1


def constrained(logits: Any, matcher: GrammarMatcher, stops: Sequence[int], *, keep: bool, torch: Any) -> Any:
    """``logits`` with every id the grammar does not allow next at minus infinity (the stop
    ids allowed where the output may end); in place unless ``keep`` (the raw logits are
    still wanted). Raises :class:`EngineError` where the grammar allows no id."""
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


def sample(logits: Any, params: SamplingParams, counts: Any, generator: Any, torch: Any) -> int:
    """One id from ``logits`` (1-d, float32): penalties, then argmax or temperature + top-p."""
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


def score(logits: Any, token: int, k: int, torch: Any) -> TokenLogprob:
    """``token``'s log probability under the raw ``logits`` (1-d, float32), with the ``k``
    most likely ids, most likely first."""
    logprobs = torch.log_softmax(logits, dim=-1)
    top: tuple[tuple[int, float], ...] = ()
    if k > 0:
        values, indices = torch.topk(logprobs, min(k, logprobs.shape[-1]))
        top = tuple(zip(indices.tolist(), values.tolist(), strict=True))
    return TokenLogprob(token, float(logprobs[token].item()), top)
