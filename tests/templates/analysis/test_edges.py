"""The edges of names and values: which side of a split each marker goes to."""

from __future__ import annotations

import pytest

from openchatml.templates.analysis.edges import (
    split_after_first_marker,
    split_name_prefix,
    split_name_suffix,
    split_value_suffix,
)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ("<tool_call>\n<function=", ("<tool_call>\n", "<function=")),
        ('<invoke name="', ("", '<invoke name="')),
        ("<|tool_call_begin|>functions.", ("<|tool_call_begin|>", "functions.")),
        ("<start_function_call>call:", ("<start_function_call>", "call:")),
        (">>>", ("", ">>>")),
        ("<tool_call>\n", ("<tool_call>\n", "")),
        ("<a>two\nlines", ("<a>two\nlines", "")),
    ],
)
def test_split_name_prefix(head: str, expected: tuple[str, str]) -> None:
    assert split_name_prefix(head) == expected
    assert "".join(expected) == head


@pytest.mark.parametrize(
    ("prefix", "text", "expected"),
    [
        ("<function=", ">\n{", (">\n", "{")),
        ('<invoke name="', '">\n<parameter', ('">\n', "<parameter")),
        ('"name": "', '", "arguments"', ('"', ', "arguments"')),
        ("functions.", ":0<|arg|>", ("", ":0<|arg|>")),
        ("<function=", "<x>", ("", "<x>")),
    ],
)
def test_split_name_suffix(prefix: str, text: str, expected: tuple[str, str]) -> None:
    assert split_name_suffix(prefix, text) == expected


def test_split_value_suffix() -> None:
    assert split_value_suffix("\n</parameter>\n") == ("\n</parameter>", "\n")
    assert split_value_suffix(' "  ') == (' "', "  ")
    assert split_value_suffix(", ") == ("", ", ")


def test_split_after_first_marker() -> None:
    assert split_after_first_marker("<|tool_sep|>\n  rest<x>") == ("<|tool_sep|>\n  ", "rest<x>")
    assert split_after_first_marker("no marker") == ("no marker", "")
