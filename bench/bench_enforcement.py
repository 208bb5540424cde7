"""What enforcement costs: tokens/s with and without the request's grammar, in one run, on
the in-process engine (and over vLLM with ``--vllm``), and the time of each token mask.

Usage: ``.venv/bin/python bench/bench_enforcement.py [--tokens 256] [--rounds 5]
[--vllm [--streams 1,16]] [--markdown]``

In process: the tiny random gpt-oss (``--model tiny-random``'s) samples ``--tokens`` tokens greedily
after one prompt — free, then under the grammar of a request offering two tools with
``tool_choice: auto`` (the common case: the grammar holds every token, the answer stays
free), then under a JSON Schema answer. Rounds alternate; the table shows the median
tokens/s of each and its ratio to free sampling, and the p50 / p99 of llguidance's mask
per token (timed apart, over the same ids). With ``--vllm``, ``openchatml serve
--upstream`` over a vLLM (CPU) started here, ``--streams`` requests at once, with and
without tools (vLLM's guidance backend enforcing them).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from openchatml import load_encoding
from openchatml.demo_models.tiny_random import ensure_tiny_model
from openchatml.engines import SamplingParams
from openchatml.engines.guidance import Guidance
from openchatml.engines.transformers import TransformersEngine
from openchatml.templates.grammar import ToolGrammar, harmony_tool_call_grammar

PROMPT = "<|start|>user<|message|>What is the weather in Paris?<|end|><|start|>assistant"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
ANSWER = {"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}


async def _sample(
    engine: TransformersEngine, prompt: list[int], params: SamplingParams
) -> tuple[list[int], float]:
    started = time.perf_counter()
    ids = [t async for chunk in engine.generate(prompt, params) for t in chunk]
    return ids, time.perf_counter() - started


def _mask_times(grammar: ToolGrammar, ids: Sequence[int]) -> list[float]:
    matcher = Guidance.of(None).matcher(grammar.lark)
    times = []
    for token in ids:
        started = time.perf_counter()
        matcher.allowed()
        times.append(time.perf_counter() - started)
        if not matcher.advance(token):
            break
    return times


def in_process(tokens: int, rounds: int) -> list[list[str]]:
    engine = TransformersEngine.load(ensure_tiny_model(), device="cpu")
    prompt = load_encoding().encode(PROMPT, allowed_special="all")
    grammars: dict[str, ToolGrammar | None] = {
        "free": None,
        "tools, auto": harmony_tool_call_grammar([WEATHER, TIME]),
        "JSON answer": harmony_tool_call_grammar([], tool_choice="none", answer_schema=ANSWER),
    }
    rates: dict[str, list[float]] = {name: [] for name in grammars}
    masks: dict[str, list[float]] = {name: [] for name in grammars}
    for round_ in range(rounds + 1):  # the first round warms up
        for name, grammar in grammars.items():
            params = SamplingParams(max_tokens=tokens, temperature=0, grammar=grammar)
            ids, seconds = asyncio.run(_sample(engine, prompt, params))
            if round_:
                rates[name].append(len(ids) / seconds)
                if grammar is not None:
                    masks[name] += _mask_times(grammar, ids)
    asyncio.run(engine.aclose())
    free = statistics.median(rates["free"])
    rows = []
    for name in grammars:
        rate = statistics.median(rates[name])
        p50 = f"{1e6 * float(np.percentile(masks[name], 50)):.0f}" if masks[name] else "-"
        p99 = f"{1e6 * float(np.percentile(masks[name], 99)):.0f}" if masks[name] else "-"
        rows.append(["in process", "1", name, f"{rate:.1f}", f"{rate / free:.3f}", p50, p99])
    return rows


def over_vllm(tokens: int, rounds: int, streams: list[int]) -> list[list[str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
    import tempfile

    import httpx
    from cli_server import CliServer

    import vllm_harness

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        venv = vllm_harness.ensure_vllm_venv()
        port = vllm_harness.free_port()
        with vllm_harness.start_vllm(
            ensure_tiny_model(), port, venv=venv, log_path=home / "vllm.log"
        ) as vllm:
            server = CliServer(["--upstream", vllm.base_url, "--store", "none"], home / "serve", timeout=600)
            try:
                for count in streams:
                    rates: dict[str, list[float]] = {"free": [], "tools, auto": []}
                    for round_ in range(rounds + 1):
                        for name in rates:
                            extra: dict[str, Any] = {"tools": [WEATHER, TIME]} if name != "free" else {}
                            body = {
                                "model": "tiny-gpt-oss",
                                "input": "What is the weather in Paris?",
                                "max_output_tokens": tokens,
                                "temperature": 0,
                                "store": False,
                                **extra,
                            }

                            async def one(client: httpx.AsyncClient, body: dict[str, Any] = body) -> int:
                                answer = await client.post("/v1/responses", json=body, timeout=600)
                                answer.raise_for_status()
                                return int(answer.json()["usage"]["output_tokens"])

                            async def burst(n: int = count) -> tuple[int, float]:
                                async with httpx.AsyncClient(base_url=server.url) as client:
                                    started = time.perf_counter()
                                    done = await asyncio.gather(*(one(client) for _ in range(n)))
                                    return sum(done), time.perf_counter() - started

                            total, seconds = asyncio.run(burst())
                            if round_:
                                rates[name].append(total / seconds)
                    free = statistics.median(rates["free"])
                    for name, values in rates.items():
                        rate = statistics.median(values)
                        rows.append(["vLLM", str(count), name, f"{rate:.1f}", f"{rate / free:.3f}", "-", "-"])
            finally:
                server.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vllm", action="store_true", help="also over a vLLM (CPU) started here")
    parser.add_argument("--streams", default="1,16")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = in_process(args.tokens, args.rounds)
    if args.vllm:
        rows += over_vllm(args.tokens, args.rounds, [int(n) for n in args.streams.split(",")])
    head = ["engine", "streams", "grammar", "tokens/s", "vs free", "mask p50 µs", "mask p99 µs"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
