"""Items: the messages, calls, outputs and reasoning a conversation is made of.

One model per item, read from a request (``ItemParam``: string content, no ``id``, an
``EasyInputMessage`` without ``type``) and written back in the form the API returns
(``ItemField``): every item has an ``id`` (a fresh one where the client gave none) and,
but reasoning, a ``status`` (``completed`` for every item of a request). A message's
class is its role: :class:`UserMessage`, :class:`SystemMessage`,
:class:`DeveloperMessage` hold input parts, :class:`AssistantMessage` output parts.

:data:`InputItem` is an item of a request's ``input`` (an :class:`ItemReference`
included); :data:`Item` one of a conversation, stored or in a response's ``output``.
:func:`load_item` reads the JSON of an item this server wrote. A new item type is one
model here and one line in the unions (tagged ``@`` and its ``type``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BeforeValidator, Discriminator, Field, Tag, TypeAdapter, ValidationInfo

from .. import ids
from .base import (
    READ_EXTENSION,
    WRITE_EXTENSION,
    ItemId,
    Name,
    ShortText,
    Text,
    WireModel,
    checking,
    extension_schema,
    fresh,
    is_none,
)
from .content import (
    InputPart,
    OutputPart,
    ReasoningText,
    SummaryText,
    parts_from_text,
)
from .dialects import canonical_type
from .mcp_items import (
    MCP_APPROVAL_REQUEST,
    MCP_APPROVAL_RESPONSE,
    MCP_CALL,
    MCP_LIST_TOOLS,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    McpListTools,
)

ItemStatus = Literal["in_progress", "completed", "incomplete"]
Phase = Literal["commentary", "final_answer"]


def _completed_in_request(value: Any, info: ValidationInfo) -> Any:
    return "completed" if checking(info) or value is None else value


Status = Annotated[ItemStatus, BeforeValidator(_completed_in_request)]
"""An item's status: ``completed`` for every item a client gives."""


def _none_in_request(value: Any, info: ValidationInfo) -> Any:
    return None if checking(info) else value


def _empty_if_null(value: Any) -> Any:
    return () if value is None else value


InputContent = Annotated[tuple[InputPart, ...], parts_from_text("input_text")]
"""Input parts; a string is one ``input_text`` part."""


class MessageItem(WireModel):
    """What messages of every role have: ``type`` (``null`` in an ``EasyInputMessage``),
    ``id``, ``status``."""

    type: Annotated[Literal["message"], BeforeValidator(lambda v: "message" if v is None else v)] = "message"
    id: Annotated[ItemId, fresh(ids.message_id)] = Field(default_factory=ids.message_id)
    status: Status = "completed"


class UserMessage(MessageItem):
    """A message from the user."""

    role: Literal["user"] = "user"
    content: InputContent


class SystemMessage(MessageItem):
    """A system message of the client (a developer message to the model: Harmony's one
    system message is the server's)."""

    role: Literal["system"] = "system"
    content: InputContent


class DeveloperMessage(MessageItem):
    """Instructions from the developer."""

    role: Literal["developer"] = "developer"
    content: InputContent


class AssistantMessage(MessageItem):
    """A message of the model: a preamble (``phase: commentary``) or its answer
    (``final_answer``, or no phase)."""

    role: Literal["assistant"] = "assistant"
    content: Annotated[tuple[OutputPart, ...], parts_from_text("output_text")]
    phase: Phase | None = Field(default=None, exclude_if=is_none)


class FunctionCall(WireModel):
    """A call of a function tool: its name (and namespace) and JSON arguments, tied to its
    output by ``call_id``."""

    type: Literal["function_call"] = "function_call"
    id: Annotated[ItemId, fresh(ids.function_call_id)] = Field(default_factory=ids.function_call_id)
    call_id: ShortText
    name: Name
    arguments: Text
    status: Status = "completed"
    namespace: Name | None = Field(default=None, exclude_if=is_none)
    """The namespace of the function (``None``: a function of the request's top level)."""


_FunctionOutput = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[InputPart, ...], Tag("@parts")],
    Discriminator(lambda value: "@text" if isinstance(value, str) else "@parts"),
]


class FunctionCallOutput(WireModel):
    """What a function call returned: a string, or content parts."""

    type: Literal["function_call_output"] = "function_call_output"
    id: Annotated[ItemId, fresh(ids.function_call_output_id)] = Field(
        default_factory=ids.function_call_output_id
    )
    call_id: ShortText
    output: _FunctionOutput
    status: Status = "completed"


CUSTOM_TOOL_CALL: Final = "openai:custom_tool_call"
CUSTOM_TOOL_CALL_OUTPUT: Final = "openai:custom_tool_call_output"


class CustomToolCall(WireModel):
    """A call of a custom tool: its name and raw ``input`` text, tied to its output by
    ``call_id`` (``custom_tool_call`` in ``openai``)."""

    type: Annotated[
        Literal["openai:custom_tool_call"],
        READ_EXTENSION,
        WRITE_EXTENSION,
        extension_schema(CUSTOM_TOOL_CALL),
    ] = CUSTOM_TOOL_CALL
    id: Annotated[ItemId, fresh(ids.custom_tool_call_id)] = Field(default_factory=ids.custom_tool_call_id)
    call_id: ShortText
    name: Name
    input: Text
    status: Status = "completed"
    namespace: Name | None = Field(default=None, exclude_if=is_none)
    """The namespace of the tool (``None``: a tool of the request's top level)."""


class CustomToolCallOutput(WireModel):
    """What a custom tool call returned: a string, or content parts
    (``custom_tool_call_output`` in ``openai``)."""

    type: Annotated[
        Literal["openai:custom_tool_call_output"],
        READ_EXTENSION,
        WRITE_EXTENSION,
        extension_schema(CUSTOM_TOOL_CALL_OUTPUT),
    ] = CUSTOM_TOOL_CALL_OUTPUT
    id: Annotated[ItemId, fresh(ids.custom_tool_call_output_id)] = Field(
        default_factory=ids.custom_tool_call_output_id
    )
    call_id: ShortText
    output: _FunctionOutput
    status: Status = "completed"


def _new(prefix: str) -> Callable[[], str]:
    return lambda: ids.new_id(prefix)


LOCAL_SHELL_CALL: Final = "openai:local_shell_call"
LOCAL_SHELL_CALL_OUTPUT: Final = "openai:local_shell_call_output"
SHELL_CALL: Final = "openai:shell_call"
SHELL_CALL_OUTPUT: Final = "openai:shell_call_output"
APPLY_PATCH_CALL: Final = "openai:apply_patch_call"
APPLY_PATCH_CALL_OUTPUT: Final = "openai:apply_patch_call_output"
LocalShellCallType = Annotated[
    Literal["openai:local_shell_call"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(LOCAL_SHELL_CALL)
]
LocalShellCallOutputType = Annotated[
    Literal["openai:local_shell_call_output"],
    READ_EXTENSION,
    WRITE_EXTENSION,
    extension_schema(LOCAL_SHELL_CALL_OUTPUT),
]
ShellCallType = Annotated[
    Literal["openai:shell_call"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(SHELL_CALL)
]
ShellCallOutputType = Annotated[
    Literal["openai:shell_call_output"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(SHELL_CALL_OUTPUT)
]
ApplyPatchCallType = Annotated[
    Literal["openai:apply_patch_call"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(APPLY_PATCH_CALL)
]
ApplyPatchCallOutputType = Annotated[
    Literal["openai:apply_patch_call_output"],
    READ_EXTENSION,
    WRITE_EXTENSION,
    extension_schema(APPLY_PATCH_CALL_OUTPUT),
]


class LocalShellAction(WireModel):
    """What a ``local_shell`` call runs: ``command`` (its argv), with ``env``, a timeout,
    a user and a working directory."""

    type: Literal["exec"] = "exec"
    command: tuple[Text, ...]
    env: Annotated[dict[str, Text], BeforeValidator(lambda v: {} if v is None else v)] = Field(
        default_factory=dict
    )
    timeout_ms: int | None = Field(default=None, exclude_if=is_none)
    user: Text | None = Field(default=None, exclude_if=is_none)
    working_directory: Text | None = Field(default=None, exclude_if=is_none)


class LocalShellCall(WireModel):
    """A call of the ``local_shell`` tool, for the client to run (``local_shell_call`` in
    ``openai``)."""

    type: LocalShellCallType = LOCAL_SHELL_CALL
    id: Annotated[ItemId, fresh(_new("lsh"))] = Field(default_factory=_new("lsh"))
    call_id: ShortText
    action: LocalShellAction
    status: Status = "completed"


class LocalShellCallOutput(WireModel):
    """What a ``local_shell`` call printed: a JSON string, tied to its call by ``id`` (the
    call's ``call_id``, as OpenAI's API has it) or by ``call_id``."""

    type: LocalShellCallOutputType = LOCAL_SHELL_CALL_OUTPUT
    id: Annotated[ItemId, fresh(_new("lsho"))] = Field(default_factory=_new("lsho"))
    call_id: ShortText | None = Field(default=None, exclude_if=is_none)
    output: Text
    status: Status = "completed"

    @property
    def call(self) -> str:
        """The ``call_id`` of the call this output answers."""
        return self.call_id or self.id


class ShellAction(WireModel):
    """What a ``shell`` call runs: ``commands`` in order, with a timeout and a bound on
    the output kept."""

    commands: tuple[Text, ...]
    timeout_ms: int | None = None
    max_output_length: int | None = None


class ShellCall(WireModel):
    """A call of the ``shell`` tool, for the client to run (``shell_call`` in ``openai``)."""

    type: ShellCallType = SHELL_CALL
    id: Annotated[ItemId, fresh(_new("sh"))] = Field(default_factory=_new("sh"))
    call_id: ShortText
    action: ShellAction
    status: Status = "completed"
    environment: dict[str, Any] | None = Field(default=None, exclude_if=is_none)


class ShellOutcome(WireModel):
    """How a command ended: ``exit`` with its ``exit_code``, or ``timeout``."""

    type: Literal["exit", "timeout"]
    exit_code: int | None = Field(default=None, exclude_if=is_none)


class ShellOutput(WireModel):
    """What one command of a ``shell`` call printed, and how it ended."""

    stdout: Text
    stderr: Text
    outcome: ShellOutcome


class ShellCallOutput(WireModel):
    """What a ``shell`` call's commands printed (``shell_call_output`` in ``openai``)."""

    type: ShellCallOutputType = SHELL_CALL_OUTPUT
    id: Annotated[ItemId, fresh(_new("sho"))] = Field(default_factory=_new("sho"))
    call_id: ShortText
    output: tuple[ShellOutput, ...]
    max_output_length: int | None = Field(default=None, exclude_if=is_none)
    status: Status = "completed"


PatchKind = Literal["create_file", "update_file", "delete_file"]


class PatchOperation(WireModel):
    """One file edit of an ``apply_patch`` call: create or update ``path`` with ``diff``, or
    delete it."""

    type: PatchKind
    path: Text
    diff: Text | None = Field(default=None, exclude_if=is_none)


PatchStatus = Annotated[Literal["in_progress", "completed"], BeforeValidator(_completed_in_request)]
"""An ``apply_patch`` call's status: it has no ``incomplete``."""


class ApplyPatchCall(WireModel):
    """A call of the ``apply_patch`` tool, for the client to apply (``apply_patch_call`` in
    ``openai``)."""

    type: ApplyPatchCallType = APPLY_PATCH_CALL
    id: Annotated[ItemId, fresh(_new("apc"))] = Field(default_factory=_new("apc"))
    call_id: ShortText
    operation: PatchOperation
    status: PatchStatus = "completed"


class ApplyPatchCallOutput(WireModel):
    """Whether an ``apply_patch`` call's edit was applied (``completed``) or not
    (``failed``), with the tool's log (``apply_patch_call_output`` in ``openai``)."""

    type: ApplyPatchCallOutputType = APPLY_PATCH_CALL_OUTPUT
    id: Annotated[ItemId, fresh(_new("apco"))] = Field(default_factory=_new("apco"))
    call_id: ShortText
    status: Literal["completed", "failed"] = "completed"
    output: Text | None = Field(default=None, exclude_if=is_none)


CODE_INTERPRETER_CALL: Final = "openai:code_interpreter_call"
CodeInterpreterCallType = Annotated[
    Literal["openai:code_interpreter_call"],
    READ_EXTENSION,
    WRITE_EXTENSION,
    extension_schema(CODE_INTERPRETER_CALL),
]
CodeCallStatus = Literal["in_progress", "interpreting", "completed", "incomplete", "failed"]


class CodeLogs(WireModel):
    """What a code interpreter call printed (its stdout and stderr)."""

    type: Literal["logs"] = "logs"
    logs: Text


class CodeImage(WireModel):
    """An image a code interpreter call made, as a ``data:`` URL."""

    type: Literal["image"] = "image"
    url: Text


CodeOutput = Annotated[CodeLogs | CodeImage, Field(discriminator="type")]


class CodeInterpreterCall(WireModel):
    """Python the server ran for the model (``code_interpreter_call`` in ``openai``):
    ``code``, the kernel's ``container_id``, and what it gave (``outputs``: only when the
    request includes ``code_interpreter_call.outputs``, else ``null``)."""

    type: CodeInterpreterCallType = CODE_INTERPRETER_CALL
    id: Annotated[ItemId, fresh(_new("ci"))] = Field(default_factory=_new("ci"))
    code: Text | None = None
    container_id: Text = ""
    outputs: tuple[CodeOutput, ...] | None = None
    status: CodeCallStatus = "completed"


WEB_SEARCH_CALL: Final = "openai:web_search_call"
WebSearchCallType = Annotated[
    Literal["openai:web_search_call"], READ_EXTENSION, WRITE_EXTENSION, extension_schema(WEB_SEARCH_CALL)
]
SearchCallStatus = Literal["in_progress", "searching", "completed", "incomplete", "failed"]


class SearchSource(WireModel):
    """A page a search found."""

    type: Literal["url"] = "url"
    url: Text


class SearchQuery(WireModel):
    """A search: its ``query`` and, when the request includes
    ``web_search_call.action.sources``, the pages it found."""

    type: Literal["search"] = "search"
    query: Text | None = None
    sources: tuple[SearchSource, ...] | None = Field(default=None, exclude_if=is_none)


class PageOpening(WireModel):
    """A page the browser opened."""

    type: Literal["open_page"] = "open_page"
    url: Text | None = None


class PageFind(WireModel):
    """A ``pattern`` looked for in the page at ``url``."""

    type: Literal["find_in_page"] = "find_in_page"
    url: Text = ""
    pattern: Text = ""


SearchAction = Annotated[SearchQuery | PageOpening | PageFind, Field(discriminator="type")]


class WebSearchCall(WireModel):
    """A browser action the server ran for the model (``web_search_call`` in ``openai``):
    a search, a page opened, or a pattern found in a page."""

    type: WebSearchCallType = WEB_SEARCH_CALL
    id: Annotated[ItemId, fresh(_new("ws"))] = Field(default_factory=_new("ws"))
    action: SearchAction = Field(default_factory=SearchQuery)
    status: SearchCallStatus = "completed"


ClientCall = LocalShellCall | ShellCall | ApplyPatchCall
"""A call of a tool of the client's own kind (a shell, file edits)."""
ClientCallOutput = LocalShellCallOutput | ShellCallOutput | ApplyPatchCallOutput
"""What a call of a tool of the client's own kind gave."""
ToolCall = FunctionCall | CustomToolCall | ClientCall
"""A call of a tool the client runs."""
ToolCallOutput = FunctionCallOutput | CustomToolCallOutput | ClientCallOutput
"""What a tool the client runs returned."""


class ReasoningItem(WireModel):
    """The model's reasoning: its chain of thought (``content``; or sealed, in
    ``encrypted_content``) and summaries for end users. A client's reasoning item has no
    status."""

    type: Literal["reasoning"] = "reasoning"
    id: Annotated[ItemId, fresh(ids.reasoning_id)] = Field(default_factory=ids.reasoning_id)
    status: Annotated[ItemStatus | None, BeforeValidator(_none_in_request)] = Field(
        default=None, exclude_if=is_none
    )
    summary: Annotated[tuple[SummaryText, ...], BeforeValidator(_empty_if_null)] = ()
    content: tuple[ReasoningText, ...] | None = Field(default=None, exclude_if=is_none)
    encrypted_content: Text | None = Field(default=None, exclude_if=is_none)


class CompactionItem(WireModel):
    """A conversation sealed by ``/responses/compact``, to be given back as input."""

    type: Literal["compaction"] = "compaction"
    id: Annotated[ItemId, fresh(ids.compaction_id)] = Field(default_factory=ids.compaction_id)
    encrypted_content: Text


class ItemReference(WireModel):
    """An earlier item, by id, for the server to find in its store."""

    type: Annotated[Literal["item_reference"], BeforeValidator(lambda _: "item_reference")] = "item_reference"
    id: ItemId


ROLES: Final = ("user", "assistant", "system", "developer")


def item_tag(value: Any) -> str | None:
    """The union member of an item: ``@`` and its ``type`` in Open Responses' spelling
    (``@message.ROLE`` for a message); an object without ``type`` is a message when it
    has a ``role``, a reference when it has an ``id``."""
    if isinstance(value, dict):
        kind, role = value.get("type"), value.get("role")
        if kind is None and "role" in value:
            kind = "message"
        elif kind is None and "id" in value:
            kind = "item_reference"
    else:
        kind, role = getattr(value, "type", None), getattr(value, "role", None)
    if not isinstance(kind, str):
        return None
    return f"@message.{role}" if kind == "message" else f"@{canonical_type(kind)}"


_ITEM_ERROR: Final = {"custom_error_type": "item_type", "custom_error_message": "bad item type"}

Item = Annotated[
    Annotated[UserMessage, Tag("@message.user")]
    | Annotated[SystemMessage, Tag("@message.system")]
    | Annotated[DeveloperMessage, Tag("@message.developer")]
    | Annotated[AssistantMessage, Tag("@message.assistant")]
    | Annotated[FunctionCall, Tag("@function_call")]
    | Annotated[FunctionCallOutput, Tag("@function_call_output")]
    | Annotated[CustomToolCall, Tag(f"@{CUSTOM_TOOL_CALL}")]
    | Annotated[CustomToolCallOutput, Tag(f"@{CUSTOM_TOOL_CALL_OUTPUT}")]
    | Annotated[LocalShellCall, Tag(f"@{LOCAL_SHELL_CALL}")]
    | Annotated[LocalShellCallOutput, Tag(f"@{LOCAL_SHELL_CALL_OUTPUT}")]
    | Annotated[ShellCall, Tag(f"@{SHELL_CALL}")]
    | Annotated[ShellCallOutput, Tag(f"@{SHELL_CALL_OUTPUT}")]
    | Annotated[ApplyPatchCall, Tag(f"@{APPLY_PATCH_CALL}")]
    | Annotated[ApplyPatchCallOutput, Tag(f"@{APPLY_PATCH_CALL_OUTPUT}")]
    | Annotated[CodeInterpreterCall, Tag(f"@{CODE_INTERPRETER_CALL}")]
    | Annotated[WebSearchCall, Tag(f"@{WEB_SEARCH_CALL}")]
    | Annotated[McpListTools, Tag(f"@{MCP_LIST_TOOLS}")]
    | Annotated[McpCall, Tag(f"@{MCP_CALL}")]
    | Annotated[McpApprovalRequest, Tag(f"@{MCP_APPROVAL_REQUEST}")]
    | Annotated[McpApprovalResponse, Tag(f"@{MCP_APPROVAL_RESPONSE}")]
    | Annotated[ReasoningItem, Tag("@reasoning")]
    | Annotated[CompactionItem, Tag("@compaction")],
    Discriminator(item_tag, **_ITEM_ERROR),
]
"""An item of a conversation (what a reference resolves to)."""

InputItem = Annotated[
    Annotated[UserMessage, Tag("@message.user")]
    | Annotated[SystemMessage, Tag("@message.system")]
    | Annotated[DeveloperMessage, Tag("@message.developer")]
    | Annotated[AssistantMessage, Tag("@message.assistant")]
    | Annotated[FunctionCall, Tag("@function_call")]
    | Annotated[FunctionCallOutput, Tag("@function_call_output")]
    | Annotated[CustomToolCall, Tag(f"@{CUSTOM_TOOL_CALL}")]
    | Annotated[CustomToolCallOutput, Tag(f"@{CUSTOM_TOOL_CALL_OUTPUT}")]
    | Annotated[LocalShellCall, Tag(f"@{LOCAL_SHELL_CALL}")]
    | Annotated[LocalShellCallOutput, Tag(f"@{LOCAL_SHELL_CALL_OUTPUT}")]
    | Annotated[ShellCall, Tag(f"@{SHELL_CALL}")]
    | Annotated[ShellCallOutput, Tag(f"@{SHELL_CALL_OUTPUT}")]
    | Annotated[ApplyPatchCall, Tag(f"@{APPLY_PATCH_CALL}")]
    | Annotated[ApplyPatchCallOutput, Tag(f"@{APPLY_PATCH_CALL_OUTPUT}")]
    | Annotated[CodeInterpreterCall, Tag(f"@{CODE_INTERPRETER_CALL}")]
    | Annotated[WebSearchCall, Tag(f"@{WEB_SEARCH_CALL}")]
    | Annotated[McpListTools, Tag(f"@{MCP_LIST_TOOLS}")]
    | Annotated[McpCall, Tag(f"@{MCP_CALL}")]
    | Annotated[McpApprovalRequest, Tag(f"@{MCP_APPROVAL_REQUEST}")]
    | Annotated[McpApprovalResponse, Tag(f"@{MCP_APPROVAL_RESPONSE}")]
    | Annotated[ReasoningItem, Tag("@reasoning")]
    | Annotated[CompactionItem, Tag("@compaction")]
    | Annotated[ItemReference, Tag("@item_reference")],
    Discriminator(item_tag, **_ITEM_ERROR),
]
"""An item of a request's ``input``."""

ITEM_TYPES: Final = tuple(
    dict.fromkeys(
        tag.tag[1:].split(".")[0]
        for member in get_args(get_args(InputItem)[0])
        for tag in member.__metadata__
    )
)
"""The ``type`` s of input items."""

OutputItem = Annotated[
    Annotated[AssistantMessage, Tag("@message.assistant")]
    | Annotated[FunctionCall, Tag("@function_call")]
    | Annotated[CustomToolCall, Tag(f"@{CUSTOM_TOOL_CALL}")]
    | Annotated[LocalShellCall, Tag(f"@{LOCAL_SHELL_CALL}")]
    | Annotated[ShellCall, Tag(f"@{SHELL_CALL}")]
    | Annotated[ApplyPatchCall, Tag(f"@{APPLY_PATCH_CALL}")]
    | Annotated[CodeInterpreterCall, Tag(f"@{CODE_INTERPRETER_CALL}")]
    | Annotated[WebSearchCall, Tag(f"@{WEB_SEARCH_CALL}")]
    | Annotated[McpListTools, Tag(f"@{MCP_LIST_TOOLS}")]
    | Annotated[McpCall, Tag(f"@{MCP_CALL}")]
    | Annotated[McpApprovalRequest, Tag(f"@{MCP_APPROVAL_REQUEST}")]
    | Annotated[ReasoningItem, Tag("@reasoning")],
    Discriminator(item_tag, **_ITEM_ERROR),
]
"""An item the model writes into a response's ``output``."""

_ITEM: Final[TypeAdapter[InputItem]] = TypeAdapter(InputItem)


def load_item(data: Mapping[str, Any]) -> InputItem:
    """The item (or reference) whose JSON this server wrote (stored input or output);
    raises ``pydantic.ValidationError`` for anything else."""
    return _ITEM.validate_python(data)
