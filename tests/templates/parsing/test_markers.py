"""Markers in free text: found whole, never shown in part, with their trailing whitespace."""

from __future__ import annotations

import pytest

from openchatml.templates.parsing.markers import (
    Marker,
    MarkerAction,
    Scanner,
    consume_trail,
    marker_for,
    match_at,
    skip_whitespace,
    split_whitespace,
)

END = MarkerAction.END_OF_TURN
CALL = MarkerAction.CALL_START


def test_split_whitespace() -> None:
    assert split_whitespace(" \n<a> b\n ") == (" \n", "<a> b", "\n ")
    assert split_whitespace("<a>") == ("", "<a>", "")
    assert split_whitespace(" \n") == (" \n", "", "")


def test_a_marker_is_its_text_without_whitespace_and_consumes_what_follows() -> None:
    assert marker_for("\n<tool_call>\n", CALL) == Marker("<tool_call>", "\n", CALL)
    assert marker_for(" \n", CALL) is None
    assert marker_for("", CALL) is None


def test_a_marker_ending_in_a_word_keeps_its_whitespace_as_a_part() -> None:
    assert marker_for(">>>all\n", CALL) == Marker(">>>all\n", "", CALL)


def test_the_first_marker_is_found_and_its_trail_consumed() -> None:
    scanner = Scanner([marker_for("<tool_call>\n", CALL), marker_for("<|im_end|>", END)])
    buf = "Hi <|im_end|> and <tool_call>\nx"
    p, q, marker = scanner.find(buf, 0, False)
    assert (p, q, marker) == (3, 13, Marker("<|im_end|>", "", END))
    p, q, marker = scanner.find(buf, 13, False)
    assert (buf[p:q], marker is not None and marker.action) == ("<tool_call>\n", CALL)


def test_text_that_may_begin_a_marker_is_held_back() -> None:
    scanner = Scanner([marker_for("<tool_call>", CALL)])
    assert scanner.find("Hello <tool_ca", 0, False) == (6, 6, None)
    assert scanner.find("Hello <tool_ca", 0, True) == (14, 14, None)
    assert scanner.find("Hello <b>", 0, False) == (9, 9, None)


def test_a_marker_whose_trail_may_follow_waits_for_it() -> None:
    marker = marker_for("<tool_call>\n", CALL)
    scanner = Scanner([marker])
    assert scanner.find("<tool_call>", 0, False) == (0, 0, None)
    assert scanner.find("<tool_call>", 0, True) == (0, 11, marker)
    assert scanner.find("<tool_call>x", 0, False) == (0, 11, marker)


def test_a_marker_that_may_be_the_start_of_a_longer_one_waits() -> None:
    short, long = Marker("<a>", "", END), Marker("<a>b", "", CALL)
    scanner = Scanner([short, long])
    assert scanner.find("x<a>", 0, False) == (1, 1, None)
    assert scanner.find("x<a>", 0, True) == (1, 4, short)
    assert scanner.find("x<a>b", 0, False) == (1, 5, long)


def test_a_marker_inside_a_longer_one_that_may_be_coming_waits() -> None:
    inner, outer = Marker("im", "", CALL), Marker("<|im_end|>", "", END)
    scanner = Scanner([inner, outer], exact=True)
    assert scanner.find("x <|im", 0, False) == (2, 2, None)
    assert scanner.find("x <|im", 0, True) == (4, 6, inner)


def test_word_markers_need_word_boundaries() -> None:
    scanner = Scanner([marker_for("Action:", CALL), marker_for("all", END)])
    assert scanner.find("Reaction: x", 0, True) == (11, 11, None)
    assert scanner.find("my Action: x", 0, True)[:2] == (3, 10)
    assert scanner.find("allocate", 0, True) == (8, 8, None)
    assert scanner.find("for all", 0, False) == (4, 4, None)  # "all" may go on
    assert scanner.find("for all.", 0, False)[:2] == (4, 7)
    exact = Scanner([marker_for("all", END)], exact=True)
    assert exact.find("allocate", 0, True)[:2] == (0, 3)


def test_the_first_characters_of_the_markers() -> None:
    scanner = Scanner([marker_for("<a>", CALL), marker_for("[B]", END)])
    assert scanner.first is not None
    assert scanner.first.search("x<") is not None and scanner.first.search("x[") is not None
    assert scanner.first.search("plain text") is None
    assert Scanner([]).first is None
    assert Scanner([]).find("text", 0, False) == (4, 4, None)


def test_duplicate_markers_keep_the_first() -> None:
    scanner = Scanner([Marker("<a>", "", CALL), Marker("<a>", "\n", END), None])
    assert scanner.markers == (Marker("<a>", "", CALL),)


@pytest.mark.parametrize(
    ("buf", "final", "expected"),
    [
        ("</tool_call>x", False, ("</tool_call>", "call_end")),
        ("</tool_calls>", False, ("</tool_calls>", "section_end")),
        ("</tool_call", False, False),
        ("</tool_call", True, None),
        ("text", False, None),
    ],
)
def test_match_at_takes_the_longest_candidate_there(buf: str, final: bool, expected: object) -> None:
    candidates = [("</tool_calls>", "section_end"), ("</tool_call>", "call_end")]
    assert match_at(buf, 0, candidates, final) == expected


def test_match_at_waits_when_a_longer_candidate_may_be_coming() -> None:
    candidates = [("<ab>", "long"), ("<a", "short")]
    assert match_at("<a", 0, candidates, False) is False
    assert match_at("<a", 0, candidates, True) == ("<a", "short")


def test_skip_whitespace_and_consume_trail() -> None:
    assert skip_whitespace("  \n\tx", 0) == 4
    assert skip_whitespace("   ", 1) == 3
    assert skip_whitespace("\u00a0x", 0) == 0  # JSON whitespace only
    assert consume_trail("<a>\n\nx", 3, "\n\n") == 5
    assert consume_trail("<a>\nx", 3, "\n\n") == 4
    assert consume_trail("<a>", 3, "\n") == 3
