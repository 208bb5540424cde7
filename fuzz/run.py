"""Run the fuzz targets: ``python fuzz/run.py [--seconds-per-target S] [--only NAME]
[--seed N] [--scale F] [--jobs J] [--max-seconds-per-target M] [--replay SEED]``.

Each target of :mod:`fuzz.parsers` and :mod:`fuzz.server` (when that module exists) runs
until it has tried its ``minimum`` inputs (times ``--scale``) and run for at least
``--seconds-per-target`` seconds, or until ``--max-seconds-per-target`` is spent. Every
input is built from its own seed, so a failure can be replayed alone with
``--only NAME --replay SEED`` (which re-raises it with its traceback). The table at the
end gives, per target, the inputs tried, the failures, the seconds and how it stopped;
the first few failing inputs follow it. Exit status 1 when an input failed or a target
missed its minimum.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import multiprocessing
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODULES = ("fuzz.parsers", "fuzz.server")
"""Where targets live (each exposes ``TARGETS``); a module that does not exist is skipped."""
KEEP_FAILURES = 3
"""How many failing inputs a target keeps."""


@dataclass(slots=True)
class Result:
    """What running one target came to."""

    name: str
    minimum: int
    inputs: int = 0
    failures: int = 0
    seconds: float = 0.0
    stopped: str = ""
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failures == 0 and self.inputs >= self.minimum


def load_targets(modules: Sequence[str] = MODULES) -> list[Any]:
    """The targets of every module of ``modules`` that exists, in order."""
    targets: list[Any] = []
    for name in modules:
        if importlib.util.find_spec(name) is None:
            continue
        targets += importlib.import_module(name).TARGETS
    return targets


def input_seed(seed: int, name: str, index: int) -> int:
    """The seed of input ``index`` of target ``name`` in a run seeded ``seed``."""
    return random.Random(f"{seed}:{name}").getrandbits(48) + index


def run_target(
    target: Any, *, seed: int, minimum: int, seconds: float = 0.0, max_seconds: float = float("inf")
) -> Result:
    """Run ``target`` until it tried ``minimum`` inputs and ran ``seconds``, or until
    ``max_seconds`` is spent; failures are counted, the first few kept."""
    result = Result(target.name, minimum)
    one = target.one
    base = input_seed(seed, target.name, 0)
    clock = time.monotonic
    start = clock()
    n = failures = 0
    while True:
        elapsed = clock() - start
        if n >= minimum and elapsed >= seconds:
            result.stopped = "done"
            break
        if elapsed >= max_seconds:
            result.stopped = "out of time"
            break
        try:
            one(random.Random(base + n))
        except Exception as exc:
            failures += 1
            if len(result.examples) < KEEP_FAILURES:
                text = getattr(exc, "input_repr", None)
                where = f"seed {base + n}"
                cause = getattr(exc, "cause", exc)
                result.examples.append(
                    f"{where}: {type(cause).__name__}: {str(cause)[:300]}"
                    + (f"\n      input: {text}" if text else "")
                )
        n += 1
    result.inputs = n
    result.failures = failures
    result.seconds = clock() - start
    return result


@dataclass(frozen=True, slots=True)
class Job:
    """One target to run in a worker: found again by name there."""

    name: str
    seed: int
    minimum: int
    seconds: float
    max_seconds: float


def _work(job: Job) -> Result:
    targets = {t.name: t for t in load_targets()}
    return run_target(
        targets[job.name],
        seed=job.seed,
        minimum=job.minimum,
        seconds=job.seconds,
        max_seconds=job.max_seconds,
    )


def table(results: Sequence[Result]) -> str:
    """The results as a text table, with a total line."""
    width = max([len("target"), *(len(r.name) for r in results)])
    lines = [
        f"{'target':<{width}}  {'inputs':>10}  {'minimum':>10}  {'failures':>8}  {'seconds':>8}  stopped"
    ]
    for r in results:
        missed = "" if r.inputs >= r.minimum else "  MISSED MINIMUM"
        lines.append(
            f"{r.name:<{width}}  {r.inputs:>10,}  {r.minimum:>10,}  {r.failures:>8}  {r.seconds:>8.1f}"
            f"  {r.stopped}{missed}"
        )
    total_inputs = sum(r.inputs for r in results)
    total_failures = sum(r.failures for r in results)
    total_seconds = sum(r.seconds for r in results)
    lines.append(
        f"{'total':<{width}}  {total_inputs:>10,}  {'':>10}  {total_failures:>8}  {total_seconds:>8.1f}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the targets as the command line says; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--seconds-per-target", type=float, default=0.0, help="run each target at least this long"
    )
    ap.add_argument(
        "--max-seconds-per-target", type=float, default=1800.0, help="stop a target after this long"
    )
    ap.add_argument("--only", default="", help="run only targets whose name contains this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every target's minimum")
    ap.add_argument("--jobs", type=int, default=2, help="targets run at once (processes)")
    ap.add_argument("--replay", type=int, default=None, help="run the input of this seed and re-raise")
    args = ap.parse_args(argv)

    targets = [t for t in load_targets() if args.only in t.name]
    if not targets:
        print(f"no target matches {args.only!r}", file=sys.stderr)
        return 2
    if args.replay is not None:
        for t in targets:
            print(f"replaying seed {args.replay} on {t.name}")
            t.one(random.Random(args.replay))
        print("no failure")
        return 0

    jobs = [
        Job(
            t.name,
            args.seed,
            max(1, round(t.minimum * args.scale)),
            args.seconds_per_target,
            args.max_seconds_per_target,
        )
        for t in targets
    ]
    started = time.monotonic()
    results: list[Result] = []
    if args.jobs <= 1:
        for job in jobs:
            results.append(_work(job))
            _progress(results[-1], len(results), len(jobs))
    else:
        context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        with context.Pool(args.jobs) as pool:
            for result in pool.imap_unordered(_work, jobs):
                results.append(result)
                _progress(result, len(results), len(jobs))
    order = {job.name: i for i, job in enumerate(jobs)}
    results.sort(key=lambda r: order[r.name])
    print()
    print(table(results))
    print(
        f"wall time {time.monotonic() - started:.0f} s with {max(1, args.jobs)} process(es), seed {args.seed}"
    )
    failing = [r for r in results if r.examples]
    for r in failing:
        print(f"\n{r.name}: {r.failures} failing input(s); replay with --only '{r.name}' --replay SEED")
        for example in r.examples:
            print(f"  {example}")
    return 0 if all(r.ok for r in results) else 1


def _progress(result: Result, done: int, total: int) -> None:
    flag = "ok" if result.ok else "FAIL"
    print(
        f"[{done}/{total}] {result.name}: {result.inputs:,} inputs, {result.failures} failures, "
        f"{result.seconds:.1f} s, {result.stopped} ({flag})",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
