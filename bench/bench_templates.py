"""Chat-template analysis time and streaming parse throughput.

Usage: ``.venv/bin/python bench/bench_templates.py [--templates DIR] [--repeat N] [--parse-only]
[--markdown]``

* Analysis: every template in ``--templates`` (default: the 63 in
  ``tests/templates/data/templates``) compiled and analysed from scratch (caches
  cleared), five times each; the median per template, and the median and worst over
  them, against the goal of 50 ms.
* Streaming parse: for every case of the parse cases with tool calls or reasoning, the
  input repeated into a 64 KiB-or-more output is fed to its template's parser in chunks of
  1, 4 and 16 characters (a tokenizer's pieces are about 4), and whole; megabytes of
  output a second (the best of ``--repeat`` runs), against the goal of 5 MB/s. The last
  line gives the 4-character rate, the headline figure, as a multiple of the goal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from openchatml.templates import analysis
from openchatml.templates.analysis import analyze
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.parsing import ParseOptions, open_parser

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "templates" / "data"


def _clear_caches() -> None:
    analysis.clear_caches()


def analysis_times(folder: Path, repeat: int = 5) -> dict[str, float]:
    """Template name → median seconds to compile and analyse it."""
    out = {}
    for path in sorted(folder.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        runs = []
        for _ in range(repeat):
            _clear_caches()
            started = time.perf_counter()
            analyze(ChatTemplate(source, name=path.name))
            runs.append(time.perf_counter() - started)
        out[path.name] = statistics.median(runs)
    return out


def parse_throughput(folder: Path, cases: list[dict[str, Any]], chunk: int) -> float:
    """Megabytes of output parsed a second, streamed in ``chunk``-character pieces."""
    total_bytes = 0
    seconds = 0.0
    formats: dict[str, Any] = {}
    for case in cases:
        name = case["template"]
        if name not in formats:
            formats[name] = analyze(ChatTemplate((folder / name).read_text(encoding="utf-8"), name=name))
        fmt = formats[name]
        text = case["input"]
        if not text:
            continue
        tools = tuple(case["options"]["tools"])
        # one long answer: the case's reasoning and content grow, its calls stay whole
        body = (text * (65536 // len(text) + 1)) if not case["expected"]["tool_calls"] else text
        pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
        parser = open_parser(fmt, ParseOptions(tools=tools))
        started = time.perf_counter()
        for piece in pieces:
            parser.feed(piece)
        parser.finish()
        seconds += time.perf_counter() - started
        total_bytes += len(body.encode("utf-8"))
    return total_bytes / seconds / 1e6


PARSE_GOAL_MB_S = 5.0
"""The streaming parse goal, in megabytes of output a second."""
TOKEN_SIZED = 4
"""Characters in a piece of the headline measure: about a tokenizer's piece."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--templates", type=Path, default=DATA / "templates")
    parser.add_argument("--cases", type=Path, default=DATA / "template-parse-cases.json")
    parser.add_argument("--repeat", type=int, default=3, help="Runs of each parse measure; the best is kept.")
    parser.add_argument("--parse-only", action="store_true", help="Skip the analysis times.")
    parser.add_argument("--markdown", action="store_true", help="Print Markdown tables.")
    args = parser.parse_args()
    cases = json.loads(args.cases.read_text(encoding="utf-8"))["cases"]
    cases = [c for c in cases if not c["options"].get("is_partial")]
    parse_throughput(args.templates, cases, TOKEN_SIZED)  # warm-up: analysis, caches
    rates = {
        chunk: max(parse_throughput(args.templates, cases, chunk) for _ in range(args.repeat))
        for chunk in (1, TOKEN_SIZED, 16, 1 << 30)
    }
    bar = "|" if args.markdown else " "
    print(f"{bar} measure {bar} value {bar} goal {bar} ratio to the goal (≤ 1 meets it) {bar}")
    if args.markdown:
        print("|---|---|---|---|")
    if not args.parse_only:
        times = analysis_times(args.templates)
        median = statistics.median(times.values())
        worst_name = max(times, key=lambda k: times[k])
        print(
            f"{bar} analysis, median of {len(times)} templates {bar} {median * 1e3:.1f} ms {bar} 50 ms "
            f"{bar} {median * 1e3 / 50:.2f} {bar}"
        )
        slowest = times[worst_name] * 1e3
        print(f"{bar} analysis, slowest ({worst_name}) {bar} {slowest:.1f} ms {bar} {bar} {bar}")
    for chunk, rate in rates.items():
        label = f"streaming parse, {chunk}-character chunks" if chunk < 1 << 30 else "parse, whole output"
        goal = PARSE_GOAL_MB_S
        print(f"{bar} {label} {bar} {rate:.1f} MB/s {bar} {goal:g} MB/s {bar} {goal / rate:.2f} {bar}")
    rate = rates[TOKEN_SIZED]
    verdict = "meets" if rate >= PARSE_GOAL_MB_S else "misses"
    print(
        f"\nstreaming parse at token-sized ({TOKEN_SIZED}-character) pieces: {rate:.2f} MB/s, "
        f"{rate / PARSE_GOAL_MB_S:.2f}× the goal of {PARSE_GOAL_MB_S:g} MB/s ({verdict} it)"
    )


if __name__ == "__main__":
    main()
