"""This tree's benchmarks against another revision's, alternated in one run.

Usage: ``.venv/bin/python bench/compare_trees.py [REV] [--rounds N]`` (default ``main``).

The revision is checked out into a temporary git worktree; ``bench_codec.py`` and
``bench_templates.py`` of each tree run with that tree's ``src`` first on the path, the
two trees taking turns ``--rounds`` times (default 3), so both see the same machine. For
every figure the median of each tree is printed with the ratio this tree / the other,
turned so that above 1 is better (a time's ratio is inverted).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("bench_codec.py", "bench_templates.py")
_NUMBER = re.compile(r"^([\d,]+(?:\.\d+)?)\s*(\S*)")


def figures(output: str) -> dict[str, tuple[float, str]]:
    """The first figure of every table row of a benchmark's output, by its label."""
    found: dict[str, tuple[float, str]] = {}
    for line in output.splitlines():
        columns = [c for c in re.split(r"\s{2,}", line.strip()) if c]
        if len(columns) < 2:
            continue
        match = _NUMBER.match(columns[1])
        if match:
            unit = match.group(2) or (columns[-1] if not _NUMBER.match(columns[-1]) else "")
            found[columns[0]] = (float(match.group(1).replace(",", "")), unit)
    return found


def run(tree: Path, script: str) -> dict[str, tuple[float, str]]:
    """One run of ``script`` of ``tree`` on that tree's sources."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / script)], env=env, cwd=tree, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{tree / 'bench' / script} failed:\n{done.stderr[-2000:]}")
    return figures(done.stdout)


def main() -> None:
    """Run both trees' benchmarks in turn and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openchatml-bench-") as folder:
        other = Path(folder) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), options.rev], cwd=ROOT, check=True)
        try:
            samples: dict[tuple[str, str], list[float]] = {}
            units: dict[str, str] = {}
            for _ in range(options.rounds):
                for script in SCRIPTS:
                    for label, tree in (("this", ROOT), ("other", other)):
                        for name, (value, unit) in run(tree, script).items():
                            samples.setdefault((name, label), []).append(value)
                            units[name] = unit
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)
    print(f"{'figure':<52} {'this':>14} {options.rev:>14}  ratio (>1 better)")
    for name, unit in units.items():
        if (name, "other") not in samples or (name, "this") not in samples:
            continue
        mine = statistics.median(samples[(name, "this")])
        theirs = statistics.median(samples[(name, "other")])
        ratio = (theirs / mine if unit == "ms" else mine / theirs) if mine and theirs else float("nan")
        print(f"{name[:52]:<52} {mine:>14,.1f} {theirs:>14,.1f}  {ratio:.3f} {unit}")


if __name__ == "__main__":
    main()
