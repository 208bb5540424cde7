"""The body of ``POST /v1/responses`` (the schema's ``CreateResponseBody``).

:class:`CreateResponseBody` validates a decoded body's shape (every field typed, every
bound of the API held when validated with a :class:`~.base.Checks` context) and is the
request model the route declares for the OpenAPI document. It has every parameter of the
Open Responses schema and of OpenAI's ``ResponseCreateParams``: each is honoured, echoed,
or accepted and ignored (:data:`IGNORED_FIELDS` says why for the last). A top-level field
it does not know is ignored too (clients send their own: Codex's ``client_metadata``);
:func:`ignored_parameters` names what a body gives that changes nothing. Unknown fields
inside items, parts and tools are ignored. What depends on several fields (a tool choice
naming a tool, background needing store) is checked by :func:`~..request.parse_request`,
which turns a body into the settings a response runs with. An accepted field is one line
here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, ConfigDict, Discriminator, Tag
from pydantic_core import PydanticCustomError

from .base import (
    MAX_NAME,
    Flag,
    ItemId,
    Penalty,
    Positive,
    Seed,
    Temperature,
    Text,
    TopLogprobs,
    TopP,
    WireModel,
    at_most,
)
from .items import InputItem
from .tools import TextFormat, Tool, ToolChoice

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
SummaryMode = Literal["auto", "concise", "detailed"]
Verbosity = Literal["low", "medium", "high"]
Include = Literal[
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
]
"""What ``include`` may ask for: the first two are produced here; the others name output
of tools this server does not run, and add nothing."""
ServiceTier = Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"]
MAX_METADATA_KEYS: Final = 16
MAX_METADATA_KEY: Final = 64
MAX_METADATA_VALUE: Final = 512
MAX_SAFETY_IDENTIFIER: Final = 128
MAX_CONTEXT_ENTRIES: Final = 16
"""Entries of ``context_management`` a request may give."""
MAX_REPORTED: Final = 16
"""How many ignored parameters :func:`ignored_parameters` names (the first ones)."""

ShortId = Annotated[str, at_most(MAX_NAME)]
"""A short identifier a client chooses (a version, a mode): at most 64 characters."""


class ReasoningParam(WireModel):
    """``reasoning``: how hard the model thinks, and whether its reasoning is summarised
    (``generate_summary``: the deprecated name of ``summary``; ``context`` and ``mode``
    are accepted and ignored)."""

    effort: Effort | None = None
    summary: SummaryMode | None = None
    generate_summary: SummaryMode | None = None
    context: Literal["auto", "current_turn", "all_turns"] | None = None
    mode: ShortId | None = None


class TextParam(WireModel):
    """``text``: the format of the answer and its verbosity."""

    format: TextFormat | None = None
    verbosity: Verbosity | None = None


class StreamOptions(WireModel):
    """``stream_options``: no obfuscation is added to events, whatever it asks."""

    include_obfuscation: Flag = None


class AccessPrograms(WireModel):
    """``access_programs`` (OpenAI's domain access programs; ignored)."""

    cyber: Literal["standard", "daybreak_blue", "daybreak_red"] | None = None


class BackgroundOptions(WireModel):
    """``background_options`` (OpenAI's completion windows; ignored)."""

    completion_window: Literal["soonest", "2h", "8h"] | None = None
    continuation_id: ItemId | None = None


class ContextManagement(WireModel):
    """An entry of ``context_management`` (server-side compaction; ignored)."""

    type: Literal["compaction"]
    compact_threshold: Positive = None


class ImageOptions(WireModel):
    """``image`` (image context compression; ignored)."""

    context_compression: Literal["auto", "enabled", "disabled"] | None = None


class ModerationMode(WireModel):
    """What moderation does with one side of a response: score it or block it."""

    mode: Literal["score", "block"]


class ModerationPolicy(WireModel):
    """The moderation policy for a response's input and output."""

    input: ModerationMode | None = None
    output: ModerationMode | None = None


class ModerationParam(WireModel):
    """``moderation`` (no moderation model runs here; ignored)."""

    model: Annotated[str, at_most(256)]
    policy: ModerationPolicy | None = None


class PromptParam(WireModel):
    """``prompt``: a stored prompt template by id, with its variables (this server stores
    none: a request naming one is refused)."""

    id: ItemId
    variables: dict[str, Text | dict[str, Any]] | None = None
    version: ShortId | None = None


class PromptCacheOptions(WireModel):
    """``prompt_cache_options`` (cache breakpoints and lifetimes; ignored)."""

    comparison_response_id: ItemId | None = None
    mode: Literal["implicit", "explicit"] | None = None
    prewarm: Flag = None
    ttl: Literal["30m", "12h"] | None = None


def _metadata(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) > MAX_METADATA_KEYS:
            raise PydanticCustomError("too_many_keys", "too many keys", {"limit": MAX_METADATA_KEYS})
        for key in value:
            if len(key) > MAX_METADATA_KEY:
                raise PydanticCustomError("long_key", "metadata key too long", {"key": key})
    return value


def _few_entries(value: Any) -> Any:
    if isinstance(value, list) and len(value) > MAX_CONTEXT_ENTRIES:
        raise PydanticCustomError(
            "too_many_entries", "it holds more than {limit} entries", {"limit": MAX_CONTEXT_ENTRIES}
        )
    return value


Metadata = Annotated[
    dict[str, Annotated[str, at_most(MAX_METADATA_VALUE)]] | None, BeforeValidator(_metadata)
]
"""At most 16 keys of at most 64 characters, each value a string of at most 512."""


class ConversationParam(WireModel):
    """``conversation`` as an object: ``{"id": "conv_…"}``."""

    id: ItemId


ConversationRef = Annotated[
    Annotated[ItemId, Tag("@id")] | Annotated[ConversationParam, Tag("@object")],
    Discriminator(lambda value: "@id" if isinstance(value, str) else "@object"),
]
"""``conversation``: a conversation's id, or ``{"id": …}``."""

Input = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[InputItem, ...], Tag("@items")],
    Discriminator(lambda value: "@text" if isinstance(value, str) else "@items"),
]
"""``input``: one user message as a string, or a list of items."""


class CreateResponseBody(WireModel):
    """The create-response request body (see the module docstring)."""

    model_config = ConfigDict(title="CreateResponseBody")

    model: Annotated[str, at_most(256)] | None = None
    input: Input | None = None
    instructions: Text | None = None
    previous_response_id: ItemId | None = None
    conversation: ConversationRef | None = None
    tools: tuple[Tool, ...] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: Flag = None
    text: TextParam | None = None
    reasoning: ReasoningParam | None = None
    include: tuple[Include, ...] | None = None
    temperature: Temperature = None
    top_p: TopP = None
    presence_penalty: Penalty = None
    frequency_penalty: Penalty = None
    max_output_tokens: Positive = None
    max_tool_calls: Positive = None
    top_logprobs: TopLogprobs = None
    seed: Seed = None
    stream: Flag = None
    stream_options: StreamOptions | None = None
    background: Flag = None
    store: Flag = None
    metadata: Metadata = None
    truncation: Literal["auto", "disabled"] | None = None
    service_tier: ServiceTier | None = None
    user: Text | None = None
    safety_identifier: Annotated[str, at_most(MAX_SAFETY_IDENTIFIER)] | None = None
    prompt_cache_key: Annotated[str, at_most(MAX_NAME)] | None = None
    prompt: PromptParam | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    context_management: Annotated[tuple[ContextManagement, ...] | None, BeforeValidator(_few_entries)] = None
    moderation: ModerationParam | None = None
    background_options: BackgroundOptions | None = None
    image: ImageOptions | None = None
    access_programs: AccessPrograms | None = None


REQUEST_KEYS: Final = frozenset(CreateResponseBody.model_fields)
"""The top-level fields a create-response body may have (any other is ignored)."""

_PROMPT_CACHE: Final = (
    "the engine's prefix cache is automatic and lives in memory: it has no keys, breakpoints, "
    "lifetimes or prewarming"
)
IGNORED_FIELDS: Final[Mapping[str, str]] = {
    "prompt_cache_retention": _PROMPT_CACHE,
    "prompt_cache_options": _PROMPT_CACHE,
    "context_management": (
        "the server does not compact a conversation by itself: compact it with "
        "POST /v1/responses/compact, or let truncation 'auto' drop its oldest items"
    ),
    "moderation": "no moderation model runs here",
    "background_options": "a background response starts as soon as the engine is free: no completion windows",
    "image": "images are not given to the model here: nothing to compress",
    "access_programs": "OpenAI's access programs: every request here is served alike",
    "reasoning.context": "the prompt keeps the model's own convention for earlier reasoning",
    "reasoning.mode": "the model has one way to reason",
}
"""The parameters a request may give that change nothing here, each with why."""


def ignored_parameters(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The parameters a create body gives that change nothing: top-level fields this server
    does not know, and those of :data:`IGNORED_FIELDS` given a value (``reasoning.mode``
    and ``reasoning.context`` by their path), in the body's order; at most
    :data:`MAX_REPORTED`, each cut to 64 characters."""
    found: list[str] = []
    for key, value in body.items():
        if len(found) == MAX_REPORTED:
            break
        if key not in REQUEST_KEYS:
            found.append(key[:MAX_NAME])
        elif value is not None and key in IGNORED_FIELDS:
            found.append(key)
        elif key == "reasoning" and isinstance(value, dict):
            found += [f"reasoning.{part}" for part in ("context", "mode") if value.get(part) is not None]
    return tuple(found[:MAX_REPORTED])
