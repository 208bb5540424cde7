"""The OCM §2 YAML document header: read (known keys, extra keys, fenced), refused with
``E-PARSE-DOCUMENT-HEADER`` and a position, and written back."""

from __future__ import annotations

import pytest

from openchatml import Message, TranscriptHeader, TranscriptHeaderError, parse_transcript
from openchatml.core.transcript import parse_transcript_header, render_transcript_header


def test_known_and_extra_keys() -> None:
    header = parse_transcript_header(
        "version: 2.2\nmodel: gpt-oss-20b\ngeneration_settings:\n  temperature: 0.7\n"
        "capabilities:\n  tools: [python]\nx_custom: 1\n"
    )
    assert (header.version, header.model) == ("2.2", "gpt-oss-20b")
    assert dict(header.generation_settings) == {"temperature": 0.7}
    assert dict(header.capabilities) == {"tools": ["python"]}
    assert dict(header.profiles) == {}
    assert dict(header.extra) == {"x_custom": 1}
    with pytest.raises(TypeError):
        header.extra["y"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "version"),
    [("version: 2.2", "2.2"), ("version: 2", "2"), ('version: "2.2"', "2.2"), ("version: 3.0\n", "3.0")],
)
def test_version_is_kept_as_text(text: str, version: str) -> None:
    assert parse_transcript_header(text).version == version


def test_a_fenced_block_is_read_as_the_specification_shows_it() -> None:
    header = parse_transcript_header("```yaml\nversion: 2.2\nmodel: m\n```\n")
    assert (header.version, header.model) == ("2.2", "m")


def test_a_model_that_is_not_text_is_made_text() -> None:
    assert parse_transcript_header("version: 2.2\nmodel: 20\n").model == "20"


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("version: [1", "is not YAML", 1, 12),
        ("\n\n  version: : :", "is not YAML", 3, 12),
        ("- a\n- b", "not a YAML header", 1, 1),
        ("\n\n- a", "not a YAML header", 3, 1),
        ("", "not a YAML header", 1, 1),
        ("model: m", "has no 'version'", 1, 1),
        ("version: true", "must be a number", 1, 1),
        ("version: [2]", "must be a number", 1, 1),
        ("  version: {a: 1}", "must be a number", 1, 3),
    ],
)
def test_bad_header_is_refused_with_its_position(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(TranscriptHeaderError, match=message) as info:
        parse_transcript_header(text)
    error = info.value
    assert (error.code, error.fault) == ("E-PARSE-DOCUMENT-HEADER", "input")
    assert error.position is not None
    assert (error.position.line, error.position.column) == (line, column)


@pytest.mark.parametrize("key", ["generation_settings", "capabilities", "profiles"])
def test_sections_must_be_mappings(key: str) -> None:
    with pytest.raises(TranscriptHeaderError, match=f"'{key}' must be a mapping, not list"):
        parse_transcript_header(f"version: 2.2\n{key}: [1, 2]\n")
    assert dict(getattr(parse_transcript_header(f"version: 2.2\n{key}:\n"), key)) == {}


def test_render_writes_yaml_that_reads_back() -> None:
    header = TranscriptHeader(
        version="2.2",
        model="m",
        generation_settings={"temperature": 0.5},
        profiles={"harmony": {"strict": True}},
        extra={"notes": ["a", "é"]},
    )
    text = render_transcript_header(header)
    assert text.startswith("version: '2.2'\nmodel: m\n") and text.endswith("\n")
    assert "capabilities" not in text  # empty sections are left out
    assert "é" in text
    assert parse_transcript_header(text) == header
    assert render_transcript_header(TranscriptHeader()) == "version: '2.2'\n"


def test_a_transcript_opens_with_its_header() -> None:
    parsed = parse_transcript("version: 2.2\nmodel: m\n<|start|>user<|message|>hi<|end|>")
    assert parsed.conversation.header == TranscriptHeader(model="m")
    assert list(parsed.conversation) == [Message.user("hi")]
