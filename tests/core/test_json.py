"""JSON-shaped data made plain (dicts and lists), made read-only, and measured for depth."""

from __future__ import annotations

import datetime as dt
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml.core._json import deeper_than, frozen, plain
from strategies import json_values


def depth(value: Any) -> int:
    """Levels of objects and arrays in ``value``: a scalar 0, ``[]`` 1, ``[[1]]`` 2."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def test_plain_makes_json_data() -> None:
    data = MappingProxyType(
        {
            1: (dt.date(2025, 1, 2), dt.datetime(2025, 1, 2, 3, 4, 5), dt.time(1, 2)),
            "bytes": b"\xffa",
            "set": frozenset({3}),
            "inner": MappingProxyType({"x": [None, True, 1.5, "s"]}),
        }
    )
    out = plain(data)
    assert out == {
        "1": ["2025-01-02", "2025-01-02T03:04:05", "01:02:00"],
        "bytes": "\ufffda",
        "set": [3],
        "inner": {"x": [None, True, 1.5, "s"]},
    }
    assert type(out) is dict and type(out["inner"]) is dict
    assert json.loads(json.dumps(out)) == out


def test_frozen_makes_every_mapping_read_only() -> None:
    data: dict[Any, Any] = {"a": {"b": [{"c": 1}]}, 2: (1, 2)}
    out = frozen(data)
    assert out == {"a": {"b": [{"c": 1}]}, "2": [1, 2]}
    with pytest.raises(TypeError):
        out["a"] = 1
    with pytest.raises(TypeError):
        out["a"]["b"][0]["c"] = 2
    assert isinstance(out["a"]["b"], list)  # lists stay lists
    data["a"]["b"][0]["c"] = 99  # a copy: the original can change without it
    assert out["a"]["b"][0]["c"] == 1


@given(json_values())
def test_plain_undoes_frozen(value: Any) -> None:
    assert plain(frozen(value)) == value
    assert plain(value) == value


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        (1, 0),
        ("text", 0),
        (None, 0),
        ([], 1),
        ({}, 1),
        ([1, 2], 1),
        ({"a": [{"b": 1}]}, 3),
        ((), 1),
        ([[], [[]]], 3),
    ],
)
def test_deeper_than(value: Any, levels: int) -> None:
    assert not deeper_than(value, levels)
    assert deeper_than(value, levels - 1) == (levels > 0)


@given(json_values(max_leaves=20), st.integers(0, 6))
def test_deeper_than_agrees_with_depth(value: Any, limit: int) -> None:
    assert deeper_than(value, limit) == (depth(value) > limit)


def test_deeper_than_takes_any_depth_without_recursion() -> None:
    value: Any = 0
    for _ in range(100_000):
        value = [value]
    assert deeper_than(value, 99_999)
    assert not deeper_than(value, 100_000)
    nested: Any = {}
    for _ in range(50_000):
        nested = {"k": nested}
    assert deeper_than(nested, 1000) and not deeper_than(nested, 50_001)
