"""UpstreamEngine against a real llama.cpp llama-server serving the tiny gpt-oss as GGUF
(fixture ``llamacpp_server``): the same token ids on both sides, flavour and context
detected, greedy and seeded ids equal to llama-server's own non-streamed answers (ids it
leaves out of its stream filled in), stop ids, ``max_tokens``, cancellation and log
probabilities."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator
from typing import Any, cast

import httpx
import pytest

from llamacpp_harness import LlamaServer
from openchatml import STOP_TOKENS_FOR_ASSISTANT_ACTIONS, Conversation, Message, Renderer, load_encoding
from openchatml.engines.base import Chunk, EngineError, SamplingParams
from openchatml.engines.upstream import UpstreamEngine, _moved_seed

pytestmark = pytest.mark.llamacpp

VOCAB_SIZE = 201088
CONTEXT = 4096
STOPS = tuple(sorted(STOP_TOKENS_FOR_ASSISTANT_ACTIONS))
MESSAGE = 200008
"""``<|message|>``: the tiny model's third id after ``assistant``, whatever it samples."""
SAMPLING = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}
"""llama.cpp's own defaults cut the distribution (top-k 40, min-p 0.05); the engine sends these."""


def _prompt(text: str = "Say hello in three words.") -> list[int]:
    conversation = Conversation.from_messages(
        [Message.system("You are a tiny test model."), Message.user(text)]
    )
    return Renderer().completion_tokens(conversation)


def _reference(server: LlamaServer, body: dict[str, Any]) -> dict[str, Any]:
    """llama-server's own non-streamed /completion answer (every id, streamed or not)."""
    answer = httpx.post(
        f"{server.base_url}/completion", json={**SAMPLING, **body, "return_tokens": True}, timeout=300
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    assert result["tokens_predicted"] == len(result["tokens"])
    return result


def _generate(server: LlamaServer, prompt: list[int], params: SamplingParams) -> list[Chunk]:
    async def main() -> list[Chunk]:
        async with await UpstreamEngine.connect(server.base_url) as engine:
            return [chunk async for chunk in engine.generate(prompt, params)]

    return asyncio.run(main())


def _busy_slots(server: LlamaServer) -> int:
    slots = httpx.get(f"{server.base_url}/slots", timeout=10).json()
    return sum(1 for slot in slots if slot["is_processing"])


def test_same_token_ids_on_both_sides(llamacpp_server: LlamaServer) -> None:
    """llama.cpp's vocabulary (converted from the tiny model's tokenizer) is ours, id for id."""
    encoding = load_encoding()
    text = (
        "<|start|>assistant<|channel|>analysis<|message|>Hi 你好 😀 naïve\n\tcode()<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"
        "<|return|>"
    )
    ours = encoding.encode(text, allowed_special="all")
    with httpx.Client(base_url=llamacpp_server.base_url, timeout=30) as http:
        tokenized = http.post("/tokenize", json={"content": text, "parse_special": True}).json()["tokens"]
        assert tokenized == ours
        prompt = _prompt()
        detokenized = http.post("/detokenize", json={"tokens": prompt}).json()["content"]
        assert detokenized == encoding.decode(prompt)
        for name in (
            "<|start|>",
            "<|channel|>",
            "<|message|>",
            "<|end|>",
            "<|call|>",
            "<|return|>",
            "<|constrain|>",
        ):
            ids = http.post("/tokenize", json={"content": name, "parse_special": True}).json()["tokens"]
            assert ids == encoding.encode(name, allowed_special="all"), name
            assert len(ids) == 1


def test_flavour_model_and_context_detected(llamacpp_server: LlamaServer) -> None:
    async def main() -> Any:
        async with await UpstreamEngine.connect(llamacpp_server.base_url + "/v1") as engine:
            return engine.flavor, engine.info

    flavor, info = asyncio.run(main())
    assert flavor == "llamacpp"
    assert info.id == llamacpp_server.alias
    assert info.engine == "llamacpp"
    assert info.context_length == CONTEXT  # a slot's, not the whole cache's


@pytest.mark.parametrize("text", ["Say hello in three words.", "Write at length."])
def test_greedy_ids_equal_llamacpp_non_streamed(llamacpp_server: LlamaServer, text: str) -> None:
    prompt = _prompt(text)
    chunks = _generate(
        llamacpp_server, prompt, SamplingParams(max_tokens=64, temperature=0.0, stop_token_ids=STOPS)
    )
    ids = [t for chunk in chunks for t in chunk]
    reference = _reference(llamacpp_server, {"prompt": prompt, "n_predict": 64, "temperature": 0.0})
    assert ids == reference["tokens"], llamacpp_server.log_tail()
    assert all(type(t) is int and 0 <= t < VOCAB_SIZE for t in ids)
    if reference["stop_type"] == "eos":
        assert ids[-1] in STOPS
    else:
        assert len(ids) == 64


def test_seeded_ids_with_gaps_filled(llamacpp_server: LlamaServer) -> None:
    """Sampled at temperature 1, the tiny model now and then samples a token that ends
    inside a UTF-8 character, whose id llama-server leaves out of its stream. The engine
    fills it in: up to the first such gap its ids are llama-server's own non-streamed ids
    for the seed; after it, llama-server's own for the resumed request (the prompt and
    ids so far, the seed moved on)."""
    prompt = _prompt()
    gaps = 0
    for seed in range(12):
        params = SamplingParams(max_tokens=80, temperature=1.0, seed=seed, stop_token_ids=STOPS)
        chunks = _generate(llamacpp_server, prompt, params)
        ids = [t for chunk in chunks for t in chunk]
        body = {"prompt": prompt, "n_predict": 80, "temperature": 1.0, "seed": seed}
        filled = [n for n, chunk in enumerate(chunks) if len(chunk) > 1]
        if not filled:
            assert ids == _reference(llamacpp_server, body)["tokens"]
            continue
        gaps += 1
        resume = sum(len(chunk) for chunk in chunks[: filled[0] + 1])
        assert ids[:resume] == _reference(llamacpp_server, {**body, "n_predict": resume})["tokens"]
        later = filled[1] if len(filled) > 1 else len(chunks)  # to the next gap's resumption
        upto = sum(len(chunk) for chunk in chunks[:later])
        resumed = {
            "prompt": prompt + ids[:resume],
            "seed": _moved_seed(seed, resume),
            "n_predict": upto - resume,
        }
        assert ids[resume:upto] == _reference(llamacpp_server, {**body, **resumed})["tokens"][: upto - resume]
        assert len(ids) <= 80
    assert gaps, "no seed sampled a token inside a UTF-8 character: the test proves nothing"


def test_stop_id_ends_the_stream_and_the_request(llamacpp_server: LlamaServer) -> None:
    """A stop id llama.cpp does not end on (``<|message|>``) still ends our stream, and
    closing it ends the request upstream."""
    params = SamplingParams(max_tokens=2000, temperature=0.0, stop_token_ids=(MESSAGE,))
    ids = [t for chunk in _generate(llamacpp_server, _prompt(), params) for t in chunk]
    assert ids[-1] == MESSAGE and MESSAGE not in ids[:-1]
    assert len(ids) == 3
    for _ in range(100):
        if _busy_slots(llamacpp_server) == 0:
            break
        asyncio.run(asyncio.sleep(0.1))
    assert _busy_slots(llamacpp_server) == 0, llamacpp_server.log_tail()


def test_max_tokens(llamacpp_server: LlamaServer) -> None:
    for limit in (1, 5):
        params = SamplingParams(max_tokens=limit, temperature=0.0, extra={"ignore_eos": True})
        chunks = _generate(llamacpp_server, _prompt(), params)
        assert sum(len(chunk) for chunk in chunks) == limit


def test_closing_the_stream_aborts_the_request(llamacpp_server: LlamaServer) -> None:
    params = SamplingParams(max_tokens=3000, temperature=0.0, extra={"ignore_eos": True})

    async def main() -> tuple[int, int]:
        async with await UpstreamEngine.connect(llamacpp_server.base_url) as engine:
            stream = cast(AsyncGenerator[Chunk], engine.generate(_prompt(), params))
            received = 0
            async for chunk in stream:
                received += len(chunk)
                if received >= 4:
                    break
            during = await asyncio.to_thread(_busy_slots, llamacpp_server)
            await stream.aclose()
            after = during
            for _ in range(100):
                after = await asyncio.to_thread(_busy_slots, llamacpp_server)
                if after == 0:
                    break
                await asyncio.sleep(0.1)
            return during, after

    during, after = asyncio.run(main())
    assert during == 1
    assert after == 0, llamacpp_server.log_tail()


def test_logprobs(llamacpp_server: LlamaServer) -> None:
    """Greedy, each id is its step's most likely; the log probabilities are a softmax of
    the raw logits (llama.cpp's ``n_probs``), ``k`` alternatives each."""
    prompt = _prompt()
    for k in (0, 3):
        chunks = _generate(
            llamacpp_server, prompt, SamplingParams(max_tokens=24, temperature=0.0, logprobs=k)
        )
        ids = [t for chunk in chunks for t in chunk]
        assert (
            ids
            == _reference(llamacpp_server, {"prompt": prompt, "n_predict": 24, "temperature": 0.0})["tokens"]
        )
        for chunk in chunks:
            assert chunk.logprobs is not None and len(chunk.logprobs) == len(chunk)
            for token, record in zip(chunk, chunk.logprobs, strict=True):
                assert record.id == token
                assert record.logprob <= 0.0 and math.isfinite(record.logprob)
                assert len(record.top) == k
                if k:
                    assert record.top[0] == (token, record.logprob)
                    assert [lp for _, lp in record.top] == sorted((lp for _, lp in record.top), reverse=True)
                    assert sum(math.exp(lp) for _, lp in record.top) <= 1.0 + 1e-5


def test_prompt_over_the_context_is_an_engine_error(llamacpp_server: LlamaServer) -> None:
    with pytest.raises(EngineError, match=r"answered \d+: .*context"):
        _generate(llamacpp_server, [200006] * (CONTEXT + 10), SamplingParams(max_tokens=8))
