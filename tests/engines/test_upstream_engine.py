"""UpstreamEngine against the stub server of ``upstream_stub`` (fixtures ``upstream`` and
``stub``): connecting, vLLM's stream, errors, cancellation and log probabilities."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncGenerator
from typing import cast

import httpx
import pytest
from upstream_stub import (
    CALL,
    CONTEXT,
    PROMPT,
    RETURN,
    Running,
    Stub,
    chunks_of,
    completions,
    distribution,
    lists_of,
    ranking,
    stub_params,
    with_engine,
)

from openchatml.engines.base import Chunk, Engine, EngineError, ModelInfo, SamplingParams, TokenLogprob
from openchatml.engines.upstream import UpstreamEngine
from openchatml.engines.upstream_events import UpstreamError

# --- connect ---------------------------------------------------------------------------


def test_connect_learns_model_and_context(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> ModelInfo:
        assert isinstance(engine, Engine)
        return engine.info

    info = with_engine(upstream.url + "/v1/", body, api_key="sekrit")
    assert info == ModelInfo(id="stub-model", context_length=CONTEXT, engine="vllm", device=upstream.url)
    assert stub.requests[0].path == "/v1/models"
    assert stub.requests[0].headers["authorization"] == "Bearer sekrit"


def test_connect_carries_the_tokenizer_it_is_given(upstream: Running) -> None:
    """``--upstream URL --tokenizer PATH``: the server samples ids, the tokenizer given here
    renders and reads them; without one the model speaks Harmony."""
    given = object()

    async def body(engine: UpstreamEngine) -> object:
        return engine.tokenizer

    assert with_engine(upstream.url, body) is None
    assert with_engine(upstream.url, body, tokenizer=given) is given


def test_connect_picks_the_named_model(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, stub_params())

    assert with_engine(upstream.url, body, model="other-model") == [[11, 12], [13], [14, 15, 16]]
    assert completions(stub)[0].body["model"] == "other-model"


def test_connect_unknown_model(upstream: Running, stub: Stub) -> None:
    with pytest.raises(
        EngineError, match=r"does not serve model 'nope' \(it serves 'stub-model', 'other-model'\)"
    ):
        asyncio.run(UpstreamEngine.connect(upstream.url, model="nope"))


def test_connect_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EngineError, match=rf"cannot reach upstream http://127.0.0.1:{port}/v1/models"):
        asyncio.run(UpstreamEngine.connect(f"http://127.0.0.1:{port}"))


def test_connect_not_found(upstream: Running, stub: Stub) -> None:
    with pytest.raises(UpstreamError, match="answered 404: no route /nowhere/v1/models") as info:
        asyncio.run(UpstreamEngine.connect(upstream.url + "/nowhere"))
    assert info.value.status == 404


def test_connect_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="flavor"):
        asyncio.run(UpstreamEngine.connect("http://127.0.0.1:1", flavor="sglang"))
    with pytest.raises(ValueError, match="http"):
        asyncio.run(UpstreamEngine.connect("127.0.0.1:8000"))


# --- vLLM stream -------------------------------------------------------------------------


def test_ids_round_trip_and_request_fields(upstream: Running, stub: Stub) -> None:
    params = SamplingParams(
        temperature=0.5,
        top_p=0.9,
        presence_penalty=0.25,
        frequency_penalty=-0.5,
        seed=7,
        stop_token_ids=(RETURN, CALL),
        extra={"stub": {"script": [[1, 2, 3], [4], [5, 6]]}, "top_k": 20},
    )

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, params)

    assert with_engine(upstream.url, body) == [[1, 2, 3], [4], [5, 6]]
    sent = completions(stub)[0]
    assert sent.path == "/v1/completions"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "model": "stub-model",
        "prompt": PROMPT,
        "stream": True,
        "return_token_ids": True,
        "skip_special_tokens": False,
        "include_stop_str_in_output": True,
        "stop_token_ids": [RETURN, CALL],
        "max_tokens": CONTEXT - len(PROMPT),
        "temperature": 0.5,
        "top_p": 0.9,
        "presence_penalty": 0.25,
        "frequency_penalty": -0.5,
        "seed": 7,
        "top_k": 20,
        "stub": {"script": [[1, 2, 3], [4], [5, 6]]},
    }


def test_stop_token_ends_the_stream(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, stub_params(script=[[1], [2, CALL, 3], [4]]))

    assert with_engine(upstream.url, body) == [[1], [2, CALL]]
    assert stub.disconnects == 0


def test_stop_token_enforced_when_upstream_ignores_it(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        params = stub_params(script=[[1], [2, RETURN, 3], [4], [5]], honour_stops=False, delay=0.05)
        return await lists_of(engine, params)

    assert with_engine(upstream.url, body) == [[1], [2, RETURN]]
    assert stub.disconnected.wait(5), "the stub did not see the stream closed"


def test_max_tokens(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[list[list[int]], list[list[int]]]:
        script = [[1, 2], [3, 4], [5]]
        honoured = await lists_of(engine, SamplingParams(max_tokens=3, extra={"stub": {"script": script}}))
        ignored = SamplingParams(max_tokens=3, extra={"stub": {"script": script}, "max_tokens": None})
        return honoured, await lists_of(engine, ignored)

    honoured, ignored = with_engine(upstream.url, body)
    assert honoured == [[1, 2], [3]]
    assert ignored == [[1, 2], [3]]
    assert completions(stub)[0].body["max_tokens"] == 3


def test_max_tokens_clamped_to_context(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, SamplingParams(max_tokens=CONTEXT * 2))

    with_engine(upstream.url, body)
    assert completions(stub)[0].body["max_tokens"] == CONTEXT - len(PROMPT)


def test_usage_chunk_and_comments_are_skipped(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, stub_params(usage=True))

    assert with_engine(upstream.url, body) == [[11, 12], [13], [14, 15, 16]]


@pytest.mark.parametrize("status", [400, 500])
def test_upstream_error_status(upstream: Running, stub: Stub, status: int) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, stub_params(status=status, message="max_tokens must be at least 1"))

    with pytest.raises(EngineError, match=f"answered {status}: max_tokens must be at least 1") as info:
        with_engine(upstream.url, body)
    assert isinstance(info.value, UpstreamError)
    assert info.value.status == status
    assert info.value.url == upstream.url + "/v1/completions"


def test_upstream_error_plain_text(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, stub_params(status=502, raw="Bad Gateway\n"))

    with pytest.raises(EngineError, match=r"answered 502: Bad Gateway$"):
        with_engine(upstream.url, body)


def test_error_event_in_stream(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        got: list[list[int]] = []
        async for chunk in engine.generate(PROMPT, stub_params(malformed="error_event")):
            got.append(list(chunk))
        return got

    with pytest.raises(EngineError, match="reported an error: EngineCore died"):
        with_engine(upstream.url, body)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("not_json", "data is not JSON: {not json"),
        ("no_token_ids", r"no list of ids in choices\[0\]\.token_ids"),
        ("truncate", "closed the stream before the generation ended"),
    ],
)
def test_malformed_stream(upstream: Running, stub: Stub, kind: str, message: str) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, SamplingParams(extra={"stub": {"malformed": kind}}))

    with pytest.raises(EngineError, match=message):
        with_engine(upstream.url, body)


def test_generate_refused_after_connect(upstream: Running) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def main() -> None:
        client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}")
        async with UpstreamEngine(client, ModelInfo(id="gone"), connect_deadline=0.2) as engine:
            await lists_of(engine, SamplingParams())

    with pytest.raises(EngineError, match="cannot reach upstream"):
        asyncio.run(main())


def test_cancel_closes_the_upstream_request(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        got: list[list[int]] = []
        stream = cast(AsyncGenerator[Chunk], engine.generate(PROMPT, stub_params(forever=True, delay=0.01)))
        async for chunk in stream:
            got.append(list(chunk))
            if len(got) == 5:
                break
        await stream.aclose()
        seen = await asyncio.to_thread(stub.disconnected.wait, 5)
        assert seen, "the stub did not see the client go"
        return got

    assert with_engine(upstream.url, body) == [[11, 12], [13], [14, 15, 16], [99], [99]]
    assert stub.disconnects == 1


def test_cancel_by_task_cancellation(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        async def consume() -> None:
            async for _ in engine.generate(PROMPT, stub_params(forever=True, delay=0.01)):
                pass

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(stub.disconnected.wait, 5)

    with_engine(upstream.url, body)


def test_concurrent_streams(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[list[int]]]:
        jobs = [
            lists_of(engine, stub_params(script=[[n], [n + 1], [RETURN]], delay=0.01))
            for n in range(0, 40, 2)
        ]
        return await asyncio.gather(*jobs)

    results = with_engine(upstream.url, body)
    assert results == [[[n], [n + 1], [RETURN]] for n in range(0, 40, 2)]


# --- log probabilities ---------------------------------------------------------------------


def _expected(ids: list[int], k: int) -> tuple[TokenLogprob, ...]:
    return tuple(TokenLogprob(t, distribution(t)[t], tuple(ranking(t, k))) for t in ids)


def test_vllm_logprobs_request_and_answer(upstream: Running, stub: Stub) -> None:
    script = [[1, 2, 3], [1004], [5, RETURN, 6], [7]]

    async def body(engine: UpstreamEngine) -> tuple[list[Chunk], list[Chunk]]:
        params = SamplingParams(logprobs=3, stop_token_ids=(RETURN,), extra={"stub": {"script": script}})
        unstopped = {"stub": {"script": script, "honour_stops": False, "delay": 0.02}}
        zero = SamplingParams(logprobs=0, stop_token_ids=(RETURN,), extra=unstopped)
        return await chunks_of(engine, params), await chunks_of(engine, zero)

    three, zero = with_engine(upstream.url, body)
    assert [list(c) for c in three] == [list(c) for c in zero] == [[1, 2, 3], [1004], [5, RETURN]]
    assert [c.logprobs for c in three] == [_expected(list(c), 3) for c in three]
    assert [c.logprobs for c in zero] == [_expected(list(c), 0) for c in zero]
    # 1004 is not among the 3 best: vLLM sends it and the 3 best, the engine keeps the 3 best
    assert three[1].logprobs == (TokenLogprob(1004, -2.125, ((1000, -0.25), (1001, -0.5), (1002, -0.75))),)
    assert three[2].logprobs is not None and three[2].logprobs[0].top[0] == (5, -0.125)
    sent = [seen.body for seen in completions(stub)]
    assert (sent[0]["logprobs"], sent[0]["return_tokens_as_token_ids"]) == (3, True)
    assert (sent[1]["logprobs"], sent[1]["return_tokens_as_token_ids"]) == (0, True)


def test_vllm_logprobs_missing_is_malformed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        params = SamplingParams(logprobs=2, extra={"stub": {"malformed": "no_logprobs"}})
        await lists_of(engine, params)

    with pytest.raises(EngineError, match="no log probability per id"):
        with_engine(upstream.url, body)

    async def text_keys(engine: UpstreamEngine) -> None:
        await lists_of(engine, SamplingParams(logprobs=2, extra={"return_tokens_as_token_ids": False}))

    with pytest.raises(EngineError, match="return_tokens_as_token_ids"):
        with_engine(upstream.url, text_keys)


def test_llamacpp_logprobs(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[list[Chunk], list[Chunk], list[Chunk]]:
        script = {"stub": {"script": [[1, 1003], [CALL], [9]]}}
        return (
            await chunks_of(engine, SamplingParams(logprobs=2, stop_token_ids=(CALL,), extra=script)),
            await chunks_of(engine, SamplingParams(logprobs=0, stop_token_ids=(CALL,), extra=script)),
            await chunks_of(engine, SamplingParams(stop_token_ids=(CALL,), extra=script)),
        )

    two, zero, none = with_engine(upstream.url + "/llama", body)
    assert (
        [list(c) for c in two] == [list(c) for c in zero] == [list(c) for c in none] == [[1], [1003], [CALL]]
    )
    assert [c.logprobs for c in two] == [_expected(list(c), 2) for c in two]
    assert [c.logprobs for c in zero] == [_expected(list(c), 0) for c in zero]
    assert all(c.logprobs is None for c in none)
    sent = [seen.body for seen in completions(stub)]
    assert [(b.get("n_probs"), b.get("post_sampling_probs")) for b in sent] == [
        (2, False),
        (1, False),
        (None, None),
    ]


def test_llamacpp_logprobs_missing_is_malformed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, SamplingParams(logprobs=1, extra={"stub": {"no_probs": True}}))

    with pytest.raises(EngineError, match="completion_probabilities"):
        with_engine(upstream.url + "/llama", body)
