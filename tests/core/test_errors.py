"""The error taxonomy: one class per OCM code (the README's table), who is at fault,
what a server answers, and positions in text (line, column) and in token ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import openchatml
from openchatml import OCMError, ParseError, Position
from openchatml.core.errors import BY_CODE, ERROR_CLASSES, text_position

# code → (class name, fault, HTTP status, Open Responses error type)
TAXONOMY = {
    "E-PARSE-HEADER": ("HeaderError", "input", 400, "invalid_request_error"),
    "E-PARSE-CHANNEL-MISSING": ("ChannelMissingError", "input", 400, "invalid_request_error"),
    "E-PARSE-UNEXPECTED-TOKEN": ("UnexpectedTokenError", "input", 400, "invalid_request_error"),
    "E-PARSE-DOCUMENT-HEADER": ("TranscriptHeaderError", "input", 400, "invalid_request_error"),
    "E-BODY-CONSTRAINT-VIOLATION": ("BodyConstraintError", "input", 400, "invalid_request_error"),
    "E-CALL-SCHEMA": ("CallSchemaError", "input", 400, "invalid_request_error"),
    "E-TOOL-TIMEOUT": ("ToolTimeoutError", "input", 504, "server_error"),
    "E-TOOL-CANCELLED": ("ToolCancelledError", "input", 499, "server_error"),
    "E-STREAM-TRUNCATED": ("StreamTruncatedError", "input", 400, "invalid_request_error"),
    "E-PERM-VISIBILITY": ("VisibilityError", "caller", 403, "permission_error"),
    "E-RENDER": ("RenderError", "caller", 400, "invalid_request_error"),
    "E-ENCODING": ("EncodingLoadError", "caller", 500, "server_error"),
}
READING = {
    "HeaderError",
    "ChannelMissingError",
    "UnexpectedTokenError",
    "TranscriptHeaderError",
    "StreamTruncatedError",
}


@pytest.mark.parametrize("code", list(TAXONOMY))
def test_every_code_has_its_class(code: str) -> None:
    name, fault, status, error_type = TAXONOMY[code]
    cls = BY_CODE[code]
    assert cls.__name__ == name and getattr(openchatml, name) is cls
    assert (cls.code, cls.fault, cls.http_status, cls.error_type) == (code, fault, status, error_type)
    assert issubclass(cls, OCMError)
    # the errors found while reading text or tokens share a base
    assert issubclass(cls, ParseError) == (name in READING)


def test_the_codes_are_all_there_and_distinct() -> None:
    assert set(BY_CODE) == set(TAXONOMY)
    assert len({cls.code for cls in ERROR_CLASSES}) == len(ERROR_CLASSES) == len(TAXONOMY)


def test_message_and_position_in_the_text() -> None:
    error = BY_CODE["E-PARSE-HEADER"]("unknown role 'x'", position=Position(12, 2, 3))
    assert str(error) == "E-PARSE-HEADER: unknown role 'x' (at line 2, column 3)"
    assert error.message == "unknown role 'x'"
    assert error.to_dict() == {
        "code": "E-PARSE-HEADER",
        "message": "unknown role 'x'",
        "fault": "input",
        "position": {"offset": 12, "unit": "char", "line": 2, "column": 3},
    }
    token = BY_CODE["E-STREAM-TRUNCATED"]("cut", position=Position(7, unit="token"))
    assert str(token) == "E-STREAM-TRUNCATED: cut (at token 7)"
    assert token.to_dict()["position"] == {"offset": 7, "unit": "token"}
    plain = BY_CODE["E-RENDER"]("no name")
    assert str(plain) == "E-RENDER: no name"
    assert plain.to_dict() == {"code": "E-RENDER", "message": "no name", "fault": "caller"}


def test_position_text() -> None:
    assert str(Position(5)) == "offset 5"
    assert str(Position(5, 1, 6)) == "line 1, column 6"
    assert str(Position(5, 1, 6, unit="token")) == "token 5"


@pytest.mark.parametrize(
    ("text", "offset", "line", "column"),
    [
        ("abc", 0, 1, 1),
        ("abc", 2, 1, 3),
        ("ab\ncd", 2, 1, 3),  # the newline itself ends line 1
        ("ab\ncd", 3, 2, 1),
        ("ab\ncd", 4, 2, 2),
        ("a\n\n\nb", 4, 4, 1),
        ("abc", -5, 1, 1),  # clamped into the text
        ("ab\ncd", 99, 2, 3),
        ("", 0, 1, 1),
    ],
)
def test_text_position(text: str, offset: int, line: int, column: int) -> None:
    assert text_position(text, offset) == Position(max(0, min(offset, len(text))), line, column, "char")


@given(st.text(st.sampled_from("ab\n")), st.data())
def test_text_position_finds_the_character(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    where = text_position(text, offset)
    assert where.line is not None and where.column is not None
    lines = text.split("\n")
    # the line and column point back at the same offset
    assert sum(len(line) + 1 for line in lines[: where.line - 1]) + where.column - 1 == offset
    assert where.column - 1 <= len(lines[where.line - 1])


SPEC_CODES = {
    "E-PARSE-HEADER",
    "E-PARSE-CHANNEL-MISSING",
    "E-BODY-CONSTRAINT-VIOLATION",
    "E-CALL-SCHEMA",
    "E-TOOL-TIMEOUT",
    "E-TOOL-CANCELLED",
    "E-STREAM-TRUNCATED",
    "E-PERM-VISIBILITY",
}
"""The codes of OCM 2.2 §14."""


def test_the_readme_documents_every_code_and_marks_the_extensions() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in readme.splitlines() if line.startswith("| `E-")}
    codes = {*BY_CODE, "E-PARSE", "E-INTERCHANGE"}
    for code in codes:
        marked = f"`{code}` *ext*"
        assert (f"`{code}`" in rows) if code in SPEC_CODES else (marked in rows), code
    assert set(BY_CODE) >= SPEC_CODES
