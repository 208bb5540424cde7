"""Tools the model may call, how it must choose among them, and the text format.

A request's tools are:

* offered to the model: :class:`FunctionTool` s (a tool without ``type`` is one),
  :class:`CustomTool` s (OpenAI's ``custom`` tools, ``openai:custom`` in Open Responses:
  their input is raw text, free or in the language of a :class:`GrammarFormat`),
  :class:`NamespaceTool` s (function and custom tools grouped under a name the model
  calls them by) and the tools the client runs itself, :class:`LocalShellTool`,
  :class:`ShellTool` and :class:`ApplyPatchTool`;
* run by the server: :class:`CodeInterpreterTool` (gpt-oss's ``python``; its container is
  the conversation's kernel) and :class:`McpServerTool` (a remote MCP server's tools);
* accepted, not offered (no backend runs them): :class:`WebSearchTool`;
* refused: the computer tools (a text-only model cannot see a screen), and any other
  type (``unsupported_tool_type``).

:data:`ToolChoice` is ``none`` / ``auto`` / ``required``, a :class:`FunctionChoice`, a
:class:`CustomChoice` (either naming a ``namespace`` too), a :class:`ToolTypeChoice`
(``{"type": "shell"}`` …), an :class:`McpChoice` or an :class:`AllowedTools`. :data:`TextFormat` is ``text``,
``json_object`` or a :class:`JsonSchemaFormat`, echoed in a response without its schema
(the schema's ``JsonSchemaResponseFormat`` has ``schema: null``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
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
    is_none,
    tagger,
)
from .dialects import WireDialect, canonical_type, wire_type

ChoiceMode = Literal["none", "auto", "required"]
CHOICE_MODES: Final = ("none", "auto", "required")
CUSTOM: Final = "openai:custom"
"""The ``type`` of a custom tool, and of the choice of one (``custom`` in ``openai``)."""
CustomType = Annotated[Literal["openai:custom"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(CUSTOM)]
NAMESPACE: Final = "openai:namespace"
LOCAL_SHELL: Final = "openai:local_shell"
SHELL: Final = "openai:shell"
APPLY_PATCH: Final = "openai:apply_patch"
CLIENT_TOOLS: Final = (LOCAL_SHELL, SHELL, APPLY_PATCH)
"""The ``type`` s of the tools the client runs (offered to the model as functions)."""
WEB_SEARCH: Final = (
    "openai:web_search",
    "openai:web_search_2025_08_26",
    "openai:web_search_preview",
    "openai:web_search_preview_2025_03_11",
)
"""The ``type`` s of the web search tools (accepted, not offered)."""
CODE_INTERPRETER: Final = "openai:code_interpreter"
"""The ``type`` of the code interpreter tool (``code_interpreter`` in ``openai``)."""
MCP: Final = "openai:mcp"
"""The ``type`` of a remote MCP server's tool, and of the choice of one (``mcp`` in ``openai``)."""
COMPUTER: Final = ("openai:computer", "openai:computer_use_preview")
"""The ``type`` s of the computer tools (refused)."""

OFFERED_TOOL_TYPES: Final = (
    "function",
    *(wire_type(kind, WireDialect.OPENAI) for kind in (CUSTOM, NAMESPACE, *CLIENT_TOOLS)),
)
"""The tool types offered to the model (OpenAI's spelling)."""
HOSTED_TOOL_TYPES: Final = tuple(wire_type(kind, WireDialect.OPENAI) for kind in (CODE_INTERPRETER, MCP))
"""The tool types the server runs itself (offered where it is on for the model)."""
UNOFFERED_TOOL_TYPES: Final = tuple(wire_type(kind, WireDialect.OPENAI) for kind in WEB_SEARCH)
"""The tool types a request may hold that are never offered to the model (no backend runs
them): echoed in the response, a choice of one lets the model call nothing."""
REFUSED_TOOL_TYPES: Final = tuple(wire_type(kind, WireDialect.OPENAI) for kind in COMPUTER)
"""The tool types refused with a 400 of their own: a text-only model cannot see a screen."""


def _extension(*names: str) -> WithJsonSchema:
    """The JSON Schema of a ``type`` that is one of the extensions ``names``, either spelling."""
    spelled = [spelling for name in names for spelling in (name, wire_type(name, WireDialect.OPENAI))]
    return WithJsonSchema({"type": "string", "enum": spelled})


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


class FunctionChoice(WireModel):
    """``tool_choice``: call this function (of ``namespace``, when it is in one)."""

    type: Literal["function"] = "function"
    name: Text
    namespace: Text | None = Field(default=None, exclude_if=is_none)


class CustomChoice(WireModel):
    """``tool_choice``: call this custom tool (of ``namespace``, when it is in one)."""

    type: CustomType = CUSTOM
    name: Text
    namespace: Text | None = Field(default=None, exclude_if=is_none)


def _member_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("type", "function")
        if kind == "function":
            return "@function"
        return "@custom" if isinstance(kind, str) and canonical_type(kind) == CUSTOM else None
    if isinstance(value, FunctionTool):
        return "@function"
    return "@custom" if isinstance(value, CustomTool) else None


NamespaceMember = Annotated[
    Annotated[FunctionTool, Tag("@function")] | Annotated[CustomTool, Tag("@custom")],
    Discriminator(_member_tag, custom_error_type="tool_type", custom_error_message="unsupported tool type"),
]
"""A tool of a namespace: a function or a custom tool."""


class NamespaceTool(WireModel):
    """Function and custom ``tools`` grouped under ``name``: the model calls them
    ``NAME.TOOL`` (``namespace`` in ``openai``)."""

    type: Annotated[
        Literal["openai:namespace"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(NAMESPACE)
    ] = NAMESPACE
    name: Name
    description: Annotated[Text, _default("")] = ""
    tools: tuple[NamespaceMember, ...]


class LocalShellTool(WireModel):
    """A shell the client runs: the model's calls are ``local_shell_call`` items."""

    type: Annotated[
        Literal["openai:local_shell"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(LOCAL_SHELL)
    ] = LOCAL_SHELL


class ShellTool(WireModel):
    """A shell the client runs, several commands per call: ``shell_call`` items."""

    type: Annotated[Literal["openai:shell"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(SHELL)] = SHELL
    environment: dict[str, Any] | None = Field(default=None, exclude_if=is_none)


class ApplyPatchTool(WireModel):
    """File edits the client applies: ``apply_patch_call`` items, one operation each."""

    type: Annotated[
        Literal["openai:apply_patch"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(APPLY_PATCH)
    ] = APPLY_PATCH


ClientTool = LocalShellTool | ShellTool | ApplyPatchTool
"""A tool the client runs, offered to the model as a function."""

WebSearchType = Literal[
    "openai:web_search",
    "openai:web_search_2025_08_26",
    "openai:web_search_preview",
    "openai:web_search_preview_2025_03_11",
]


class WebSearchTool(WireModel):
    """OpenAI's web search (``web_search``, ``web_search_preview`` and their dated
    versions): accepted and echoed with its settings, not offered to the model."""

    type: Annotated[WebSearchType, READ_EXTENSION, WRITE_EXTENSION, _extension(*WEB_SEARCH)]
    filters: dict[str, Any] | None = Field(default=None, exclude_if=is_none)
    search_context_size: Text | None = Field(default=None, exclude_if=is_none)
    user_location: dict[str, Any] | None = Field(default=None, exclude_if=is_none)
    external_web_access: bool | None = Field(default=None, exclude_if=is_none)
    search_content_types: tuple[Text, ...] | None = Field(default=None, exclude_if=is_none)


class CodeInterpreterTool(WireModel):
    """Python the server runs for the model (gpt-oss's ``python`` tool). ``container``:
    ``{"type": "auto"}`` or a container id, accepted either way: the container is always
    the kernel of the conversation (see ``docs/server.md``)."""

    type: Annotated[
        Literal["openai:code_interpreter"],
        READ_EXTENSION,
        WRITE_EXTENSION,
        extension_schema(CODE_INTERPRETER),
    ] = CODE_INTERPRETER
    container: Text | dict[str, Any] = Field(default_factory=lambda: {"type": "auto"})


class McpServerTool(WireModel):
    """A remote MCP server whose tools the server calls for the model (``mcp`` in
    ``openai``): by ``server_url`` or by a label the server has configured. ``headers`` and
    ``authorization`` are credentials: read, never written back (a response echoes the tool
    without them). The other fields are checked by :mod:`openchatml.tools.mcp.spec`."""

    type: Annotated[Literal["openai:mcp"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(MCP)] = MCP
    server_label: Text
    server_url: Text | None = Field(default=None, exclude_if=is_none)
    server_description: Text | None = Field(default=None, exclude_if=is_none)
    allowed_tools: tuple[Text, ...] | dict[str, Any] | None = Field(default=None, exclude_if=is_none)
    require_approval: Text | dict[str, Any] | None = Field(default=None, exclude_if=is_none)
    headers: dict[str, Any] | None = Field(default=None, exclude=True, repr=False)
    authorization: Any = Field(default=None, exclude=True, repr=False)
    connector_id: Text | None = Field(default=None, exclude_if=is_none)
    tunnel_id: Text | None = Field(default=None, exclude_if=is_none)

    def spec_fields(self) -> dict[str, Any]:
        """The tool as :meth:`~openchatml.tools.mcp.spec.McpToolSpec.from_request` reads it
        (credentials included)."""
        fields = self.model_dump(exclude_none=True)
        fields.update(type="mcp", headers=self.headers, authorization=self.authorization)
        if isinstance(self.allowed_tools, tuple):
            fields["allowed_tools"] = list(self.allowed_tools)
        return fields


HostedTool = WebSearchTool | CodeInterpreterTool | McpServerTool
"""A tool the client does not run: the code interpreter and MCP servers (run here), or web
search."""


_TOOL_TAGS: Final = {
    "function": "@function",
    CUSTOM: "@custom",
    NAMESPACE: "@namespace",
    LOCAL_SHELL: "@local_shell",
    SHELL: "@shell",
    APPLY_PATCH: "@apply_patch",
    **dict.fromkeys(WEB_SEARCH, "@web_search"),
    CODE_INTERPRETER: "@code_interpreter",
    MCP: "@mcp",
}
_TOOL_CLASSES: Final[dict[type, str]] = {
    FunctionTool: "@function",
    CustomTool: "@custom",
    NamespaceTool: "@namespace",
    LocalShellTool: "@local_shell",
    ShellTool: "@shell",
    ApplyPatchTool: "@apply_patch",
    WebSearchTool: "@web_search",
    CodeInterpreterTool: "@code_interpreter",
    McpServerTool: "@mcp",
}


def _tool_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("type", "function")
        return _TOOL_TAGS.get(canonical_type(kind)) if isinstance(kind, str) else None
    return _TOOL_CLASSES.get(type(value))


Tool = Annotated[
    Annotated[FunctionTool, Tag("@function")]
    | Annotated[CustomTool, Tag("@custom")]
    | Annotated[NamespaceTool, Tag("@namespace")]
    | Annotated[LocalShellTool, Tag("@local_shell")]
    | Annotated[ShellTool, Tag("@shell")]
    | Annotated[ApplyPatchTool, Tag("@apply_patch")]
    | Annotated[WebSearchTool, Tag("@web_search")]
    | Annotated[CodeInterpreterTool, Tag("@code_interpreter")]
    | Annotated[McpServerTool, Tag("@mcp")],
    Discriminator(_tool_tag, custom_error_type="tool_type", custom_error_message="unsupported tool type"),
]
"""A tool of a request (see the module docstring)."""


ToolType = Literal[
    "openai:local_shell",
    "openai:shell",
    "openai:apply_patch",
    "openai:web_search",
    "openai:web_search_2025_08_26",
    "openai:web_search_preview",
    "openai:web_search_preview_2025_03_11",
    "openai:code_interpreter",
]


class ToolTypeChoice(WireModel):
    """``tool_choice``: call the tool of this ``type`` (one the client runs, the code
    interpreter, or web search, which is never offered: the model then calls nothing)."""

    type: Annotated[
        ToolType, READ_EXTENSION, WRITE_EXTENSION, _extension(*CLIENT_TOOLS, *WEB_SEARCH, CODE_INTERPRETER)
    ]


class McpChoice(WireModel):
    """``tool_choice``: call a tool of the MCP server ``server_label`` (``name``: that
    tool), on the first step of the agent loop (``mcp`` in ``openai``)."""

    type: Annotated[Literal["openai:mcp"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(MCP)] = MCP
    server_label: Text
    name: Text | None = Field(default=None, exclude_if=is_none)


class AllowedTool(WireModel):
    """A tool ``allowed_tools`` permits: by type (``function`` when left out,
    ``openai:custom``) and name (of ``namespace``, when it is in one); a whole namespace
    (``openai:namespace`` and its name); a tool of a type without names
    (``openai:shell`` …)."""

    type: Annotated[str | None, READ_EXTENSION, WRITE_EXTENSION] = "function"
    name: Text | None = Field(default=None, exclude_if=is_none)
    namespace: Text | None = Field(default=None, exclude_if=is_none)


class AllowedTools(WireModel):
    """``tool_choice``: choose among these tools only, in ``mode``."""

    type: Literal["allowed_tools"] = "allowed_tools"
    tools: tuple[AllowedTool, ...]
    mode: Annotated[ChoiceMode, _default("auto")] = "auto"


CHOICE_TYPES: Final = (
    "function",
    "custom",
    "allowed_tools",
    "mcp",
    *(wire_type(kind, WireDialect.OPENAI) for kind in get_args(ToolType)),
)
"""The ``type`` s of a ``tool_choice`` object (OpenAI's spelling)."""
_CHOICE_TAGS: Final = {
    "function": "@function",
    CUSTOM: "@custom",
    "allowed_tools": "@allowed_tools",
    MCP: "@mcp",
    **dict.fromkeys(get_args(ToolType), "@tool_type"),
}
_CHOICE_CLASSES: Final[dict[type, str]] = {
    FunctionChoice: "@function",
    CustomChoice: "@custom",
    AllowedTools: "@allowed_tools",
    ToolTypeChoice: "@tool_type",
    McpChoice: "@mcp",
}


def _choice_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "@mode"
    if isinstance(value, dict):
        kind = value.get("type")
        return _CHOICE_TAGS.get(canonical_type(kind)) if isinstance(kind, str) else None
    return _CHOICE_CLASSES.get(type(value))


ToolChoice = Annotated[
    Annotated[ChoiceMode, Tag("@mode")]
    | Annotated[FunctionChoice, Tag("@function")]
    | Annotated[CustomChoice, Tag("@custom")]
    | Annotated[ToolTypeChoice, Tag("@tool_type")]
    | Annotated[McpChoice, Tag("@mcp")]
    | Annotated[AllowedTools, Tag("@allowed_tools")],
    Discriminator(_choice_tag, custom_error_type="tool_choice_type", custom_error_message="bad tool choice"),
]
"""``tool_choice``: a mode, one function, one custom tool, a tool by type, or the allowed
tools."""


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
