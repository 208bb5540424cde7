"""Log probabilities from a real vLLM (CPU) serving the tiny gpt-oss (fixture ``vllm_server``)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from openchatml import STOP_TOKENS_FOR_ASSISTANT_ACTIONS, Conversation, Message, Renderer
from openchatml.engines.base import Chunk, SamplingParams
from openchatml.engines.upstream import UpstreamEngine

pytestmark = pytest.mark.vllm

STOPS = tuple(sorted(STOP_TOKENS_FOR_ASSISTANT_ACTIONS))


def test_greedy_logprobs(vllm_server: Any) -> None:
    prompt = Renderer().completion_tokens(Conversation.from_messages([Message.user("Say hello.")]))
    params = SamplingParams(max_tokens=16, temperature=0.0, stop_token_ids=STOPS, logprobs=3)

    async def main() -> list[Chunk]:
        async with await UpstreamEngine.connect(vllm_server.base_url) as engine:
            return [chunk async for chunk in engine.generate(prompt, params)]

    chunks = asyncio.run(main())
    records = [r for chunk in chunks for r in chunk.logprobs or ()]
    assert all(chunk.logprobs is not None for chunk in chunks)
    assert [r.id for r in records] == [t for chunk in chunks for t in chunk]
    assert records
    for record in records:
        assert len(record.top) == 3
        assert record.top[0][0] == record.id  # greedy: the sampled id is the most likely
        assert record.logprob == pytest.approx(record.top[0][1], abs=1e-5)
        assert all(a >= b for (_, a), (_, b) in itertools.pairwise(record.top))
        assert all(lp <= 0 for _, lp in record.top)
