"""Typed streaming events against the plain dicts they replace: build and serialise.

Usage: ``.venv/bin/python bench/bench_wire_events.py [--events N] [--repeat R]``

SSE events are built per sampled token. Each contender builds ``N`` delta events (the
item id, indexes and text of a message being written) and writes each as one SSE chunk
(``event:`` line, ``data:`` JSON by orjson, blank line):

* dict — the event as a ``dict`` built through ``{"type": kind, "sequence_number": n,
  **fields}`` with the item's common fields, as a builder without types does;
* typed — a frozen slotted :class:`~openchatml.responses.wire.events.OutputTextDelta`,
  then its ``to_json(dialect)``;
* typed reasoning (openai) — :class:`~openchatml.responses.wire.events.ReasoningDelta`
  in the ``openai`` dialect (``response.reasoning_text.delta``).

Each timing is the best of ``R`` runs; ratios are typed / dict.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import orjson

from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.events import OutputTextDelta, ReasoningDelta

ITEM_ID = "msg_" + "3f" * 24
PIECES = ("Hello", " there", ",", " how", " are", " you", "?", " 東京", " ☀️")


def _chunk(kind: str, body: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(body) + b"\n\n"


def dicts(count: int) -> int:
    """Plain dict events, serialised."""
    seq = 0

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        out = {"type": kind, "sequence_number": seq, **fields}
        seq += 1
        return out

    size = 0
    for n in range(count):
        common = {"item_id": ITEM_ID, "output_index": 1}
        built = event(
            "response.output_text.delta", **common, content_index=0, delta=PIECES[n % 9], logprobs=[]
        )
        size += len(_chunk(built["type"], built))
    return size


def typed(count: int) -> int:
    """Typed events, serialised in the Open Responses dialect."""
    size = 0
    dialect = WireDialect.OPENRESPONSES
    for n in range(count):
        built = OutputTextDelta(n, ITEM_ID, 1, 0, PIECES[n % 9])
        size += len(_chunk(built.type, built.to_json(dialect)))
    return size


def typed_reasoning_openai(count: int) -> int:
    """Typed reasoning deltas, serialised in the openai dialect (renamed type)."""
    size = 0
    dialect = WireDialect.OPENAI
    for n in range(count):
        body = ReasoningDelta(n, ITEM_ID, 1, 0, PIECES[n % 9]).to_json(dialect)
        size += len(_chunk(body["type"], body))
    return size


CONTENDERS: dict[str, Callable[[int], int]] = {
    "dict": dicts,
    "typed": typed,
    "typed reasoning (openai)": typed_reasoning_openai,
}


def best(count: int, repeat: int) -> dict[str, float]:
    """The fastest of ``repeat`` runs of each contender, in seconds (runs interleaved, so
    that a busy moment of the machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for _ in range(repeat):
        for name, run in CONTENDERS.items():
            started = time.perf_counter()
            run(count)
            times[name].append(time.perf_counter() - started)
    return {name: min(runs) for name, runs in times.items()}


def main() -> None:
    """Print the timings and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    timings = best(args.events, args.repeat)
    base = timings["dict"]
    print(f"{args.events} delta events, build + SSE chunk, best of {args.repeat}")
    for name, took in timings.items():
        print(f"  {name:<26} {took * 1e3:8.1f} ms   ratio {took / base:.3f}")


if __name__ == "__main__":
    main()
