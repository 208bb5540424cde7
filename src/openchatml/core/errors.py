"""The error taxonomy of OpenChatML 2.2 (§14) as typed exceptions.

Every error carries its code string (``E-PARSE-HEADER`` …), a message, who is at
fault (``"input"``: bad text or tokens from a peer or a model; ``"caller"``: misuse of
the API) and, where it applies, a position: a character offset with line and column
for text, or a token index for token ids.

The parsers raise nothing but subclasses of :class:`OCMError`; a fuzz test holds them
to that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

Fault = Literal["input", "caller"]


@dataclass(frozen=True, slots=True)
class Position:
    """Where an error was found: a character offset (text) or a token index (tokens).

    ``line`` and ``column`` are 1-based and only set for text input.
    """

    offset: int
    line: int | None = None
    column: int | None = None
    unit: Literal["char", "token"] = "char"

    def __str__(self) -> str:
        if self.unit == "token":
            return f"token {self.offset}"
        if self.line is not None and self.column is not None:
            return f"line {self.line}, column {self.column}"
        return f"offset {self.offset}"


def text_position(text: str, offset: int) -> Position:
    """The :class:`Position` of character ``offset`` in ``text`` (line/column 1-based)."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Position(offset=offset, line=line, column=column, unit="char")


class OCMError(Exception):
    """Base of every error openchatml raises on purpose.

    ``code`` is the OCM error code; ``fault`` says who must act; ``http_status`` and
    ``error_type`` are what a server answers with (Open Responses error types).
    """

    code: ClassVar[str] = "E-OCM"
    fault: ClassVar[Fault] = "input"
    http_status: ClassVar[int] = 400
    error_type: ClassVar[str] = "invalid_request_error"

    def __init__(self, message: str, *, position: Position | None = None) -> None:
        self.message = message
        self.position = position
        where = f" (at {position})" if position is not None else ""
        super().__init__(f"{self.code}: {message}{where}")

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary: code, message, fault and position (if any)."""
        out: dict[str, object] = {"code": self.code, "message": self.message, "fault": self.fault}
        if self.position is not None:
            pos: dict[str, object] = {"offset": self.position.offset, "unit": self.position.unit}
            if self.position.line is not None:
                pos["line"] = self.position.line
                pos["column"] = self.position.column
            out["position"] = pos
        return out


class ParseError(OCMError):
    """Base of the errors found while reading text or tokens."""

    code = "E-PARSE"


class HeaderError(ParseError):
    """A malformed message header (unknown role, empty channel, stray words …)."""

    code = "E-PARSE-HEADER"


class ChannelMissingError(ParseError):
    """A message has no channel where the profile requires one."""

    code = "E-PARSE-CHANNEL-MISSING"


class UnexpectedTokenError(ParseError):
    """A control token, or text, where the grammar allows none (e.g. text before ``<|start|>``)."""

    code = "E-PARSE-UNEXPECTED-TOKEN"


class TranscriptHeaderError(ParseError):
    """The OCM §2 YAML document header is not valid YAML or lacks ``version``."""

    code = "E-PARSE-DOCUMENT-HEADER"


class BodyConstraintError(OCMError):
    """A body does not parse as the type its ``<|constrain|>`` declares."""

    code = "E-BODY-CONSTRAINT-VIOLATION"


class CallSchemaError(OCMError):
    """Tool-call arguments are missing or do not match the tool's schema."""

    code = "E-CALL-SCHEMA"


class ToolTimeoutError(OCMError):
    """A tool exceeded its ``deadline_ms``."""

    code = "E-TOOL-TIMEOUT"
    http_status = 504
    error_type = "server_error"


class ToolCancelledError(OCMError):
    """A tool call was cancelled by the runtime."""

    code = "E-TOOL-CANCELLED"
    http_status = 499
    error_type = "server_error"


class StreamTruncatedError(ParseError):
    """Input ended inside a message: no ``<|end|>``, ``<|return|>`` or ``<|call|>``."""

    code = "E-STREAM-TRUNCATED"


class VisibilityError(OCMError):
    """Hidden content (system, developer, analysis, commentary) asked for outside a debug view."""

    code = "E-PERM-VISIBILITY"
    fault = "caller"
    http_status = 403
    error_type = "permission_error"


class RenderError(OCMError):
    """A conversation that cannot be rendered (a tool message without a name, say)."""

    code = "E-RENDER"
    fault = "caller"


class EncodingLoadError(OCMError):
    """The offline vocabulary is missing or does not match its checksum."""

    code = "E-ENCODING"
    fault = "caller"
    http_status = 500
    error_type = "server_error"


ERROR_CLASSES: tuple[type[OCMError], ...] = (
    HeaderError,
    ChannelMissingError,
    UnexpectedTokenError,
    TranscriptHeaderError,
    BodyConstraintError,
    CallSchemaError,
    ToolTimeoutError,
    ToolCancelledError,
    StreamTruncatedError,
    VisibilityError,
    RenderError,
    EncodingLoadError,
)
"""Every concrete error class, one per code."""

BY_CODE: dict[str, type[OCMError]] = {cls.code: cls for cls in ERROR_CLASSES}
"""Error class by its code string."""
