"""Tools the model may call, how it must choose among them, and the text format.

:class:`FunctionTool` (a request's tool without ``type`` is one) is the tool this server
offers; any other type is refused as ``unsupported_tool_type``. :data:`ToolChoice` is
``none`` / ``auto`` / ``required``, a :class:`FunctionChoice` or an
:class:`AllowedTools`. :data:`TextFormat` is ``text``, ``json_object`` or a
:class:`JsonSchemaFormat`, echoed in a response without its schema (the schema's
``JsonSchemaResponseFormat`` has ``schema: null``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .base import Flag, Name, Text, WireModel, checking, tagger

ChoiceMode = Literal["none", "auto", "required"]
CHOICE_MODES: Final = ("none", "auto", "required")


def _default(value: Any) -> BeforeValidator:
    return BeforeValidator(lambda v: value if v is None else v)


class FunctionTool(WireModel):
    """A function the model may call: name, description, JSON Schema parameters, strictness."""

    type: Literal["function"] = "function"
    name: Name
    description: Text | None = None
    parameters: dict[str, Any] | None = None
    strict: Annotated[Flag, _default(True)] = True


def _tool_tag(value: Any) -> str | None:
    if isinstance(value, dict) and value.get("type", "function") == "function":
        return "@function"
    return "@function" if isinstance(value, FunctionTool) else None


Tool = Annotated[
    Annotated[FunctionTool, Tag("@function")],
    Discriminator(_tool_tag, custom_error_type="tool_type", custom_error_message="unsupported tool type"),
]
"""A tool of a request (function tools only)."""


class FunctionChoice(WireModel):
    """``tool_choice``: call this function."""

    type: Literal["function"] = "function"
    name: Text


class AllowedTool(WireModel):
    """A tool ``allowed_tools`` permits, by type (``function`` when left out) and name."""

    type: str | None = "function"
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
        {"function": "@function", "allowed_tools": "@allowed_tools"},
        {FunctionChoice: "@function", AllowedTools: "@allowed_tools"},
    )(value)


ToolChoice = Annotated[
    Annotated[ChoiceMode, Tag("@mode")]
    | Annotated[FunctionChoice, Tag("@function")]
    | Annotated[AllowedTools, Tag("@allowed_tools")],
    Discriminator(_choice_tag, custom_error_type="tool_choice_type", custom_error_message="bad tool choice"),
]
"""``tool_choice``: a mode, one function, or the allowed tools."""


class PlainText(WireModel):
    """``text.format``: free text."""

    type: Literal["text"] = "text"


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
