"""Template test set-up: the data folder on the import path, and the per-template pass
rate of the parse cases printed at the end of the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from data_paths import CASE_RESULTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not CASE_RESULTS:
        return
    terminalreporter.section("template parse cases (whole and streamed), per template")
    for name, (passed, run) in sorted(CASE_RESULTS.items()):
        terminalreporter.write_line(f"{passed:4d}/{run:<4d} {name}")
    passed = sum(p for p, _ in CASE_RESULTS.values())
    run = sum(r for _, r in CASE_RESULTS.values())
    terminalreporter.write_line(f"{passed} passed, {run - passed} failed")
