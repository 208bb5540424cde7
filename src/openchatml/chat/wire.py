"""The body of ``POST /v1/chat/completions``: pydantic models of its messages, tools,
tool choice and response format.

:class:`ChatCompletionBody` validates a decoded body whose unknown top-level keys were
taken out first (see :mod:`.request`); inside messages, parts and tools unknown fields are
ignored. Validated with a :class:`~..responses.wire.base.Checks` context every bound of
the Responses wire holds here too (text lengths, names, ids, numbers). A message's class
is its ``role``, a part's its ``type``; a ``role`` or ``type`` the API does not know is
refused naming it (``messages[2].role``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from ..responses.wire.base import (
    MAX_NAME,
    Flag,
    Name,
    Penalty,
    Positive,
    Seed,
    ShortText,
    Temperature,
    Text,
    TopLogprobs,
    TopP,
    WireModel,
    at_most,
    counting,
    tagger,
)
from ..responses.wire.content import MAX_FILE_DATA, MAX_IMAGE_URL
from ..responses.wire.request import MAX_SAFETY_IDENTIFIER, Effort, Metadata, ServiceTier, Verbosity

MAX_CHOICES: Final = 16
"""The most choices (``n``) one request may ask for: each is a response of its own."""
MAX_STOPS: Final = 4
"""The most stop sequences one request may give."""
MAX_STOP_LENGTH: Final = 1024
"""The longest stop sequence."""
ROLES: Final = ("system", "developer", "user", "assistant", "tool")

ROLE_ERROR: Final = "chat_role"
PART_ERROR: Final = "chat_part"
CHOICE_ERROR: Final = "chat_tool_choice"
"""The ``type`` of the validation errors :mod:`.request` words itself."""


def _empty_if_null(value: Any) -> Any:
    return () if value is None else value


# --- content parts ----------------------------------------------------------------------


class TextPart(WireModel):
    """``{"type": "text", "text": …}``."""

    type: Literal["text"] = "text"
    text: Text


class ImageURL(WireModel):
    """Where an image is: a URL or a ``data:`` URL, and the detail asked for."""

    url: Annotated[str, at_most(MAX_IMAGE_URL)]
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(WireModel):
    """``{"type": "image_url", "image_url": {url, detail}}``."""

    type: Literal["image_url"] = "image_url"
    image_url: ImageURL


class AudioPart(WireModel):
    """``{"type": "input_audio", …}`` (read only to be refused by name)."""

    type: Literal["input_audio"] = "input_audio"


_FileData = Annotated[str, at_most(MAX_FILE_DATA)]


class FileSource(WireModel):
    """A file inline (``file_data``, base64 or a ``data:`` URL) or by id, with its name."""

    file_data: _FileData | None = None
    file_id: _FileData | None = None
    filename: _FileData | None = None


class FilePart(WireModel):
    """``{"type": "file", "file": {file_data, file_id, filename}}``."""

    type: Literal["file"] = "file"
    file: FileSource


class RefusalPart(WireModel):
    """``{"type": "refusal", "refusal": …}`` in an assistant message."""

    type: Literal["refusal"] = "refusal"
    refusal: Text


_PART_CLASSES: Final[dict[type, str]] = {
    TextPart: "text",
    ImagePart: "image_url",
    AudioPart: "input_audio",
    FilePart: "file",
    RefusalPart: "refusal",
}


def _part_union(*kinds: str) -> Discriminator:
    """The discriminator of a union of the parts of ``kinds``, each tagged ``@`` and its
    type; a part of another type is refused naming ``kinds``."""
    classes = {cls: f"@{kind}" for cls, kind in _PART_CLASSES.items() if kind in kinds}
    return Discriminator(
        tagger({kind: f"@{kind}" for kind in kinds}, classes),
        custom_error_type=PART_ERROR,
        custom_error_message=", ".join(repr(kind) for kind in kinds),
    )


UserPart = Annotated[
    Annotated[TextPart, Tag("@text")]
    | Annotated[ImagePart, Tag("@image_url")]
    | Annotated[AudioPart, Tag("@input_audio")]
    | Annotated[FilePart, Tag("@file")],
    _part_union("text", "image_url", "input_audio", "file"),
]
"""A part of a user message."""
AssistantPart = Annotated[
    Annotated[TextPart, Tag("@text")] | Annotated[RefusalPart, Tag("@refusal")],
    _part_union("text", "refusal"),
]
"""A part of an assistant message."""


def _text_or_parts(value: Any) -> str:
    return "@text" if isinstance(value, str) else "@parts"


TextContent = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[TextPart, ...], Tag("@parts")],
    Discriminator(_text_or_parts),
]
"""The ``content`` of a system, developer or tool message: a string, or text parts."""
UserContent = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[UserPart, ...], Tag("@parts")],
    Discriminator(_text_or_parts),
]
"""The ``content`` of a user message: a string, or parts."""
AssistantContent = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[AssistantPart, ...], Tag("@parts")],
    Discriminator(_text_or_parts),
]
"""The ``content`` of an assistant message: a string, or text and refusal parts."""


# --- messages ---------------------------------------------------------------------------


class SystemMessageParam(WireModel):
    """A system message (the model reads it as the developer's instructions)."""

    role: Literal["system"] = "system"
    content: TextContent
    name: Text | None = None


class DeveloperMessageParam(WireModel):
    """The developer's instructions."""

    role: Literal["developer"] = "developer"
    content: TextContent
    name: Text | None = None


class UserMessageParam(WireModel):
    """A message of the user: text, or parts (text, image, audio, file)."""

    role: Literal["user"] = "user"
    content: UserContent
    name: Text | None = None


class CalledFunction(WireModel):
    """The function an earlier tool call named, and its JSON arguments."""

    name: Name
    arguments: Text


class ToolCallParam(WireModel):
    """A tool call of an earlier assistant message: its ``id`` ties it to its result."""

    id: ShortText
    type: Literal["function"] = "function"
    function: CalledFunction


class AssistantMessageParam(WireModel):
    """An earlier answer of the model: its text, its reasoning (``reasoning_content`` as
    vLLM and DeepSeek spell it, or ``reasoning`` as Ollama and OpenRouter do) and its
    tool calls."""

    role: Literal["assistant"] = "assistant"
    content: AssistantContent | None = None
    refusal: Text | None = None
    reasoning_content: Text | None = None
    reasoning: Text | None = None
    tool_calls: Annotated[tuple[ToolCallParam, ...], BeforeValidator(_empty_if_null)] = ()
    name: Text | None = None


class ToolMessageParam(WireModel):
    """What a tool call (``tool_call_id``) returned."""

    role: Literal["tool"] = "tool"
    content: TextContent
    tool_call_id: ShortText


def _role(value: Any) -> str | None:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return f"@{role}" if isinstance(role, str) and role in ROLES else None


MessageParam = Annotated[
    Annotated[SystemMessageParam, Tag("@system")]
    | Annotated[DeveloperMessageParam, Tag("@developer")]
    | Annotated[UserMessageParam, Tag("@user")]
    | Annotated[AssistantMessageParam, Tag("@assistant")]
    | Annotated[ToolMessageParam, Tag("@tool")],
    Discriminator(_role, custom_error_type=ROLE_ERROR, custom_error_message="bad role"),
]
"""A message of ``messages``, by its ``role``."""


# --- tools, tool choice, response format --------------------------------------------------


def _default_false(value: Any) -> Any:
    return False if value is None else value


class FunctionDefinition(WireModel):
    """A function the model may call (``strict`` is false unless asked for, as in
    OpenAI's chat completions)."""

    name: Name
    description: Text | None = None
    parameters: dict[str, Any] | None = None
    strict: Annotated[Flag, BeforeValidator(_default_false)] = False


class FunctionToolParam(WireModel):
    """``{"type": "function", "function": {name, description, parameters, strict}}``."""

    type: Literal["function"] = "function"
    function: FunctionDefinition


class NamedFunction(WireModel):
    """A function named by a tool choice."""

    name: Text


class NamedToolChoice(WireModel):
    """``tool_choice``: call this function."""

    type: Literal["function"] = "function"
    function: NamedFunction


class AllowedToolRef(WireModel):
    """A function the ``allowed_tools`` choice permits."""

    type: Literal["function"] = "function"
    function: NamedFunction


class AllowedToolsSpec(WireModel):
    """Which tools the model may choose among, and whether it must call one."""

    mode: Literal["auto", "required"]
    tools: tuple[AllowedToolRef, ...]


class AllowedToolsChoice(WireModel):
    """``tool_choice``: choose among these tools only."""

    type: Literal["allowed_tools"] = "allowed_tools"
    allowed_tools: AllowedToolsSpec


def _choice_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "@mode"
    return tagger(
        {"function": "@function", "allowed_tools": "@allowed_tools"},
        {NamedToolChoice: "@function", AllowedToolsChoice: "@allowed_tools"},
    )(value)


ToolChoiceParam = Annotated[
    Annotated[Literal["none", "auto", "required"], Tag("@mode")]
    | Annotated[NamedToolChoice, Tag("@function")]
    | Annotated[AllowedToolsChoice, Tag("@allowed_tools")],
    Discriminator(_choice_tag, custom_error_type=CHOICE_ERROR, custom_error_message="bad tool choice"),
]
"""``tool_choice``: a mode, one function, or the allowed tools."""


class TextResponseFormat(WireModel):
    """``response_format``: free text."""

    type: Literal["text"] = "text"


class JsonObjectResponseFormat(WireModel):
    """``response_format``: one JSON object."""

    type: Literal["json_object"] = "json_object"


class JsonSchemaSpec(WireModel):
    """The schema a ``json_schema`` answer matches, its name, and whether it is strict."""

    name: Name
    description: Text | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: Annotated[Flag, BeforeValidator(_default_false)] = False


class JsonSchemaResponseFormat(WireModel):
    """``response_format``: JSON matching a schema."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: JsonSchemaSpec


ResponseFormatParam = Annotated[
    Annotated[TextResponseFormat, Tag("@text")]
    | Annotated[JsonObjectResponseFormat, Tag("@json_object")]
    | Annotated[JsonSchemaResponseFormat, Tag("@json_schema")],
    Discriminator(
        tagger(
            {"text": "@text", "json_object": "@json_object", "json_schema": "@json_schema"},
            {
                TextResponseFormat: "@text",
                JsonObjectResponseFormat: "@json_object",
                JsonSchemaResponseFormat: "@json_schema",
            },
        ),
        custom_error_type="format_type",
        custom_error_message="bad format type",
    ),
]
"""``response_format``: text, a JSON object, or JSON matching a schema."""


class StreamOptionsParam(WireModel):
    """``stream_options``: whether a last chunk carries the usage."""

    include_usage: Flag = None
    include_obfuscation: Flag = None


def _stops(value: Any) -> Any:
    if isinstance(value, list) and len(value) > MAX_STOPS:
        raise PydanticCustomError(
            "too_many_stops", "at most {limit} stop sequences may be given", {"limit": MAX_STOPS}
        )
    return value


def _not_empty(value: str) -> str:
    if not value:
        raise PydanticCustomError("empty_stop", "a stop sequence may not be empty", {})
    return value


StopSequence = Annotated[str, at_most(MAX_STOP_LENGTH), AfterValidator(_not_empty)]
Stop = Annotated[
    Annotated[StopSequence, Tag("@one")] | Annotated[tuple[StopSequence, ...], Tag("@many")],
    Discriminator(lambda value: "@one" if isinstance(value, str) else "@many"),
    BeforeValidator(_stops),
]
"""``stop``: one string, or up to four."""


class ChatCompletionBody(WireModel):
    """The create-chat-completion body (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", title="CreateChatCompletionBody")

    model: Annotated[str, at_most(256)] | None = None
    messages: tuple[MessageParam, ...]
    tools: tuple[FunctionToolParam, ...] | None = None
    tool_choice: ToolChoiceParam | None = None
    parallel_tool_calls: Flag = None
    response_format: ResponseFormatParam | None = None
    reasoning_effort: Effort | None = None
    verbosity: Verbosity | None = None
    temperature: Temperature = None
    top_p: TopP = None
    presence_penalty: Penalty = None
    frequency_penalty: Penalty = None
    max_completion_tokens: Positive = None
    max_tokens: Positive = None
    n: Annotated[int | None, counting(1, MAX_CHOICES)] = None
    stop: Stop | None = None
    seed: Seed = None
    logprobs: Flag = None
    top_logprobs: TopLogprobs = None
    stream: Flag = None
    stream_options: StreamOptionsParam | None = None
    store: Flag = None
    metadata: Metadata = None
    user: Text | None = None
    safety_identifier: Annotated[str, at_most(MAX_SAFETY_IDENTIFIER)] | None = None
    prompt_cache_key: Annotated[str, at_most(MAX_NAME)] | None = None
    service_tier: ServiceTier | None = None
    modalities: tuple[Literal["text"], ...] | None = None
    logit_bias: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None
    audio: dict[str, Any] | None = None
    functions: tuple[Any, ...] | None = None
    function_call: Any = None


BODY_KEYS: Final = frozenset(ChatCompletionBody.model_fields)
"""The top-level fields a create-chat-completion body may have (the rest are ignored)."""
UNUSED_KEYS: Final = ("logit_bias", "prediction", "web_search_options")
"""Fields the API knows and this server accepts without acting on them (reported as
ignored, as unknown fields are)."""
REFUSED_KEYS: Final = ("audio", "functions", "function_call")
"""Fields asking for what this server does not do (audio output, the deprecated
``functions``): refused when given."""
