"""UpstreamEngine against llama-server's side of the stub server of ``upstream_stub``
(fixtures ``upstream`` and ``stub``): flavour detection, its stream, stop ids the server
does not end on, seeds, and the ids it leaves out of its stream, replayed."""

from __future__ import annotations

from dataclasses import replace

import pytest
from upstream_stub import (
    CALL,
    END,
    PROMPT,
    RETURN,
    Running,
    Stub,
    completions,
    lists_of,
    stub_params,
    with_engine,
)

from openchatml.engines.base import EngineError, ModelInfo, SamplingParams
from openchatml.engines.upstream import UpstreamEngine, _moved_seed

# --- llama.cpp stream ----------------------------------------------------------------------


def test_llamacpp_detected_and_streams_ids(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[ModelInfo, list[list[int]]]:
        return engine.info, await lists_of(engine, stub_params(script=[[1, 2], [3], [CALL], [9]]))

    info, chunks = with_engine(upstream.url + "/llama", body)
    assert info == ModelInfo(
        id="gguf", context_length=2048, engine="llamacpp", device=upstream.url + "/llama"
    )
    assert chunks == [[1], [2], [3], [CALL]]
    sent = completions(stub)[0]
    assert sent.path == "/llama/completion"
    assert sent.body["prompt"] == PROMPT
    assert sent.body["return_tokens"] is True
    assert sent.body["stream"] is True
    assert sent.body["n_predict"] == 2048 - len(PROMPT)
    assert sent.body["temperature"] == 0.0


def test_llamacpp_stop_not_in_its_eog_set(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        params = SamplingParams(
            stop_token_ids=(END,), extra={"stub": {"script": [[1, END, 2, 3]], "delay": 0.05}}
        )
        return await lists_of(engine, params)

    assert with_engine(upstream.url + "/llama", body, flavor="llamacpp") == [[1], [END]]
    assert stub.disconnected.wait(5)


def test_llamacpp_max_tokens(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, SamplingParams(max_tokens=2))

    assert with_engine(upstream.url + "/llama", body) == [[11], [12]]
    assert completions(stub)[0].body["n_predict"] == 2
    assert stub.disconnects == 0


def test_llamacpp_always_sends_a_seed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, SamplingParams(temperature=1.0))
        await lists_of(engine, SamplingParams(temperature=1.0, seed=7))

    with_engine(upstream.url + "/llama", body)
    drawn, given = (seen.body["seed"] for seen in completions(stub))
    assert type(drawn) is int and 0 <= drawn < 0xFFFFFFFF
    assert given == 7


def test_llamacpp_dropped_ids_are_replayed(upstream: Running, stub: Stub) -> None:
    """An id left out of the stream is asked again without streaming, then the stream
    resumes after it (prompt and ids so far, the seed moved on)."""

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        params = SamplingParams(temperature=1.0, seed=5, stop_token_ids=(RETURN, CALL))
        return await lists_of(
            engine, replace(params, extra={"stub": {"script": [[1, 2, 3, 4, RETURN]], "drop": [1]}})
        )

    assert with_engine(upstream.url + "/llama", body) == [[1], [2, 3], [4], [RETURN]]
    first, replay, resumed = (seen.body for seen in completions(stub))
    budget = 2048 - len(PROMPT)
    assert (first["stream"], first["seed"], first["n_predict"]) == (True, 5, budget)
    assert replay == {**first, "stream": False, "n_predict": 3}
    assert resumed == {
        **first,
        "prompt": [*PROMPT, 1, 2, 3],
        "seed": _moved_seed(5, 3),
        "n_predict": budget - 3,
    }
    assert stub.disconnects == 0


def test_llamacpp_dropped_ids_at_the_end(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(
            engine, replace(stub_params(script=[[1, 2, 3, 4, 5]], drop=[2, 3]), max_tokens=4)
        )

    assert with_engine(upstream.url + "/llama", body) == [[1], [2], [3, 4]]
    assert [seen.body["stream"] for seen in completions(stub)] == [True, False]


def test_llamacpp_dropped_end_of_generation(upstream: Running, stub: Stub) -> None:
    """The replay ends on an end-of-generation id: the generation is over, nothing resumes."""

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, stub_params(script=[[1, 2, CALL, 9]], drop=[1], delay=0.05))

    assert with_engine(upstream.url + "/llama", body) == [[1], [2, CALL]]
    assert [seen.body["stream"] for seen in completions(stub)] == [True, False]


def test_llamacpp_replay_that_differs_is_an_error(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, stub_params(script=[[1, 2, 3, RETURN]], drop=[1], replay="differs"))

    with pytest.raises(EngineError, match=r"left 1 token id\(s\) out of its stream .*cannot be recovered"):
        with_engine(upstream.url + "/llama", body)


def test_llamacpp_dropped_ids_have_no_logprobs(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await lists_of(engine, replace(stub_params(script=[[1, 2, 3, RETURN]], drop=[1]), logprobs=1))

    with pytest.raises(EngineError, match=r"left 1 token id\(s\) out of its stream.*no log probabilities"):
        with_engine(upstream.url + "/llama", body)
