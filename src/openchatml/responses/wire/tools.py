"""Tools the model may call, how it must choose among them, and the text format.

A request's tools are :class:`FunctionTool` s (a tool without ``type`` is one) and
:class:`CustomTool` s (OpenAI's ``custom`` tools, ``openai:custom`` in Open Responses:
their input is raw text, free or in the language of a :class:`GrammarFormat`); any other
type is refused as ``unsupported_tool_type``. :data:`ToolChoice` is ``none`` / ``auto`` /
``required``, a :class:`FunctionChoice`, a :class:`CustomChoice` or an
:class:`AllowedTools`. :data:`TextFormat` is ``text``, ``json_object`` or a
:class:`JsonSchemaFormat`, echoed in a response without its schema (the schema's
``JsonSchemaResponseFormat`` has ``schema: null``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .base import (
    READ_EXTENSION,
    WRITE_EXTENSION,
    Flag,
    Name,
    Text,
    WireModel,
    checking,
    extension_schema,
    tagger,
)
from .dialects import canonical_type

ChoiceMode = Literal["none", "auto", "required"]
CHOICE_MODES: Final = ("none", "auto", "required")
CUSTOM: Final = "openai:custom"
"""The ``type`` of a custom tool, and of the choice of one (``custom`` in ``openai``)."""
CustomType = Annotated[Literal["openai:custom"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(CUSTOM)]


def _default(value: Any) -> BeforeValidator:
    return BeforeValidator(lambda v: value if v is None else v)


class FunctionTool(WireModel):
    """A function the model may call: name, description, JSON Schema parameters, strictness."""

    type: Literal["function"] = "function"
    name: Name
    description: Text | None = None
    parameters: dict[str, Any] | None = None
    strict: Annotated[Flag, _default(True)] = True


class PlainText(WireModel):
    """``text.format``, or a custom tool's ``format``: free text."""

    type: Literal["text"] = "text"


class GrammarFormat(WireModel):
    """A custom tool's ``format``: its input is text in the language of ``definition``, a
    Lark grammar (``syntax: lark``) or a regular expression (``regex``)."""

    type: Literal["grammar"] = "grammar"
    syntax: Literal["lark", "regex"]
    definition: Text


InputFormat = Annotated[
    Annotated[PlainText, Tag("@text")] | Annotated[GrammarFormat, Tag("@grammar")],
    Discriminator(
        tagger({"text": "@text", "grammar": "@grammar"}, {PlainText: "@text", GrammarFormat: "@grammar"}),
        custom_error_type="input_format_type",
        custom_error_message="bad input format type",
    ),
]
"""A custom tool's ``format``: free text, or a grammar."""


class CustomTool(WireModel):
    """A tool whose input is raw text (no JSON arguments): free text, or text of its
    ``format`` 's grammar (free text when left out)."""

    type: CustomType = CUSTOM
    name: Name
    description: Text | None = None
    format: Annotated[InputFormat, _default({"type": "text"})] = Field(default_factory=PlainText)

    @property
    def grammar(self) -> GrammarFormat | None:
        """The grammar the input follows, or ``None`` for free text."""
        return self.format if isinstance(self.format, GrammarFormat) else None


def _tool_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("type", "function")
        if kind == "function":
            return "@function"
        return "@custom" if isinstance(kind, str) and canonical_type(kind) == CUSTOM else None
    if isinstance(value, FunctionTool):
        return "@function"
    return "@custom" if isinstance(value, CustomTool) else None


Tool = Annotated[
    Annotated[FunctionTool, Tag("@function")] | Annotated[CustomTool, Tag("@custom")],
    Discriminator(_tool_tag, custom_error_type="tool_type", custom_error_message="unsupported tool type"),
]
"""A tool of a request: a function or a custom tool."""


class FunctionChoice(WireModel):
    """``tool_choice``: call this function."""

    type: Literal["function"] = "function"
    name: Text


class CustomChoice(WireModel):
    """``tool_choice``: call this custom tool."""

    type: CustomType = CUSTOM
    name: Text


class AllowedTool(WireModel):
    """A tool ``allowed_tools`` permits, by type (``function`` when left out, or
    ``openai:custom``) and name."""

    type: Annotated[str | None, READ_EXTENSION, WRITE_EXTENSION] = "function"
    name: Text


class AllowedTools(WireModel):
    """``tool_choice``: choose among these tools only, in ``mode``."""

    type: Literal["allowed_tools"] = "allowed_tools"
    tools: tuple[AllowedTool, ...]
    mode: Annotated[ChoiceMode, _default("auto")] = "auto"


def _choice_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "@mode"
    return tagger(
        {"function": "@function", "custom": "@custom", CUSTOM: "@custom", "allowed_tools": "@allowed_tools"},
        {FunctionChoice: "@function", CustomChoice: "@custom", AllowedTools: "@allowed_tools"},
    )(value)


ToolChoice = Annotated[
    Annotated[ChoiceMode, Tag("@mode")]
    | Annotated[FunctionChoice, Tag("@function")]
    | Annotated[CustomChoice, Tag("@custom")]
    | Annotated[AllowedTools, Tag("@allowed_tools")],
    Discriminator(_choice_tag, custom_error_type="tool_choice_type", custom_error_message="bad tool choice"),
]
"""``tool_choice``: a mode, one function, one custom tool, or the allowed tools."""


class JsonObjectFormat(WireModel):
    """``text.format``: one JSON object, of no particular schema."""

    type: Literal["json_object"] = "json_object"


class JsonSchemaFormat(WireModel):
    """``text.format``: JSON matching ``schema``, named ``name``."""

    type: Literal["json_schema"] = "json_schema"
    name: Name
    description: Text | None = None
    json_schema: dict[str, Any] | None = Field(alias="schema")
    strict: Annotated[Flag, _default(False)] = False

    @field_validator("json_schema", mode="before")
    @classmethod
    def _schema_given(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and checking(info):
            raise PydanticCustomError("wrong_type", "wrong type", {"expected": "an object"})
        return value

    def echoed(self) -> JsonSchemaFormat:
        """The format as a response echoes it: without its schema."""
        return self.model_copy(update={"json_schema": None})


FORMAT_TYPES: Final = ("text", "json_object", "json_schema")
TextFormat = Annotated[
    Annotated[PlainText, Tag("@text")]
    | Annotated[JsonObjectFormat, Tag("@json_object")]
    | Annotated[JsonSchemaFormat, Tag("@json_schema")],
    Discriminator(
        tagger(
            {kind: f"@{kind}" for kind in FORMAT_TYPES},
            {PlainText: "@text", JsonObjectFormat: "@json_object", JsonSchemaFormat: "@json_schema"},
        ),
        custom_error_type="format_type",
        custom_error_message="bad format type",
    ),
]
"""``text.format``."""
