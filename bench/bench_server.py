"""Streaming throughput and time to first token: our /v1/responses over vLLM, against
vLLM's own /v1/responses and vLLM's raw /v1/completions, in one run.

Usage: ``.venv/bin/python bench/bench_server.py [--streams 1,16] [--tokens 256]
[--rounds 5] [--vllm-url URL] [--markdown]``

One vLLM (CPU) serves the tiny gpt-oss (``--model tiny-random``'s model; installed into its own
venv and started here unless ``--vllm-url`` names a running one), and ``openchatml serve
--upstream`` runs in front of it. Every request streams ``--tokens`` output tokens:
decoding is greedy and the tiny model never ends a greedy turn, so all contenders sample
exactly as many tokens (checked from each answer's usage). Contenders:

* ``completions`` — vLLM ``/v1/completions`` with the very prompt ids our server sends
  (rendered here by the same code), ``stream: true``: the floor, no Responses work at all;
* ``vllm responses`` — vLLM's own ``/v1/responses`` (it renders its own Harmony prompt);
* ``ours`` — ``openchatml serve``'s ``/v1/responses`` (stored: the default), and
  ``ours, store: false``.

A round starts ``streams`` requests at once (``--rounds`` rounds, more where that is
fewer than 16 requests); aggregate throughput is the round's output
tokens over its wall time, time to first token (TTFT) is from sending a request to its
first token of content (a completion chunk; a Responses ``*.delta`` event). Rounds of
the contenders alternate, after one warm-up round each; the table shows medians, the
ratios of ours to the other two, and how many requests stalled (their first token came
after half their time).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from openchatml.core.encoding import export_o200k_base

# vLLM's own Responses endpoint reads o200k_base from this folder instead of downloading it
os.environ.setdefault(
    "TIKTOKEN_ENCODINGS_BASE", str(export_o200k_base(Path(tempfile.gettempdir()) / "openchatml-tiktoken"))
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))

from cli_server import CliServer

import vllm_harness
from openchatml.demo_models.tiny_random import ensure_tiny_model
from openchatml.responses.input import build_conversation
from openchatml.responses.request import parse_request
from openchatml.responses.runner import prepare

INPUT = "Write a long story about a lighthouse keeper."


@dataclass
class Sample:
    """One streamed request: seconds to its first token of content and to its end, and
    the output tokens its usage reports."""

    ttft: float
    seconds: float
    tokens: int


@dataclass
class Tally:
    """A contender's rounds: aggregate tokens/s per round, and every request's TTFT."""

    rates: list[float] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)
    stalls: int = 0


Request = Callable[[httpx.AsyncClient], Any]


def _content_began(text: str) -> bool:
    """Whether completion text holds a token of content: something after ``<|message|>``."""
    at = text.find("<|message|>")
    return at >= 0 and len(text) > at + len("<|message|>")


async def _stream(client: httpx.AsyncClient, url: str, body: dict[str, Any], *, responses: bool) -> Sample:
    """POST ``body`` with ``stream: true``; read the SSE until it ends. The first token of
    content is a Responses ``*.delta`` event, or the completion chunk that brings the
    first text after ``<|message|>`` (so the header tokens count alike for both)."""
    started = time.perf_counter()
    first: float | None = None
    last_data = ""
    text = ""
    async with client.stream("POST", url, json=body) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"{url} answered {reply.status_code}: {(await reply.aread())[:500]!r}")
        async for line in reply.aiter_lines():
            if line.startswith("data: {"):
                last_data = line
                if first is None and not responses:
                    choices = json.loads(line[len("data: ") :])["choices"]
                    text += choices[0]["text"] if choices else ""
                    if _content_began(text):
                        first = time.perf_counter()
            elif first is None and responses and line.startswith("event: ") and line.endswith(".delta"):
                first = time.perf_counter()
    ended = time.perf_counter()
    final = json.loads(last_data[len("data: ") :]) if last_data else {}
    if responses and final.get("type") not in ("response.completed", "response.incomplete"):
        raise RuntimeError(f"{url} ended its stream with {last_data[:800]!r}")
    if responses:
        tokens = int(final["response"]["usage"]["output_tokens"])
    else:
        tokens = int(final["usage"]["completion_tokens"])
    return Sample((first or ended) - started, ended - started, tokens)


def contenders(ours: str, vllm: str, model: str, tokens: int) -> dict[str, Request]:
    """Name → a coroutine function that streams one request of that contender."""
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
    return {
        "completions": lambda c: _stream(c, f"{vllm}/v1/completions", completion, responses=False),
        "vllm responses": lambda c: _stream(c, f"{vllm}/v1/responses", body, responses=True),
        "ours": lambda c: _stream(c, f"{ours}/v1/responses", body, responses=True),
        "ours, store: false": lambda c: _stream(
            c, f"{ours}/v1/responses", {**body, "store": False}, responses=True
        ),
    }


async def _round(
    client: httpx.AsyncClient, request: Request, streams: int, tokens: int
) -> tuple[float, list[Sample]]:
    started = time.perf_counter()
    samples: list[Sample] = await asyncio.gather(*(request(client) for _ in range(streams)))
    wall = time.perf_counter() - started
    for sample in samples:
        if sample.tokens != tokens:
            raise RuntimeError(f"a stream sampled {sample.tokens} tokens, not {tokens}")
    return sum(s.tokens for s in samples) / wall, samples


async def measure(requests: dict[str, Request], streams: int, tokens: int, rounds: int) -> dict[str, Tally]:
    """Warm-up, then ``rounds`` alternating rounds of every contender."""
    # a fresh connection a request: no keep-alive race with a server closing an idle one
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    tallies = {name: Tally() for name in requests}
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), limits=limits) as client:
        for request in requests.values():
            await _round(client, request, streams, tokens)
        for _ in range(rounds):
            for name, request in requests.items():
                rate, samples = await _round(client, request, streams, tokens)
                tallies[name].rates.append(rate)
                tallies[name].ttfts.extend(s.ttft for s in samples)
                tallies[name].stalls += sum(s.ttft > s.seconds / 2 for s in samples)
    return tallies


@contextlib.contextmanager
def ours_over(vllm: str, home: Path) -> Iterator[str]:
    """``openchatml serve --upstream vllm`` on a free port, its data in ``home``."""
    server = CliServer(["--upstream", vllm], home)
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def vllm_server(url: str | None, home: Path) -> Iterator[str]:
    """The vLLM to measure: ``url``, or one started here on the tiny model."""
    if url:
        yield url.rstrip("/")
        return
    model = ensure_tiny_model()
    venv = vllm_harness.ensure_vllm_venv()
    port = vllm_harness.free_port()
    with vllm_harness.start_vllm(model, port, venv=venv, log_path=home / "vllm.log") as server:
        print(f"vllm serve healthy after {server.startup_seconds:.0f} s", file=sys.stderr)
        yield server.base_url


def table(results: dict[int, dict[str, Tally]], markdown: bool) -> str:
    """The results, one row per (streams, contender), with ratios of ours to the others."""
    head = (
        "streams",
        "endpoint",
        "tokens/s",
        "TTFT p50 ms",
        "stalled",
        "ours ÷ it, tokens/s",
        "it ÷ ours, TTFT",
    )
    rows: list[tuple[str, ...]] = []
    for streams, tallies in results.items():
        ours_rate = statistics.median(tallies["ours"].rates)
        ours_ttft = statistics.median(tallies["ours"].ttfts)
        for name, tally in tallies.items():
            rate = statistics.median(tally.rates)
            ttft = statistics.median(tally.ttfts)
            mine = name.startswith("ours")
            rows.append(
                (
                    str(streams),
                    name,
                    f"{rate:,.0f}",
                    f"{ttft * 1000:,.1f}",
                    f"{tally.stalls}/{len(tally.ttfts)}",
                    "" if mine else f"{ours_rate / rate:.2f}",
                    "" if mine else f"{ttft / ours_ttft:.2f}",
                )
            )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="1,16", help="concurrent streams per round, comma-separated")
    parser.add_argument("--tokens", type=int, default=256, help="output tokens per request")
    parser.add_argument(
        "--rounds", type=int, default=5, help="measured rounds per contender (at least 16 requests each)"
    )
    parser.add_argument("--vllm-url", help="a running vLLM serving the tiny model (default: start one)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    streams = [int(s) for s in args.streams.split(",")]

    def rounds(n: int) -> int:
        return max(args.rounds, -(-16 // n))

    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder:
        home = Path(folder)
        with vllm_server(args.vllm_url, home) as vllm, ours_over(vllm, home) as ours:
            model = httpx.get(f"{vllm}/v1/models").json()["data"][0]["id"]
            requests = contenders(ours, vllm, model, args.tokens)
            results = {n: asyncio.run(measure(requests, n, args.tokens, rounds(n))) for n in streams}
    print(f"{args.tokens} output tokens a request, greedy; medians of {args.rounds}+ rounds")
    print(table(results, args.markdown))


if __name__ == "__main__":
    main()
