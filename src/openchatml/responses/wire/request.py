"""The body of ``POST /v1/responses`` (the schema's ``CreateResponseBody``).

:class:`CreateResponseBody` validates a decoded body's shape (every field typed, every
bound of the API held when validated with a :class:`~.base.Checks` context) and is the
request model the route declares for the OpenAPI document. Unknown top-level fields are
refused; unknown fields inside items, parts and tools are ignored. What depends on
several fields (a tool choice naming a tool, background needing store) is checked by
:func:`~..request.parse_request`, which turns a body into the settings a response runs
with. An accepted field is one line here.
"""

from __future__ import annotations

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

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
SummaryMode = Literal["auto", "concise", "detailed"]
Verbosity = Literal["low", "medium", "high"]
Include = Literal["reasoning.encrypted_content", "message.output_text.logprobs"]
MAX_METADATA_KEYS: Final = 16
MAX_METADATA_KEY: Final = 64
MAX_METADATA_VALUE: Final = 512


class ReasoningParam(WireModel):
    """``reasoning``: how hard the model thinks, and whether its reasoning is summarised."""

    effort: Effort | None = None
    summary: SummaryMode | None = None


class TextParam(WireModel):
    """``text``: the format of the answer and its verbosity."""

    format: TextFormat | None = None
    verbosity: Verbosity | None = None


class StreamOptions(WireModel):
    """``stream_options`` (accepted, not used)."""

    include_obfuscation: Flag = None


def _metadata(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) > MAX_METADATA_KEYS:
            raise PydanticCustomError("too_many_keys", "too many keys", {"limit": MAX_METADATA_KEYS})
        for key in value:
            if len(key) > MAX_METADATA_KEY:
                raise PydanticCustomError("long_key", "metadata key too long", {"key": key})
    return value


Metadata = Annotated[
    dict[str, Annotated[str, at_most(MAX_METADATA_VALUE)]] | None, BeforeValidator(_metadata)
]
"""At most 16 keys of at most 64 characters, each value a string of at most 512."""

Input = Annotated[
    Annotated[Text, Tag("@text")] | Annotated[tuple[InputItem, ...], Tag("@items")],
    Discriminator(lambda value: "@text" if isinstance(value, str) else "@items"),
]
"""``input``: one user message as a string, or a list of items."""


class CreateResponseBody(WireModel):
    """The create-response request body (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", title="CreateResponseBody")

    model: Annotated[str, at_most(256)] | None = None
    input: Input | None = None
    instructions: Text | None = None
    previous_response_id: ItemId | None = None
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
    service_tier: Literal["auto", "default", "flex", "priority"] | None = None
    user: Text | None = None
    safety_identifier: Annotated[str, at_most(MAX_NAME)] | None = None
    prompt_cache_key: Annotated[str, at_most(MAX_NAME)] | None = None


REQUEST_KEYS: Final = frozenset(CreateResponseBody.model_fields)
"""The top-level fields a create-response body may have."""
