"""Control tokens and the text path's escaping: escaped bodies and literal blocks read back
exactly, and header values are made single safe words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import ControlToken, Message, StreamTruncatedError, load_encoding, parse_text, parse_tokens
from openchatml.core.tokens import (
    END_ID,
    MAX_TOKEN_LEN,
    MESSAGE_ID,
    NAMED_SPECIAL_TOKENS,
    START_ID,
    TERMINATOR_IDS,
    TERMINATORS,
    TOKEN_IDS,
    TOKEN_RE,
    escape_text,
    sanitize_header_value,
)
from strategies import body_texts, header_words


def read_back(escaped: str) -> str:
    """The body text the text parser reads from ``escaped`` in a user message."""
    [message] = parse_text(f"<|start|>user<|message|>{escaped}<|end|>")
    return message.text


def test_token_tables_agree() -> None:
    assert {t.value for t in ControlToken} == {
        "<|start|>", "<|channel|>", "<|message|>", "<|call|>", "<|constrain|>",
        "<|return|>", "<|end|>", "<|literal|>", "<|endliteral|>",
    }  # fmt: skip
    # every control token but the two OCM-only literal markers is a named special token
    assert set(TOKEN_IDS) == set(ControlToken) - {ControlToken.LITERAL, ControlToken.ENDLITERAL}
    assert all(NAMED_SPECIAL_TOKENS[token.value] == tid for token, tid in TOKEN_IDS.items())
    assert {TOKEN_IDS[t] for t in TERMINATORS} == TERMINATOR_IDS
    assert {t.value for t in TERMINATORS} == {"<|end|>", "<|return|>", "<|call|>"}


def test_token_pattern_finds_every_spelling() -> None:
    text = "".join(f"x{t.value}" for t in ControlToken)
    assert [m.group() for m in TOKEN_RE.finditer(text)] == [t.value for t in ControlToken]
    assert TOKEN_RE.search("<|reserved_200000|> <|endoftext|> <|start") is None
    assert max(len(t.value) for t in ControlToken) == MAX_TOKEN_LEN == len("<|endliteral|>")


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain text", "plain text"),
        ("a < b | c > d", "a < b | c > d"),
        ("<|start|>", "<<|start|>"),
        ("say <|end|> now", "say <<|end|> now"),
        ("<<|end|>", "<<<|end|>"),
        ("<|literal|>x<|endliteral|>", "<<|literal|>x<<|endliteral|>"),
        ("a<|", "a<|"),
        ("<", "<|literal|><<|endliteral|>"),
        ("a<", "a<|literal|><<|endliteral|>"),
        ("x<<", "x<|literal|><<<|endliteral|>"),
        ("<|end|><", "<<|end|><|literal|><<|endliteral|>"),
    ],
)
def test_escape_text_exact(text: str, escaped: str) -> None:
    assert escape_text(text) == escaped
    assert read_back(escaped) == text


@given(body_texts())
def test_escaped_body_reads_back_exactly(text: str) -> None:
    escaped = escape_text(text)
    assert read_back(escaped) == text
    # nothing can join the terminator that follows
    assert not escaped.endswith("<")


@given(st.text())
def test_text_without_a_control_prefix_is_left_alone(text: str) -> None:
    text = text.replace("<|", "<").rstrip("<")
    assert escape_text(text) == text


def test_literal_block_is_opaque() -> None:
    body = "<|literal|><|end|><|start|>x<<|end|><|endliteral|>"
    assert read_back(body) == "<|end|><|start|>x<<|end|>"
    assert read_back("a<|literal|><|endliteral|>b") == "ab"


def test_unclosed_literal_block_is_truncated_input() -> None:
    with pytest.raises(StreamTruncatedError, match="literal block"):
        parse_text("<|start|>user<|message|><|literal|>abc")


def test_literal_markers_are_plain_text_on_the_token_path() -> None:
    enc = load_encoding()
    body = "<|literal|>x<|endliteral|> <<|end|>"
    tokens = [START_ID, *enc.encode_ordinary("user"), MESSAGE_ID, *enc.encode_ordinary(body), END_ID]
    assert parse_tokens(tokens) == [Message.user(body)]


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("functions.get_weather", "functions.get_weather"),
        ("", "_"),
        ("  ", "_"),
        ("a b\tc\n", "a_b_c_"),
        ("<|start|>", "<start|>"),
        ("<||x", "<x"),
        ("a=b:c|>", "a=b:c|>"),
    ],
)
def test_sanitize_header_value_exact(value: str, safe: str) -> None:
    assert sanitize_header_value(value) == safe


@given(st.text())
def test_sanitized_value_is_one_safe_word(value: str) -> None:
    safe = sanitize_header_value(value)
    assert safe and "<|" not in safe and not any(c.isspace() for c in safe)
    assert sanitize_header_value(safe) == safe


@given(header_words())
def test_safe_header_words_pass_unchanged(word: str) -> None:
    assert sanitize_header_value(word) == word
