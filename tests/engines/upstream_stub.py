"""A stub server on loopback that speaks vLLM's and llama.cpp's streams, for the tests of
UpstreamEngine (fixtures ``upstream`` and ``stub`` in this folder's conftest).

The stub is a raw ASGI app run by uvicorn in a thread (:func:`serving`). Each test steers
it through ``SamplingParams.extra["stub"]``, which the engine passes through in the
request body. Paths under ``/llama`` answer as llama-server does; every other path as vLLM
does. Asked for log probabilities, the stub scores each step with the made-up distribution
of ``distribution``. The grammar probe of ``connect`` (one greedy id after id 0 under a
grammar that allows one digit) is answered by ``Stub.grammars``: ``"honour"`` (the digit),
``"refuse"`` (a 400) or ``"ignore"`` (other text); :func:`completions` leaves probes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn

from openchatml.engines.base import Chunk, SamplingParams
from openchatml.engines.upstream import UpstreamEngine

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

    @property
    def probe(self) -> bool:
        """Whether this is the grammar probe of ``connect``."""
        body = self.body
        one = body.get("max_tokens") == 1 or body.get("n_predict") == 1
        return one and body.get("prompt") == [0] and ("grammar" in body or "structured_outputs" in body)


@dataclass
class Stub:
    """A vLLM / llama-server impostor. ``disconnects`` counts streams cut by the client."""

    requests: list[Seen] = field(default_factory=list)
    disconnects: int = 0
    disconnected: threading.Event = field(default_factory=threading.Event)
    grammars: str = "honour"

    def reset(self) -> None:
        self.requests.clear()
        self.disconnects = 0
        self.disconnected.clear()
        self.grammars = "honour"

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
        seen = Seen(scope["method"], path, body, headers, scope["client"][1])
        self.requests.append(seen)
        llama = path.startswith("/llama/")
        route = path.removeprefix("/llama")
        if seen.probe:
            await self._probe(body, send, llama=llama)
        elif route == "/v1/models":
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

    async def _probe(self, body: dict[str, Any], send: Send, *, llama: bool) -> None:
        """Answer the grammar probe as ``grammars`` says."""
        if self.grammars == "refuse":
            error = {"message": "grammars are not supported", "type": "BadRequestError", "code": 400}
            await _json(send, 400, {"error": error})
            return
        grammar = body["grammar"] if llama else body["structured_outputs"]["grammar"]
        match = re.search(r'"(\d)"', grammar)
        text = match.group(1) if match and self.grammars == "honour" else "x"
        await _json(send, 200, {"content": text} if llama else {"choices": [{"index": 0, "text": text}]})

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


def distribution(token: int) -> dict[int, float]:
    """The stub model's log probabilities at the step that sampled ``token``: twenty ids
    1000–1019, and ``token`` itself."""
    return {**{1000 + j: -0.25 * (j + 1) for j in range(20)}, token: -(token % 5) / 2 - 0.125}


def ranking(token: int, k: int) -> list[tuple[int, float]]:
    """The ``k`` most likely ``(id, logprob)`` at the step that sampled ``token``."""
    return sorted(distribution(token).items(), key=lambda pair: -pair[1])[:k]


def _vllm_logprobs(chunk: list[int], body: dict[str, Any], stub: dict[str, Any]) -> dict[str, Any] | None:
    """vLLM's ``choices[0].logprobs``: per id its log probability and an object holding
    it first, then the ``logprobs`` most likely ids."""
    k = body.get("logprobs")
    if k is None or stub.get("malformed") == "no_logprobs":
        return None

    def name(t: int) -> str:
        return f"token_id:{t}" if body.get("return_tokens_as_token_ids") else "x"

    tops = [{name(t): distribution(t)[t], **{name(i): lp for i, lp in ranking(t, k)}} for t in chunk]
    return {
        "text_offset": list(range(len(chunk))),
        "token_logprobs": [distribution(t)[t] for t in chunk],
        "tokens": [name(t) for t in chunk],
        "top_logprobs": tops,
    }


def _llama_probabilities(token: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities`` for one streamed id."""

    def entry(t: int, logprob: float) -> dict[str, Any]:
        return {"id": t, "token": "x", "bytes": [120], "logprob": logprob}

    ranked = ranking(token, body["n_probs"])
    return [entry(token, distribution(token)[token]) | {"top_logprobs": [entry(t, lp) for t, lp in ranked]}]


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


def stub_params(**stub: Any) -> SamplingParams:
    return SamplingParams(temperature=0.0, stop_token_ids=(RETURN, CALL), extra={"stub": stub})


async def chunks_of(
    engine: UpstreamEngine, params: SamplingParams, prompt: list[int] = PROMPT
) -> list[Chunk]:
    return [chunk async for chunk in engine.generate(prompt, params)]


async def lists_of(
    engine: UpstreamEngine, params: SamplingParams, prompt: list[int] = PROMPT
) -> list[list[int]]:
    return [list(chunk) for chunk in await chunks_of(engine, params, prompt)]


def with_engine(url: str, body: Callable[[UpstreamEngine], Awaitable[Any]], **connect: Any) -> Any:
    async def main() -> Any:
        async with await UpstreamEngine.connect(url, **connect) as engine:
            return await body(engine)

    return asyncio.run(main())


def completions(stub: Stub) -> list[Seen]:
    """The completion requests the stub received (the grammar probes left out)."""
    return [seen for seen in stub.requests if seen.method == "POST" and not seen.probe]


@contextlib.contextmanager
def serving(
    listener: socket.socket | None = None, *, start_after: float = 0.0, keep_alive: float = 30.0
) -> Iterator[Running]:
    """The stub served by uvicorn in a thread on a loopback port until the block ends: on
    ``listener`` (a bound socket) if given, else on a free port. With ``start_after`` the
    block begins at once and the stub starts serving (accepting) that many seconds later;
    ``keep_alive``: the seconds after which it closes an idle connection."""
    stub = Stub()
    sock = listener or socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if listener is None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(stub, lifespan="off", log_level="warning", timeout_keep_alive=keep_alive)
    server = uvicorn.Server(config)

    def run() -> None:
        if start_after and not server.should_exit:
            time.sleep(start_after)
        if not server.should_exit:
            server.run(sockets=[sock])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and not start_after:
        assert time.monotonic() < deadline, "stub server did not start"
        time.sleep(0.01)
    try:
        yield Running(stub, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(10 + start_after)
        sock.close()
