"""The tiny gpt-oss model and the in-process transformers engine, held to transformers itself."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from openchatml import load_encoding
from openchatml.demo_models import tiny_random as tiny
from openchatml.demo_models.tiny_random import EOS_TOKEN_IDS, ensure_tiny_model
from openchatml.engines import Chunk, Engine, EngineError, ModelInfo, SamplingParams, TokenLogprob
from openchatml.engines.transformers import TransformersEngine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

PROMPT_TEXT = "<|start|>user<|message|>Hello there, who are you?<|end|><|start|>assistant"

PARITY_TEXTS = [
    "hello world",
    "Hello, World! It's 3.14159 o'clock; they'll've WE'RE",
    "  leading spaces\n\n\ttabs\t\t and   runs of     spaces   \r\n\r\n",
    "\n\n\n",
    " ",
    "héllo naïve café, Ünïcödé ß ﬁ 日本語のテキスト 中文 한국어 Ελληνικά русский",
    "emoji 😀👍🏽👨‍👩‍👧‍👦 🇫🇷 and e\u0301 combining",
    "code: def f(x):\n    return x**2  # ok\n",
    "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>yo<|return|>",
    "<|start|>assistant to=functions.get<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
    "<|startoftext|>a<|endoftext|><|reserved_200013|> x <|reserved_201087|>",
    "not special: <|star t|> <| end |> <start>",
    "1234567890 123 4567 ١٢٣",
]


def collect(engine: Engine, prompt: list[int], params: SamplingParams) -> list[Chunk]:
    """All chunks of one generation."""

    async def main() -> list[Chunk]:
        return [chunk async for chunk in engine.generate(prompt, params)]

    return asyncio.run(main())


def tokens(engine: Engine, prompt: list[int], params: SamplingParams) -> list[int]:
    return [t for chunk in collect(engine, prompt, params) for t in chunk]


async def wait_idle(engine: TransformersEngine, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while engine.busy and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def engine(tiny_model_dir: Path) -> Iterator[TransformersEngine]:
    loaded = TransformersEngine.load(tiny_model_dir, device="cpu")
    yield loaded
    asyncio.run(loaded.aclose())


@pytest.fixture(scope="module")
def prompt() -> list[int]:
    return load_encoding().encode(PROMPT_TEXT, allowed_special="all")


@pytest.fixture(scope="module")
def greedy(engine: TransformersEngine, prompt: list[int]) -> list[int]:
    """The first 16 greedy ids after the prompt."""
    return tokens(engine, prompt, SamplingParams(max_tokens=16, temperature=0))


# --- the tiny model -----------------------------------------------------------------------


def test_tiny_model_folder(tiny_model_dir: Path) -> None:
    names = {p.name for p in tiny_model_dir.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    } <= names
    assert tiny_model_dir.name == "tiny-gpt-oss"
    assert tiny_model_dir == tiny.tiny_model_dir(tiny_model_dir.parents[1])
    generation = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert generation["eos_token_id"] == [200002, 200012, 199999] == list(EOS_TOKEN_IDS)
    config = transformers.AutoConfig.from_pretrained(tiny_model_dir)
    assert config.model_type == "gpt_oss"
    assert config.vocab_size == 201088
    tokenizer_config = json.loads((tiny_model_dir / "tokenizer_config.json").read_text())
    added = tokenizer_config["added_tokens_decoder"]
    assert added["200006"]["content"] == "<|start|>"
    assert added["200012"]["content"] == "<|call|>"
    assert all(entry["special"] for entry in added.values())
    assert sum(p.stat().st_size for p in tiny_model_dir.iterdir()) < 100_000_000


def test_tiny_model_writes_the_shape_of_harmony(engine: TransformersEngine, prompt: list[int]) -> None:
    """Greedy: a final answer; sampled: every channel, messages that end, turns that end."""
    from openchatml import StreamParser
    from openchatml.core.messages import Role

    def messages(ids: list[int]) -> list[Any]:
        parser = StreamParser(Role.ASSISTANT, strict=False, allow_truncated=True)
        parser.feed_tokens(ids)
        parser.close()
        return list(parser.messages)

    encoding = load_encoding()
    greedy = tokens(engine, prompt, SamplingParams(max_tokens=24, temperature=0))
    assert encoding.decode(greedy[:3]) == "<|channel|>final<|message|>"
    channels: set[str | None] = set()
    ends = 0
    for seed in range(12):
        ids = tokens(
            engine,
            prompt,
            SamplingParams(max_tokens=120, temperature=1.0, seed=seed, stop_token_ids=EOS_TOKEN_IDS),
        )
        found = messages(ids)
        assert found and all(m.author.role is Role.ASSISTANT for m in found)
        channels |= {m.channel for m in found}
        ends += ids[-1] == 200002
    assert channels == {"final", "analysis", "commentary"}
    assert ends >= 3


def test_tiny_model_is_deterministic(tiny_model_dir: Path, tmp_path: Path) -> None:
    tiny.build_tiny_model(tmp_path, seed=0)
    for name in ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json"):
        assert (tmp_path / name).read_bytes() == (tiny_model_dir / name).read_bytes(), name


def test_tiny_model_dir_honours_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENCHATML_HOME", str(tmp_path))
    assert tiny.tiny_model_dir() == tmp_path / "models" / "tiny-gpt-oss"
    assert tiny.tiny_model_dir(seed=3) == tmp_path / "models" / "tiny-gpt-oss-seed3"
    monkeypatch.delenv("OPENCHATML_HOME")
    assert tiny.tiny_model_dir() == Path.home() / ".cache" / "openchatml" / "models" / "tiny-gpt-oss"


def test_ensure_is_cached(tiny_model_dir: Path) -> None:
    before = (tiny_model_dir / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_model(tiny_model_dir.parents[1]) == tiny_model_dir
    assert (tiny_model_dir / "model.safetensors").stat().st_mtime_ns == before


def test_ensure_races_and_replaces_stale(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Racing builders leave one complete folder; a half-written one is replaced."""
    builds: list[int] = []

    def fake_build(folder: Path, *, seed: int = 0) -> None:
        builds.append(seed)
        time.sleep(0.05)
        shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True)

    monkeypatch.setattr(tiny, "build_tiny_model", fake_build)
    stale = tiny.tiny_model_dir(tmp_path)
    stale.mkdir(parents=True)
    (stale / "config.json").write_text("{}")
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_tiny_model(tmp_path))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [stale] * 4
    assert builds
    assert sorted(p.name for p in stale.iterdir()) == sorted(p.name for p in tiny_model_dir.iterdir())
    assert [p.name for p in stale.parent.iterdir()] == ["tiny-gpt-oss"]


def test_tokenizer_matches_encoding(tiny_model_dir: Path) -> None:
    """The HF tokenizer gives openchatml's ids, special tokens included, and decodes back."""
    hf = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    encoding = load_encoding()
    assert len(hf) == 201088
    assert hf.convert_tokens_to_ids(["<|start|>", "<|return|>", "<|call|>", "<|endoftext|>"]) == [
        200006,
        200002,
        200012,
        199999,
    ]
    for text in PARITY_TEXTS:
        ids = encoding.encode(text, allowed_special="all")
        assert hf.encode(text, add_special_tokens=False) == ids, text
        assert hf.decode(ids) == text


# --- the engine ---------------------------------------------------------------------------


def test_info(engine: TransformersEngine) -> None:
    assert isinstance(engine, Engine)
    info = engine.info
    assert (info.id, info.context_length, info.engine, info.device) == (
        "tiny-gpt-oss",
        tiny.CONTEXT_LENGTH,
        "transformers",
        "cpu",
    )


def test_the_engine_carries_its_folders_tokenizer(engine: TransformersEngine) -> None:
    """o200k_harmony, no chat template (the server speaks Harmony), turns ended by the
    model's eos ids."""
    tokenizer = engine.tokenizer
    assert tokenizer is not None
    assert tokenizer.stop_token_ids == EOS_TOKEN_IDS
    assert tokenizer.chat_template is None
    assert tokenizer.vocab_size == 201088
    assert tokenizer.encode(PROMPT_TEXT) == load_encoding().encode(PROMPT_TEXT, allowed_special="all")


def test_greedy_matches_transformers_generate(
    tiny_model_dir: Path, engine: TransformersEngine, prompt: list[int], greedy: list[int]
) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    with torch.inference_mode():
        out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=16)
    expected = out[0, len(prompt) :].tolist()
    assert greedy == expected
    assert len(set(greedy)) > 4
    again = tokens(engine, prompt, SamplingParams(max_tokens=16, temperature=0, stop_token_ids=EOS_TOKEN_IDS))
    assert again == greedy


def test_max_tokens(engine: TransformersEngine, prompt: list[int], greedy: list[int]) -> None:
    assert tokens(engine, prompt, SamplingParams(max_tokens=5, temperature=0)) == greedy[:5]
    assert collect(engine, prompt, SamplingParams(max_tokens=0, temperature=0)) == []


def test_max_tokens_is_capped_by_the_context(
    tiny_model_dir: Path, prompt: list[int], greedy: list[int]
) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    small = TransformersEngine(model, ModelInfo(id="small", context_length=len(prompt) + 3))
    try:
        assert tokens(small, prompt, SamplingParams(max_tokens=50, temperature=0)) == greedy[:3]
        assert tokens(small, prompt, SamplingParams(temperature=0)) == greedy[:3]
        with pytest.raises(EngineError, match="context window"):
            collect(small, [*prompt, 1, 2, 3], SamplingParams(max_tokens=1))
    finally:
        asyncio.run(small.aclose())


def test_stop_token_ends_the_stream_and_is_yielded(
    engine: TransformersEngine, prompt: list[int], greedy: list[int]
) -> None:
    k = next(i for i in range(3, len(greedy)) if greedy[i] not in greedy[:i])
    params = SamplingParams(max_tokens=16, temperature=0, stop_token_ids=(greedy[k], 200002))
    assert tokens(engine, prompt, params) == greedy[: k + 1]


def test_seeded_sampling_repeats(engine: TransformersEngine, prompt: list[int], greedy: list[int]) -> None:
    def sample(seed: int, **kwargs: Any) -> list[int]:
        return tokens(engine, prompt, SamplingParams(max_tokens=8, temperature=1.0, seed=seed, **kwargs))

    assert sample(1) == sample(1)
    assert sample(1) != sample(2)
    assert sample(1, top_p=1e-9) == greedy[:8]


def test_penalties_apply_to_greedy(engine: TransformersEngine, prompt: list[int], greedy: list[int]) -> None:
    """A strongly negative penalty makes greedy decoding repeat its first id."""
    for params in (
        SamplingParams(max_tokens=6, temperature=0, frequency_penalty=-1000.0),
        SamplingParams(max_tokens=6, temperature=0, presence_penalty=-1000.0),
    ):
        assert tokens(engine, prompt, params) == [greedy[0]] * 6


def scored(engine: Engine, prompt: list[int], params: SamplingParams) -> list[TokenLogprob]:
    """The log probability records of one generation, checked against its ids."""
    chunks = collect(engine, prompt, params)
    records = [r for chunk in chunks for r in chunk.logprobs or ()]
    assert [r.id for r in records] == [t for chunk in chunks for t in chunk]
    return records


def raw_logprobs(model: Any, ids: list[int], start: int) -> Any:
    """``log_softmax`` of a plain forward pass over ``ids``: the rows that predict
    ``ids[start:]``."""
    with torch.inference_mode():
        logits = model(torch.tensor([ids])).logits[0].float()
    return torch.log_softmax(logits, dim=-1)[start - 1 : len(ids) - 1]


def test_greedy_logprobs_match_a_plain_forward_pass(
    tiny_model_dir: Path, engine: TransformersEngine, prompt: list[int], greedy: list[int]
) -> None:
    records = scored(engine, prompt, SamplingParams(max_tokens=8, temperature=0, logprobs=5))
    assert [r.id for r in records] == greedy[:8]
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    reference = raw_logprobs(model, prompt + greedy[:8], len(prompt))
    for record, row in zip(records, reference, strict=True):
        values = torch.topk(row, 5).values
        assert len(record.top) == 5
        assert record.top[0] == (record.id, record.logprob)  # greedy: the sampled id is the best
        assert [lp for _, lp in record.top] == pytest.approx(values.tolist(), abs=1e-4)
        assert [row[t].item() for t, _ in record.top] == pytest.approx(values.tolist(), abs=1e-4)
        assert record.logprob == pytest.approx(row[record.id].item(), abs=1e-4)
        assert all(a >= b for (_, a), (_, b) in itertools.pairwise(record.top))
        assert all(lp <= 0 for _, lp in record.top)


def test_logprobs_are_of_the_raw_distribution(
    tiny_model_dir: Path, engine: TransformersEngine, prompt: list[int], greedy: list[int]
) -> None:
    """Penalties and temperature change what is sampled, not the log probabilities reported."""
    params = SamplingParams(max_tokens=4, temperature=0, frequency_penalty=-1000.0, logprobs=1)
    records = scored(engine, prompt, params)
    assert [r.id for r in records] == [greedy[0]] * 4
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    reference = raw_logprobs(model, prompt + [greedy[0]] * 4, len(prompt))
    for record, row in zip(records, reference, strict=True):
        assert record.logprob == pytest.approx(row[record.id].item(), abs=1e-4)
        assert record.top[0][1] == pytest.approx(row.max().item(), abs=1e-4)
    assert records[-1].logprob < -0.01  # after the penalty it would be about 0
    hot = scored(engine, prompt, SamplingParams(max_tokens=1, temperature=0.01, seed=1, logprobs=0))
    assert hot[0].id == greedy[0] and hot[0].top == ()
    assert hot[0].logprob == pytest.approx(records[0].logprob, abs=1e-4)


def test_no_logprobs_unless_asked(engine: TransformersEngine, prompt: list[int]) -> None:
    chunks = collect(engine, prompt, SamplingParams(max_tokens=3, temperature=0))
    assert chunks and all(chunk.logprobs is None for chunk in chunks)
    with pytest.raises(EngineError, match="logprobs must not be negative"):
        collect(engine, prompt, SamplingParams(max_tokens=1, logprobs=-1))


def test_slow_consumer_gets_bigger_chunks(engine: TransformersEngine, prompt: list[int]) -> None:
    async def main() -> list[list[int]]:
        chunks = []
        async for chunk in engine.generate(prompt, SamplingParams(max_tokens=12, temperature=0)):
            chunks.append(chunk)
            await asyncio.sleep(0.2)
        return chunks

    chunks = asyncio.run(main())
    assert sum(len(c) for c in chunks) == 12
    assert max(len(c) for c in chunks) > 1


def test_break_cancels_the_worker(engine: TransformersEngine, prompt: list[int], greedy: list[int]) -> None:
    async def main() -> tuple[int, bool]:
        seen = 0
        async for _ in engine.generate(prompt, SamplingParams(temperature=0)):
            seen += 1
            if seen == 2:
                break
        await wait_idle(engine)
        return seen, engine.busy

    seen, busy = asyncio.run(main())
    assert seen == 2
    assert not busy
    assert tokens(engine, prompt, SamplingParams(max_tokens=4, temperature=0)) == greedy[:4]


def test_aclose_and_task_cancellation_stop_the_worker(engine: TransformersEngine, prompt: list[int]) -> None:
    async def main() -> None:
        stream = engine.generate(prompt, SamplingParams(temperature=0))
        assert isinstance(stream, AsyncIterator)
        await anext(stream)
        await stream.aclose()
        await wait_idle(engine)
        assert not engine.busy

        started = asyncio.Event()

        async def consume() -> None:
            async for _ in engine.generate(prompt, SamplingParams(temperature=0)):
                started.set()

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_idle(engine)
        assert not engine.busy

    asyncio.run(main())


def test_concurrent_generations_queue(
    engine: TransformersEngine, prompt: list[int], greedy: list[int]
) -> None:
    other = load_encoding().encode("Something else entirely.", allowed_special="all")
    params = SamplingParams(max_tokens=6, temperature=0)

    async def run(ids: list[int]) -> list[int]:
        return [t async for chunk in engine.generate(ids, params) for t in chunk]

    async def main() -> list[list[int]]:
        return list(await asyncio.gather(run(prompt), run(other), run(prompt)))

    first, second, third = asyncio.run(main())
    assert first == third == greedy[:6]
    assert second == tokens(engine, other, params)


def test_bad_requests_raise_engine_error(engine: TransformersEngine, prompt: list[int]) -> None:
    context = engine.info.context_length
    assert context is not None
    for bad in ([], [201088], [-1], [0] * context):
        with pytest.raises(EngineError):
            collect(engine, bad, SamplingParams(max_tokens=1))
    with pytest.raises(EngineError):
        collect(engine, prompt, SamplingParams(max_tokens=-1))


def test_bad_model_raises_engine_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="cannot load model"):
        TransformersEngine.load(tmp_path / "missing", device="cpu")
    with pytest.raises(EngineError, match="unknown dtype"):
        TransformersEngine.load(tmp_path, dtype="float8")


class _Broken(torch.nn.Module):
    """A model whose forward pass fails."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(16, 4)

    @property
    def device(self) -> Any:
        return torch.device("cpu")

    def get_input_embeddings(self) -> Any:
        return self.embed

    def forward(self, input_ids: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")


def test_model_failure_surfaces_as_engine_error() -> None:
    broken = TransformersEngine(_Broken(), ModelInfo(id="broken", context_length=64))

    async def main() -> None:
        with pytest.raises(EngineError, match="boom"):
            async for _ in broken.generate([1, 2, 3], SamplingParams(max_tokens=4)):
                pass
        await broken.aclose()
        with pytest.raises(EngineError, match="closed"):
            async for _ in broken.generate([1, 2, 3], SamplingParams(max_tokens=4)):
                pass

    asyncio.run(main())
