"""Streaming throughput and time to first token: our /v1/responses over vLLM, against
vLLM's own /v1/responses and vLLM's raw /v1/completions, in one run.

Usage: ``.venv/bin/python bench/bench_server.py [--streams 1,16] [--tokens 256]
[--rounds 5] [--clients 2] [--vllm-url URL | --fake-upstream] [--markdown]``

One vLLM (CPU) serves the tiny gpt-oss (``--model tiny-random``'s model; installed into its own
venv and started here unless ``--vllm-url`` names a running one), and ``openchatml serve
--upstream`` runs in front of it. Every request streams ``--tokens`` output tokens:
decoding is greedy and the tiny model never ends a greedy turn, so all contenders sample
exactly as many tokens (checked from each answer's usage). Contenders:

* ``completions`` — vLLM ``/v1/completions`` with the very prompt ids our server sends
  (rendered here by the same code), ``stream: true``: the floor, no Responses work at all;
* ``vllm responses`` — vLLM's own ``/v1/responses`` (it renders its own Harmony prompt);
* ``ours`` — ``openchatml serve``'s ``/v1/responses`` (``store: true``), and
  ``ours, store: false``.

A round starts ``streams`` requests at once (``--rounds`` rounds, more where that is
fewer than 16 requests), read by ``--clients`` load-client processes of their own (so
that reading the streams does not compete with the process that measures); aggregate
throughput is the round's output tokens over its wall time, time to first token (TTFT)
is from sending a request to its first token of content (a completion chunk; a Responses
``*.delta`` event). Rounds of the contenders alternate, after one warm-up round each.
The table shows per contender the median round and the spread across rounds (min–max)
of tokens/s and TTFT p50, and how many requests stalled (their first token came after
half their time); then the ratios of ours to raw completions (tokens/s, goal ≥ 0.97) and
to vLLM's own /v1/responses (TTFT p50 over every request, goal ≤ 1.1); the 1-minute load
average is printed at the start and after each streams count. ``--fake-upstream`` runs
every contender against ``bench_front``'s fake vLLM instead: it checks this script, and
measures nothing of vLLM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Final

import httpx

from openchatml.core.encoding import export_o200k_base

# vLLM's own Responses endpoint reads o200k_base from this folder instead of downloading it
os.environ.setdefault(
    "TIKTOKEN_ENCODINGS_BASE", str(export_o200k_base(Path(tempfile.gettempdir()) / "openchatml-tiktoken"))
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))

from cli_server import CliServer

import vllm_harness
from openchatml.demo_models.tiny_random import ensure_tiny_model
from openchatml.responses.input import build_conversation
from openchatml.responses.request import parse_request
from openchatml.responses.runner import prepare

INPUT = "Write a long story about a lighthouse keeper."
GOAL_RATE: Final = 0.97
"""Ours over raw completions, tokens/s: the goal is at least this."""
GOAL_TTFT: Final = 1.1
"""Ours over vLLM's own /v1/responses, TTFT p50: the goal is at most this."""


@dataclass(frozen=True)
class Contender:
    """One endpoint to measure: its name, URL and streamed request body; ``responses``:
    whether it answers Responses events (else completion chunks)."""

    name: str
    url: str
    body: dict[str, Any]
    responses: bool


@dataclass(frozen=True)
class Sample:
    """One streamed request: seconds to its first token of content and to its end, the
    output tokens its usage reports, and when it started and ended (``time.monotonic``,
    one clock for every process)."""

    ttft: float
    seconds: float
    tokens: int
    started: float
    ended: float


@dataclass
class Tally:
    """A contender's rounds: aggregate tokens/s and TTFT p50 per round, every request's
    TTFT, and how many stalled."""

    rates: list[float] = field(default_factory=list)
    round_ttfts: list[float] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)
    stalls: int = 0

    def add(self, rate: float, samples: list[Sample]) -> None:
        """Count one round."""
        self.rates.append(rate)
        self.round_ttfts.append(statistics.median(s.ttft for s in samples))
        self.ttfts.extend(s.ttft for s in samples)
        self.stalls += sum(s.ttft > s.seconds / 2 for s in samples)


def _content_began(text: str) -> bool:
    """Whether completion text holds a token of content: something after ``<|message|>``."""
    at = text.find("<|message|>")
    return at >= 0 and len(text) > at + len("<|message|>")


async def _stream(client: httpx.AsyncClient, contender: Contender) -> Sample:
    """POST the contender's body; read the SSE until it ends. The first token of content
    is a Responses ``*.delta`` event, or the completion chunk that brings the first text
    after ``<|message|>`` (so the header tokens count alike for both)."""
    responses = contender.responses
    started = time.monotonic()
    first: float | None = None
    last_data = ""
    text = ""
    async with client.stream("POST", contender.url, json=contender.body) as reply:
        if reply.status_code != 200:
            raise RuntimeError(
                f"{contender.url} answered {reply.status_code}: {(await reply.aread())[:500]!r}"
            )
        async for line in reply.aiter_lines():
            if line.startswith("data: {"):
                last_data = line
                if first is None and not responses:
                    choices = json.loads(line[len("data: ") :])["choices"]
                    text += choices[0]["text"] if choices else ""
                    if _content_began(text):
                        first = time.monotonic()
            elif first is None and responses and line.startswith("event: ") and line.endswith(".delta"):
                first = time.monotonic()
    ended = time.monotonic()
    final = json.loads(last_data[len("data: ") :]) if last_data else {}
    if responses and final.get("type") not in ("response.completed", "response.incomplete"):
        raise RuntimeError(f"{contender.url} ended its stream with {last_data[:800]!r}")
    usage = final["response"]["usage"]["output_tokens"] if responses else final["usage"]["completion_tokens"]
    return Sample((first or ended) - started, ended - started, int(usage), started, ended)


async def _streams(
    contender: Contender, count: int, start_at: float, client: httpx.AsyncClient
) -> list[Sample]:
    """``count`` streams of ``contender`` at once, from ``start_at`` (``time.monotonic``)."""
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    return list(await asyncio.gather(*(_stream(client, contender) for _ in range(count))))


def _load_worker(inbox: Connection) -> None:
    """A load-client process: runs each ``(contender, count, start_at)`` it is sent and
    answers its samples (or the error's text), until sent ``None``."""

    async def serve() -> None:
        # a fresh connection a request: no keep-alive race with a server closing an idle one
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), limits=limits) as client:
            while (job := await asyncio.to_thread(inbox.recv)) is not None:
                contender, count, start_at = job
                try:
                    inbox.send(await _streams(contender, count, start_at, client))
                except Exception as exc:
                    inbox.send(f"{type(exc).__name__}: {exc}")

    asyncio.run(serve())


class LoadClients:
    """``processes`` load-client processes (a context manager): a round's streams are
    shared among them, so that reading the streams never competes with the measuring."""

    def __init__(self, processes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Connection] = []
        self._workers: list[BaseProcess] = []
        for _ in range(max(1, processes)):
            mine, theirs = context.Pipe()
            worker = context.Process(target=_load_worker, args=(theirs,), daemon=True)
            worker.start()
            self._pipes.append(mine)
            self._workers.append(worker)

    def __enter__(self) -> LoadClients:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
        for worker in self._workers:
            worker.join(10)
            if worker.is_alive():
                worker.terminate()

    def round(self, contender: Contender, streams: int) -> tuple[float, list[Sample]]:
        """``streams`` requests of ``contender`` at once: the aggregate tokens/s (output
        tokens over the round's wall time) and each request's sample."""
        shares = [
            streams // len(self._pipes) + (i < streams % len(self._pipes)) for i in range(len(self._pipes))
        ]
        start_at = time.monotonic() + 0.2  # every process gets its job before any starts
        busy = [(pipe, share) for pipe, share in zip(self._pipes, shares, strict=True) if share]
        for pipe, share in busy:
            pipe.send((contender, share, start_at))
        samples: list[Sample] = []
        for pipe, _ in busy:
            answer = pipe.recv()
            if isinstance(answer, str):
                raise RuntimeError(f"{contender.name}: {answer}")
            samples.extend(answer)
        wall = max(s.ended for s in samples) - min(s.started for s in samples)
        return sum(s.tokens for s in samples) / wall, samples


def contenders(ours: str, vllm: str, model: str, tokens: int) -> list[Contender]:
    """The endpoints to measure, each with its streamed request."""
    body = {"model": model, "input": INPUT, "max_output_tokens": tokens, "temperature": 0, "stream": True}
    request = parse_request({**body, "stream": False})
    prompt = prepare(request, build_conversation(request, request.items), context_length=None).prompt
    completion = {
        "model": model,
        "prompt": prompt,
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "skip_special_tokens": False,
        "return_token_ids": True,
    }
    return [
        Contender("completions", f"{vllm}/v1/completions", completion, False),
        Contender("vllm responses", f"{vllm}/v1/responses", body, True),
        Contender("ours", f"{ours}/v1/responses", {**body, "store": True}, True),
        Contender("ours, store: false", f"{ours}/v1/responses", {**body, "store": False}, True),
    ]


def measure(
    clients: LoadClients, requests: list[Contender], streams: int, tokens: int, rounds: int
) -> dict[str, Tally]:
    """Warm-up, then ``rounds`` alternating rounds of every contender."""
    tallies = {contender.name: Tally() for contender in requests}
    for contender in requests:
        clients.round(contender, streams)
    for _ in range(rounds):
        for contender in requests:
            rate, samples = clients.round(contender, streams)
            if any(sample.tokens != tokens for sample in samples):
                raise RuntimeError(f"{contender.name}: a stream sampled other than {tokens} tokens")
            tallies[contender.name].add(rate, samples)
    return tallies


@contextlib.contextmanager
def ours_over(upstream: str, home: Path) -> Iterator[tuple[str, int]]:
    """``openchatml serve --upstream URL`` on a free port, its data in ``home``: its URL
    and process id."""
    server = CliServer(["--upstream", upstream], home)
    try:
        yield server.url, server.process.pid
    finally:
        server.stop()


@contextlib.contextmanager
def vllm_server(url: str | None, home: Path, fake: float | None) -> Iterator[str]:
    """The vLLM to measure: ``url``, the fake upstream of ``bench_front`` (``fake``: its
    seconds between events), or one started here on the tiny model."""
    if url:
        yield url.rstrip("/")
        return
    if fake is not None:
        from bench_front import fake_upstream

        with fake_upstream(fake) as running:
            yield running
        return
    model = ensure_tiny_model()
    venv = vllm_harness.ensure_vllm_venv()
    port = vllm_harness.free_port()
    with vllm_harness.start_vllm(model, port, venv=venv, log_path=home / "vllm.log") as server:
        print(f"vllm serve healthy after {server.startup_seconds:.0f} s", file=sys.stderr)
        yield server.base_url


def _spread(values: list[float], scale: float = 1.0) -> tuple[str, str]:
    """The median of ``values`` (times ``scale``), and ``min–max``."""
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{mid:,.1f}" if mid < 100 else f"{mid:,.0f}", f"{low:,.0f}–{high:,.0f}"


def table(results: dict[int, dict[str, Tally]], markdown: bool) -> str:
    """The results, one row per (streams, contender): tokens/s and TTFT p50 as the median
    round with the spread (min–max) across rounds, and how many requests stalled."""
    head = ("streams", "endpoint", "tokens/s", "spread", "TTFT p50 ms", "spread", "stalled")
    rows: list[tuple[str, ...]] = []
    for streams, tallies in results.items():
        for name, tally in tallies.items():
            rate, rate_spread = _spread(tally.rates)
            ttft, ttft_spread = _spread(tally.round_ttfts, 1000.0)
            stalled = f"{tally.stalls}/{len(tally.ttfts)}"
            rows.append((str(streams), name, rate, rate_spread, ttft, ttft_spread, stalled))
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])


def ratios(results: dict[int, dict[str, Tally]]) -> str:
    """Ours against the others, per streams: tokens/s over raw completions (goal ≥
    :data:`GOAL_RATE`) and TTFT p50 over vLLM's own /v1/responses (goal ≤ :data:`GOAL_TTFT`)."""
    lines = []
    for streams, tallies in results.items():
        raw = statistics.median(tallies["completions"].rates)
        theirs = statistics.median(tallies["vllm responses"].ttfts)
        for name in ("ours", "ours, store: false"):
            rate = statistics.median(tallies[name].rates) / raw
            ttft = statistics.median(tallies[name].ttfts) / theirs
            lines.append(
                f"{streams:>3} streams, {name:<18}  tokens/s ÷ completions {rate:.2f} "
                f"({'met' if rate >= GOAL_RATE else 'missed'}: ≥ {GOAL_RATE})   TTFT p50 ÷ vllm responses "
                f"{ttft:.2f} ({'met' if ttft <= GOAL_TTFT else 'missed'}: ≤ {GOAL_TTFT})"
            )
    return "\n".join(lines)


def _load_average() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="1,16", help="concurrent streams per round, comma-separated")
    parser.add_argument("--tokens", type=int, default=256, help="output tokens per request")
    parser.add_argument(
        "--rounds", type=int, default=5, help="measured rounds per contender (at least 16 requests each)"
    )
    parser.add_argument("--clients", type=int, default=2, help="load-client processes")
    parser.add_argument("--vllm-url", help="a running vLLM serving the tiny model (default: start one)")
    parser.add_argument(
        "--fake-upstream", action="store_true", help="bench_front's fake vLLM instead (checks this script)"
    )
    parser.add_argument(
        "--fake-delay", type=float, default=0.01, help="seconds between the fake upstream's events"
    )
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    streams = [int(s) for s in args.streams.split(",")]

    def rounds(n: int) -> int:
        return max(args.rounds, -(-16 // n))

    print(f"load average (1 min) at the start: {_load_average()}")
    results: dict[int, dict[str, Tally]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder, LoadClients(args.clients) as clients:
        home = Path(folder)
        with (
            vllm_server(args.vllm_url, home, args.fake_delay if args.fake_upstream else None) as vllm,
            ours_over(vllm, home) as (ours, _),
        ):
            model = httpx.get(f"{vllm}/v1/models").json()["data"][0]["id"]
            requests = contenders(ours, vllm, model, args.tokens)
            for n in streams:
                results[n] = measure(clients, requests, n, args.tokens, rounds(n))
                print(f"load average (1 min) after {n} stream(s): {_load_average()}")
    print(
        f"{args.tokens} output tokens a request, greedy; {args.rounds}+ rounds, {args.clients} load processes"
    )
    print(table(results, args.markdown))
    print(ratios(results))


if __name__ == "__main__":
    main()
