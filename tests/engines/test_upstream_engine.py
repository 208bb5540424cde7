"""UpstreamEngine against a stub server on loopback that speaks vLLM's and llama.cpp's streams.

The stub is a raw ASGI app run by uvicorn in a thread. Each test steers it through
``SamplingParams.extra["stub"]``, which the engine passes through in the request body.
Paths under ``/llama`` answer as llama-server does; every other path as vLLM does. Asked
for log probabilities, the stub scores each step with the made-up distribution of
``_distribution``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

import httpx
import orjson
import pytest
import uvicorn

from openchatml.engines.base import Chunk, Engine, EngineError, ModelInfo, SamplingParams, TokenLogprob
from openchatml.engines.upstream import UpstreamEngine, UpstreamError, _moved_seed

RETURN, CALL, END = 200002, 200012, 200007
PROMPT = [200006, 1428, 200008, 13225, 200007, 200006, 173781]
CONTEXT = 1024

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class Seen:
    """One request the stub received."""

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    client_port: int


@dataclass
class Stub:
    """A vLLM / llama-server impostor. ``disconnects`` counts streams cut by the client."""

    requests: list[Seen] = field(default_factory=list)
    disconnects: int = 0
    disconnected: threading.Event = field(default_factory=threading.Event)

    def reset(self) -> None:
        self.requests.clear()
        self.disconnects = 0
        self.disconnected.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = orjson.loads(raw) if raw else {}
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        path: str = scope["path"]
        self.requests.append(Seen(scope["method"], path, body, headers, scope["client"][1]))
        llama = path.startswith("/llama/")
        route = path.removeprefix("/llama")
        if route == "/v1/models":
            await _json(send, 200, _llama_models() if llama else _vllm_models())
        elif route == "/props" and llama:
            await _json(send, 200, {"default_generation_settings": {"n_ctx": 2048}})
        elif route == "/v1/completions" and not llama:
            await self._complete(body, receive, send, llama=False)
        elif route == "/completion" and llama:
            await self._complete(body, receive, send, llama=True)
        else:
            await _json(
                send, 404, {"error": {"message": f"no route {path}", "type": "NotFound", "code": 404}}
            )

    async def _complete(self, body: dict[str, Any], receive: Receive, send: Send, *, llama: bool) -> None:
        stub: dict[str, Any] = body.get("stub", {})
        if llama and body.get("stream") is False and "status" not in stub:
            await _json(send, 200, _llama_answer(body, stub))
            return
        if "status" in stub:
            if "raw" in stub:
                await _send_all(send, stub["status"], stub["raw"].encode(), b"text/plain")
            else:
                error = {
                    "message": stub.get("message", "bad"),
                    "type": "BadRequestError",
                    "code": stub["status"],
                }
                await _json(send, stub["status"], {"error": error})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        watcher = asyncio.ensure_future(receive())
        events = _llama_events(body, stub) if llama else _vllm_events(body, stub)
        try:
            for event in events:
                if watcher.done():
                    self.disconnects += 1
                    self.disconnected.set()
                    return
                await send({"type": "http.response.body", "body": event, "more_body": True})
                if stub.get("delay"):
                    await asyncio.sleep(stub["delay"])
                else:
                    await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()


def _vllm_models() -> dict[str, Any]:
    def card(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "owned_by": "vllm", "root": name, "max_model_len": CONTEXT}

    return {"object": "list", "data": [card("stub-model"), card("other-model")]}


def _llama_models() -> dict[str, Any]:
    meta = {"vocab_type": 2, "n_vocab": 201088, "n_ctx_train": 131072}
    return {
        "object": "list",
        "data": [{"id": "gguf", "object": "model", "owned_by": "llamacpp", "meta": meta}],
    }


def _script(stub: dict[str, Any]) -> list[list[int]]:
    return [list(chunk) for chunk in stub.get("script", [[11, 12], [13], [14, 15, 16]])]


def _distribution(token: int) -> dict[int, float]:
    """The stub model's log probabilities at the step that sampled ``token``: twenty ids
    1000–1019, and ``token`` itself."""
    return {**{1000 + j: -0.25 * (j + 1) for j in range(20)}, token: -(token % 5) / 2 - 0.125}


def _ranked(token: int, k: int) -> list[tuple[int, float]]:
    """The ``k`` most likely ``(id, logprob)`` at the step that sampled ``token``."""
    return sorted(_distribution(token).items(), key=lambda pair: -pair[1])[:k]


def _vllm_logprobs(chunk: list[int], body: dict[str, Any], stub: dict[str, Any]) -> dict[str, Any] | None:
    """vLLM's ``choices[0].logprobs``: per id its log probability and an object holding
    it first, then the ``logprobs`` most likely ids."""
    k = body.get("logprobs")
    if k is None or stub.get("malformed") == "no_logprobs":
        return None

    def name(t: int) -> str:
        return f"token_id:{t}" if body.get("return_tokens_as_token_ids") else "x"

    tops = [{name(t): _distribution(t)[t], **{name(i): lp for i, lp in _ranked(t, k)}} for t in chunk]
    return {
        "text_offset": list(range(len(chunk))),
        "token_logprobs": [_distribution(t)[t] for t in chunk],
        "tokens": [name(t) for t in chunk],
        "top_logprobs": tops,
    }


def _llama_probabilities(token: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities`` for one streamed id."""

    def entry(t: int, logprob: float) -> dict[str, Any]:
        return {"id": t, "token": "x", "bytes": [120], "logprob": logprob}

    ranked = _ranked(token, body["n_probs"])
    return [entry(token, _distribution(token)[token]) | {"top_logprobs": [entry(t, lp) for t, lp in ranked]}]


def _sse(payload: object) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _vllm_events(body: dict[str, Any], stub: dict[str, Any]) -> Iterator[bytes]:
    """vLLM's stream: ids in ``choices[0].token_ids``, a finish_reason, then [DONE]."""
    stops = set(body.get("stop_token_ids") or ()) if stub.get("honour_stops", True) else set()
    limit = body.get("max_tokens")
    script = _script(stub)
    sent = 0
    for n, chunk in enumerate(script):
        finish = None
        for i, t in enumerate(chunk):
            if t in stops:
                chunk, finish = chunk[: i + 1], "stop"
                break
        if limit is not None and sent + len(chunk) >= limit:
            chunk, finish = chunk[: limit - sent], finish or "length"
        if n == len(script) - 1 and not stub.get("forever") and stub.get("malformed") != "truncate":
            finish = finish or "stop"
        sent += len(chunk)
        logprobs = _vllm_logprobs(chunk, body, stub)
        choice: dict[str, Any] = {"index": 0, "text": "x", "logprobs": logprobs, "finish_reason": finish}
        choice["stop_reason"] = None
        if n == 0:
            choice["prompt_token_ids"] = body["prompt"]
        choice["token_ids"] = chunk
        if stub.get("malformed") == "no_token_ids" and n == 1:
            del choice["token_ids"]
        if stub.get("malformed") == "not_json" and n == 1:
            yield b"data: {not json\n\n"
            continue
        if stub.get("malformed") == "error_event" and n == 1:
            yield _sse({"error": {"message": "EngineCore died", "type": "InternalServerError", "code": 500}})
            yield b"data: [DONE]\n\n"
            return
        yield b": keep-alive comment\n\n"
        yield _sse({"id": "cmpl-1", "object": "text_completion", "model": "stub-model", "choices": [choice]})
        if finish is not None:
            break
    if stub.get("forever"):
        while True:
            yield _sse(
                {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "token_ids": [99]}]}
            )
    if stub.get("malformed") == "truncate":
        return
    if stub.get("usage"):
        yield _sse(
            {"id": "cmpl-1", "object": "text_completion", "choices": [], "usage": {"completion_tokens": 1}}
        )
    # split one event over two writes, as a proxy may
    yield b"data: [DO"
    yield b"NE]\n\n"


def _llama_tokens(body: dict[str, Any], stub: dict[str, Any]) -> tuple[int, list[int], str]:
    """What llama-server samples for ``body``: where in the script it starts (a prompt
    that extends ``PROMPT`` by ``k`` ids resumes at the ``k``-th), its ids (to an
    end-of-generation id or ``n_predict``) and its ``stop_type``."""
    prompt = body["prompt"]
    start = len(prompt) - len(PROMPT) if prompt[: len(PROMPT)] == PROMPT else 0
    limit = body.get("n_predict", -1)
    tokens: list[int] = []
    for token in [t for chunk in _script(stub) for t in chunk][start:]:
        tokens.append(token)
        if token in (RETURN, CALL):
            return start, tokens, "eos"
        if 0 <= limit <= len(tokens):
            return start, tokens, "limit"
    return start, tokens, "eos"


def _llama_events(body: dict[str, Any], stub: dict[str, Any]) -> Iterator[bytes]:
    """llama-server's /completion stream: one id per event in ``tokens``, then ``stop``.
    The ids at the script positions in ``stub["drop"]`` are left out, as llama-server
    leaves out tokens that end inside a UTF-8 character (``tokens_predicted`` counts them)."""
    start, tokens, stop_type = _llama_tokens(body, stub)
    dropped = set(stub.get("drop", ()))
    for decoded, token in enumerate(tokens, start=1):
        if start + decoded - 1 in dropped:
            continue
        event = {"index": 0, "content": "x", "tokens": [token], "stop": False, "tokens_predicted": decoded}
        if body.get("n_probs", 0) > 0 and not stub.get("no_probs"):
            event["completion_probabilities"] = _llama_probabilities(token, body)
        yield _sse(event)
    final = {"index": 0, "content": "", "tokens": [], "stop": True, "tokens_predicted": len(tokens)}
    yield _sse(final | {"stop_type": stop_type, "model": "gguf"})


def _llama_answer(body: dict[str, Any], stub: dict[str, Any]) -> dict[str, Any]:
    """llama-server's non-streamed /completion answer: every id (``stub["replay"]``
    ``"differs"`` changes the first)."""
    _, tokens, stop_type = _llama_tokens(body, stub)
    if stub.get("replay") == "differs":
        tokens = [tokens[0] + 1, *tokens[1:]]
    return {
        "index": 0,
        "content": "x" * len(tokens),
        "tokens": tokens,
        "stop": True,
        "tokens_predicted": len(tokens),
        "stop_type": stop_type,
        "model": "gguf",
    }


async def _send_all(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]}
    )
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: object) -> None:
    await _send_all(send, status, orjson.dumps(payload), b"application/json")


@dataclass
class Running:
    stub: Stub
    url: str


@pytest.fixture(scope="module")
def upstream() -> Iterator[Running]:
    stub = Stub()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(stub, lifespan="off", log_level="warning", timeout_keep_alive=30)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "stub server did not start"
        time.sleep(0.01)
    try:
        yield Running(stub, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture()
def stub(upstream: Running) -> Stub:
    upstream.stub.reset()
    return upstream.stub


def _params(**stub: Any) -> SamplingParams:
    return SamplingParams(temperature=0.0, stop_token_ids=(RETURN, CALL), extra={"stub": stub})


async def _chunks(engine: UpstreamEngine, params: SamplingParams, prompt: list[int] = PROMPT) -> list[Chunk]:
    return [chunk async for chunk in engine.generate(prompt, params)]


async def _collect(
    engine: UpstreamEngine, params: SamplingParams, prompt: list[int] = PROMPT
) -> list[list[int]]:
    return [list(chunk) for chunk in await _chunks(engine, params, prompt)]


def _run(url: str, body: Callable[[UpstreamEngine], Awaitable[Any]], **connect: Any) -> Any:
    async def main() -> Any:
        async with await UpstreamEngine.connect(url, **connect) as engine:
            return await body(engine)

    return asyncio.run(main())


def _completions(stub: Stub) -> list[Seen]:
    return [seen for seen in stub.requests if seen.method == "POST"]


# --- connect ---------------------------------------------------------------------------


def test_connect_learns_model_and_context(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> ModelInfo:
        assert isinstance(engine, Engine)
        return engine.info

    info = _run(upstream.url + "/v1/", body, api_key="sekrit")
    assert info == ModelInfo(id="stub-model", context_length=CONTEXT, engine="vllm", device=upstream.url)
    assert stub.requests[0].path == "/v1/models"
    assert stub.requests[0].headers["authorization"] == "Bearer sekrit"


def test_connect_carries_the_tokenizer_it_is_given(upstream: Running) -> None:
    """``--upstream URL --tokenizer PATH``: the server samples ids, the tokenizer given here
    renders and reads them; without one the model speaks Harmony."""
    given = object()

    async def body(engine: UpstreamEngine) -> object:
        return engine.tokenizer

    assert _run(upstream.url, body) is None
    assert _run(upstream.url, body, tokenizer=given) is given


def test_connect_picks_the_named_model(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await _collect(engine, _params())

    assert _run(upstream.url, body, model="other-model") == [[11, 12], [13], [14, 15, 16]]
    assert _completions(stub)[0].body["model"] == "other-model"


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
        return await _collect(engine, params)

    assert _run(upstream.url, body) == [[1, 2, 3], [4], [5, 6]]
    sent = _completions(stub)[0]
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
        return await _collect(engine, _params(script=[[1], [2, CALL, 3], [4]]))

    assert _run(upstream.url, body) == [[1], [2, CALL]]
    assert stub.disconnects == 0


def test_stop_token_enforced_when_upstream_ignores_it(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        params = _params(script=[[1], [2, RETURN, 3], [4], [5]], honour_stops=False, delay=0.05)
        return await _collect(engine, params)

    assert _run(upstream.url, body) == [[1], [2, RETURN]]
    assert stub.disconnected.wait(5), "the stub did not see the stream closed"


def test_max_tokens(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[list[list[int]], list[list[int]]]:
        script = [[1, 2], [3, 4], [5]]
        honoured = await _collect(engine, SamplingParams(max_tokens=3, extra={"stub": {"script": script}}))
        ignored = SamplingParams(max_tokens=3, extra={"stub": {"script": script}, "max_tokens": None})
        return honoured, await _collect(engine, ignored)

    honoured, ignored = _run(upstream.url, body)
    assert honoured == [[1, 2], [3]]
    assert ignored == [[1, 2], [3]]
    assert _completions(stub)[0].body["max_tokens"] == 3


def test_max_tokens_clamped_to_context(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await _collect(engine, SamplingParams(max_tokens=CONTEXT * 2))

    _run(upstream.url, body)
    assert _completions(stub)[0].body["max_tokens"] == CONTEXT - len(PROMPT)


def test_usage_chunk_and_comments_are_skipped(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await _collect(engine, _params(usage=True))

    assert _run(upstream.url, body) == [[11, 12], [13], [14, 15, 16]]


def test_each_stream_has_a_connection_of_its_own(upstream: Running, stub: Stub) -> None:
    """No kept-alive connection is reused: reuse stalled streams behind vLLM's server."""

    async def body(engine: UpstreamEngine) -> None:
        for _ in range(3):
            assert await _collect(engine, _params(script=[[1], [RETURN]])) == [[1], [RETURN]]

    _run(upstream.url, body)
    ports = [seen.client_port for seen in stub.requests if seen.path.endswith("/completions")]
    assert len(ports) == 3 and len(set(ports)) == 3


@pytest.mark.parametrize("status", [400, 500])
def test_upstream_error_status(upstream: Running, stub: Stub, status: int) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, _params(status=status, message="max_tokens must be at least 1"))

    with pytest.raises(EngineError, match=f"answered {status}: max_tokens must be at least 1") as info:
        _run(upstream.url, body)
    assert isinstance(info.value, UpstreamError)
    assert info.value.status == status
    assert info.value.url == upstream.url + "/v1/completions"


def test_upstream_error_plain_text(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, _params(status=502, raw="Bad Gateway\n"))

    with pytest.raises(EngineError, match=r"answered 502: Bad Gateway$"):
        _run(upstream.url, body)


def test_error_event_in_stream(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        got: list[list[int]] = []
        async for chunk in engine.generate(PROMPT, _params(malformed="error_event")):
            got.append(list(chunk))
        return got

    with pytest.raises(EngineError, match="reported an error: EngineCore died"):
        _run(upstream.url, body)


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
        await _collect(engine, SamplingParams(extra={"stub": {"malformed": kind}}))

    with pytest.raises(EngineError, match=message):
        _run(upstream.url, body)


def test_generate_refused_after_connect(upstream: Running) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def main() -> None:
        client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}")
        async with UpstreamEngine(client, ModelInfo(id="gone")) as engine:
            await _collect(engine, SamplingParams())

    with pytest.raises(EngineError, match="cannot reach upstream"):
        asyncio.run(main())


def test_cancel_closes_the_upstream_request(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        got: list[list[int]] = []
        stream = cast(AsyncGenerator[Chunk], engine.generate(PROMPT, _params(forever=True, delay=0.01)))
        async for chunk in stream:
            got.append(list(chunk))
            if len(got) == 5:
                break
        await stream.aclose()
        seen = await asyncio.to_thread(stub.disconnected.wait, 5)
        assert seen, "the stub did not see the client go"
        return got

    assert _run(upstream.url, body) == [[11, 12], [13], [14, 15, 16], [99], [99]]
    assert stub.disconnects == 1


def test_cancel_by_task_cancellation(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        async def consume() -> None:
            async for _ in engine.generate(PROMPT, _params(forever=True, delay=0.01)):
                pass

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(stub.disconnected.wait, 5)

    _run(upstream.url, body)


def test_concurrent_streams(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[list[int]]]:
        jobs = [
            _collect(engine, _params(script=[[n], [n + 1], [RETURN]], delay=0.01)) for n in range(0, 40, 2)
        ]
        return await asyncio.gather(*jobs)

    results = _run(upstream.url, body)
    assert results == [[[n], [n + 1], [RETURN]] for n in range(0, 40, 2)]


# --- log probabilities ---------------------------------------------------------------------


def _expected(ids: list[int], k: int) -> tuple[TokenLogprob, ...]:
    return tuple(TokenLogprob(t, _distribution(t)[t], tuple(_ranked(t, k))) for t in ids)


def test_vllm_logprobs_request_and_answer(upstream: Running, stub: Stub) -> None:
    script = [[1, 2, 3], [1004], [5, RETURN, 6], [7]]

    async def body(engine: UpstreamEngine) -> tuple[list[Chunk], list[Chunk]]:
        params = SamplingParams(logprobs=3, stop_token_ids=(RETURN,), extra={"stub": {"script": script}})
        unstopped = {"stub": {"script": script, "honour_stops": False, "delay": 0.02}}
        zero = SamplingParams(logprobs=0, stop_token_ids=(RETURN,), extra=unstopped)
        return await _chunks(engine, params), await _chunks(engine, zero)

    three, zero = _run(upstream.url, body)
    assert [list(c) for c in three] == [list(c) for c in zero] == [[1, 2, 3], [1004], [5, RETURN]]
    assert [c.logprobs for c in three] == [_expected(list(c), 3) for c in three]
    assert [c.logprobs for c in zero] == [_expected(list(c), 0) for c in zero]
    # 1004 is not among the 3 best: vLLM sends it and the 3 best, the engine keeps the 3 best
    assert three[1].logprobs == (TokenLogprob(1004, -2.125, ((1000, -0.25), (1001, -0.5), (1002, -0.75))),)
    assert three[2].logprobs is not None and three[2].logprobs[0].top[0] == (5, -0.125)
    sent = [seen.body for seen in _completions(stub)]
    assert (sent[0]["logprobs"], sent[0]["return_tokens_as_token_ids"]) == (3, True)
    assert (sent[1]["logprobs"], sent[1]["return_tokens_as_token_ids"]) == (0, True)


def test_vllm_logprobs_missing_is_malformed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        params = SamplingParams(logprobs=2, extra={"stub": {"malformed": "no_logprobs"}})
        await _collect(engine, params)

    with pytest.raises(EngineError, match="no log probability per id"):
        _run(upstream.url, body)

    async def text_keys(engine: UpstreamEngine) -> None:
        await _collect(engine, SamplingParams(logprobs=2, extra={"return_tokens_as_token_ids": False}))

    with pytest.raises(EngineError, match="return_tokens_as_token_ids"):
        _run(upstream.url, text_keys)


def test_llamacpp_logprobs(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[list[Chunk], list[Chunk], list[Chunk]]:
        script = {"stub": {"script": [[1, 1003], [CALL], [9]]}}
        return (
            await _chunks(engine, SamplingParams(logprobs=2, stop_token_ids=(CALL,), extra=script)),
            await _chunks(engine, SamplingParams(logprobs=0, stop_token_ids=(CALL,), extra=script)),
            await _chunks(engine, SamplingParams(stop_token_ids=(CALL,), extra=script)),
        )

    two, zero, none = _run(upstream.url + "/llama", body)
    assert (
        [list(c) for c in two] == [list(c) for c in zero] == [list(c) for c in none] == [[1], [1003], [CALL]]
    )
    assert [c.logprobs for c in two] == [_expected(list(c), 2) for c in two]
    assert [c.logprobs for c in zero] == [_expected(list(c), 0) for c in zero]
    assert all(c.logprobs is None for c in none)
    sent = [seen.body for seen in _completions(stub)]
    assert [(b.get("n_probs"), b.get("post_sampling_probs")) for b in sent] == [
        (2, False),
        (1, False),
        (None, None),
    ]


def test_llamacpp_logprobs_missing_is_malformed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, SamplingParams(logprobs=1, extra={"stub": {"no_probs": True}}))

    with pytest.raises(EngineError, match="completion_probabilities"):
        _run(upstream.url + "/llama", body)


# --- llama.cpp stream ----------------------------------------------------------------------


def test_llamacpp_detected_and_streams_ids(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> tuple[ModelInfo, list[list[int]]]:
        return engine.info, await _collect(engine, _params(script=[[1, 2], [3], [CALL], [9]]))

    info, chunks = _run(upstream.url + "/llama", body)
    assert info == ModelInfo(
        id="gguf", context_length=2048, engine="llamacpp", device=upstream.url + "/llama"
    )
    assert chunks == [[1], [2], [3], [CALL]]
    sent = _completions(stub)[0]
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
        return await _collect(engine, params)

    assert _run(upstream.url + "/llama", body, flavor="llamacpp") == [[1], [END]]
    assert stub.disconnected.wait(5)


def test_llamacpp_max_tokens(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await _collect(engine, SamplingParams(max_tokens=2))

    assert _run(upstream.url + "/llama", body) == [[11], [12]]
    assert _completions(stub)[0].body["n_predict"] == 2
    assert stub.disconnects == 0


def test_llamacpp_always_sends_a_seed(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, SamplingParams(temperature=1.0))
        await _collect(engine, SamplingParams(temperature=1.0, seed=7))

    _run(upstream.url + "/llama", body)
    drawn, given = (seen.body["seed"] for seen in _completions(stub))
    assert type(drawn) is int and 0 <= drawn < 0xFFFFFFFF
    assert given == 7


def test_llamacpp_dropped_ids_are_replayed(upstream: Running, stub: Stub) -> None:
    """An id left out of the stream is asked again without streaming, then the stream
    resumes after it (prompt and ids so far, the seed moved on)."""

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        params = SamplingParams(temperature=1.0, seed=5, stop_token_ids=(RETURN, CALL))
        return await _collect(
            engine, replace(params, extra={"stub": {"script": [[1, 2, 3, 4, RETURN]], "drop": [1]}})
        )

    assert _run(upstream.url + "/llama", body) == [[1], [2, 3], [4], [RETURN]]
    first, replay, resumed = (seen.body for seen in _completions(stub))
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
        return await _collect(engine, replace(_params(script=[[1, 2, 3, 4, 5]], drop=[2, 3]), max_tokens=4))

    assert _run(upstream.url + "/llama", body) == [[1], [2], [3, 4]]
    assert [seen.body["stream"] for seen in _completions(stub)] == [True, False]


def test_llamacpp_dropped_end_of_generation(upstream: Running, stub: Stub) -> None:
    """The replay ends on an end-of-generation id: the generation is over, nothing resumes."""

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await _collect(engine, _params(script=[[1, 2, CALL, 9]], drop=[1], delay=0.05))

    assert _run(upstream.url + "/llama", body) == [[1], [2, CALL]]
    assert [seen.body["stream"] for seen in _completions(stub)] == [True, False]


def test_llamacpp_replay_that_differs_is_an_error(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, _params(script=[[1, 2, 3, RETURN]], drop=[1], replay="differs"))

    with pytest.raises(EngineError, match=r"left 1 token id\(s\) out of its stream .*cannot be recovered"):
        _run(upstream.url + "/llama", body)


def test_llamacpp_dropped_ids_have_no_logprobs(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        await _collect(engine, replace(_params(script=[[1, 2, 3, RETURN]], drop=[1]), logprobs=1))

    with pytest.raises(EngineError, match=r"left 1 token id\(s\) out of its stream.*no log probabilities"):
        _run(upstream.url + "/llama", body)
