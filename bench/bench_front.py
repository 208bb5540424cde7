"""Our own cost per streamed token, in front of a fast fake upstream: what
``openchatml serve --upstream`` spends on each event when the engine costs nothing.

Usage: ``.venv/bin/python bench/bench_front.py [--streams 16] [--tokens 512] [--rounds 5]
[--clients 2] [--delay 0] [--py-spy PATH --profile FILE]``

The fake upstream (:class:`FakeUpstream`, its own process, uvicorn with httptools) answers
as vLLM does: ``GET /v1/models``, the grammar probe, and ``POST /v1/completions`` streamed
one id per event (a final-channel header, then text ids to ``max_tokens``, ``--delay``
seconds between events); ``POST /v1/responses`` streams a minimal Open Responses event
stream (``*.delta`` events, then ``response.completed`` with its usage), so that
``bench/bench_server.py --fake-upstream`` runs every contender against it. The load clients
run in processes of their own (``bench_server.LoadClients``). The figure to watch is the
server's CPU time (user + system, from ``/proc``) over the tokens streamed: microseconds
per token, ``store: true`` and ``store: false``. With ``--py-spy`` the server is sampled
while the rounds run; ``--profile FILE`` gets its collapsed stacks.

``python bench/bench_front.py fake --port P [--delay S]`` serves the fake upstream alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import orjson

HEADER: Final = (200005, 17196, 200008)
"""``<|channel|>final<|message|>``: the start of a final answer."""
WORDS: Final = ((180069, " lighthouse"), (86333, " keeper"))
"""The text ids the fake samples, in turn, and their text."""
HEADER_TEXT: Final = ("<|channel|>", "final", "<|message|>")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _sse(payload: object) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _sampled(count: int) -> Iterator[tuple[int, str]]:
    """The ids (and their text) the fake samples: the header, then words to ``count``."""
    for index in range(count):
        if index < len(HEADER):
            yield HEADER[index], HEADER_TEXT[index]
        else:
            yield WORDS[index % len(WORDS)]


class FakeUpstream:
    """An ASGI app that answers as a vLLM serving model ``fake`` does, as fast as it can
    (``delay`` seconds between the events of a stream)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = orjson.loads(raw) if raw else {}
        path = scope["path"]
        if path == "/v1/models":
            card = {"id": "fake", "object": "model", "owned_by": "vllm", "max_model_len": 131072}
            await _answer(send, 200, {"object": "list", "data": [card]})
        elif path == "/v1/completions" and not body.get("stream"):
            match = re.search(r'"(\d)"', str(body.get("structured_outputs", {}).get("grammar", "")))
            await _answer(send, 200, {"choices": [{"index": 0, "text": match.group(1) if match else ""}]})
        elif path == "/v1/completions":
            await self._stream(send, self._completions(body))
        elif path == "/v1/responses":
            await self._stream(send, _responses(int(body.get("max_output_tokens") or 16)))
        else:
            await _answer(send, 404, {"error": {"message": f"no route {path}"}})

    async def _stream(self, send: Send, events: Iterator[bytes]) -> None:
        start = {"type": "http.response.start", "status": 200}
        await send({**start, "headers": [(b"content-type", b"text/event-stream")]})
        for event in events:
            await send({"type": "http.response.body", "body": event, "more_body": True})
            await asyncio.sleep(self.delay)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    def _completions(body: dict[str, Any]) -> Iterator[bytes]:
        """vLLM's stream of ``/v1/completions``: one id an event, a finish reason on the
        last, the usage when asked for, then ``[DONE]``."""
        count = int(body.get("max_tokens") or 16)
        for index, (token, text) in enumerate(_sampled(count)):
            last = index == count - 1
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length" if last else None}
            choice |= {"stop_reason": None, "token_ids": [token]}
            yield _sse({"id": "cmpl-fake", "object": "text_completion", "model": "fake", "choices": [choice]})
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": count}
            yield _sse({"id": "cmpl-fake", "object": "text_completion", "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"


def _responses(count: int) -> Iterator[bytes]:
    """A minimal Open Responses stream: a delta per token, then ``response.completed``."""
    for index, (_, text) in enumerate(_sampled(count)):
        event = {"type": "response.output_text.delta", "sequence_number": index, "delta": text}
        yield b"event: response.output_text.delta\n" + _sse(event)
    usage = {"input_tokens": 1, "output_tokens": count, "total_tokens": count + 1}
    done = {"type": "response.completed", "sequence_number": count, "response": {"usage": usage}}
    yield b"event: response.completed\n" + _sse(done)


async def _answer(send: Send, status: int, payload: object) -> None:
    start = {"type": "http.response.start", "status": status}
    await send({**start, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": orjson.dumps(payload)})


def serve_fake(port: int, delay: float) -> None:
    """Serve :class:`FakeUpstream` on loopback ``port`` until interrupted."""
    import uvicorn

    uvicorn.run(
        FakeUpstream(delay),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http="httptools",
        loop="uvloop",
        lifespan="off",
        backlog=2048,
        timeout_keep_alive=5,
    )


@contextlib.contextmanager
def fake_upstream(delay: float = 0.0) -> Iterator[str]:
    """The fake upstream running in a process of its own; yields its URL."""
    port = _free_port()
    command = [sys.executable, __file__, "fake", "--port", str(port), "--delay", str(delay)]
    process = subprocess.Popen(command)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/v1/models", timeout=1.0).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the fake upstream did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """The user + system CPU seconds process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def sampling(pid: int, py_spy: str | None, profile: str | None) -> Iterator[None]:
    """py-spy sampling process ``pid`` (collapsed stacks into ``profile``) while the block runs."""
    if not py_spy or not profile:
        yield
        return
    command = [py_spy, "record", "--pid", str(pid), "--format", "raw", "--output", profile, "--rate", "250"]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        yield
    finally:
        recorder.send_signal(2)
        recorder.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    fake = sub.add_parser("fake", help="serve the fake upstream alone")
    fake.add_argument("--port", type=int, required=True)
    fake.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--streams", type=int, default=16, help="concurrent streams a round")
    parser.add_argument("--tokens", type=int, default=512, help="output tokens a request")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per contender")
    parser.add_argument("--clients", type=int, default=2, help="load-client processes")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between upstream events")
    parser.add_argument("--py-spy", help="the py-spy command, to sample the server")
    parser.add_argument("--profile", help="where py-spy writes the server's collapsed stacks")
    args = parser.parse_args()
    if args.command == "fake":
        serve_fake(args.port, args.delay)
        return
    measure_front(args)


def measure_front(args: argparse.Namespace) -> None:
    """Serve ours over the fake upstream and print tokens/s, TTFT and µs per token."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_server import INPUT, Contender, LoadClients, ours_over

    body = {
        "model": "fake",
        "input": INPUT,
        "max_output_tokens": args.tokens,
        "temperature": 0,
        "stream": True,
    }
    print(f"load average (1 min) {os.getloadavg()[0]:.2f}")
    with (
        tempfile.TemporaryDirectory(prefix="bench-front-") as folder,
        fake_upstream(args.delay) as upstream,
        ours_over(upstream, Path(folder)) as (ours, pid),
        LoadClients(args.clients) as clients,
    ):
        for store in (True, False):
            contender = Contender(
                f"ours, store: {str(store).lower()}", f"{ours}/v1/responses", {**body, "store": store}, True
            )
            clients.round(contender, args.streams)  # warm-up
            rates, ttfts, tokens = [], [], 0
            used = cpu_seconds(pid)
            with sampling(
                pid, args.py_spy, f"{args.profile}.{contender.name[-5:].strip()}" if args.profile else None
            ):
                for _ in range(args.rounds):
                    rate, samples = clients.round(contender, args.streams)
                    rates.append(rate)
                    ttfts.extend(s.ttft for s in samples)
                    tokens += sum(s.tokens for s in samples)
            used = cpu_seconds(pid) - used
            print(
                f"{contender.name}: {statistics.median(rates):,.0f} tokens/s (min {min(rates):,.0f}, max "
                f"{max(rates):,.0f}), TTFT p50 {statistics.median(ttfts) * 1000:.1f} ms, server CPU "
                f"{used / tokens * 1e6:.1f} µs/token ({args.streams} streams, {args.tokens} tokens)"
            )
    print(f"load average (1 min) {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
