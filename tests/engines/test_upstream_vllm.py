"""UpstreamEngine against a real vLLM (CPU) serving the tiny gpt-oss (fixture ``vllm_server``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import httpx
import pytest

from openchatml import STOP_TOKENS_FOR_ASSISTANT_ACTIONS, Conversation, Message, Renderer
from openchatml.engines.base import EngineError, SamplingParams
from openchatml.engines.upstream import UpstreamEngine
from vllm_harness import VllmServer

pytestmark = pytest.mark.vllm

VOCAB_SIZE = 201088
STOPS = tuple(sorted(STOP_TOKENS_FOR_ASSISTANT_ACTIONS))


def _prompt() -> list[int]:
    conversation = Conversation.from_messages(
        [Message.system("You are a tiny test model."), Message.user("Say hello in three words.")]
    )
    return Renderer().completion_tokens(conversation)


async def _running(client: httpx.AsyncClient) -> float:
    text = (await client.get("/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:num_requests_running")
    )


def test_greedy_stream_matches_vllm_non_streamed(vllm_server: VllmServer) -> None:
    prompt = _prompt()
    params = SamplingParams(max_tokens=32, temperature=0.0, stop_token_ids=STOPS)

    async def main() -> tuple[list[list[int]], dict[str, Any], str]:
        async with await UpstreamEngine.connect(vllm_server.base_url) as engine:
            assert engine.flavor == "vllm"
            assert engine.info.context_length == 4096
            chunks = [chunk async for chunk in engine.generate(prompt, params)]
            model = engine.info.id
        body = {
            "model": model,
            "prompt": prompt,
            "max_tokens": 32,
            "temperature": 0.0,
            "stop_token_ids": list(STOPS),
            "return_token_ids": True,
            "skip_special_tokens": False,
        }
        async with httpx.AsyncClient(base_url=vllm_server.base_url, timeout=120) as client:
            answer = await client.post("/v1/completions", json=body)
        assert answer.status_code == 200, answer.text
        return chunks, answer.json(), model

    chunks, reference, model = asyncio.run(main())
    ids = [t for chunk in chunks for t in chunk]
    assert model == str(vllm_server.model_dir)
    assert all(chunks)
    assert all(type(t) is int and 0 <= t < VOCAB_SIZE for t in ids)
    assert 1 <= len(ids) <= 32
    choice = reference["choices"][0]
    assert ids == choice["token_ids"], vllm_server.log_tail()
    if choice["finish_reason"] == "stop":
        assert ids[-1] in STOPS or ids[-1] == 199999
    else:
        assert len(ids) == 32


def test_closing_the_stream_aborts_the_request(vllm_server: VllmServer) -> None:
    # as many tokens as the window leaves: the request still runs however slow the gauge is to count it
    params = SamplingParams(max_tokens=4000, temperature=0.0, extra={"ignore_eos": True})

    async def main() -> tuple[float, float]:
        async with (
            await UpstreamEngine.connect(vllm_server.base_url) as engine,
            httpx.AsyncClient(base_url=vllm_server.base_url, timeout=30) as client,
        ):
            stream = cast(AsyncGenerator[list[int]], engine.generate(_prompt(), params))
            received = 0
            async for chunk in stream:
                received += len(chunk)
                if received >= 4:
                    break
            during = await _running(client)
            for _ in range(300):  # the gauge trails the engine's steps: wait until it counts ours
                if during == 1:
                    break
                await asyncio.sleep(0.1)
                during = await _running(client)
            await stream.aclose()
            after = during
            for _ in range(100):
                after = await _running(client)
                if after == 0:
                    break
                await asyncio.sleep(0.1)
            return during, after

    during, after = asyncio.run(main())
    assert during == 1
    assert after == 0, vllm_server.log_tail()


def test_upstream_rejection_is_an_engine_error(vllm_server: VllmServer) -> None:
    async def main() -> None:
        async with await UpstreamEngine.connect(vllm_server.base_url) as engine:
            async for _ in engine.generate([200006] * 5000, SamplingParams(max_tokens=8)):
                pass

    with pytest.raises(EngineError, match=r"answered 400: .*(context length|max_model_len)"):
        asyncio.run(main())
