"""Which marker closes which."""

from __future__ import annotations

import pytest

from openchatml.templates.analysis.closers import (
    closes,
    closing_candidates,
    ends_block,
    find_closer,
    tag_core,
)


def test_the_core_of_a_marker() -> None:
    assert tag_core("<|tool_calls_section_begin|>") == "toolcallssection"
    assert tag_core("<｜tool▁calls▁begin｜>") == "toolcalls"
    assert tag_core('<parameter name="k">') == "parameter"
    assert tag_core("<function=f>") == "function"
    assert tag_core("<|end|>") == ""


@pytest.mark.parametrize(
    ("opening", "closing", "expected"),
    [
        ("<think>", "</think>", True),
        ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", True),
        ("<|START_THINKING|>", "<|END_THINKING|>", True),
        ("<|channel>", "<channel|>", True),
        ("<think>", "<think>", False),
        ("<tool_call>", "</tool_calls>", False),
        ("<|end|>", "<|start|>", False),
        ("", "</think>", False),
    ],
)
def test_closes(opening: str, closing: str, expected: bool) -> None:
    assert closes(opening, closing) is expected


def test_a_bare_end_ends_any_block() -> None:
    assert ends_block("<|think|>", "<|end|>")
    assert ends_block("<think>", "</think>")
    assert not ends_block("<|end|>", "<|end|>")
    assert not ends_block("<think>", "<|assistant|>")


def test_closing_candidates() -> None:
    assert closing_candidates("<think>") == ["</think>"]
    assert closing_candidates("<|START_THINKING|>") == [
        "<|/START_THINKING|>",
        "</|START_THINKING|>",
        "<|END_THINKING|>",
    ]
    assert closing_candidates("[THINK]") == ["[/THINK]"]
    assert closing_candidates("</think>") == []


def test_find_closer() -> None:
    text = "x<other>y</tool_call>z</think>"
    found = find_closer(["<think>", "<tool_call>"], text)
    assert found is not None and found.group() == "</tool_call>"
    assert find_closer(["<think>"], "no markers") is None
