"""Continuous batching in the in-process engine: a padded batch gives every row the logits
it would get alone, whatever joins and leaves; concurrent requests share forward passes,
each sampling with its own settings; the batch bounds hold; a cancelled request frees
its slot at once; a failed pass ends its rows and the engine goes on."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openchatml import load_encoding
from openchatml.core.tokens import CALL_ID, RETURN_ID
from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model
from openchatml.engines import EngineError, SamplingParams, TokenLogprob
from openchatml.engines.batching import PaddedBatch, batchable
from openchatml.engines.transformers import TransformersEngine
from openchatml.templates.grammar import harmony_tool_call_grammar

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TEMPLATE = Path(__file__).resolve().parents[3] / "shared" / "templates" / "Apertus-8B-Instruct.jinja"
PROMPTS = [
    "<|start|>user<|message|>Hello there, who are you?<|end|><|start|>assistant",
    "<|start|>user<|message|>Tell me a long story about a dragon and a library.<|end|><|start|>assistant",
    "<|start|>user<|message|>2+2?<|end|><|start|>assistant",
    "<|start|>system<|message|>Be brief.<|end|><|start|>user<|message|>Name three rivers.<|end|>"
    "<|start|>assistant",
]


# --- the padded batch ---------------------------------------------------------------------


@pytest.fixture(scope="module", params=["gpt-oss", "qwen3", "llama"])
def model(
    request: pytest.FixtureRequest, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """A tiny random model of each architecture: gpt-oss (sliding-window and full layers,
    attention sinks), Qwen3 and Llama (full attention)."""
    if request.param == "gpt-oss":
        folder = tiny_model_dir
    else:
        home = tmp_path_factory.mktemp("chat-home")
        folder = ensure_tiny_chat_model(home, TEMPLATE, family=str(request.param))
    return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def _alone(model: Any, prompt: list[int], feeds: list[int]) -> list[Any]:
    """The last-position logits of ``prompt`` then of each of ``feeds``, decoded alone."""
    out = model(input_ids=torch.tensor([prompt]), use_cache=True)
    cache, logits = out.past_key_values, [out.logits[0, -1]]
    for token in feeds:
        out = model(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        logits.append(out.logits[0, -1])
    return logits


def test_every_row_of_a_padded_batch_gets_the_logits_it_gets_alone(model: Any) -> None:
    """Rows of 5 to 200 ids (past gpt-oss's 128-id sliding window) join at different steps
    and leave at others (the batch trims its padding); every step of every row matches."""
    vocab = model.config.vocab_size
    rng = random.Random(0)
    lengths = (5, 40, 140, 12, 200)
    prompts = [[rng.randrange(vocab) for _ in range(n)] for n in lengths]
    feeds = [[rng.randrange(vocab) for _ in range(50)] for _ in lengths]
    joins = {0: [0, 1], 3: [2], 10: [3], 20: [4]}
    leaves = {1: 15, 4: 22}  # row: steps after which it leaves (others run all 50)
    worst, checked, widest = 0.0, 0, 0
    with torch.inference_mode():
        expected = [_alone(model, p, f) for p, f in zip(prompts, feeds, strict=True)]
        batch = PaddedBatch(torch, "cpu")
        rows: list[list[int]] = []  # [prompt index, steps done]
        for step in range(60):
            for n in joins.get(step, []):
                out = model(input_ids=torch.tensor([prompts[n]]), use_cache=True)
                assert batchable(out.past_key_values)
                batch.join(out.past_key_values, len(prompts[n]))
                rows.append([n, 0])
            if not rows:
                break
            inputs = batch.inputs([feeds[n][done] for n, done in rows])
            out = model(**inputs, use_cache=True, logits_to_keep=1)
            batch.advance(inputs)
            widest = max(widest, batch.width)
            for row, (n, done) in enumerate(rows):
                worst = max(worst, float((out.logits[row, -1] - expected[n][done + 1]).abs().max()))
                checked += 1
                rows[row][1] += 1
            going = [r for r, (n, done) in enumerate(rows) if done < leaves.get(n, 50)]
            if len(going) < len(rows):
                batch.keep(going)
                rows = [rows[r] for r in going]
    assert checked == sum(leaves.get(n, 50) for n in range(len(lengths)))
    assert worst < 1e-4
    assert widest > 200 and batch.width < widest  # padding was dropped when the longest left


def test_an_emptied_batch_starts_afresh() -> None:
    batch = PaddedBatch(torch, "cpu")
    assert len(batch) == 0 and batch.padded_tokens == 0
    batch.keep([])
    assert batch.cache is None and batch.width == 0


# --- the engine ---------------------------------------------------------------------------


class Passes:
    """Every forward pass of a model: how many rows and how many ids per row."""

    def __init__(self, model: Any, fail_at: int | None = None) -> None:
        self.shapes: list[tuple[int, int]] = []
        self.fail_at = fail_at
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        rows, width = kwargs["input_ids"].shape
        self.shapes.append((rows, width))
        if self.fail_at is not None and len(self.decodes) == self.fail_at:
            raise RuntimeError("the device fell over")

    @property
    def decodes(self) -> list[int]:
        """The rows of each decode pass (one id per row)."""
        return [rows for rows, width in self.shapes if width == 1]

    def close(self) -> None:
        self.handle.remove()


@pytest.fixture()
def engine_factory(tiny_model_dir: Path) -> Iterator[Any]:
    engines: list[TransformersEngine] = []

    def make(**bounds: Any) -> TransformersEngine:
        engine = TransformersEngine.load(tiny_model_dir, device="cpu", **bounds)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        asyncio.run(engine.aclose())


def _ids(text: str) -> list[int]:
    return load_encoding().encode(text, allowed_special="all")


async def _run(engine: TransformersEngine, prompt: list[int], params: SamplingParams) -> list[Any]:
    """Every id (or scored id) of one generation."""
    out: list[Any] = []
    async for chunk in engine.generate(prompt, params):
        out.extend(chunk.logprobs if chunk.logprobs is not None else chunk.ids)
    return out


def _together(
    engine: TransformersEngine, requests: list[tuple[list[int], SamplingParams]]
) -> list[list[Any]]:
    async def main() -> list[list[Any]]:
        return list(await asyncio.gather(*(_run(engine, p, s) for p, s in requests)))

    return asyncio.run(main())


def _alone_each(
    engine: TransformersEngine, requests: list[tuple[list[int], SamplingParams]]
) -> list[list[Any]]:
    return [asyncio.run(_run(engine, p, s)) for p, s in requests]


def _counted(
    engine: TransformersEngine, requests: list[tuple[list[int], SamplingParams]]
) -> tuple[list[list[Any]], Passes]:
    """The requests run together, and the forward passes they took."""
    passes = Passes(engine._model)
    try:
        return _together(engine, requests), passes
    finally:
        passes.close()


def test_concurrent_requests_share_forward_passes_and_get_what_they_get_alone(engine_factory: Any) -> None:
    engine = engine_factory()
    requests = [(_ids(text), SamplingParams(max_tokens=24, temperature=0)) for text in PROMPTS]
    alone = _alone_each(engine, requests)
    together, passes = _counted(engine, requests)
    assert together == alone
    assert max(passes.decodes) == len(PROMPTS)
    assert len(passes.decodes) < 24 * len(PROMPTS) / 2  # one pass serves several rows


def test_each_row_samples_with_its_own_settings(engine_factory: Any) -> None:
    engine = engine_factory()
    grammar = harmony_tool_call_grammar(
        [{"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}],
        tool_choice="required",
        reasoning_tokens=20,
    )
    stops = (RETURN_ID, CALL_ID, 199999)
    requests = [
        (_ids(PROMPTS[0]), SamplingParams(max_tokens=20, temperature=0.9, top_p=0.8, seed=7)),
        (_ids(PROMPTS[1]), SamplingParams(max_tokens=20, temperature=0, logprobs=3)),
        (_ids(PROMPTS[2]), SamplingParams(max_tokens=20, temperature=0, frequency_penalty=1.5)),
        (_ids(PROMPTS[3]), SamplingParams(max_tokens=80, seed=3, stop_token_ids=stops, grammar=grammar)),
        (_ids(PROMPTS[0]), SamplingParams(max_tokens=20, temperature=0)),
    ]
    alone = _alone_each(engine, requests)
    together = _together(engine, requests)
    for one, other in zip(alone, together, strict=True):
        assert [_id(x) for x in one] == [_id(x) for x in other]
    scored_alone, scored_together = alone[1], together[1]
    assert all(isinstance(x, TokenLogprob) for x in scored_together)
    for a, b in zip(scored_alone, scored_together, strict=True):
        assert b.logprob == pytest.approx(a.logprob, abs=1e-4)
        assert [i for i, _ in b.top] == [i for i, _ in a.top]
    assert together[3][-1] == CALL_ID  # the grammar held in the batch


def _id(item: Any) -> int:
    return item.id if isinstance(item, TokenLogprob) else int(item)


def test_the_batch_size_bounds_the_rows(engine_factory: Any) -> None:
    engine = engine_factory(batch_size=2)
    requests = [(_ids(text), SamplingParams(max_tokens=12, temperature=0)) for text in PROMPTS]
    alone = _alone_each(engine, requests)
    together, passes = _counted(engine, requests)
    assert together == alone
    assert max(passes.decodes) == 2


def test_the_token_budget_bounds_the_cache_and_preempted_rows_resume_unbroken(engine_factory: Any) -> None:
    """Three rows fit the budget at first; as they grow the newest step out and come back
    by a prefill over what they wrote — their streams are the same as alone."""
    prompts = [_ids(text) for text in PROMPTS]
    budget = 3 * (max(map(len, prompts)) + 2)
    engine = engine_factory(batch_tokens=budget)
    requests = [(p, SamplingParams(max_tokens=12, temperature=0)) for p in prompts]
    requests.append((prompts[2], SamplingParams(max_tokens=12, temperature=0.8, seed=5, logprobs=2)))
    alone = _alone_each(engine, requests)
    held: list[tuple[int, int]] = []  # (rows, cache columns after the pass) of each decode pass
    hook = engine._model.register_forward_pre_hook(
        lambda module, args, kwargs: (
            held.append((kwargs["input_ids"].shape[0], kwargs["past_key_values"].get_seq_length() + 1))
            if kwargs["input_ids"].shape[1] == 1
            else None
        ),
        with_kwargs=True,
    )
    passes = Passes(engine._model)
    try:
        together = _together(engine, requests)
    finally:
        hook.remove()
        passes.close()
    assert [[_id(x) for x in ids] for ids in together] == [[_id(x) for x in ids] for ids in alone]
    assert all(rows * width <= budget for rows, width in held if rows > 1)
    assert max(rows for rows, _ in held) == 3
    assert len([width for _, width in passes.shapes if width > 1]) > len(requests)  # some rows resumed


def test_a_cancelled_request_frees_its_slot_at_once(engine_factory: Any) -> None:
    engine = engine_factory(batch_size=1)
    long_prompt, short_prompt = _ids(PROMPTS[1]), _ids(PROMPTS[2])
    passes = Passes(engine._model)

    async def main() -> tuple[int, list[Any]]:
        seen = 0
        waiting = asyncio.create_task(_run(engine, short_prompt, SamplingParams(max_tokens=5, temperature=0)))
        async for chunk in engine.generate(long_prompt, SamplingParams(max_tokens=2000, temperature=0)):
            seen += len(chunk)
            if seen >= 3:
                break
        return seen, await waiting

    try:
        seen, short = asyncio.run(main())
        assert seen >= 3
    finally:
        passes.close()
    assert len(short) == 5
    prefills = [n for n, (rows, width) in enumerate(passes.shapes) if width > 1]
    assert len(prefills) == 2
    assert prefills[1] < 30  # the waiting request ran long before 2000 ids of the first
    assert not engine.busy


def test_a_failed_pass_ends_its_rows_and_the_engine_goes_on(engine_factory: Any) -> None:
    engine = engine_factory()
    requests = [(_ids(text), SamplingParams(max_tokens=12, temperature=0)) for text in PROMPTS[:3]]
    alone = _alone_each(engine, requests)
    passes = Passes(engine._model, fail_at=4)

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(_run(engine, p, s) for p, s in requests), return_exceptions=True))

    try:
        results = asyncio.run(main())
    finally:
        passes.close()
    assert all(isinstance(r, EngineError) and "fell over" in str(r) for r in results)
    assert _alone_each(engine, requests) == alone
    assert not engine.busy


def test_a_model_whose_cache_cannot_batch_decodes_one_request_at_a_time(
    engine_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("openchatml.engines.scheduler.batchable", lambda cache: False)
    engine = engine_factory()
    requests = [(_ids(text), SamplingParams(max_tokens=8, temperature=0)) for text in PROMPTS]
    alone = _alone_each(engine, requests)
    together, passes = _counted(engine, requests)
    assert together == alone
    assert max(passes.decodes) == 1


def test_batch_bounds_under_one_are_refused(tiny_model_dir: Path) -> None:
    with pytest.raises(EngineError, match="at least 1"):
        TransformersEngine.load(tiny_model_dir, device="cpu", batch_size=0)
    with pytest.raises(EngineError, match="at least 1"):
        TransformersEngine.load(tiny_model_dir, device="cpu", batch_tokens=0)
