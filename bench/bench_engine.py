"""The in-process engine against ``transformers serve --continuous-batching``, in one run.

Usage: ``.venv/bin/python bench/bench_engine.py [--streams 1,4,16] [--tokens 128]
[--rounds 3] [--markdown]``

Both servers run the tiny random-weight gpt-oss (``--model tiny-random``'s folder) on
this machine's CPU, each in a process of its own, one at a time (so neither takes cores
from the other):

* ``ours`` — ``openchatml serve --model tiny-random`` (the in-process transformers
  engine, continuous batching), streaming ``/v1/responses``;
* ``transformers serve`` — ``transformers serve --continuous-batching --device cpu`` on
  the same folder, streaming ``/v1/completions`` of the very prompt our server renders
  (Harmony text; its tokenizer reads the special tokens as tokens).

Every request samples ``--tokens`` tokens greedily (the tiny model never ends a greedy
turn; each answer's usage is checked). A round starts ``streams`` requests at once;
aggregate throughput is the round's output tokens over its wall time; time to first
token (TTFT) runs from sending a request to its first token of content. Each contender
gets a warm-up round, then ``--rounds`` rounds per concurrency; the table shows medians
and the ratios ours ÷ transformers serve (throughput: ≥ 1 is ours ahead; TTFT: ≤ 1 is
ours ahead), and ours at each concurrency ÷ ours at one stream. The load client is this
process (asyncio + httpx); the machine's load average is printed with the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))

from cli_server import CliServer
from live import free_port

from openchatml.core.encoding import load_encoding
from openchatml.demo_models.tiny_random import ensure_tiny_model
from openchatml.responses.input import build_conversation
from openchatml.responses.request import parse_request
from openchatml.responses.runner import prepare

INPUT = "Write a long story about a lighthouse keeper."


@dataclass
class Sample:
    """One streamed request: seconds to its first token of content, and its output tokens."""

    ttft: float
    tokens: int


@dataclass
class Tally:
    """A contender's rounds at one concurrency: tokens/s per round, every request's TTFT."""

    rates: list[float] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)


Request = Callable[[httpx.AsyncClient], Awaitable[Sample]]


async def _responses(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Sample:
    """Stream one ``/v1/responses`` request: TTFT is its first ``*.delta`` event."""
    started = time.perf_counter()
    first: float | None = None
    last = ""
    async with client.stream("POST", url, json=body) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"{url} answered {reply.status_code}: {(await reply.aread())[:500]!r}")
        async for line in reply.aiter_lines():
            if first is None and line.startswith("event: ") and line.endswith(".delta"):
                first = time.perf_counter()
            elif line.startswith("data: {"):
                last = line
    final = orjson.loads(last[len("data: ") :])
    if final.get("type") not in ("response.completed", "response.incomplete"):
        raise RuntimeError(f"{url} ended its stream with {last[:500]!r}")
    return Sample((first or time.perf_counter()) - started, int(final["response"]["usage"]["output_tokens"]))


async def _completions(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Sample:
    """Stream one ``/v1/completions`` request: TTFT is its first chunk with text."""
    started = time.perf_counter()
    first: float | None = None
    usage: dict[str, Any] | None = None
    async with client.stream("POST", url, json=body) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"{url} answered {reply.status_code}: {(await reply.aread())[:500]!r}")
        async for line in reply.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = orjson.loads(line[len("data: ") :])
            if first is None and any(choice.get("text") for choice in chunk.get("choices") or ()):
                first = time.perf_counter()
            usage = chunk.get("usage") or usage
    if usage is None:
        raise RuntimeError(f"{url} sent no usage")
    return Sample((first or time.perf_counter()) - started, int(usage["completion_tokens"]))


async def measure(request: Request, streams: int, tokens: int, rounds: int) -> Tally:
    """A warm-up round, then ``rounds`` rounds of ``streams`` requests at once."""
    tally = Tally()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        for round_number in range(rounds + 1):
            started = time.perf_counter()
            samples = await asyncio.gather(*(request(client) for _ in range(streams)))
            wall = time.perf_counter() - started
            if any(sample.tokens != tokens for sample in samples):
                raise RuntimeError(f"a stream sampled {[s.tokens for s in samples]} tokens, not {tokens}")
            if round_number:
                tally.rates.append(sum(s.tokens for s in samples) / wall)
                tally.ttfts.extend(s.ttft for s in samples)
    return tally


def prompt_text(tokens: int) -> str:
    """The Harmony prompt our server renders for the benchmark's request, as text."""
    body = {"model": "tiny-random", "input": INPUT, "max_output_tokens": tokens, "temperature": 0}
    request = parse_request(body)
    ids = prepare(request, build_conversation(request, request.items), context_length=None).prompt
    return load_encoding().decode(ids)


@contextlib.contextmanager
def ours(home: Path, tokens: int) -> Iterator[Request]:
    """``openchatml serve --model tiny-random`` (batch size 16), and its request."""
    server = CliServer(["--model", "tiny-random", "--store", "none", "--batch-size", "16"], home / "ours")
    body = {
        "model": "tiny-random",
        "input": INPUT,
        "temperature": 0,
        "stream": True,
        "max_output_tokens": tokens,
    }
    try:
        yield lambda client: _responses(client, f"{server.url}/v1/responses", body)
    finally:
        server.stop()


@contextlib.contextmanager
def transformers_serve(home: Path, tokens: int) -> Iterator[Request]:
    """``transformers serve --continuous-batching`` on the tiny model, and its request."""
    folder = ensure_tiny_model()
    port = free_port()
    log = (home / "transformers-serve.log").open("wb")
    command = [
        str(Path(sys.executable).parent / "transformers"),
        "serve",
        "--continuous-batching",
        "--device",
        "cpu",
        "--port",
        str(port),
        str(folder),
    ]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    body = {
        "model": str(folder),
        "prompt": prompt_text(tokens),
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    try:
        _wait_healthy(url, process, home / "transformers-serve.log")
        yield lambda client: _completions(client, f"{url}/v1/completions", body)
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        if process.poll() is None:
            process.kill()
        log.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"transformers serve exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"transformers serve not healthy after {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def table(results: dict[str, dict[int, Tally]], markdown: bool) -> str:
    """One row per concurrency: both contenders' medians and the ratios."""
    head = (
        "streams",
        "ours tok/s",
        "transformers serve tok/s",
        "ratio",
        "ours TTFT p50 / p99 ms",
        "transformers serve TTFT p50 / p99 ms",
        "TTFT p50 ratio",
        "ours ÷ ours at 1",
    )
    mine, theirs = results["ours"], results["transformers serve"]
    single = statistics.median(mine[min(mine)].rates)
    rows = []
    for streams in mine:
        rate, peer = statistics.median(mine[streams].rates), statistics.median(theirs[streams].rates)
        p50, peer50 = _quantile(mine[streams].ttfts, 0.5), _quantile(theirs[streams].ttfts, 0.5)
        rows.append(
            (
                str(streams),
                f"{rate:,.0f}",
                f"{peer:,.0f}",
                f"{rate / peer:.2f}",
                f"{p50 * 1000:,.0f} / {_quantile(mine[streams].ttfts, 0.99) * 1000:,.0f}",
                f"{peer50 * 1000:,.0f} / {_quantile(theirs[streams].ttfts, 0.99) * 1000:,.0f}",
                f"{p50 / peer50:.2f}",
                f"{rate / single:.2f}",
            )
        )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="1,4,16", help="concurrent streams per round, comma-separated")
    parser.add_argument("--tokens", type=int, default=128, help="output tokens per request")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per contender and concurrency")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    streams = [int(s) for s in args.streams.split(",")]
    results: dict[str, dict[int, Tally]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as folder:
        home = Path(folder)
        with ours(home, args.tokens) as request:
            results["ours"] = {n: asyncio.run(measure(request, n, args.tokens, args.rounds)) for n in streams}
        with transformers_serve(home, args.tokens) as request:
            results["transformers serve"] = {
                n: asyncio.run(measure(request, n, args.tokens, args.rounds)) for n in streams
            }
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.tokens} output tokens a request, greedy; medians of {args.rounds} rounds; load average {load}"
    )
    print(table(results, args.markdown))


if __name__ == "__main__":
    main()
