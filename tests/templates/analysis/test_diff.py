"""Text diffing: markers found, and common prefixes and suffixes that never cut one."""

from __future__ import annotations

from openchatml.templates.analysis.diff import (
    MARKER,
    TextSegment,
    common_prefix,
    common_suffix,
    diff_split,
    first_marker,
    fix_prefix_end,
    fix_suffix_start,
    has_marker,
    is_marker,
    last_marker,
    last_marker_match,
    lcp_marker_safe,
    lcs_marker_safe,
    markers,
    open_tag_tail,
    overlap,
    segments,
)


def test_diff_split_never_cuts_a_marker() -> None:
    split = diff_split("<|tool_call_begin|>x", "<|tool_calls_section_begin|>x")
    assert (split.prefix, split.suffix) == ("", "x")
    assert split.left == "<|tool_call_begin|>"
    split = diff_split("a<think>b</think>c", "a<think>d</think>c")
    assert (split.prefix, split.left, split.right, split.suffix) == ("a<think>", "b", "d", "</think>c")


def test_diff_split_of_a_text_and_its_extension() -> None:
    split = diff_split("<|user|>hi<|end|>", "<|user|>hi<|end|><|assistant|>")
    assert (split.prefix, split.left, split.right, split.suffix) == (
        "<|user|>hi<|end|>",
        "",
        "<|assistant|>",
        "",
    )


def test_segments_and_markers() -> None:
    text = 'x<|im_end|>\n[TOOL_CALLS][{"a": 1}]<parameter name="k">'
    assert markers(text) == ["<|im_end|>", "[TOOL_CALLS]", '<parameter name="k">']
    assert "".join(s.text for s in segments(text)) == text
    assert segments("a<b>") == [TextSegment("a", False), TextSegment("<b>", True)]
    assert open_tag_tail("<tool_call>\n<function=") == len("<tool_call>\n")


def test_what_a_marker_is() -> None:
    assert is_marker("<think>") and is_marker("[/INST]") and is_marker("[BEGIN FINAL RESPONSE]")
    assert is_marker("<｜tool▁sep｜>")
    assert not is_marker('["a"]') and not is_marker("[1, 2]") and not is_marker("<a\nb>")
    assert not is_marker("<think> ")
    assert has_marker("text <|end|> text") and not has_marker('{"a": [1]}')
    assert MARKER.fullmatch("<" + "x" * 201 + ">") is None


def test_first_and_last_markers() -> None:
    text = "a<one>b[TWO]c<three>d"
    assert (first_marker(text), last_marker(text)) == ("<one>", "<three>")
    match = last_marker_match(text)
    assert match is not None and match.start() == text.index("<three>")
    assert first_marker("plain") == last_marker("plain") == ""
    assert last_marker_match("plain") is None


def test_common_prefix_and_suffix() -> None:
    assert common_prefix(["abcd", "abxy", "abz"]) == 2
    assert common_prefix(["abc", ""]) == 0
    assert common_prefix([]) == 0
    assert common_suffix(["xxend", "yend", "zzzend"]) == 3
    assert common_suffix(["xxend", "yend"], limit=2) == 2
    assert common_suffix([]) == 0


def test_a_prefix_end_inside_a_marker_moves_back_to_its_start() -> None:
    text = "ab<|im_end|>cd"
    assert fix_prefix_end(text, 5) == 2
    assert fix_prefix_end(text, 2) == 2
    assert fix_prefix_end(text, len("ab<|im_end|>")) == len("ab<|im_end|>")
    assert fix_prefix_end("x[TOOL_CALLS]", 4) == 1
    assert fix_prefix_end('x["a"]', 3) == 3  # JSON brackets are no marker


def test_a_suffix_start_inside_a_marker_moves_forward_to_its_end() -> None:
    text = "ab<|im_end|>cd"
    assert fix_suffix_start(text, 5) == len("ab<|im_end|>")
    assert fix_suffix_start(text, 2) == 2
    assert fix_suffix_start(text, 13) == 13


def test_marker_safe_prefix_and_suffix() -> None:
    assert lcp_marker_safe(["<|tool_call_begin|>", "<|tool_calls_section_begin|>"]) == 0
    assert lcp_marker_safe(["<a>xy", "<a>xz"]) == 4
    assert lcp_marker_safe([]) == 0
    assert lcs_marker_safe(["x<|end_a|>", "y<|end_b|>"]) == 0
    assert lcs_marker_safe(["x<end>", "y<end>"]) == 5
    assert lcs_marker_safe(["aa<end>", "ba<end>"], limit=3) == 0
    assert lcs_marker_safe([]) == 0


def test_overlap_is_the_longest_start_of_the_prompt_the_text_ends_with() -> None:
    assert overlap("<|user|>hi<|assistant|>\n", "<|assistant|>\n<think>") == "<|assistant|>\n"
    assert overlap("abc", "xyz") == ""
    assert overlap("", "abc") == ""
