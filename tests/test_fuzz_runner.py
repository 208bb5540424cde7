"""The long fuzz runner of ``make fuzz`` (``fuzz/run.py``): every target of
``fuzz/parsers.py`` runs a few inputs here without a failure, and the runner counts,
keeps and reports failures and missed minimums."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

run = importlib.import_module("fuzz.run")
parsers = importlib.import_module("fuzz.parsers")
target = importlib.import_module("fuzz.target")


def test_every_parser_target_runs_clean() -> None:
    results = [run.run_target(t, seed=1, minimum=25) for t in parsers.TARGETS]
    assert [(r.name, r.examples) for r in results if not r.ok] == []
    assert all(r.inputs == 25 and r.stopped == "done" for r in results)
    names = [r.name for r in results]
    assert len(set(names)) == len(names)
    templates = sorted(p.name for p in parsers.TEMPLATE_DIR.glob("*.jinja"))
    assert len([n for n in names if n.startswith("template:")]) == len(templates) > 0
    assert all(t.minimum >= 100_000 for t in parsers.TARGETS)


def failing_target(every: int) -> Any:
    def check(value: int) -> None:
        assert value % every, f"{value} is a multiple of {every}"

    return target.target("sometimes-fails", 50, lambda rng: rng.randrange(10**6), check)


def test_failures_are_counted_and_the_first_inputs_kept() -> None:
    result = run.run_target(failing_target(every=1), seed=0, minimum=50)
    assert (result.inputs, result.failures, result.ok) == (50, 50, False)
    assert len(result.examples) == run.KEEP_FAILURES
    assert "is a multiple of 1" in result.examples[0] and "input: " in result.examples[0]
    seed = int(result.examples[0].split()[1].rstrip(":"))
    with pytest.raises(target.FuzzFailure) as caught:
        failing_target(every=1).one(random.Random(seed))
    assert caught.value.input_repr in result.examples[0]


def test_a_target_out_of_time_misses_its_minimum() -> None:
    slow = target.Target("slow", 10**9, lambda rng: None)
    result = run.run_target(slow, seed=0, minimum=10**9, max_seconds=0.05)
    assert result.stopped == "out of time" and not result.ok
    assert "MISSED MINIMUM" in run.table([result])
    done = run.run_target(slow, seed=0, minimum=3, seconds=0.02)
    assert done.ok and done.inputs > 3 and done.seconds >= 0.02


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--only", "core:tokens", "--scale", "0.00002", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "core:tokens-strict" in out and "core:tokens-stream" in out and "total" in out
    assert run.main(["--only", "core:text-strict", "--scale", "0.00001", "--jobs", "1"]) == 0
    assert run.main(["--only", "no such target"]) == 2
    assert run.main(["--only", "core:text-lenient", "--replay", "7"]) == 0
    assert "no failure" in capsys.readouterr().out


def test_a_missing_module_is_skipped() -> None:
    assert run.load_targets(("fuzz.no_such_module",)) == []
    assert [t.name for t in run.load_targets(("fuzz.parsers",))] == [t.name for t in parsers.TARGETS]
