"""The parse cases (``data/template-parse-cases.json``: 292 cases over 39 templates):
each input parsed by the parser derived from its template by analysis, whole and one
character at a time (what is shown is never taken back; the deltas add up to the
result), compared with the expected message. The pass rate per template is printed at
the end of the run."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from data_paths import CASE_RESULTS, CASES, TEMPLATES

from openchatml.templates.check import Checker, load_cases


@cache
def checker() -> Checker:
    return Checker(TEMPLATES)


CASE_LIST = load_cases(CASES)


@pytest.mark.parametrize("case", CASE_LIST, ids=[f"{c['id']}-{c['template']}" for c in CASE_LIST])
def test_case(case: dict[str, Any]) -> None:
    result = checker().run(case)
    tally = CASE_RESULTS[result.template]
    tally[1] += 1
    tally[0] += result.passed
    assert result.passed, "\n".join(result.problems)


def test_the_case_file_covers_what_it_says() -> None:
    assert len(CASE_LIST) == 292
    assert len({c["template"] for c in CASE_LIST}) == 39
