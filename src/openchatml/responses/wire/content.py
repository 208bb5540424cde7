"""Content parts: what messages, tool outputs and reasoning items are made of.

A message from a user, the system or a developer holds :data:`InputPart` s (text, image,
file, video); an assistant message :data:`OutputPart` s (text, refusal); a reasoning item
:class:`ReasoningText` content and :class:`SummaryText` summaries. In a request, the
names clients use for the same part are read as the schema's (``text`` as
``input_text`` in a user message, as ``output_text`` in an assistant's, as
``reasoning_text`` in reasoning). :class:`LogProb` and :class:`TopLogProb` are frozen
dataclasses: built for every sampled token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from .base import MAX_TEXT, Text, WireModel, at_most, checking, is_none, tagger
from .dialects import DEFAULT_DIALECT, WireDialect

MAX_IMAGE_URL: Final = 20 * 1024 * 1024
MAX_FILE_DATA: Final = 32 * 1024 * 1024

INPUT_PARTS: Final = "'input_text', 'input_image' or 'input_file'"
OUTPUT_PARTS: Final = "'output_text' or 'refusal'"


def _always(kind: str) -> BeforeValidator:
    """A ``type`` read as ``kind``, whichever of its accepted names the client used."""
    return BeforeValidator(lambda _: kind)


def only(data: Any, kinds: tuple[str, ...], info: ValidationInfo) -> Any:
    """``data``, unless it is a request's JSON object whose ``type`` is none of ``kinds``."""
    if isinstance(data, dict) and data.get("type") not in kinds and checking(info):
        expected = " or ".join(repr(k) for k in kinds)
        raise PydanticCustomError("content_type", "bad content type", {"expected": expected})
    return data


@dataclass(frozen=True, slots=True)
class TopLogProb:
    """One likely token at a position: its text, log probability and bytes."""

    token: str
    logprob: float
    bytes: tuple[int, ...]

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """``{token, logprob, bytes}``."""
        return {"token": self.token, "logprob": self.logprob, "bytes": list(self.bytes)}


@dataclass(frozen=True, slots=True)
class LogProb:
    """A sampled token: its text, log probability, bytes and the likeliest alternatives."""

    token: str
    logprob: float
    bytes: tuple[int, ...]
    top_logprobs: tuple[TopLogProb, ...] = ()

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """``{token, logprob, bytes, top_logprobs}``."""
        return {
            "token": self.token,
            "logprob": self.logprob,
            "bytes": list(self.bytes),
            "top_logprobs": [t.to_json() for t in self.top_logprobs],
        }


class InputText(WireModel):
    """Text given to the model (``input_text``; ``text`` in a request)."""

    type: Annotated[Literal["input_text"], _always("input_text")] = "input_text"
    text: Text


class InputImage(WireModel):
    """An image by URL (or data URL) or file id."""

    type: Literal["input_image"] = "input_image"
    image_url: Annotated[str, at_most(MAX_IMAGE_URL)] | None = None
    detail: Annotated[
        Literal["low", "high", "auto"], BeforeValidator(lambda v: "auto" if v is None else v)
    ] = "auto"
    file_id: Text | None = Field(default=None, exclude_if=is_none)

    @model_validator(mode="after")
    def _has_source(self) -> InputImage:
        if self.image_url is None and self.file_id is None:
            raise PydanticCustomError("needs_source", "no source", {"sources": "'image_url' or 'file_id'"})
        return self


_FileData = Annotated[str, at_most(MAX_FILE_DATA)]


class InputFile(WireModel):
    """A file: inline base64 ``file_data``, a URL or a file id, with its name."""

    type: Literal["input_file"] = "input_file"
    filename: _FileData | None = Field(default=None, exclude_if=is_none)
    file_data: _FileData | None = Field(default=None, exclude_if=is_none)
    file_url: _FileData | None = Field(default=None, exclude_if=is_none)
    file_id: _FileData | None = Field(default=None, exclude_if=is_none)

    @model_validator(mode="after")
    def _has_source(self) -> InputFile:
        if self.file_data is None and self.file_url is None and self.file_id is None:
            raise PydanticCustomError(
                "needs_source", "no source", {"sources": "'file_data', 'file_url' or 'file_id'"}
            )
        return self


class InputVideo(WireModel):
    """A video by URL."""

    type: Literal["input_video"] = "input_video"
    video_url: Text


class OutputText(WireModel):
    """Text the model wrote, with its annotations and, when asked for, the tokens'
    log probabilities (absent when not asked for)."""

    type: Annotated[Literal["output_text"], _always("output_text")] = "output_text"
    text: Text
    annotations: Annotated[tuple[Any, ...], BeforeValidator(lambda v: () if v is None else v)] = ()
    logprobs: tuple[LogProb, ...] | None = Field(default=None, exclude_if=is_none)


class Refusal(WireModel):
    """The model's refusal to answer."""

    type: Literal["refusal"] = "refusal"
    refusal: Text


class ReasoningText(WireModel):
    """Chain of thought (``reasoning_text``; ``text`` or ``output_text`` in a request)."""

    type: Annotated[Literal["reasoning_text"], _always("reasoning_text")] = "reasoning_text"
    text: Text

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: Any, info: ValidationInfo) -> Any:
        return only(data, ("reasoning_text", "text", "output_text"), info)


class SummaryText(WireModel):
    """A summary of a reasoning item, for end users."""

    type: Literal["summary_text"] = "summary_text"
    text: Text

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: Any, info: ValidationInfo) -> Any:
        return only(data, ("summary_text",), info)


_INPUT_TAGS: Final = {
    "input_text": "@input_text",
    "text": "@input_text",
    "input_image": "@input_image",
    "input_file": "@input_file",
    "input_video": "@input_video",
}
_INPUT_CLASSES: Final[Mapping[type, str]] = {
    InputText: "@input_text",
    InputImage: "@input_image",
    InputFile: "@input_file",
    InputVideo: "@input_video",
}
InputPart = Annotated[
    Annotated[InputText, Tag("@input_text")]
    | Annotated[InputImage, Tag("@input_image")]
    | Annotated[InputFile, Tag("@input_file")]
    | Annotated[InputVideo, Tag("@input_video")],
    Discriminator(
        tagger(_INPUT_TAGS, _INPUT_CLASSES),
        custom_error_type="input_content_type",
        custom_error_message="bad content type",
    ),
]
"""A part of a user, system or developer message, or of a function call's output."""

_OUTPUT_TAGS: Final = {
    "output_text": "@output_text",
    "input_text": "@output_text",
    "text": "@output_text",
    "refusal": "@refusal",
}
OutputPart = Annotated[
    Annotated[OutputText, Tag("@output_text")] | Annotated[Refusal, Tag("@refusal")],
    Discriminator(
        tagger(_OUTPUT_TAGS, {OutputText: "@output_text", Refusal: "@refusal"}),
        custom_error_type="output_content_type",
        custom_error_message="bad content type",
    ),
]
"""A part of an assistant message."""

_STREAMED: Final = {kind: f"@{kind}" for kind in ("output_text", "refusal", "reasoning_text", "summary_text")}
StreamedPart = Annotated[
    Annotated[OutputText, Tag("@output_text")]
    | Annotated[Refusal, Tag("@refusal")]
    | Annotated[ReasoningText, Tag("@reasoning_text")]
    | Annotated[SummaryText, Tag("@summary_text")],
    Discriminator(
        tagger(
            _STREAMED,
            {
                OutputText: "@output_text",
                Refusal: "@refusal",
                ReasoningText: "@reasoning_text",
                SummaryText: "@summary_text",
            },
        )
    ),
]
"""A part the event stream adds and finishes (``content_part.*``, ``reasoning_summary_part.*``)."""


def parts_from_text(kind: str) -> BeforeValidator:
    """A ``content`` given as a string: one ``kind`` part holding it (in a request the
    string is held to the text bound first, at the ``content`` itself)."""

    def convert(value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            if len(value) > MAX_TEXT and checking(info):
                raise PydanticCustomError("too_long", "too long", {"limit": MAX_TEXT})
            return ({"type": kind, "text": value},)
        return value

    return BeforeValidator(convert)
